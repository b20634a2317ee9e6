"""The ladders' descriptive rules (docs/STUDY.md sections 5 and 11), on typed inputs: the
per-seed points and least-squares lines of the threshold over size (the trend chart, the line
without censored values, W1's line carried to the core width; the verdicts themselves are
sweeps/study/trend.py's), each arm's critical-LR line, the low-LR gap, LR sensitivity per
doubling of either ladder, W2's bound and each seed's best LR, and the depth ladder's
token-matched check.

The token-matched check: a depth ladder holds tokens per run fixed, so its deepest rung sees
the fewest tokens per parameter (depth 8 of `cpu-depth`: 5.6, against depth 4's 10.3). If the
threshold falls with depth (H3), part of that fall may be a short budget rather than depth. The
check reruns the deepest rung with the steps that match the reference rung's tokens per
parameter, at the LRs of its threshold bracket and of `off`'s critical-LR bracket; the trend
survives when both the check's threshold and its `off` median critical LR (failure definition
*stuck*) still lie below the reference rung's. Both below: survives; neither: the trend is a
tokens-per-parameter effect; one of the two: inconclusive.

"Below" is read on what the grid can show: a bracket (lo, hi] holds its value above lo and at
or under hi; a censored value holds everything beyond its grid end. The check lies below the
reference only when every value it allows is under every value the reference allows, so an
overlap of brackets never counts as a fall. A median critical LR is read from its seeds'
brackets, not from its interpolated point: two grids of different resolution put their
midpoints at different LRs, and comparing those would report the grids' difference as a fall.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Cells
from sweeps.study.stats import GridValue, Line, Slope, Span, line_fit, span


class TokenCheck(NamedTuple):
    verdict: str  # supported: the depth trend survives matching tokens per parameter
    why: str  # "survives", "token effect" or "mixed": a code the report words
    threshold_below: bool
    critical_below: bool


def median_span(seeds: Sequence[GridValue]) -> Span:
    """Where the median over seeds can lie, given where each seed's value can: a median is
    monotone in every value, so it is at least the lower middle seed's low end and at most the
    upper middle seed's high end (one seed's own span for an odd count), and strictly above
    the low end when every seed's low end is strict; nothing when a seed says nothing."""
    spans = [span(v) for v in seeds]
    if any(s.empty for s in spans):
        return Span(math.nan, math.nan, True)
    lows, highs = sorted(s.lo for s in spans), sorted(s.hi for s in spans)
    n = len(spans)
    return Span(lows[(n - 1) // 2], highs[n // 2], all(s.lo_open for s in spans))


def below(check: GridValue, reference: GridValue) -> bool:
    """Whether every LR the check allows is under every LR the reference allows."""
    return _under(span(check), span(reference))


def _under(c: Span, r: Span) -> bool:
    if c.empty or r.empty:
        return False  # a value that says nothing is never shown below, nor above
    if math.isinf(c.hi):
        return False  # the check's value is open upward: it cannot be shown lower
    return c.hi < r.lo or (c.hi == r.lo and r.lo_open)


def token_check(
    reference_threshold: GridValue,
    check_threshold: GridValue,
    reference_critical: Sequence[GridValue],
    check_critical: Sequence[GridValue],
) -> TokenCheck:
    """The token-matched check: the deepest rung at the reference rung's tokens per parameter
    (check_*) against the reference rung (reference_*): thresholds of the primary comparison,
    and `off`'s median critical LR under the primary failure definition, read from its
    per-seed values (median_span)."""
    t = below(check_threshold, reference_threshold)
    c = _under(median_span(check_critical), median_span(reference_critical))
    if t and c:
        return TokenCheck(SUPPORTED, "survives", t, c)
    if not (t or c):
        return TokenCheck(NOT_SUPPORTED, "token effect", t, c)
    return TokenCheck(INCONCLUSIVE, "mixed", t, c)


CENSOR_SHIFT = 0.5  # decades a censored per-seed threshold moves beyond its bound (H3)
MIN_RUNGS = 3  # rungs a trend needs (H3, W1, W2: docs/STUDY.md sections 5 and 11)


def trend_points(
    seed_thresholds: dict[int, list[GridValue]],
    judged: dict[int, list[float]],
    per: dict[int, list[float]] | None = None,
    top: bool = False,
):
    """(x = log2 size, y at the bound, y moved beyond, censored?) for every per-seed threshold,
    censored ones kept (docs/STUDY.md section 5, H3): "<= bottom" at the lowest LR judged and
    CENSOR_SHIFT decades lower; "none in the grid" at the highest LR judged and that much higher.
    per: a value per seed (aligned with seed_thresholds) that y is taken relative to, as a
    multiple (W2: the threshold as a multiple of the seed's best LR without QK-norm); a seed
    without one (NaN) is left out. top: a threshold inside the grid at its bracket's top, the
    first LR the rule called QK-norm necessary at (W2's "threshold bracket top"), instead of
    its interpolated value (H3, W1). Sizes with fewer than 2 points are returned apart."""
    points, short = [], []
    for size, values in sorted(seed_thresholds.items()):
        lrs = judged.get(size) or []
        units = (per or {}).get(size) or [1.0] * len(values)
        found = []
        for v, unit in zip(values, units):
            if not (unit > 0 and math.isfinite(unit)):
                continue
            base = math.log10(unit)
            if v.kind == "":
                at = v.bracket[1] if top and v.bracket else v.value
                found.append((math.log10(at) - base,) * 2 + (False,))
            elif v.kind == "below":
                y = math.log10(v.value) - base
                found.append((y, y - CENSOR_SHIFT, True))
            elif v.kind == "none" and lrs:
                y = math.log10(max(lrs)) - base
                found.append((y, y + CENSOR_SHIFT, True))
        if len(found) < 2:
            short.append(size)
        points += [(math.log2(size), *f) for f in found]
    return points, short


def uncensored_line(
    seed_thresholds: dict[int, list[GridValue]],
    judged: dict[int, list[float]],
    per: dict[int, list[float]] | None = None,
    top: bool = False,
) -> Line | None:
    """The trend's least-squares line over the per-seed thresholds inside the grid alone
    (trend_points' values, censored ones left out): descriptive, never the decision (section 5
    keeps censored values), shown beside it because a few values at the grid's edge can set a
    slope. None when nothing was censored or fewer than 2 sizes keep a value."""
    points, _ = trend_points(seed_thresholds, judged, per, top)
    kept = [p for p in points if not p[3]]
    if len(kept) == len(points) or len({p[0] for p in kept}) < 2:
        return None
    return line_fit([p[0] for p in kept], [p[1] for p in kept])


def trend_lines(
    seed_thresholds: dict[int, list[GridValue]],
    judged: dict[int, list[float]],
    per: dict[int, list[float]] | None = None,
) -> tuple[Line | None, Line | None]:
    """The least-squares lines a trend's slopes come from (trend_points: log10 values on log2
    size), censored values at their bounds and moved beyond them: what an extrapolation reads
    (docs/STUDY.md section 11: the width ladder's line for the core width)."""
    points, _ = trend_points(seed_thresholds, judged, per)
    x = [p[0] for p in points]
    return line_fit(x, [p[1] for p in points]), line_fit(x, [p[2] for p in points])


def critical_lr_line(per_size: dict[int, list[GridValue]]) -> tuple[Line | None, int]:
    """An arm's per-seed critical LRs (log10) on log2 size, descriptive: a censored one at its
    bound (the grid's edge it lies beyond), one not found left out; with the number censored."""
    x, y, censored = [], [], 0
    for size, values in sorted(per_size.items()):
        for v in values:
            if v.kind == "none" or not (v.value > 0 and math.isfinite(v.value)):
                continue
            x.append(math.log2(size))
            y.append(math.log10(v.value))
            censored += not v.inside
    return line_fit(x, y), censored


def falls(slope: Slope) -> bool:
    """A trend's slope shows a fall: its one-sided 95% upper bound is below 0 (H3, W1; the
    rule applies it to the slope with censored thresholds at their bounds and moved beyond)."""
    return slope.upper is not None and slope.upper < 0


GAP_LRS = 2  # the low-LR gap is read at the grid's this many lowest LRs (section 11)
# section 11's predictions for a width ladder, descriptive: the low-LR gap shrinks by at least a
# third from the narrowest width to the widest (off's start grows warmer with width), and a
# critical LR that scales as 1/width falls this many decades per doubling
GAP_SHRINK = 2 / 3
INVERSE_WIDTH = -math.log10(2)


def gap_lrs(base_lrs: Iterable[float] | None) -> list[float]:
    """The LRs the low-LR gap is read at: the GAP_LRS lowest of the grid, lowest first."""
    return sorted(base_lrs or [])[:GAP_LRS]


def gap_line(cells: dict[int, Cells], reference: str, primary: str, lr: float) -> Line | None:
    """The low-LR gap on log2 size, descriptive (docs/STUDY.md section 11: it shrinks with
    width): each seed's paired difference reference - primary (effective loss, nats) at the LR,
    at every size where both of that seed's runs finished there. None below 3 points or with
    one size."""
    x, y = [], []
    for size, c in sorted(cells.items()):
        j = next((k for k, v in enumerate(c.lrs) if math.isclose(v, lr)), None)
        if j is None or not (c.has(reference) and c.has(primary)):
            continue
        for d in c.loss[c.arm(reference), j] - c.loss[c.arm(primary), j]:
            if math.isfinite(d):
                x.append(math.log2(size))
                y.append(float(d))
    return line_fit(x, y)


def sensitivity_line(per_size: dict[int, dict[int, float]]) -> Line | None:
    """LR sensitivity (nats) on log2 size, descriptive: one point per seed and size from
    {size: {seed: S}} (one arm's S, or a seed's paired S difference between two arms); an
    incomplete (NaN) value left out. Wortsman et al. (2023) compare how fast it rises with
    depth and with width; its slope is nats per doubling. None below 3 points or one size."""
    x, y = [], []
    for size, per_seed in sorted(per_size.items()):
        for value in per_seed.values():
            if math.isfinite(value):
                x.append(math.log2(size))
                y.append(float(value))
    return line_fit(x, y)


CARRY_BOUND = 0.15  # W2: decades per doubling of width within which a multiple carries


def seed_best_lrs(cells: Cells, arm: str) -> list[float]:
    """Each seed's best LR for the arm (lowest capped loss among its finished runs; NaN for a
    seed with none), in cells.seeds order: the unit of W2's multiple."""
    if not cells.has(arm):
        return [math.nan] * len(cells.seeds)
    a = cells.arm(arm)
    out = []
    for s in range(len(cells.seeds)):
        losses = cells.loss[a, :, s]
        ok = np.isfinite(losses)
        out.append(float(cells.lrs[int(np.nanargmin(losses))]) if ok.any() else math.nan)
    return out
