#!/usr/bin/env bash
# The GPU check of a fresh CUDA machine, in one command from the repository root; it needs
# only python3 with torch (and numpy, click) installed, MLX optional, no network:
#
#     bash benchmarks/gpu_check.sh
#
# (with the device tool: run(command="bash benchmarks/gpu_check.sh", timeout_s=480)). It keeps
# itself under BUDGET_S (default 540 s: 9 minutes, inside a 10-minute slot), prints every
# measured row the moment it has it (a section stopped by its time limit keeps its rows), and
# ends with a summary table. Everything it prints also lands in $OUT/gpu_check.log when $OUT
# is set.
#
# Sections, in order of importance, each skipped once the budget would run out (time measured
# on one H200 in brackets; 6.3 minutes in all for the sections measured there, 2026-12-01):
#   1. environment: GPU, driver, python, torch and its CUDA, mlx; stops here if torch cannot
#      use the GPU (README: match the wheel to the driver)                               [7 s]
#   2. compiled vs eager qktorch (tiny, float32, 20 steps): per-step loss within crosscheck's
#      1e-4, one graph, CUDA graphs not skipped, no host sync in train_step             [37 s]
#   3. crosscheck on the GPU (tiny, every intervention, 20 steps): qktorch on CUDA against
#      qkmlx on CUDA when its CUDA backend is installed, else against qkmlx on the CPU;
#      skipped without MLX. The first time on a machine MLX compiles its CUDA kernels
#      (about 95 s, then cached on disk)                             [~160 s cold, 17 s warm]
#   4. fused throughput (issue 31), the cpu preset compiled: M = 1, 4, 16, 64 runs trained as
#      one program against one run alone and (M up to 4) M processes sharing the GPU
#      (benchmarks/fused.py; the goal: M = 64 >= 10x one run)         [not yet measured]
#   5. a cpu-preset sweep end to end, fused against unfused: 2 LRs x 4 seeds x off/on, every
#      run through the sweep command, the unfused one stopped at E2E_LIMIT_S; runs per hour
#      both ways and the results compared run by run (benchmarks/fused_sweep.py)
#                                                                      [not yet measured]
#   6. the cost estimate of the depth sweep on this GPU (compiled, the CUDA default; and fused
#      in groups sized to the GPU's memory, --fuse auto; the goal: <= 1.5 h)   [9 s unfused]
#   7. throughput tiny float32: eager and compiled qktorch (and qkmlx when its CUDA backend
#      is installed), the plain-torch reference, and 1 and 4 runs sharing the GPU       [66 s]
#   8. throughput core bfloat16: the same cases, one run at a time                      [36 s]
#   9. crosscheck on the GPU at the large preset (core: the sweeps' model size)         [66 s]
# Knobs: BUDGET_S, WORKERS (runs sharing the GPU, default 1,4), STEPS (default 20), ROUNDS
# (default 3), PYTHON (default python3, else python), PRESET_SMALL and PRESET_LARGE (default
# tiny and core), ESTIMATE_SPEC (default depth), DEVICE (default cuda), FUSED_PRESETS (default
# cpu), FUSED_MODELS (default 1,4,16,64), FUSED_PROCESSES (default 4), FUSED_MODES (default
# compiled), E2E_PRESET (default cpu), E2E_LRS (default 1e-3,3.16e-3), E2E_LIMIT_S (default
# 120). To try it on a CPU (about 9 minutes on 2 busy cores; tests/test_gpu_readiness.py runs
# its skeleton):
#     DEVICE=cpu PRESET_SMALL=smoke PRESET_LARGE=smoke ESTIMATE_SPEC=smoke STEPS=2 ROUNDS=1 \
#         WORKERS=1,2 FUSED_PRESETS=smoke FUSED_MODELS=1,2 FUSED_MODES=eager E2E_PRESET=smoke \
#         E2E_LRS=1e-2,3.16e-2 E2E_LIMIT_S=30 bash benchmarks/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
BUDGET_S=${BUDGET_S:-540}
WORKERS=${WORKERS:-1,4}
FUSED_PRESETS=${FUSED_PRESETS:-cpu}
FUSED_MODELS=${FUSED_MODELS:-1,4,16,64}
FUSED_PROCESSES=${FUSED_PROCESSES:-4}
FUSED_MODES=${FUSED_MODES:-compiled}
E2E_PRESET=${E2E_PRESET:-cpu}
E2E_LRS=${E2E_LRS:-1e-3,3.16e-3}
E2E_LIMIT_S=${E2E_LIMIT_S:-120}
STEPS=${STEPS:-20}
ROUNDS=${ROUNDS:-3}
PY=${PYTHON:-$(command -v python3 || command -v python)}
DEVICE=${DEVICE:-cuda}
PRESET_SMALL=${PRESET_SMALL:-tiny}
PRESET_LARGE=${PRESET_LARGE:-core}
ESTIMATE_SPEC=${ESTIMATE_SPEC:-depth}
LOG=${OUT:+$OUT/gpu_check.log}
LOG=${LOG:-/dev/null}
WORK=$(mktemp -d)
export PY DEVICE WORK PRESET_SMALL ESTIMATE_SPEC
START=$(date +%s)
: >"$WORK/sections"

say() { echo "$@" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
# section NEEDED_S LIMIT_S TITLE COMMAND...: runs COMMAND under `timeout LIMIT_S` when at
# least NEEDED_S of the budget are left, else says it was skipped; records the outcome.
section() {
  local need=$1 limit=$2 title=$3 began rc status; shift 3
  if [ "$(left)" -lt "$need" ]; then
    say "== $title: skipped ($(left) s of the budget left, needs about $need s)"
    printf '%s\t%s\t%s\n' "$title" "skipped" "-" >>"$WORK/sections"
    return 1
  fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  say "== $title ($(date +%T), $(left) s of the budget left, limit $limit s)"
  began=$(date +%s)
  timeout "$limit" "$@" 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  case $rc in 0) status=ok ;; 124) status="timed out" ;; *) status="FAIL (exit $rc)" ;; esac
  [ "$rc" -ne 0 ] && say "== $title: $status"
  printf '%s\t%s\t%s\n' "$title" "$status" "$(($(date +%s) - began))" >>"$WORK/sections"
  return "$rc"
}

summary() {
  say ""
  say "== summary ($(($(date +%s) - START)) s of a $BUDGET_S s budget)"
  while IFS=$'\t' read -r title status secs; do
    say "$(printf '  %-52s %-16s %6s s' "$title" "$status" "$secs")"
  done <"$WORK/sections"
  [ -s "$WORK/checks" ] && { say ""; say "compiled vs eager:"; say "$(cat "$WORK/checks")"; }
  [ -s "$WORK/tables" ] && { say ""; say "$(cat "$WORK/tables")"; }
}
trap 'summary; rm -rf "$WORK"' EXIT

if [ -z "$PY" ]; then
  say "gpu_check: no python3 or python on PATH"
  exit 2
fi

environment() {
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv,noheader
  command -v nvidia-smi >/dev/null && nvidia-smi | grep -m1 "CUDA Version"
  "$PY" - "$DEVICE" <<'EOF'
import sys
print("python", sys.version.split()[0], sys.executable)
import torch
cuda = torch.cuda.is_available()
print("torch", torch.__version__, "built for CUDA", torch.version.cuda, "available", cuda,
      torch.cuda.get_device_name() if cuda else "")
try:
    import mlx.core as mx
    gpu = getattr(mx, "cuda", None) is not None and mx.cuda.is_available()
    print("mlx", mx.__version__, "CUDA backend", gpu)
except ImportError:
    print("mlx: not installed (pip install -e '.[cuda]'); the qkmlx cases are left out")
import numpy, click  # noqa: F401  the harness's own needs
import qktorch.train, sweeps.cli  # noqa: F401
if sys.argv[1] == "cuda" and not cuda:
    sys.exit("torch cannot use the GPU: install the torch wheel for the driver's CUDA "
             "version (README, On a CUDA machine)")
EOF
}
export -f environment
section 10 60 "environment" bash -c environment || exit 1

BACKENDS=torch
"$PY" -c 'import mlx.core as mx; assert mx.cuda.is_available()' 2>/dev/null && [ "$DEVICE" = cuda ] \
  && BACKENDS=torch,mlx

compiled() {
  set -o pipefail
  "$PY" benchmarks/compiled_check.py --device "$DEVICE" --preset "$PRESET_SMALL" --steps 20 \
    | tee "$WORK/compiled"
  local rc=$?
  grep -E "^  .*(pass|FAIL)  |^compiled_check:" "$WORK/compiled" >"$WORK/checks"
  return $rc
}
export -f compiled
section 60 150 "compiled vs eager ($PRESET_SMALL, float32)" bash -c compiled

# crosscheck_on_gpu PRESET [options]: qktorch on $DEVICE against qkmlx on its GPU, or on the
# CPU where MLX has no CUDA backend (the torch side is then still checked on the GPU).
crosscheck_on_gpu() {
  local mlx_device=cpu
  "$PY" -c 'import mlx.core' 2>/dev/null || {
    echo "mlx not installed: crosscheck needs both backends (pip install -e '.[cuda]')"
    return 0
  }
  [ "$BACKENDS" = torch,mlx ] && mlx_device=gpu
  "$PY" -c 'from crosscheck.cli import main; main()' --preset "$1" --steps 20 \
    --verbose --torch-device "$DEVICE" --mlx-device "$mlx_device" ${OUT:+--out "$OUT/crosscheck-$1.json"} "${@:2}"
}
export -f crosscheck_on_gpu
export BACKENDS
section 60 210 "crosscheck on $DEVICE ($PRESET_SMALL, interventions)" \
  bash -c 'crosscheck_on_gpu "$PRESET_SMALL" --interventions'

# fused throughput (issue 31): aggregate tokens/s of M runs as one program against one run
# alone and M processes; the goal on a GPU is >= 10x one compiled run at M = 64, cpu preset.
fused() {
  "$PY" benchmarks/fused.py --device "$DEVICE" --presets "$FUSED_PRESETS" --models "$FUSED_MODELS" \
    --max-processes "$FUSED_PROCESSES" --modes "$FUSED_MODES" --steps "$STEPS" --rounds "$ROUNDS" \
    --summary "$WORK/tables"
}
export -f fused
export FUSED_PRESETS FUSED_MODELS FUSED_PROCESSES FUSED_MODES STEPS ROUNDS
section 60 150 "fused throughput $FUSED_PRESETS $FUSED_MODES (M $FUSED_MODELS)" bash -c fused

# a whole sweep end to end, fused against unfused (the unfused one stopped at E2E_LIMIT_S or
# where the section's limit would cut it), every run through the sweep command
E2E_SECTION_S=$((E2E_LIMIT_S + 150))
e2e() {
  "$PY" benchmarks/fused_sweep.py --device "$DEVICE" --preset "$E2E_PRESET" --lrs "$E2E_LRS" \
    --seeds 4 --limit-s "$E2E_LIMIT_S" --total-s "$(($(left) < E2E_SECTION_S ? $(left) : E2E_SECTION_S))" \
    --work "$WORK/e2e" --summary "$WORK/tables"
}
export -f e2e left
export E2E_PRESET E2E_LRS E2E_LIMIT_S E2E_SECTION_S START BUDGET_S
section 120 "$E2E_SECTION_S" "sweep end to end, fused vs unfused ($E2E_PRESET)" bash -c e2e

estimate() {
  "$PY" -c 'from qktorch.cli import main; main()' sweep "$ESTIMATE_SPEC" --dry-run --estimate \
    --device "$DEVICE" --runs-dir "$WORK/runs" | grep -E "^estimate|^  (tokens|[0-9,]+ tokens|per run|planned|worst|fused|not fused)"
}
export -f estimate
section 30 150 "estimate of the $ESTIMATE_SPEC sweep (float32; unfused and fused)" bash -c estimate

bench() {  # bench NEEDED LIMIT PRESET DTYPE WORKERS [extra options]
  local need=$1 limit=$2 preset=$3 dtype=$4 workers=$5; shift 5
  section "$need" "$limit" "throughput $preset $dtype (workers $workers)" \
    "$PY" benchmarks/throughput.py --device "$DEVICE" --preset "$preset" --dtype "$dtype" \
    --compile --backends "$BACKENDS" --workers "$workers" --steps "$STEPS" --rounds "$ROUNDS" \
    --blas openblas --summary "$WORK/tables" "$@"
}
bench 60 140 "$PRESET_SMALL" float32 "$WORKERS" --reference
bench 60 120 "$PRESET_LARGE" bfloat16 1
export PRESET_LARGE
section 60 120 "crosscheck on $DEVICE ($PRESET_LARGE)" bash -c 'crosscheck_on_gpu "$PRESET_LARGE"'
exit 0
