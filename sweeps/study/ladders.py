"""The depth ladder's token-matched check (docs/STUDY.md section 11), on typed inputs.

A depth ladder holds tokens per run fixed, so its deepest rung sees the fewest tokens per
parameter (depth 8 of `cpu-depth`: 5.6, against depth 4's 10.3). If the threshold falls with
depth (H3), part of that fall may be a short budget rather than depth. The check reruns the
deepest rung with the steps that match the reference rung's tokens per parameter, at the LRs of
its threshold bracket and of `off`'s critical-LR bracket; the trend survives when both the
check's threshold and its `off` median critical LR (failure definition *stuck*) still lie below
the reference rung's. Both below: survives; neither: the trend is a tokens-per-parameter
effect; one of the two: inconclusive.

"Below" is read on what the grid can show: a bracket (lo, hi] holds its value above lo and at
or under hi; a censored value holds everything beyond its grid end. The check lies below the
reference only when every value it allows is under every value the reference allows, so an
overlap of brackets never counts as a fall. A median critical LR is read from its seeds'
brackets, not from its interpolated point: two grids of different resolution put their
midpoints at different LRs, and comparing those would report the grids' difference as a fall.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from sweeps.study.stats import GridValue


class TokenCheck(NamedTuple):
    verdict: str  # supported: the depth trend survives matching tokens per parameter
    why: str  # "survives", "token effect" or "mixed": a code the report words
    threshold_below: bool
    critical_below: bool


class Span(NamedTuple):
    """The values a GridValue allows: lo < x <= hi (lo_open) or lo <= x <= hi."""

    lo: float
    hi: float
    lo_open: bool


def span(v: GridValue) -> Span:
    """What a GridValue says about where the true LR is. Inside with a bracket: (lo, hi];
    inside without one (a median over seeds whose brackets differ): the interpolated point;
    "below" (at or under the lowest LR): (0, value]; "above" (beyond the top LR): (value, inf);
    "none" (a threshold the grid did not find: QK-norm was never necessary there): above
    everything the grid shows."""
    if v.kind == "" and v.bracket:
        return Span(float(v.bracket[0]), float(v.bracket[1]), True)
    if v.kind == "":
        return Span(v.value, v.value, False)
    if v.kind == "below":
        return Span(0.0, v.value, True)
    if v.kind == "above":
        return Span(v.value, math.inf, True)
    return Span(math.inf, math.inf, False)


def median_span(seeds: Sequence[GridValue]) -> Span:
    """Where the median over seeds can lie, given where each seed's value can: a median is
    monotone in every value, so it is at least the lower middle seed's low end and at most the
    upper middle seed's high end (one seed's own span for an odd count), and strictly above
    the low end when every seed's low end is strict."""
    spans = [span(v) for v in seeds]
    lows, highs = sorted(s.lo for s in spans), sorted(s.hi for s in spans)
    n = len(spans)
    return Span(lows[(n - 1) // 2], highs[n // 2], all(s.lo_open for s in spans))


def below(check: GridValue, reference: GridValue) -> bool:
    """Whether every LR the check allows is under every LR the reference allows."""
    return _under(span(check), span(reference))


def _under(c: Span, r: Span) -> bool:
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
