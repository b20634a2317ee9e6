"""How a sweep's LR grid grows once runs finish (docs/STUDY.md section 6): extension upward
until runs fail, then adaptive refinement of each failure bracket and of the necessity
threshold's bracket down to the spec's resolution.

Pure: from the spec, the planned configs and the finished runs' summaries to the LRs to add.
Only the arms on the whole grid grow; every new LR runs for every seed. Which brackets to
bisect is a rule of the study (sweeps.study.judge.refinement_brackets, the same code the
report and the simulations of docs/STUDY.md section 7 use); this module only grows the grid.
"""

from __future__ import annotations

import math
from collections import defaultdict

from sweeps.core.config import RunConfig
from sweeps.run.outcomes import FAILED
from sweeps.study.judge import refinement_brackets
from sweeps.study.rules import (
    RESOLUTION_SLACK,
    Bracket,
    midpoints,
    recorded_baseline,
    round_lr,
    study_cells,
)
from sweeps.sweep.spec import SweepSpec


def grid_additions(
    spec: SweepSpec, configs: list[RunConfig], summaries: dict[str, dict | None]
) -> dict[int, tuple[list[float], str]]:
    """LRs to add per rung (its depth, or its width in a width ladder), with the reason.
    summaries: run_id -> summary (None: unfinished). A run that failed as a process counts as
    unknown."""
    by_rung = defaultdict(list)
    full = {a.name for a in spec.arms if a.full}
    for cfg in configs:
        if cfg.arm in full:
            by_rung[getattr(cfg.model, spec.ladder)].append((cfg, summaries.get(cfg.run_id)))
    out = {}
    for rung, runs in by_rung.items():
        added = _extension(spec, runs)
        if added is None and spec.extend.refine and all(s is not None for _, s in runs):
            added = _refinement(spec, runs)
        if added:
            out[rung] = added
    return out


def extension_points(spec: SweepSpec) -> list[float]:
    """The LRs extension may add above the grid, each new and higher than the one before
    (a factor too close to 1 to clear the rounding gives fewer; spec.py refuses those)."""
    points: list[float] = []
    for k in range(1, spec.extend.max_extra_lrs + 1):
        lr = round_lr(spec.lr[-1] * spec.extend_factor**k)
        if lr > (points[-1] if points else spec.lr[-1]):
            points.append(lr)
    return points


def _extension(spec: SweepSpec, runs: list) -> tuple[list[float], str] | None:
    """The next LR up while the runs at the top LR are finished and (until "any") none of
    them failed, or (until "all") not all of them; None when the depth is done extending
    or still waiting."""
    planned = sorted({cfg.train.lr for cfg, _ in runs})
    at_top = [s for cfg, s in runs if cfg.train.lr == planned[-1]]
    known = [s["status"] for s in at_top if s is not None and s["status"] != "failed"]
    if any(s is None for s in at_top) or not known:
        return None
    failing = [status in FAILED for status in known]
    if (any if spec.extend.until == "any" else all)(failing):
        return None
    points = extension_points(spec)
    extra = sum(lr <= planned[-1] for lr in points)  # only ever an LR above every planned one
    if extra >= len(points):
        return None
    which = "no run" if spec.extend.until == "any" else "not every run"
    return [points[extra]], (
        f"{which} at lr {planned[-1]:g} failed; extension {extra + 1} of {len(points)}"
    )


def _refinement(spec: SweepSpec, runs: list) -> tuple[list[float], str] | None:
    """Midpoints of every bracket wider than the resolution: each full-grid arm's and seed's
    (last ok LR, first failing LR) under the primary definition (stuck: so each run carries its
    recorded baseline), and the primary comparison's stability threshold."""
    rows = [
        {
            **summary,
            "run_id": cfg.run_id,
            "n_layer": cfg.model.n_layer,
            "arm": cfg.arm,
            "lr": cfg.train.lr,
            "seed": cfg.seed,
            "baseline_loss": recorded_baseline(cfg.train.baseline, summary),
        }
        for cfg, summary in runs
    ]
    cells = next(iter(study_cells(rows, spec.study).values()), None)
    if cells is None:
        return None
    full = [a.name for a in spec.arms if a.full]
    brackets = refinement_brackets(cells, spec.study, full)
    mids = midpoints(brackets, spec.extend.resolution, {cfg.train.lr for cfg, _ in runs})
    if not mids:
        return None
    reasons = "; ".join(bisected(b) for bs in mids.values() for b in bs)
    return list(mids), f"refining to {spec.extend.resolution:g} decades ({reasons})"


def bisected(b: Bracket) -> str:
    """A bracket refinement bisects, in words: 'off seed 1: 0.01 ok, 0.0316 fails',
    'stability threshold between 0.01 and 0.0316', or 'seed 1's stability threshold between
    0.01 and 0.0316'."""
    if b.arm is None:
        whose = "stability threshold" if b.seed is None else f"seed {b.seed}'s stability threshold"
        return f"{whose} between {b.lo:g} and {b.hi:g}"
    return f"{b.arm} seed {b.seed}: {b.lo:g} ok, {b.hi:g} fails"


def check_size(spec: SweepSpec, max_runs: int) -> None:
    """Refuse a sweep whose grid, grown to its limits, has more than max_runs runs: counted
    from the spec (spec.grid_runs + max_extra_runs), before any config is built."""
    extra = max_extra_runs(spec)
    if spec.grid_runs + extra > max_runs:
        raise spec.size_error(max_runs, extra)


def max_extra_runs(spec: SweepSpec) -> int:
    """The most runs extension and refinement can add to the planned grid: every extension
    LR, then per refinement round (each halves the widest gap until the resolution) one new LR
    per failure bracket (full-grid arm x seed), one for the pooled threshold and one per seed's
    threshold (section 25), at most one per gap; each new LR runs for every full-grid arm and
    seed."""
    full = sum(a.full for a in spec.arms)
    per_lr = full * len(spec.seed)
    brackets = per_lr + 1 + len(spec.seed)
    return sum(  # per rung: a rung of [rung_lr] refines its own gaps
        per_lr * (spec.extend.max_extra_lrs + _max_refinements(spec, spec.rung_lrs(r), brackets))
        for r in spec.rung_keys
    )


def _max_refinements(spec: SweepSpec, grid: tuple[float, ...], brackets: int) -> int:
    """The most LRs refinement can add at a rung whose grid LRs are `grid`, with at most
    `brackets` brackets to bisect a round."""
    lrs = list(grid) + extension_points(spec)
    gaps = [math.log10(b / a) for a, b in zip(lrs, lrs[1:])]
    if not (spec.extend.refine and gaps):
        return 0
    widest = max(gaps) / (spec.extend.resolution * RESOLUTION_SLACK)
    rounds = max(0, math.ceil(math.log2(widest))) if widest > 1 else 0
    return sum(min(brackets, len(gaps) * 2**r) for r in range(rounds))
