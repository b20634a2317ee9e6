"""The real-scale `depth` spec's design (docs/STUDY.md section 27), chosen before any of its
runs: for each candidate (its rungs, LR grid, arms and refinement resolution) its planned runs
and the most growth can add, its cost on the one GPU this project has measured (the dry run's
figures: sweeps/sweep/measured.py, priced in float32 and in bfloat16 whatever the spec's
precision), and H3's power and false rates simulated at the measured seed scatter.

Every candidate is sweeps/specs/depth.toml with its grid, arms and resolution replaced, parsed
and planned by the spec's own code, so its run counts are the dry run's. H3 is simulated by
section 13's simulated ladder (sweeps/study/simulation/rungs.py) on the LRs a grown sweep
judges at the candidate's resolution, seeds scattering SCATTER decades about their rung, at
rung sds 0.15, 0.25 and 0.3; "with reversal": section 17's rule that a verdict one rung
reverses is inconclusive. Identical arms: QK-norm never matters (section 22's null ladder).

    python benchmarks/real_study_design.py --ladders 4000
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.depth_design import print_table  # noqa: E402  (one table format)
from sweeps.study.simulation import rungs as sim  # noqa: E402
from sweeps.sweep.grid import max_extra_runs  # noqa: E402
from sweeps.sweep.measured import H200, MEASURED, PRICE_PER_GPU_HOUR, run_seconds  # noqa: E402
from sweeps.sweep.spec import SPECS_DIR, parse_spec  # noqa: E402

SCATTER = 0.2  # decades: a seed's threshold about its rung (cpu-depth-matched measured 0.199)
RUNG_SDS = (0.15, 0.25, 0.3)
PREDICTION, MODERATE = -0.25, -0.15
HALF_DECADES = (1e-4, 3.16e-4, 1e-3, 3.16e-3, 1e-2, 3.16e-2, 0.1, 0.316, 1.0)
PRICED = (  # (mode, dtype): the measured entries the table prices every candidate with
    ("eager", "float32"),
    ("compiled", "float32"),
    ("compiled", "bfloat16"),
)


@dataclass(frozen=True)
class Candidate:
    name: str
    depths: tuple[int, ...]
    set_apart: tuple[int, ...]  # rungs trained beside and left out of H3 (section 22)
    lrs: tuple[float, ...]
    warm: bool  # the start-matched control off-warm at the three lowest LRs
    resolution: float  # refinement's, decades

    @property
    def h3_depths(self) -> tuple[int, ...]:
        return tuple(d for d in self.depths if d not in self.set_apart)


TWO_TO_TWELVE = (1, 2, 3, 4, 6, 8, 12)  # section 22's rungs, depth 1 beside them
FROM_3E4 = HALF_DECADES[1:]
CANDIDATES = [
    Candidate("v19's spec", (1, 2, 3, 4, 6, 8), (), HALF_DECADES, True, 0.125),
    Candidate("section 22's rungs", TWO_TO_TWELVE, (1,), HALF_DECADES, True, 0.125),
    Candidate("... no off-warm", TWO_TO_TWELVE, (1,), HALF_DECADES, False, 0.125),
    Candidate("... from 3.16e-4", TWO_TO_TWELVE, (1,), FROM_3E4, False, 0.125),
    Candidate("... refined to 1/4 (chosen)", TWO_TO_TWELVE, (1,), FROM_3E4, False, 0.25),
    Candidate("... from 1e-3", TWO_TO_TWELVE, (1,), HALF_DECADES[2:], False, 0.25),
    Candidate("without depth 12", (1, 2, 3, 4, 6, 8), (1,), FROM_3E4, False, 0.25),
]


def spec_of(c: Candidate):
    """sweeps/specs/depth.toml with the candidate's grid, arms and resolution (off-warm as
    sweeps/specs/core.toml declares it, at the candidate's three lowest LRs)."""
    raw = tomllib.loads((SPECS_DIR / "depth.toml").read_text())
    raw["grid"] = {**raw["grid"], "lr": list(c.lrs), "n_layer": list(c.depths)}
    study = {k: v for k, v in raw["study"].items() if k not in ("set_apart", "start_control")}
    if c.warm:
        warm = tomllib.loads((SPECS_DIR / "core.toml").read_text())["arms"]["off-warm"]
        raw["arms"] = {**raw["arms"], "off-warm": {**warm, "lr": list(c.lrs[:3])}}
        study["start_control"] = "off-warm"
    if c.set_apart:
        study["set_apart"] = list(c.set_apart)
    lo, hi = study["sensitivity_range"]
    study["sensitivity_range"] = [max(lo, c.lrs[0]), hi]
    raw["study"] = study
    raw["extend"] = {**raw["extend"], "resolution": c.resolution}
    return parse_spec(raw, "depth")


def cost_row(c: Candidate) -> dict:
    spec = spec_of(c)
    configs = spec.configs("torch")
    extra = max_extra_runs(spec)
    row = {
        "candidate": c.name,
        "depths (H3; apart)": ", ".join(map(str, c.h3_depths))
        + (f"; {', '.join(map(str, c.set_apart))}" if c.set_apart else ""),
        "LRs": f"{len(c.lrs)} from {c.lrs[0]:g}" + (" + off-warm" if c.warm else ""),
        "resolution": f"1/{round(1 / c.resolution)}",
        "planned runs (at most with growth)": f"{len(configs)} ({len(configs) + extra})",
    }
    for mode, dtype in PRICED:
        m = next(x for x in MEASURED if (x.device, x.backend, x.mode, x.dtype) == (
            H200, "torch", mode, dtype))  # fmt: skip
        per_run = [run_seconds(m, replace(cfg, train=replace(cfg.train, dtype=dtype)))
                   for cfg in configs]  # fmt: skip
        planned, worst = sum(per_run), sum(per_run) + extra * max(per_run)
        row[f"H200 {mode} {dtype}: h planned ($), at most"] = (
            f"{planned / 3600:.1f} (${planned / 3600 * PRICE_PER_GPU_HOUR:.0f}), {worst / 3600:.0f}"
        )
    return row


def power_row(c: Candidate, ladders: int) -> dict:
    grid = tuple(sim.ladder_lrs(c.resolution))
    row = {"candidate": c.name, "H3 on depths": ", ".join(map(str, c.h3_depths))}
    for k, sd in enumerate(RUNG_SDS):
        lad = sim.Ladder(c.name, c.h3_depths, 4, sd, SCATTER, grid=grid)
        p25 = sim.verdict_rates(lad, ladders, PREDICTION, 31 + k)
        p15 = sim.verdict_rates(lad, ladders, MODERATE, 41 + k)
        flat = sim.verdict_rates(lad, ladders, 0.0, 51 + k)
        row[f"sd {sd}: power at -0.25 (rule / with reversal), at -0.15"] = (
            f"{p25[0]:.0%} / {p25[1]:.0%}, {p15[1]:.0%}"
        )
        row[f"sd {sd}: false sup., false r.o."] = f"{flat[1]:.1%}, {p25[2]:.1%}"
    null = replace(sim.Ladder(c.name, c.h3_depths, 4, 0.15, SCATTER, grid=grid), identical=True)
    said = [
        float((sim.ladder_verdicts(null, ladders, edge, PREDICTION, 61)[0] != 0).mean())
        for edge in (0.0, PREDICTION)
    ]
    row["identical arms: any verdict (edge flat / falling)"] = f"{said[0]:.1%} / {said[1]:.1%}"
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ladders", type=int, default=4000, help="simulated ladders per cell")
    parser.add_argument("--cost-only", action="store_true", help="skip the simulations")
    args = parser.parse_args(argv)
    began = time.time()
    print(
        "cost: the dry run's model (one run at a time, every planned run to its last step, "
        "speeds scaled by FLOPs per token; bfloat16 measured over training steps only); "
        f"dollars at ${PRICE_PER_GPU_HOUR:.2f} an H200-hour\n"
    )
    print_table([cost_row(c) for c in CANDIDATES])
    if not args.cost_only:
        print(f"\nH3, 4 seeds scattering {SCATTER} decades, {args.ladders} ladders a cell:\n")
        seen = {}
        rows = []
        for c in CANDIDATES:  # candidates with the same rungs and resolution share a row
            key = (c.h3_depths, c.resolution)
            if key not in seen:
                seen[key] = power_row(c, args.ladders)
                rows.append(seen[key])
        print_table(rows)
    print(f"\n{time.time() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
