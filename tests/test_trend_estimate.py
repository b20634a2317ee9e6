"""Section 22's reading of a trend: the slope under each borderline reading (sweeps.study.trend
keeps the one as recorded beside the stuck one where they differ) and the estimate in words
(figures.words.verdicts.estimate_lines): how far the threshold moves per doubling, which of 0
and the prediction the interval excludes, and the fitted threshold per rung as a multiple of
`off`'s best LR."""

import math
from types import SimpleNamespace

import pytest

from figures.words.verdicts import estimate_lines
from sweeps.analysis import model as m
from sweeps.study import trend
from sweeps.study.stats import GridValue

RUNG = SimpleNamespace(name="depth", label=lambda k: f"depth {k}")


def trend_of(lower, upper, prediction=-0.25, line=None):
    value = (lower + upper) / 2
    slope = m.Slope(n=5, value=value, lower=lower, upper=upper, ci90=[lower, upper])
    return m.Trend(
        verdict="inconclusive",
        why="not shown",
        at_bound=slope,
        beyond=slope,
        censored=0,
        short=[],
        depths=[1, 2, 4],
        prediction=prediction,
        line=line,
    )


@pytest.mark.parametrize(
    "lower, upper, moves, said",
    [
        (-0.233, -0.066, "falls by 0.066 to 0.233 decades", "it excludes 0 and the predicted"),
        (-0.3, -0.1, "falls by 0.100 to 0.300 decades", "it excludes 0, not the predicted -0.25"),
        (
            -0.136,
            0.073,
            "moves by -0.136 to +0.073 decades",
            "it excludes the predicted -0.25, not 0",
        ),
        (-0.4, 0.1, "a fall of at most 0.4", "it excludes neither 0 nor the predicted -0.25"),
        (0.05, 0.2, "rises by 0.050 to 0.200 decades", "it excludes 0 and the predicted -0.25"),
        (-0.5, -0.3, "falls by 0.300 to 0.500", "it excludes 0 and the predicted -0.25"),
    ],
)
def test_the_estimate_says_the_interval_and_what_it_excludes(lower, upper, moves, said):
    text = estimate_lines(trend_of(lower, upper), RUNG, {}, "off")[0]
    assert moves in text and said in text, text


def test_the_fitted_threshold_per_rung_is_a_multiple_of_that_rungs_best_lr():
    # log10 threshold = -1.5 - 0.1 log2(depth): 0.0316 at depth 1, 0.02 at depth 32
    line = m.Line(slope=-0.1, intercept=-1.5)
    comparisons = {1: SimpleNamespace(best_lr=0.01), 4: SimpleNamespace(best_lr=0.005)}
    text = estimate_lines(trend_of(-0.2, 0.0, line=line), RUNG, comparisons, "off")[1]
    at4 = 10 ** (-1.5 - 0.2)
    assert "depth 1 0.0316 (x3.16 off's best LR 0.01)" in text
    assert f"x{at4 / 0.005:.2f} off's best LR 0.005" in text


def test_no_estimate_without_a_finite_interval():
    assert estimate_lines(trend_of(-math.inf, 0.1), RUNG, {}, "off") == []


def values(shift=0.0):
    return {
        s: [GridValue(10 ** (-1.5 - 0.2 * math.log2(s) + shift + 0.01 * i)) for i in range(4)]
        for s in (1, 2, 4, 8)
    }


def test_the_slope_as_recorded_is_kept_beside_the_stuck_one_only_where_they_differ():
    stuck = values()
    trained = {**stuck, 8: [GridValue(v.value * 1.5) for v in stuck[8]]}
    both = trend.robust([stuck, trained], trend.decide, trend.OPPOSITE, -0.25)
    alone = trend.decide(trained, -0.25)
    assert both.recorded is not None and both.recorded.slope == pytest.approx(alone.at_bound.slope)
    assert both.at_bound.slope == pytest.approx(trend.decide(stuck, -0.25).at_bound.slope)
    same = trend.robust([stuck, values()], trend.decide, trend.OPPOSITE, -0.25)
    assert same.recorded is None
