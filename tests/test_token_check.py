"""The depth ladder's token-matched check (sweeps/study/ladders.py, docs/STUDY.md section 11):
planted cases with a known answer, censored values included."""

from __future__ import annotations

import math

import pytest

from sweeps.study.ladders import below, median_span, token_check
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from sweeps.study.stats import GridValue, Span, span


def inside(lo: float, hi: float) -> GridValue:
    return GridValue(math.sqrt(lo * hi), "", (lo, hi))


DEPTH4_THRESHOLD = inside(0.0316, 0.0562)
# off's per-seed critical LRs at depth 4: three seeds fail from 0.1, one from 0.0562 (median
# 0.075, in (0.0562, 0.1])
DEPTH4_CRITICAL = [inside(0.0562, 0.1)] * 3 + [inside(0.0316, 0.0562)]


def test_a_fall_that_survives_matching_tokens():
    t = token_check(
        DEPTH4_THRESHOLD, inside(0.0178, 0.0316), DEPTH4_CRITICAL, [inside(0.0316, 0.0562)] * 4
    )
    assert (t.verdict, t.why, t.threshold_below, t.critical_below) == (
        SUPPORTED,
        "survives",
        True,
        True,
    )


def test_a_fall_that_matching_tokens_removes():
    # with depth 4's tokens per parameter, depth 8 is back in depth 4's bracket and critical LR
    t = token_check(DEPTH4_THRESHOLD, inside(0.0316, 0.0562), DEPTH4_CRITICAL, DEPTH4_CRITICAL)
    assert (t.verdict, t.why) == (NOT_SUPPORTED, "token effect")


def test_one_of_two_is_inconclusive():
    t = token_check(
        DEPTH4_THRESHOLD, inside(0.0178, 0.0316), DEPTH4_CRITICAL, [GridValue(0.1, "above")] * 4
    )
    assert (t.verdict, t.why, t.threshold_below, t.critical_below) == (
        INCONCLUSIVE,
        "mixed",
        True,
        False,
    )


def test_overlapping_brackets_are_not_a_fall():
    # (0.0178, 0.0562] allows values above 0.0316, inside depth 4's bracket
    assert not below(inside(0.0178, 0.0562), DEPTH4_THRESHOLD)
    # touching brackets are a fall: (a, b] lies wholly under (b, c]
    assert below(inside(0.0178, 0.0316), DEPTH4_THRESHOLD)
    # a point equal to the reference point is not below it
    assert not below(GridValue(0.075), GridValue(0.075))


@pytest.mark.parametrize(
    ("check", "reference", "expected"),
    [
        # the check necessary already at its lowest LR: at or under it, below depth 4's bracket
        (GridValue(0.0178, "below"), DEPTH4_THRESHOLD, True),
        # ... but not below a reference that is itself at the grid's bottom
        (GridValue(0.0178, "below"), GridValue(0.0178, "below"), False),
        # never necessary up to the check's top judged LR: open upward, never shown lower
        (GridValue(0.1, "none"), DEPTH4_THRESHOLD, False),
        # a "none" without the LR its evidence ends at says nothing: never shown below either way
        (GridValue(math.nan, "none"), DEPTH4_THRESHOLD, False),
        (inside(0.0316, 0.0562), GridValue(math.nan, "none"), False),
        # off did not fail inside the check's grid: its critical LR is open upward
        (GridValue(0.1, "above"), GridValue(0.075), False),
        # depth 4 never needed QK-norm up to 0.1: a threshold the check finds under it is below
        (inside(0.0316, 0.0562), GridValue(0.1, "none"), True),
        # ... but not one past where depth 4's evidence ends: its threshold may lie just there
        (inside(0.1, 0.178), GridValue(0.1, "none"), False),
        # depth 4's off never failed: a critical LR the check finds is below
        (GridValue(0.075), GridValue(1.0, "above"), True),
    ],
)
def test_censored_values(check, reference, expected):
    assert below(check, reference) is expected


def test_span_reads_each_kind():
    assert span(inside(0.01, 0.0316)) == (0.01, 0.0316, True)
    assert span(GridValue(0.05)) == (0.05, 0.05, False)
    assert span(GridValue(3.16e-4, "below")) == (0.0, 3.16e-4, True)
    assert span(GridValue(1.0, "above")).hi == math.inf
    # "none": QK-norm never necessary up to where the evidence ends, a threshold may lie past it
    assert span(GridValue(0.316, "none")) == (0.316, math.inf, True)
    assert span(GridValue(math.nan, "none")).empty and span(GridValue(0.1, "unjudged")).empty


def test_a_median_is_read_from_its_seeds_brackets():
    # depth 4's median lies in (0.0562, 0.1]: the lower middle seed's low end, the upper
    # middle seed's high end
    assert median_span(DEPTH4_CRITICAL) == Span(0.0562, 0.1, True)
    # an odd count: the middle seed's own span; a censored seed orders beyond the grid
    odd = [inside(0.01, 0.0316), GridValue(1.0, "above"), inside(0.0316, 0.1)]
    assert median_span(odd) == Span(0.0316, 0.1, True)
    assert median_span([GridValue(1.0, "above")] * 3 + [inside(0.0316, 0.1)]).hi == math.inf
    # a point among the seeds makes the low end closed
    assert median_span([GridValue(0.05), GridValue(0.05)]) == Span(0.05, 0.05, False)
    # a seed whose value says nothing makes the median say nothing
    assert median_span([inside(0.0316, 0.1), GridValue(math.nan, "none")]).empty


def test_a_coarser_grid_alone_is_not_a_fall():
    # every seed of the check fails between 0.0316 and 0.1: its midpoints (0.0562) sit under
    # depth 4's (0.075) only because its grid lacks 0.0562; the seeds' brackets overlap depth
    # 4's, so it is not below
    coarse = [inside(0.0316, 0.1)] * 4
    assert math.sqrt(0.0316 * 0.1) < 0.075
    t = token_check(DEPTH4_THRESHOLD, inside(0.0178, 0.0316), DEPTH4_CRITICAL, coarse)
    assert (t.critical_below, t.verdict) == (False, INCONCLUSIVE)
    # the same seeds on depth 4's grid, three failing from 0.0562: below
    fine = [inside(0.0316, 0.0562)] * 3 + [inside(0.0562, 0.1)]
    assert token_check(
        DEPTH4_THRESHOLD, inside(0.0178, 0.0316), DEPTH4_CRITICAL, fine
    ).critical_below


def test_a_median_span_that_says_nothing_is_worded_as_such_not_as_nan():
    from figures.words.token_check import _span_words

    nothing = median_span([inside(0.0316, 0.1), GridValue(math.nan, "none")])
    assert _span_words(nothing) == "no LR of the grid: a seed's value was not found"
    assert _span_words(median_span(DEPTH4_CRITICAL)) == "(0.0562, 0.1]"
