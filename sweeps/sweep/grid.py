"""How a sweep's LR grid grows once runs finish (docs/STUDY.md section 6): extension upward
until runs fail, then adaptive refinement of each failure bracket and of the necessity
threshold's bracket down to the spec's resolution.

Pure: from the spec, the planned configs and the finished runs' summaries to the LRs to add.
Only the arms on the whole grid grow; every new LR runs for every seed.
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from sweeps.core.config import RunConfig
from sweeps.run.outcomes import FAILED, effective_loss
from sweeps.sweep.spec import SweepSpec, round_lr
from sweeps.study.stats import critical_lr, necessity

RESOLUTION_SLACK = 1.01


def grid_additions(spec: SweepSpec, configs: list[RunConfig], summaries: dict[str, dict | None]
                   ) -> dict[int, tuple[list[float], str]]:
    """LRs to add per depth, with the reason. summaries: run_id -> summary (None: unfinished).
    A run that failed as a process counts as unknown."""
    by_depth = defaultdict(list)
    full = {a.name for a in spec.arms if a.full}
    for cfg in configs:
        if cfg.arm in full:
            by_depth[cfg.model.n_layer].append((cfg, summaries.get(cfg.run_id)))
    out = {}
    for depth, runs in by_depth.items():
        added = _extension(spec, runs)
        if added is None and spec.extend.refine and all(s is not None for _, s in runs):
            added = _refinement(spec, runs)
        if added:
            out[depth] = added
    return out


def extension_points(spec: SweepSpec) -> list[float]:
    """The LRs extension may add above the grid, each new and higher than the one before
    (a factor too close to 1 to clear the rounding gives fewer; spec.py refuses those)."""
    points: list[float] = []
    for k in range(1, spec.extend.max_extra_lrs + 1):
        lr = round_lr(spec.lr[-1] * spec.extend_factor ** k)
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
    return [points[extra]], (f"{which} at lr {planned[-1]:g} failed; extension {extra + 1} of "
                             f"{len(points)}")


def _refinement(spec: SweepSpec, runs: list) -> tuple[list[float], str] | None:
    """Midpoints of every bracket wider than the resolution: each full-grid arm's and seed's
    (last ok LR, first failing LR), and the primary comparison's necessity threshold."""
    mids: dict[float, list[str]] = {}
    for arm, seed, (ok, fail) in _failure_brackets(runs):
        _add_midpoint(mids, spec, ok, fail, f"{arm} seed {seed}: {ok:g} ok, {fail:g} fails")
    bracket = _threshold_bracket(spec, runs)
    if bracket:
        _add_midpoint(mids, spec, *bracket, f"necessity threshold between {bracket[0]:g} and "
                                            f"{bracket[1]:g}")
    planned = {cfg.train.lr for cfg, _ in runs}
    new = sorted(lr for lr in mids if lr not in planned)
    if not new:
        return None
    reasons = "; ".join(r for lr in new for r in mids[lr])
    return new, f"refining to {spec.extend.resolution:g} decades ({reasons})"


def _add_midpoint(mids: dict, spec: SweepSpec, lo: float, hi: float, reason: str) -> None:
    if _resolved(math.log10(hi / lo), spec):
        return
    mid = round_lr(math.sqrt(lo * hi))
    if lo < mid < hi:
        mids.setdefault(mid, []).append(reason)


def _resolved(width: float, spec: SweepSpec) -> bool:
    """A bracket of `width` decades is fine enough; 1% slack absorbs the three-digit rounding
    of LRs (sqrt(10) becomes 3.16, a gap of 0.5003 decades)."""
    return width <= spec.extend.resolution * RESOLUTION_SLACK


def _failure_brackets(runs: list):
    """(arm, seed, (ok LR, failing LR)) for every arm and seed with a failure inside its LRs."""
    cells = defaultdict(dict)
    for cfg, summary in runs:
        if summary["status"] != "failed":
            cells[(cfg.arm, cfg.seed)][cfg.train.lr] = (summary["status"] in FAILED,
                                                        effective_loss(summary))
    for (arm, seed), by_lr in sorted(cells.items()):
        lrs = sorted(by_lr)
        crit = critical_lr(lrs, [by_lr[lr][0] for lr in lrs], [by_lr[lr][1] for lr in lrs])
        if crit.inside:
            yield arm, seed, crit.bracket


def _threshold_bracket(spec: SweepSpec, runs: list) -> tuple[float, float] | None:
    """The primary comparison's necessity-threshold bracket, when it lies inside the grid."""
    d, lrs, seeds, ceiling = paired_differences(runs, spec.study.reference, spec.study.primary)
    if not lrs:
        return None
    threshold = necessity(lrs, d, ceiling, spec.study.min_effect).threshold
    return threshold.bracket if threshold.inside else None


def paired_differences(runs: list, baseline: str, treatment: str):
    """(d [LR, seed], LRs, seeds, common-ceiling mask) of baseline minus treatment effective
    losses, from (config, summary) pairs; NaN where a pair is missing."""
    loss, failed = {}, {}
    for cfg, summary in runs:
        value = effective_loss(summary)
        if cfg.arm in (baseline, treatment) and value is not None:
            loss[(cfg.arm, cfg.train.lr, cfg.seed)] = value
            failed[(cfg.arm, cfg.train.lr, cfg.seed)] = summary["status"] in FAILED
    lrs = sorted({lr for arm, lr, _ in loss if arm == baseline}
                 & {lr for arm, lr, _ in loss if arm == treatment})
    seeds = sorted({seed for _, _, seed in loss})
    d = np.array([[loss.get((baseline, lr, s), math.nan) - loss.get((treatment, lr, s), math.nan)
                   for s in seeds] for lr in lrs]).reshape(len(lrs), len(seeds))
    ceiling = [all(f for (arm, x, _), f in failed.items() if x == lr) for lr in lrs]
    return d, lrs, seeds, ceiling


def check_size(spec: SweepSpec, max_runs: int) -> None:
    """Refuse a sweep whose grid, grown to its limits, has more than max_runs runs: counted
    from the spec (spec.grid_runs + max_extra_runs), before any config is built."""
    extra = max_extra_runs(spec)
    if spec.grid_runs + extra > max_runs:
        raise spec.size_error(max_runs, extra)


def max_extra_runs(spec: SweepSpec) -> int:
    """The most runs extension and refinement can add to the planned grid: every extension
    LR, then per refinement round (each halves the widest gap until the resolution) one new LR
    per failure bracket (full-grid arm x seed) and one for the threshold, at most one per gap;
    each new LR runs for every full-grid arm and seed."""
    full = sum(a.full for a in spec.arms)
    per_lr = full * len(spec.seed)
    depths = len(spec.n_layer) or 1
    lrs = list(spec.lr) + extension_points(spec)
    gaps = [math.log10(b / a) for a, b in zip(lrs, lrs[1:])]
    refine = 0
    if spec.extend.refine and gaps:
        widest = max(gaps) / (spec.extend.resolution * RESOLUTION_SLACK)
        rounds = max(0, math.ceil(math.log2(widest))) if widest > 1 else 0
        brackets = per_lr + 1
        refine = sum(min(brackets, len(gaps) * 2 ** r) for r in range(rounds))
    return depths * per_lr * (spec.extend.max_extra_lrs + refine)
