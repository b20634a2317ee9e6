#!/usr/bin/env bash
# The GPU checks of the throughput work, for a session with a CUDA device. Run from the
# repository root, on the device machine, as one command (it keeps itself under BUDGET_S):
#
#     BUDGET_S=480 bash benchmarks/gpu_check.sh
#
# (with the device tool: run(command="BUDGET_S=480 bash benchmarks/gpu_check.sh",
#  timeout_s=560)). Everything it prints also lands in $OUT/gpu_check.log when $OUT is set.
#
# In order of importance, each section skipped once the budget would run out:
#   1. environment: GPU, torch, CUDA, mlx
#   2. compiled vs eager qktorch on CUDA (tiny, float32, 20 steps): per-step loss within
#      crosscheck's 1e-4, one graph, CUDA graphs not skipped, no host sync in train_step
#      (torch.cuda.set_sync_debug_mode("error")) for the eager and the compiled step
#   3. throughput, tiny float32: eager vs compiled, the plain-torch reference, and 1, 4 and 8
#      runs sharing the GPU (aggregate tokens/s, MFU, memory per run)
#   4. throughput, core bfloat16, then core float32, then tiny bfloat16: the same cases
#      (no reference)
#   5. the cost estimate of the depth sweep on this GPU
# Knobs: BUDGET_S (seconds, default 480), WORKERS (default 1,4,8), STEPS (default 20),
# ROUNDS (default 3), PYTHON (default python), DEVICE (default cuda; cpu to try the script).
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
BUDGET_S=${BUDGET_S:-480}
WORKERS=${WORKERS:-1,4,8}
STEPS=${STEPS:-20}
ROUNDS=${ROUNDS:-3}
PY=${PYTHON:-python}
DEVICE=${DEVICE:-cuda}
LOG=${OUT:+$OUT/gpu_check.log}
LOG=${LOG:-/dev/null}
START=$(date +%s)

say() { echo "$@" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
# section NEEDED_S LIMIT_S TITLE COMMAND...: runs COMMAND under `timeout LIMIT_S` when at
# least NEEDED_S of the budget are left, else says it was skipped.
section() {
  local need=$1 limit=$2 title=$3; shift 3
  if [ "$(left)" -lt "$need" ]; then
    say "== $title: skipped ($(left) s of the budget left, needs about $need s)"
    return
  fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  say "== $title ($(date +%T), $(left) s of the budget left)"
  timeout "$limit" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && say "== $title: exit code $rc$([ "$rc" -eq 124 ] && echo ' (timed out)')"
}

section 10 30 "environment" bash -c "
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  $PY -c 'import sys, torch; print(\"python\", sys.version.split()[0], \"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"available\", torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else \"\")'
  $PY -c 'import mlx.core as mx; print(\"mlx\", mx.__version__, \"gpu\", mx.cuda.is_available())' 2>/dev/null || echo 'mlx: not installed (the qkmlx cases are left out)'
  $PY -c 'import click, numpy; print(\"click, numpy: ok\")'"
BACKENDS=torch
$PY -c 'import mlx.core as mx; assert mx.cuda.is_available()' 2>/dev/null && BACKENDS=torch,mlx

section 90 150 "compiled vs eager on CUDA (tiny, float32)" \
  $PY benchmarks/compiled_check.py --device $DEVICE --preset tiny --steps 20

bench() {  # bench PRESET DTYPE [extra options]
  local preset=$1 dtype=$2; shift 2
  section 60 200 "throughput $preset $dtype" $PY benchmarks/throughput.py --device $DEVICE \
    --preset "$preset" --dtype "$dtype" --compile --backends "$BACKENDS" --workers "$WORKERS" \
    --steps "$STEPS" --rounds "$ROUNDS" "$@"
}
bench tiny float32 --reference
bench core bfloat16
bench core float32
bench tiny bfloat16

section 30 60 "estimate of the depth sweep on this GPU (eager, float32)" bash -c "
  $PY -c 'from qktorch.cli import main; main()' sweep depth --dry-run --estimate \
    --device $DEVICE --runs-dir /tmp/gpu-check-runs | head -8"
say "== done in $(( $(date +%s) - START )) s"
