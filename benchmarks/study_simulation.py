"""The study's rules on simulated sweeps (docs/STUDY.md section 7): per condition, the share
of null sweeps with a false threshold, the share of planted 3-sigma thresholds recovered
within one grid step (the worst of three planted LRs: low, middle, high), the refinement
loop's false and recovered shares, and H1 / H2a / H2b false support under nulls where both
arms fail at the same true LR with seed jitter (sweeps/study/simulate.py).

    python benchmarks/study_simulation.py --seeds 3 4 5 --sweeps 2000

--old PATH judges the same simulated sweeps with an older sweeps/study/stats.py (e.g. `git
show REV:sweeps/study/stats.py > /tmp/old_stats.py`): its necessity rule and paired t bounds
as they were (failed runs at the loss at init, no floor, no gate); refinement is not run.
"""

import argparse
import importlib.util
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sweeps.study import simulate as sim  # noqa: E402


def old_rates(old, cond, sweeps: int) -> tuple[float, float]:
    """False thresholds and worst recovery under the old necessity rule."""

    def found(loss, failing):
        d = loss[:, 0] - loss[:, 1]
        ceiling = failing.all(axis=(1, 3))
        out = []
        for b in range(len(d)):
            t = old.necessity(list(cond.lrs), d[b], ceiling[b], cond.min_effect).threshold
            top = t.bracket[1] if t.inside else t.value
            out.append(-1 if t.kind == "none" else int(np.argmin(np.abs(cond.lrs - top))))
        return np.array(out)

    loss, failing, _ = sim.draw(cond, np.random.default_rng(1), sweeps)
    false = float(np.mean(found(loss, failing) >= 0))
    rec = []
    for p in planted_lrs(cond):
        loss, failing, _ = sim.draw(
            cond, np.random.default_rng(2), sweeps, planted_lr=np.full(sweeps, cond.lrs[p])
        )
        k = found(loss, failing)
        rec.append(float(np.mean((k >= 0) & (np.abs(k - p) <= 1))))
    return false, min(rec)


def old_nulls(old, cond, sweeps: int) -> dict:
    """H1 / H2a / H2b false support under the old rules (t bounds without a floor)."""
    rng = np.random.default_rng(4)
    lrs = cond.lrs
    support = {"H1": [], "H2a": [], "H2b": []}
    for _ in range(sweeps):
        x, f, _ = sim.draw(cond, rng, 1)
        edge = rng.uniform(np.log10(lrs[4]), np.log10(lrs[-2]))
        f = f[0] | (np.log10(lrs)[None, :, None] > edge + rng.normal(0, 0.15, (2, 1, cond.seeds)))
        x = np.where(f, sim.L0, x[0])
        d = x[0] - x[1]
        n = old.necessity(list(lrs), d, f.all(axis=(0, 2)), cond.min_effect)
        low = n.stats[0] if n.lrs and n.lrs[0] == lrs[0] else None
        support["H1"].append(
            low is not None and low.lb <= cond.min_effect and low.mean < 0.05 and n.threshold.inside
        )
        crit = [
            [
                old.critical_lr(list(lrs), list(f[a, :, k]), list(x[a, :, k]))
                for k in range(cond.seeds)
            ]
            for a in range(2)
        ]
        r = [
            math.log10(on.value / off.value)
            for off, on in zip(*crit)
            if off.kind in ("", "above") and on.kind in ("", "above")
        ]
        support["H2a"].append(old.paired(r).lb > 0)
        s = [[old.sensitivity(x[a, :, k]) for k in range(cond.seeds)] for a in range(2)]
        support["H2b"].append(old.paired(np.subtract(*s)).lb > 0)
    return {k: float(np.mean(v)) for k, v in support.items()}


def planted_lrs(cond) -> list[int]:
    return [2, cond.n_lr // 2, cond.n_lr - 3 - cond.ceiling]


def new_row(cond, sweeps: int, refine: int) -> dict:
    false = sim.false_thresholds(cond, sweeps)
    rec = min(sim.recovery(cond, sweeps, p) for p in planted_lrs(cond))
    ref = sim.refined_rates(cond, refine) if refine else (math.nan, math.nan)
    return {"false": false, "recovery": rec, "refined": ref, **sim.hypothesis_nulls(cond, sweeps)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 5])
    parser.add_argument("--sweeps", type=int, default=2000, help="simulated sweeps per cell")
    parser.add_argument(
        "--refine",
        type=int,
        default=200,
        help="sweeps per cell through the refinement loop (0: skip)",
    )
    parser.add_argument("--old", help="an older sweeps/study/stats.py to judge with instead")
    args = parser.parse_args(argv)
    old = None
    if args.old:
        spec = importlib.util.spec_from_file_location("old_stats", args.old)
        old = importlib.util.module_from_spec(spec)
        sys.modules["old_stats"] = old
        spec.loader.exec_module(old)
    start = time.time()
    print(
        "| seeds | condition | false thresholds | recovery (worst of 3 planted LRs) | "
        "refined: false / recovery | false H1 / H2a / H2b | sweeps |"
    )
    print("|---|---|---|---|---|---|---|")
    for seeds in args.seeds:
        for cond in sim.CONDITIONS:
            cond = sim.with_seeds(cond, seeds)
            if old is not None:
                false, rec = old_rates(old, cond, args.sweeps)
                h = old_nulls(old, cond, args.sweeps)
                refined = "n/a"
            else:
                row = new_row(cond, args.sweeps, args.refine)
                false, rec, h = row["false"], row["recovery"], row
                refined = (
                    f"{row['refined'][0]:.1%} / {row['refined'][1]:.1%}" if args.refine else "n/a"
                )
            print(
                f"| {seeds} | {cond.name} | {false:.1%} | {rec:.1%} | {refined} | "
                f"{h['H1']:.1%} / {h['H2a']:.1%} / {h['H2b']:.1%} | {args.sweeps} |",
                flush=True,
            )
    print(f"\n{time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
