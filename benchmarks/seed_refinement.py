"""Refinement that bisects each seed's stability bracket (docs/STUDY.md section 25), against
the rule before it (failure brackets and the pooled threshold's only), on simulated sweeps grown
by the runner's own loop (sweeps.study.simulation.sweep.refined_sweep, resolution 1/8
decade): how many per-seed thresholds are still read from a bracket wider than the resolution,
how many LRs the grown grid judges, and how often the planted threshold is recovered within one
base-grid step.

    python benchmarks/seed_refinement.py [--sweeps 300]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from sweeps.study import judge
from sweeps.study.simulation import sweep as sim

RESOLUTION = 0.125


def before_section_25(cells, study, arms):
    """The refinement brackets as v18 chose them: no seed's stability-threshold bracket."""
    return [
        b
        for b in judge.refinement_brackets(cells, study, arms)
        if not (b.arm is None and b.seed is not None)
    ]


def rates(cond: sim.Condition, sweeps: int, brackets_of, seed: int = 3) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    step = 4 / (cond.n_lr - 1)
    widths, lrs, hits = [], [], []
    for _ in range(sweeps):
        planted = 10 ** rng.uniform(-2.0, -4 + (cond.n_lr - 3) * step)
        edge = planted * 10**sim.EDGE_ABOVE_PLANTED
        j = sim.refined_sweep(cond, rng, planted, edge, RESOLUTION, brackets_of)
        lrs.append(len(j.pairs.lrs))
        widths += [
            math.log10(v.bracket[1] / v.bracket[0])
            for v in j.necessity.seed_thresholds
            if v.inside and v.bracket
        ]
        t = j.necessity.threshold
        value = t.bracket[1] if t.inside else t.value
        hits.append(t.kind in ("", "below") and abs(math.log10(value / planted)) <= step * 1.01)
    w = np.asarray(widths)
    return {
        "seed brackets wider than 1/4 decade": float((w > 0.25 * 1.01).mean()),
        "wider than 1/8 decade": float((w > RESOLUTION * 1.01).mean()),
        "LRs judged": float(np.mean(lrs)),
        "recovered": float(np.mean(hits)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=300, help="simulated sweeps per cell")
    args = parser.parse_args(argv)
    began = time.time()
    print(
        "| condition | rule | seed brackets wider than 1/4 decade | than 1/8 | LRs judged | "
        "recovered |"
    )
    print("|---|---|---|---|---|---|")
    for cond in (sim.CONDITIONS[0], sim.CONDITIONS[5]):
        for name, rule in (("v18", before_section_25), ("v19", judge.refinement_brackets)):
            r = rates(cond, args.sweeps, rule)
            print(
                f"| {cond.name} | {name} | {r['seed brackets wider than 1/4 decade']:.1%} | "
                f"{r['wider than 1/8 decade']:.1%} | {r['LRs judged']:.1f} | "
                f"{r['recovered']:.1%} |"
            )
    print(f"\n{args.sweeps} sweeps a cell, planted thresholds, {time.time() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
