"""QK-norm's cost at the best LR per doubling of the rung (sweeps.analysis.trends.cost_trend,
descriptive): each rung's mean the unit, the residual sd floored by the seeds' scatter, checked
on planted and flat ladders with a known answer and on the committed depth ladder."""

import json
import math
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

from sweeps.analysis import trends
from sweeps.study import trend

DOCS = Path(__file__).resolve().parents[1] / "docs"


def ladder(slope: float, rung_sd: float, seed_sd: float, rng, sizes=(1, 2, 4, 6, 8), seeds=4):
    """A stand-in analysis: per rung a cost (mean over seeds) slope * log2(size) plus a rung
    deviation, at off's best LR and (the same) with each arm at its own."""
    depths = {}
    for size in sizes:
        true = slope * math.log2(size) + rng.normal(0, rung_sd)
        draws = true + rng.normal(0, seed_sd, seeds)
        stats = NS(mean=float(draws.mean()), sd=float(draws.std(ddof=1)), n=seeds)
        depths[str(size)] = NS(h1=NS(stats=stats), best_cost=NS(stats=stats))
    return NS(depths=depths)


def test_a_planted_growth_in_cost_is_found_and_a_flat_one_is_not_claimed():
    rng = np.random.default_rng(0)
    found = flat_claims = 0
    trials = 400
    for _ in range(trials):
        planted = trends.cost_trend(ladder(-0.03, 0.005, 0.02, rng)).lines
        line = planted["at the reference's best LR"]
        found += line.ci90[1] < 0
        flat = trends.cost_trend(ladder(0.0, 0.005, 0.02, rng)).lines
        lo, hi = flat["each at its own best LR"].ci90
        flat_claims += hi < 0 or lo > 0
    assert found / trials > 0.9
    assert flat_claims / trials < 0.1 + 0.05  # a two-sided 90% interval misses 0 ~10%


def test_the_rung_not_the_seed_is_the_unit():
    """Rungs that scatter about the line widen the interval however tight the seeds are."""
    rng = np.random.default_rng(1)
    tight = trends.cost_trend(ladder(-0.03, 0.0, 0.01, rng)).lines["at the reference's best LR"]
    scattered = trends.cost_trend(ladder(-0.03, 0.05, 0.01, rng))
    wide = scattered.lines["at the reference's best LR"]
    assert (wide.ci90[1] - wide.ci90[0]) > 3 * (tight.ci90[1] - tight.ci90[0])


def test_too_few_rungs_give_no_line():
    rng = np.random.default_rng(2)
    assert trends.cost_trend(ladder(-0.03, 0.0, 0.01, rng, sizes=(2, 4))) is None


def test_the_committed_depth_ladders_cost_grows_with_depth():
    a = json.loads((DOCS / "cpu-depth" / "analysis.json").read_text())
    x = [math.log2(int(k)) for k in sorted(a["depths"], key=int)]
    stats = [a["depths"][k]["h1"]["stats"] for k in sorted(a["depths"], key=int)]
    floor = math.sqrt(np.mean([s["sd"] ** 2 / s["n"] for s in stats]))
    want = trend.floored_slope(x, [s["mean"] for s in stats], floor)
    line = a["cost_trend"]["lines"]["at the reference's best LR"]
    assert line["value"] == pytest.approx(want.slope) and line["n"] == 6
    assert line["ci90"] == pytest.approx([want.lower, want.upper])
    assert line["ci90"][1] < 0  # at a fixed 1200 steps the cost grows with depth
    report = (DOCS / "cpu-depth" / "report.md").read_text()
    assert "At off's best LR: -0.032 nats (90% interval -0.056 to -0.009, 6 depths)." in report
