"""A hypothesis is declared once: a registry entry with its decision (sweeps/study/hypotheses.py)
and a wording row (figures/words/hypotheses.py). Walked through here with a toy one, end to end."""

import figures_fakes as ff
import pytest

from figures.report import assemble, opening
from figures.words import verdicts
from figures.words.hypotheses import WORDING, Words
from figures.words.said import Worded
from figures.words.view import say
from sweeps import analysis as typed
from sweeps.analysis.results import load_curves, load_results
from sweeps.study import hypotheses
from sweeps.study.hypotheses import HYPOTHESES, Call, Hypothesis
from sweeps.study.rules import INCONCLUSIVE, SUPPORTED


def threshold_inside(analysis) -> dict[str, Call]:
    """The toy decision: supported at a rung whose necessity threshold the grid places (the
    typed analysis: sweeps.analysis.model.Analysis)."""
    out = {}
    for name, depth in analysis.depths.items():
        c = hypotheses.primary(analysis, depth)
        if c is not None:
            inside = c.threshold.kind == ""
            out[name] = Call(SUPPORTED, "placed") if inside else Call(INCONCLUSIVE, "censored")
    return out


TOY = Words(
    claim="The grid places the necessity threshold at every {rung}.",
    test="Per {rung}: the primary comparison's threshold lies inside the grid.",
    question="Does the grid place the necessity threshold?",
    reasons={"placed": "the grid places it", "censored": "it lies beyond the grid"},
)


@pytest.mark.slow
def test_a_new_hypothesis_is_a_registry_entry_a_decision_and_a_wording_row(monkeypatch, tmp_path):
    """Registered at runtime only: the analysis decides it per rung and combines the rungs, the
    verdicts and the opening word it from its row, the report's Verdicts section lists it; and
    it is gone once unregistered."""
    ff.write_study(tmp_path / "study", depths=[2, 4])
    results = load_results(tmp_path / "study")
    with monkeypatch.context() as m:
        m.setitem(HYPOTHESES, "T1", Hypothesis("T1", 5, threshold_inside))
        m.setitem(WORDING, "T1", TOY)
        typed_result = typed.analyze(results, load_curves(results.runs))
        result = say(typed_result)
        v = result.verdicts["T1"]
        assert v.verdict == SUPPORTED
        assert v.claim == "The grid places the necessity threshold at every depth."
        assert v.per_depth == {d: Worded(SUPPORTED, "the grid places it") for d in ("2", "4")}
        placed = "supported (the grid places it)"
        assert v.reason == f"depth 2: {placed}; depth 4: {placed}"
        assert list(result.verdicts)[-1] == "T1"  # after the registered ones, in their order
        said = "\n".join(opening.markdown(result))
        assert "T1 supported. Does the grid place the necessity threshold?" in said
        assert "### T1: The grid places the necessity threshold at every depth." in (
            assemble._verdicts(result)
        )
    assert "T1" not in verdicts.judge(typed_result)


def test_rungs_that_disagree_or_were_not_judged_combine_as_the_rules_say():
    """All rungs that count agree: that verdict; a rung not judged does not count; disagreeing
    rungs, or none: inconclusive."""
    yes, no = Call(SUPPORTED, "a"), Call("not supported", "b")
    skipped = Call(INCONCLUSIVE, "c", counts=False)
    assert hypotheses.combine({"2": yes, "4": yes, "8": skipped}).verdict == SUPPORTED
    assert hypotheses.combine({"2": yes, "4": no}).verdict == INCONCLUSIVE
    assert hypotheses.combine({"2": skipped}).verdict == INCONCLUSIVE
    assert hypotheses.combine({}) == Call(INCONCLUSIVE, hypotheses.NO_RUNG)


def test_each_ladder_decides_its_own_trends():
    assert hypotheses.trends("n_layer") == ("H3",)
    assert hypotheses.trends("n_embd") == ("W1", "W2")
    assert [h.id for h in hypotheses.for_ladder("n_layer")] == ["H1", "H2a", "H2b", "H3", "C1"]
    assert set(WORDING) == set(HYPOTHESES)  # every registered hypothesis has its words


def test_the_trend_wording_states_the_rules_own_numbers():
    """The tests' texts name the rungs a trend needs from the rule's constant, and say "half a
    decade" for the shift censored thresholds move: that is the rule's CENSOR_SHIFT."""
    from figures.words.hypotheses import WORDING as W
    from sweeps.study import trend

    assert "{rungs}" in W["H3"].test and "{rungs}" in W["W1"].test
    assert ">= 3 depths" not in W["H3"].test  # formatted, not written down
    assert trend.CENSOR_SHIFT == 0.5 and "half a decade" in W["H3"].test


def test_a_fall_is_shown_only_where_the_slopes_upper_bound_is_below_zero():
    """ladders.falls: the one rule the trend decision and the censoring words share."""
    from sweeps.study import ladders
    from sweeps.study.stats import Slope

    assert ladders.falls(Slope(4, -0.2, -0.4, -0.01))
    assert not ladders.falls(Slope(4, -0.2, -0.4, 0.0))  # touching zero: not shown
    assert not ladders.falls(Slope(4, -0.2, -0.4, None))
