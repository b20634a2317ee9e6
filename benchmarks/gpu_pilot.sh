#!/usr/bin/env bash
# The real-scale pilot (issue 69), for the first GPU at hand, in one command from the
# repository root; it needs python3 with torch, numpy and click (the project's [cpu] extra is
# not needed), no network, nothing but this checkout:
#
#     bash benchmarks/gpu_pilot.sh
#
# (with the device tool: run(command="bash benchmarks/gpu_pilot.sh", timeout_s=540)). It trains
# the `core` shape (6 layers, 384 wide, 6 heads of 64, 256-token windows, 8,192 tokens a step)
# in bfloat16 mixed precision, compiled, QK-norm off and on at four quarter-decade LRs around
# where the best LR is expected (STUDY.md sections 19 and 21), 3 seeds (the sweep's minimum),
# on the corpus this checkout carries (the builtin synthetic corpus, bytes vocabulary: no
# download; TinyStories and its gpt2 vocabulary are the real study's), STEPS steps a run:
#   1. the sweep one run at a time (unfused), timed whole: what the dry run should price from
#   2. the same runs fused (--fuse FUSE: several models in one process), timed whole
#   3. `qktorch figures` of the unfused sweep (its report, fates and losses)
#   4. benchmarks/pilot_summary.py: per-run fates, losses and whole-run tokens/s, both sweeps'
#      whole-sweep tokens/s, fused against unfused run by run
# Each step has its own time limit inside BUDGET_S (default 480 s: 8 minutes); a sweep stopped
# by its limit keeps its finished runs and the summary counts those. Everything it prints
# lands in $OUT/gpu_pilot.log when $OUT is set (the device tool fetches $OUT), the runs and
# the report in $OUT/pilot/.
#
# STAND_IN=1 is the same script on a CPU with the `smoke` preset (tests/test_gpu_pilot.py runs
# it end to end): the one variable that changes is the stand-in switch, which sets the preset,
# device, steps, LRs and limits below together.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-$(command -v python3 || command -v python)}
OUT=${OUT:-}
STAND_IN=${STAND_IN:-0}
if [ "$STAND_IN" = 1 ]; then
  PRESET=smoke DEVICE=cpu STEPS=40 LRS=1e-2,3.16e-2 FUSE=4 BUDGET_S=${BUDGET_S:-300}
else
  PRESET=core DEVICE=cuda STEPS=${STEPS:-1500} LRS=${LRS:-1e-3,1.78e-3,3.16e-3,5.62e-3}
  FUSE=${FUSE:-8} BUDGET_S=${BUDGET_S:-480}
fi
ROOT=${OUT:-/tmp}/pilot
LOG=${OUT:+$OUT/gpu_pilot.log}
mkdir -p "$ROOT"
say() { if [ -n "$LOG" ]; then echo "$@" | tee -a "$LOG"; else echo "$@"; fi; }
run() {  # run LIMIT_S CMD...: its output to the log too; the limit keeps the budget
  local limit=$1
  shift
  if [ -n "$LOG" ]; then timeout "$limit" "$@" 2>&1 | tee -a "$LOG"; else timeout "$limit" "$@"; fi
}
began=$(date +%s)
left() { echo $((BUDGET_S - ($(date +%s) - began))); }

say "== gpu_pilot: preset $PRESET, bfloat16, device $DEVICE, $STEPS steps, LRs $LRS, 3 seeds, budget ${BUDGET_S} s"
say "== environment"
run 20 "$PY" -c "
import platform, torch
print('python', platform.python_version(), '| torch', torch.__version__, '| cuda', torch.version.cuda)
print('device:', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA: CPU')
"
if [ "$DEVICE" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  say "gpu_pilot: torch cannot use a GPU here; stopping (README: match the torch wheel to the driver)"
  exit 1
fi

QKTORCH=(-c 'from qktorch.cli import main; main()')  # the installed `qktorch`, from this tree
SWEEP=("${QKTORCH[@]}" sweep --preset "$PRESET" --grid "train.lr=$LRS" --seeds 3
  --set train.dtype=bfloat16 --set data.corpus=builtin --set data.tokenizer=bytes
  --set "train.max_steps=$STEPS" --device "$DEVICE" --runs-dir "$ROOT")
timed() {  # timed NAME LIMIT_S EXTRA...: one sweep, its wall seconds into WALL
  local name=$1 limit=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  run "$limit" "$PY" "${SWEEP[@]}" --name "$name" "$@"
  t1=$(date +%s.%N)
  WALL=$("$PY" -c "print(round($t1 - $t0, 1))")
}

say "== 1. unfused: one run at a time ($(left) s left)"
timed pilot $(($(left) * 45 / 100)) --fuse off
UNFUSED_WALL=$WALL
say "== 2. fused: up to $FUSE models in one process ($(left) s left)"
timed pilot-fused $(($(left) * 70 / 100)) --fuse "$FUSE"
FUSED_WALL=$WALL
say "== 3. figures of the unfused sweep ($(left) s left)"
run "$(( $(left) > 30 ? $(left) - 20 : 10 ))" "$PY" "${QKTORCH[@]}" figures pilot \
  --runs-dir "$ROOT" --out "$ROOT/report" --formats svg
say "== 4. summary"
run 20 "$PY" benchmarks/pilot_summary.py "$ROOT" pilot "$UNFUSED_WALL" pilot-fused "$FUSED_WALL"
say "== gpu_pilot: done in $(($(date +%s) - began)) s"
