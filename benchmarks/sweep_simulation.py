"""The study's rules on simulated sweeps (docs/STUDY.md section 7): per condition, the share
of null sweeps with a false threshold, the share of planted 3-sigma thresholds recovered
within one grid step (the worst of three planted LRs: low, middle, high), the refinement
loop's false and recovered shares, and H1 / H2a / H2b false support under nulls where both
arms fail at the same true LR with seed jitter (sweeps/study/simulation/sweep.py).

    python benchmarks/sweep_simulation.py --seeds 4 --sweeps 4000 --refine 400 --v3 67836d6

--v3 REV judges the same simulated sweeps with the rules of an older revision as well (its
sweeps/study/stats.py and rules.py, read with `git show`): v3 counted every failed run at its
loss at initialization, pooled a noise floor over the clean LRs and skipped LRs where failures
mixed. Refinement is run under the current rules only. The power table at the end shows, per
LR, how often QK-norm is shown necessary with and without a stuck seed (the power a bimodal
seed costs the other LRs).
"""

import argparse
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sweeps.study.simulation import sweep as sim  # noqa: E402


def load_revision(rev: str) -> tuple[types.ModuleType, types.ModuleType]:
    """(stats, rules) of sweeps/study at a git revision, rules bound to that stats."""

    def source(path: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    stats = types.ModuleType("old_stats")
    stats.__file__ = str(ROOT / "sweeps" / "study" / "stats.py")
    sys.modules["old_stats"] = stats  # dataclasses look their module up
    exec(compile(source("sweeps/study/stats.py"), "old_stats", "exec"), stats.__dict__)
    saved = sys.modules["sweeps.study.stats"]
    sys.modules["sweeps.study.stats"] = stats  # the old rules import the old stats
    try:
        rules = types.ModuleType("old_rules")
        rules.__file__ = str(ROOT / "sweeps" / "study" / "rules.py")
        sys.modules["old_rules"] = rules
        exec(compile(source("sweeps/study/rules.py"), "old_rules", "exec"), rules.__dict__)
    finally:
        sys.modules["sweeps.study.stats"] = saved
    return stats, rules


# -- the v3 rules on the same simulated sweeps --------------------------------------------------
def v3_thresholds(old, loss, failing, min_effect: float) -> np.ndarray:
    """v3's vectorised decision: every failed run at L0, the pooled noise floor, mixed LRs
    skipped."""
    stats, rules = old
    loss = np.where(failing, sim.L0, loss)
    d = loss[:, 0] - loss[:, 1]
    ceiling = failing.all(axis=(1, 3))
    clean = ~failing.any(axis=(1, 3))
    floor = stats.noise_floor(d, clean & ~ceiling)
    a = stats.paired_arrays(d, floor[:, None])
    mixed = rules.mixed_failures(failing, np.ones(failing.shape, bool))
    judged = ~ceiling & ~mixed & (a["n"] >= stats.MIN_PAIRS) & np.isfinite(a["lower"])
    return stats.threshold_index(a["lower"], a["lower75"], judged, min_effect)


def v3_rates(old, cond, sweeps: int) -> tuple[float, float]:
    loss, failing, _, _ = sim.draw(cond, np.random.default_rng(1), sweeps)
    false = float(np.mean(v3_thresholds(old, loss, failing, cond.min_effect) >= 0))
    rec = []
    for p in sim.planted_indices(cond):
        at = np.full(sweeps, cond.lrs[p])
        loss, failing, _, _ = sim.draw(cond, np.random.default_rng(2), sweeps, planted_lr=at)
        k = v3_thresholds(old, loss, failing, cond.min_effect)
        rec.append(float(np.mean((k >= 0) & (np.abs(k - p) <= 1))))
    return false, min(rec)


def v3_nulls(old, cond, sweeps: int) -> dict:
    """H1 / H2a / H2b false support under v3's rules on the same null sweeps."""
    _, rules = old
    rng = np.random.default_rng(4)
    support = {"H1": [], "H2a": [], "H2b": []}
    for _ in range(sweeps):
        loss, failing, _ = sim.null_with_edge(cond, rng)
        loss = np.where(failing, sim.L0, loss)
        ids = np.full(loss.shape, None, dtype=object)
        cells = rules.Cells(
            ("off", "on"), tuple(cond.lrs), tuple(range(cond.seeds)), loss, failing, ids
        )
        n = rules.compare(cells, rules.Comparison("off", "on"), cond.min_effect, influence=False)
        n = n.necessity
        low = n.stats[0] if n.lrs and n.lrs[0] == cond.lrs[0] else None
        support["H1"].append(
            low is not None and rules.negligible(low, cond.min_effect, 0.05) and n.threshold.inside
        )
        p, _ = rules.h2a_stats(rules.critical_lrs(cells, "off"), rules.critical_lrs(cells, "on"))
        support["H2a"].append(rules.paired_verdict(p) == rules.SUPPORTED)
        s = {arm: rules.sensitivities(cells, arm, cond.lrs) for arm in ("off", "on")}
        q = rules.h2b_stats(s["off"], s["on"], n.floor)
        support["H2b"].append(rules.paired_verdict(q, 0.05) == rules.SUPPORTED)
    return {k: float(np.mean(v)) for k, v in support.items()}


# -- the current rules --------------------------------------------------------------------------
def v4_row(cond, sweeps: int, refine: int) -> dict:
    false = sim.false_thresholds(cond, sweeps)
    rec = min(sim.recovery(cond, sweeps, p) for p in sim.planted_indices(cond))
    ref = sim.refined_rates(cond, refine) if refine else None
    return {"false": false, "recovery": rec, "refined": ref, **sim.hypothesis_nulls(cond, sweeps)}


def power_table(sweeps: int) -> None:
    """Per LR, the share of planted sweeps where QK-norm is shown necessary there (planted at
    the middle LR): without a bimodal seed, and with one (at the other LRs, and at its own)."""
    base = sim.CONDITIONS[0]
    stuck = next(c for c in sim.CONDITIONS if c.stuck_seed and c.noise == base.noise)
    planted = base.n_lr // 2
    without, _ = sim.necessary_rate(base, sweeps, planted)
    other, at = sim.necessary_rate(stuck, sweeps, planted)
    print(f"\nPower per LR (planted at LR {base.lrs[planted]:.3g}, {sweeps} sweeps):\n")
    print("| LR | " + " | ".join(f"{lr:.3g}" for lr in base.lrs) + " |")
    print("|---" * (len(base.lrs) + 1) + "|")
    for name, row in (
        ("no bimodal seed", without),
        ("bimodal seed at another LR", other),
        ("bimodal seed at this LR", at),
    ):
        print(f"| {name} | " + " | ".join("-" if np.isnan(x) else f"{x:.1%}" for x in row) + " |")
    effect = slice(planted, None)
    print(
        f"\nmean power over the LRs with the effect: {without[effect].mean():.1%} without a "
        f"bimodal seed, {other[effect].mean():.1%} at the LRs it is not at, "
        f"{np.nanmean(at[effect]):.1%} at its own LR"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[4])
    parser.add_argument("--sweeps", type=int, default=2000, help="simulated sweeps per cell")
    parser.add_argument(
        "--refine", type=int, default=200, help="sweeps per cell through the refinement loop"
    )
    parser.add_argument("--v3", metavar="REV", help="also judge with the rules at this revision")
    args = parser.parse_args(argv)
    old = load_revision(args.v3) if args.v3 else None
    start = time.time()
    head = "| seeds | condition | false thresholds | recovery | refined: false / recovery | "
    head += "false H1 / H2a / H2b |"
    if old:
        head += " v3: false / recovery | v3: false H1 / H2a / H2b |"
    print(head + "\n" + "|---" * head.count(" |") + "|")
    for seeds in args.seeds:
        for cond in sim.CONDITIONS:
            cond = sim.with_seeds(cond, seeds)
            r = v4_row(cond, args.sweeps, args.refine)
            refined = f"{r['refined'][0]:.1%} / {r['refined'][1]:.1%}" if r["refined"] else "-"
            line = (
                f"| {seeds} | {cond.name} | {r['false']:.1%} | {r['recovery']:.1%} | {refined} | "
                f"{r['H1']:.1%} / {r['H2a']:.1%} / {r['H2b']:.1%} |"
            )
            if old:
                false, rec = v3_rates(old, cond, args.sweeps)
                h = v3_nulls(old, cond, args.sweeps)
                line += (
                    f" {false:.1%} / {rec:.1%} | {h['H1']:.1%} / {h['H2a']:.1%} / {h['H2b']:.1%} |"
                )
            print(line, flush=True)
    power_table(args.sweeps)
    print(f"\n{time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
