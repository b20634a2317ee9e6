"""The GPU pilot's numbers (benchmarks/gpu_pilot.sh): per run its fate, final loss and
whole-run tokens/s, then what the dry run should price from, unfused against fused.

    python benchmarks/pilot_summary.py RUNS_DIR UNFUSED UNFUSED_WALL_S [FUSED FUSED_WALL_S]

Reads only the runs' summary.json files and the sweeps' wall times the script measured, so
it says what a whole run cost on this machine: compilation, evaluations, diagnostics and
checkpoints included (the dry run's older figures came from 20-step loops).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def runs_of(folder: Path) -> dict[str, dict]:
    """{run id: summary} of every finished run in a sweep folder."""
    out = {}
    for path in sorted(folder.glob("*/summary.json")):
        try:
            out[path.parent.name] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # an unfinished or damaged run: not counted
    return out


def key(run_id: str) -> str:
    """torch-off-L6-lr0.001-s0-<hash> -> off-L6-lr0.001-s0: the same run, fused or not."""
    return run_id.split("-", 1)[1].rsplit("-", 1)[0]


def sweep_line(name: str, runs: dict[str, dict], wall_s: float) -> str:
    tokens = sum(r.get("tokens_seen") or 0 for r in runs.values())
    in_runs = sum(r.get("wall_time_s") or 0 for r in runs.values())
    rate = tokens / wall_s if wall_s > 0 else math.nan
    return (
        f"{name}: {len(runs)} runs, {tokens / 1e6:.1f}M tokens in {wall_s:.0f} s of sweep wall "
        f"time = {rate:,.0f} tokens/s whole-sweep ({in_runs:.0f} s inside the runs' loops)"
    )


def table(runs: dict[str, dict]) -> list[str]:
    lines = [f"  {'run':<34} {'status':<9} {'final loss':>10} {'wall s':>7} {'tokens/s':>11}"]
    for rid, r in sorted(runs.items(), key=lambda kv: key(kv[0])):
        loss = r.get("final_val_loss")
        shown = "n/a" if loss is None else f"{loss:.4f}"
        lines.append(
            f"  {key(rid):<34} {r.get('status', '?'):<9} {shown:>10} "
            f"{r.get('wall_time_s') or 0:>7.1f} {r.get('tokens_per_s') or 0:>11,.0f}"
        )
    return lines


def compare(unfused: dict[str, dict], fused: dict[str, dict]) -> str:
    a = {key(k): v for k, v in unfused.items()}
    b = {key(k): v for k, v in fused.items()}
    both = sorted(set(a) & set(b))
    same = sum(a[k].get("status") == b[k].get("status") for k in both)
    diffs = [
        abs(a[k]["final_val_loss"] - b[k]["final_val_loss"])
        for k in both
        if a[k].get("final_val_loss") is not None and b[k].get("final_val_loss") is not None
    ]
    worst = f"{max(diffs):.2e}" if diffs else "n/a"
    return (
        f"fused against unfused: {len(both)} runs in both, the same fate in {same}, "
        f"largest final-loss difference {worst}"
    )


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 5):
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    root = Path(argv[0])
    unfused = runs_of(root / argv[1])
    print(sweep_line(argv[1], unfused, float(argv[2])))
    print("\n".join(table(unfused)))
    if len(argv) == 5:
        fused = runs_of(root / argv[3])
        print(sweep_line(argv[3], fused, float(argv[4])))
        print(compare(unfused, fused))
        if unfused and fused and float(argv[4]) > 0:
            print(f"fused speed-up, whole sweep: x{float(argv[2]) / float(argv[4]):.2f}")
    rates = [r["tokens_per_s"] for r in unfused.values() if r.get("tokens_per_s")]
    if rates:
        rates.sort()
        print(
            f"for the dry run: whole-run tokens/s of one run, median {rates[len(rates) // 2]:,.0f} "
            f"(range {rates[0]:,.0f}-{rates[-1]:,.0f}; compilation, evaluations and checkpoints "
            "included)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
