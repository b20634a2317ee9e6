"""Issue 58's analysis fixes: H2b is not judged where the grid does not span its pre-registered
LR range (an ad-hoc grid too), and an ad-hoc grid's target loss comes from its own corpus or is
none, never inherited from another corpus."""

from sweeps.study import rules
from sweeps.sweep import record
from sweeps.sweep.spec import adhoc_raw, corpus_target, parse_spec

RANGE = (3.16e-4, 0.316)


def test_h2b_is_not_judged_on_a_grid_short_of_its_range():
    assert rules.h2b_unjudged([0.01, 0.0316, 0.1], None, RANGE) == rules.H2B_SHORT
    assert rules.h2b_unjudged([3.16e-4, 1e-3, 0.1], None, RANGE) == rules.H2B_SHORT  # top short
    full = [3.16e-4, 1e-3, 3.16e-3, 1e-2, 3.16e-2, 0.1, 0.316]
    assert rules.h2b_unjudged(full, None, RANGE) == ""
    # a [rung_lr] subset that leaves out a range LR keeps its own reason
    assert rules.h2b_unjudged(full, full[2:], RANGE) == rules.H2B_RUNG_SUBSET
    assert rules.spans([0.000316, 0.316], RANGE) and not rules.spans([], RANGE)


def raw(preset, *sets):
    r = adhoc_raw("adhoc", preset, {"lr": [0.01, 0.0316, 0.1]}, 4, "sweep ...")
    return corpus_target(record.with_sets(r, sets))


def test_an_adhoc_grid_on_its_spec_corpus_keeps_that_specs_target():
    assert parse_spec(raw("cpu")).study.target_loss == 1.5


def test_an_adhoc_grid_on_shakespeare_takes_the_shakespeare_specs_target():
    study = parse_spec(raw("cpu", "data.corpus=shakespeare")).study
    assert study.target_loss == 2.0  # cpu-text's, not cpu's 1.5 (a bigram of 2.50 there)


def test_an_adhoc_grid_on_a_corpus_no_spec_covers_has_no_target():
    r = raw("tiny", "data.corpus=shakespeare")
    assert r["study"]["target_loss"] == "none"
    spec = parse_spec(r)
    assert spec.study.target_loss is None
    assert "target_loss" in spec.study.to_dict() and spec.study.to_dict()["target_loss"] is None
