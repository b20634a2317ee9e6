"""The early-warning AUC (docs/STUDY.md section 4, descriptive): the statistic on cases with a
known answer, and sweeps/analysis/early_warning.py on a small sweep whose failing runs are
planted."""

import numpy as np
import pandas as pd
import pytest

from sweeps.analysis import early_warning
from sweeps.study.stats import EARLY_FRACTION, auc, auc_interval

BIGRAM = 2.3


def test_auc_is_the_mann_whitney_probability_with_ties_counting_half():
    assert auc([3, 4], [1, 2]) == 1.0 and auc([1, 2], [3, 4]) == 0.0
    assert auc([1, 1], [1, 1]) == 0.5  # every pair tied
    assert auc([2, 0], [1]) == 0.5  # one pair above, one below
    assert np.isnan(auc([], [1.0])) and np.isnan(auc([1.0], []))


def test_the_auc_interval_holds_the_truth_under_a_null_and_excludes_it_when_separated():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(100):  # null: one distribution, AUC 0.5 in truth
        value, lo, hi = auc_interval(rng.normal(size=12), rng.normal(size=12), resamples=300)
        assert lo <= value <= hi
        hits += lo <= 0.5 <= hi
    assert hits >= 80  # a 90% interval, roughly: not a degenerate or inverted one
    value, lo, hi = auc_interval(rng.normal(3, 1, 12), rng.normal(0, 1, 12), resamples=300)
    assert value > 0.9 and lo > 0.75  # a planted separation is found, and shown
    assert all(np.isnan(auc_interval([], [1.0, 2.0])))


def sweep(n_seeds=4):
    """One rung, one arm: seeds 0..n-1 at a low LR (ok, logits 2) and a high LR (stuck:
    finished above the bigram baseline, logits 9). Curves every 10 steps of 100; the early
    predictor is read at step 10, the first at or after 10%."""
    runs, curves = [], []
    for seed in range(n_seeds):
        for lr, final, logit in ((1e-3, 1.5, 2.0), (1e-1, 2.8, 9.0)):
            run_id = f"off-{lr}-{seed}"
            runs.append(
                {
                    "run_id": run_id,
                    "n_layer": 4,
                    "arm": "off",
                    "lr": lr,
                    "seed": seed,
                    "status": "ok",
                    "outcome": "ok",
                    "final_val_loss": final,
                    "baseline_loss": BIGRAM,
                    "max_steps": 100,
                }
            )
            for step in range(0, 101, 10):
                at = 0.0 if step == 0 else logit  # at step 0 every run looks the same
                curves.append(
                    {
                        "run_id": run_id,
                        "step": step,
                        "max_attn_logit": at + seed * 0.1,
                        "logit_max": 5.0,
                    }
                )
    return pd.DataFrame(runs), pd.DataFrame(curves)


def test_the_early_predictor_separates_planted_failures_and_a_flat_one_does_not():
    runs, curves = sweep()
    table = early_warning.table(runs, curves)
    entry = table["4"]["off"]
    logit = entry["max_attn_logit"]
    assert (logit["n_fail"], logit["n_ok"]) == (4, 4)  # stuck: above the bigram baseline
    assert logit["auc"] == 1.0 and logit["ci90"] == [1.0, 1.0]
    assert logit["step_fraction"] == pytest.approx(EARLY_FRACTION)
    assert entry["logit_max"]["auc"] == 0.5  # the same value in every run: no information


def test_the_early_step_is_the_first_evaluation_at_or_after_a_tenth_of_the_run():
    runs, curves = sweep()
    # a curve with no row at step 10: the next evaluation (20) is the early step
    curves = curves[~((curves.run_id == "off-0.1-0") & (curves.step == 10))]
    rows = early_warning._early_rows(curves, runs)
    assert rows.loc["off-0.1-0", "fraction"] == pytest.approx(0.2)
    assert rows.loc["off-0.001-0", "fraction"] == pytest.approx(0.1)


def test_without_curves_there_is_nothing_to_say():
    runs, _ = sweep()
    assert early_warning.table(runs, pd.DataFrame()) == {}


def test_curves_without_any_diagnostic_value_give_no_early_rows_and_no_crash():
    """pandas 3 kept an empty mapped column as str and refused to divide by it (a TypeError
    from the report when no run's curves carry a diagnostic)."""
    import numpy as np
    import pandas as pd

    from sweeps.analysis import early_warning

    curves = pd.DataFrame(
        {
            "run_id": ["a", "a"],
            "step": [1, 2],
            "max_attn_logit": [np.nan] * 2,
            "logit_max": [np.nan] * 2,
        }
    )
    rows = early_warning._early_rows(curves, pd.DataFrame({"run_id": ["a"], "max_steps": [10]}))
    assert rows.empty and "fraction" in rows.columns


def test_a_report_whose_runs_carry_no_diagnostic_value_renders(tmp_path, monkeypatch):
    """Issue 49 point 8, through the report: under pandas 3 the early-warning table raised a
    TypeError when no run's curves held a diagnostic (every run's metrics without them);
    pandas 2 never did. The report says nothing on early warning then."""
    import json

    from figures.report.assemble import make_report
    from tests import figures_fakes

    monkeypatch.setattr(figures_fakes, "_diagnostics", lambda cfg, progress: {})
    figures_fakes.write_study(tmp_path / "study", depths=[2])
    report = make_report(tmp_path / "study", None, ("vl.json",))
    analysis = json.loads((report.parent / "analysis.json").read_text())
    assert analysis["early_warning"] == {} and report.is_file()
