"""Study v5's rules on simulated rungs and ladders, beside v4's on the same draws (docs/STUDY.md
section 13 prints these tables; sweeps/study/simulation/rungs.py is the engine), and section 17's
harm window on the same simulated rungs (--harm: only that table).

    python benchmarks/rung_simulation.py --sweeps 4000 --ladders 4000
    python benchmarks/rung_simulation.py --harm --sweeps 4000
    python benchmarks/rung_simulation.py --messy --sweeps 4000

--messy: section 22's recovery table of the pooled stability threshold under messier failures
(random failures anywhere in the search range, one `off` seed on a plateau just under the stuck
cut, and one on a plateau deeper than section 23's margin), planted at 0.0316, 0.1 and 0.316
on the quarter-decade grid; each condition with the fates as recorded and under section 23's
plateau reading (0.15 nats).
"""

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sweeps.study import trend  # noqa: E402
from sweeps.study.simulation import rungs as sim  # noqa: E402


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def messy_table(sweeps: int) -> None:
    lrs = sim.MESSY_CONDITIONS[0].base.lrs
    planted = [f"{lrs[i]:.3g}" for i in sim.MESSY_PLANTED]
    print(f"Pooled stability threshold, {sweeps} simulated rungs a cell, 4 seeds, 17 LRs\n")
    print(
        "| condition | fates read | false threshold | "
        + " | ".join(f"recovered, planted at {p}" for p in planted)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(planted))
    for cond in sim.MESSY_CONDITIONS:
        for margin in (0.0, sim.PLATEAU_MARGIN):
            r = sim.rung_rates(cond, sweeps, planted=sim.MESSY_PLANTED, plateau_margin=margin)
            cells = [pct(r[f"v5 recovery at {p}"]) for p in planted]
            rule = f"plateau {margin:g}" if margin else "as recorded"
            print(f"| {cond.name} | {rule} | {pct(r['v5 false'])} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=4000)
    ap.add_argument("--ladders", type=int, default=4000)
    ap.add_argument("--harm", action="store_true", help="only section 17's harm-window table")
    ap.add_argument("--messy", action="store_true", help="only section 22's recovery table")
    args = ap.parse_args()
    start = time.time()
    if args.messy:
        messy_table(args.sweeps)
        print(f"\n({time.time() - start:.0f} s)")
        return
    if args.harm:
        harm_table(args.sweeps)
        print(f"\n({time.time() - start:.0f} s)")
        return
    print(f"Simulated rungs ({args.sweeps} per cell, 4 seeds; recovery: worst planted LR)\n")
    print(
        "| condition | false threshold v5 / v4 | recovery v5 / v4 | per seed: false v5 / v4 "
        "| per seed: recovery v5 / v4 |"
    )
    print("|---|---|---|---|---|")
    for cond in sim.RUNG_CONDITIONS:
        r = sim.rung_rates(cond, args.sweeps)
        print(
            f"| {cond.name} | {pct(r['v5 false'])} / {pct(r['v4 false'])} "
            f"| {pct(r['v5 recovery'])} / {pct(r['v4 recovery'])} "
            f"| {pct(r['v5 seed false'])} / {pct(r['v4 seed false'])} "
            f"| {pct(r['v5 seed recovery'])} / {pct(r['v4 seed recovery'])} |"
        )
    print(f"\nSimulated ladders ({args.ladders} per cell, prediction -0.25 decades per doubling)\n")
    print(
        "| design | rung sd | flat: v5 supported / ruled out | -0.25: v5 supported (analytic) "
        "/ ruled out | flat: v4 supported / not supported | -0.25: v4 supported / not supported |"
    )
    print("|---|---|---|---|---|---|")
    for lad in sim.LADDERS:
        for rung_sd in (0.1, trend.RUNG_SD):
            one = dataclasses.replace(lad, rung_sd=rung_sd)
            r = sim.ladder_rates(one, args.ladders)
            analytic = trend.power(
                one.sizes, one.seeds, -0.25, rung_sd=rung_sd, seed_sd=one.seed_sd
            )
            print(
                f"| {lad.name}, {lad.seeds} seeds | {rung_sd} "
                f"| {pct(r['flat: v5 supported'])} / {pct(r['flat: v5 ruled out'])} "
                f"| {pct(r['planted: v5 supported'])} ({pct(analytic)}) / "
                f"{pct(r['planted: v5 ruled out'])} "
                f"| {pct(r['flat: v4 supported'])} / {pct(r['flat: v4 not supported'])} "
                f"| {pct(r['planted: v4 supported'])} / {pct(r['planted: v4 not supported'])} |"
            )
    print(f"\n({time.time() - start:.0f} s)")


def harm_table(sweeps: int) -> None:
    print(
        f"The harm window on simulated rungs ({sweeps} per cell, 4 seeds; planted: QK-norm worse "
        f"by {sim.HARM} nats from the best LR to {sim.HARM_SPAN} decades above it; found: a harmed "
        "LR inside that range and none outside)\n"
    )
    print(
        "| condition | false harm: null / planted threshold | planted harm found: alone / below a "
        "planted threshold | pooled threshold: false / recovery |"
    )
    print("|---|---|---|---|")
    for cond in sim.RUNG_CONDITIONS:
        h, r = sim.harm_rates(cond, sweeps), sim.rung_rates(cond, sweeps)
        print(
            f"| {cond.name} | {pct(h['false harm, null'])} / {pct(h['false harm, threshold'])} "
            f"| {pct(h['harm found, null'])} / {pct(h['harm found, threshold'])} "
            f"| {pct(r['v5 false'])} / {pct(r['v5 recovery'])} |"
        )


if __name__ == "__main__":
    main()
