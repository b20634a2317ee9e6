"""figures/: the analysis with known answers, verdict edges, and the report from hand-made runs.

The study fixture (tests/figures_fakes.py) has a flat QK-norm-on arm and an off arm that is
0.4 nats worse at a depth-dependent threshold LR (3e-2, 1e-2, 3e-3 at n_layer 2, 4, 8) and
diverges above it. Reports render once per module (PNG export is the slow part).
"""
import json
import math

import pytest

import figures_fakes as ff
from figures.analysis import analyze, steps_to_target
from figures.report import make_report
from figures.results import load_curves, load_results
from figures.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from sweeps.core.errors import HarnessError
from sweeps.core.files import write_json_atomic
from sweeps.study.stats import STUDY_SHA256

CHARTS = ["final_loss_vs_lr", "stability_vs_depth", "paired_effect", "eta_max_ratio",
          "lr_sensitivity", "training_curves", "attention", "residual_kurtosis"]


def analysis_of(root):
    results = load_results(root)
    return analyze(results, load_curves(results.runs))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "study"
    ff.write_study(root)
    return root


@pytest.fixture(scope="module")
def result(study):
    return analysis_of(study)


@pytest.fixture(scope="module")
def report(study):
    return make_report(study)


# -- the analysis on the known answers ---------------------------------------------------------
def test_critical_lr_is_the_midpoint_after_the_last_ok_lr(result):
    for depth, expected in {2: math.sqrt(3e-2 * 1e-1), 4: math.sqrt(1e-2 * 3e-2),
                            8: math.sqrt(3e-3 * 1e-2)}.items():
        off = result["depths"][str(depth)]["arms"]["off"]["eta_crit"]
        assert off["median"]["value"] == pytest.approx(expected) and off["censored"] == []
        on = result["depths"][str(depth)]["arms"]["on"]["eta_crit"]
        assert on["median"] == {"value": 0.1, "kind": "above", "bracket": None}


def test_necessity_threshold_sits_just_above_the_last_lr_without_an_effect(result):
    for depth, thr in ff.THRESHOLD.items():
        c = result["depths"][str(depth)]["comparisons"]["off vs on"]
        below = ff.LRS[ff.LRS.index(thr) - 1]
        assert c["threshold"]["kind"] == "" and c["threshold"]["bracket"] == [below, thr]
        # LB - m goes from about -0.04 (the noise floor widens it) to about 0.37: the
        # crossing is ~10% of the way up; the point estimate and the 90% interval hold it
        assert below < c["threshold"]["value"] < below * (thr / below) ** 0.2
        lo, hi = c["threshold_ci90"]
        assert hi == c["threshold"]["value"] and (lo is None or lo <= hi)
        assert c["threshold_estimate"]["value"] <= hi
        assert all(t["bracket"] == [below, thr] for t in c["seed_thresholds"].values())
        necessary = [e["lr"] for e in c["per_lr"] if e["necessary"]]
        assert necessary == [lr for lr in ff.LRS if lr >= thr]


def test_eta_max_is_measured_from_the_best_loss_of_all_arms(result):
    d2 = result["depths"]["2"]
    assert d2["l_star"] == {str(30 * 8 * 32): pytest.approx(2.01)}  # on at 1e-2, seed mean
    on = d2["arms"]["on"]["eta_max"]  # worst seed within 2.11: 2.02 at 1e-2, 2.04 at 3e-2,
    assert on["kind"] == "above"  # 2.07 at 0.1: the whole grid
    off = d2["arms"]["off"]["eta_max"]  # worst 2.02 at 1e-2, 2.86 at 3e-2: crosses in between
    assert off["bracket"] == [1e-2, 3e-2] and 1e-2 < off["value"] < 3e-2
    ratio = d2["comparisons"]["off vs on"]["eta_max_ratio"]
    assert [r["delta"] for r in ratio][:3] == [0.05, 0.1, 0.15] and ratio[1]["ratio"] > 1


def test_sensitivity_counts_base_grid_lrs_in_the_range_only(result):
    s = result["depths"]["4"]["arms"]["on"]["sensitivity"]
    losses = [ff.ON_LOSS[lr] for lr in ff.LRS]  # + 0.01 * seed shifts mean and min alike
    assert s["complete"] and s["mean"] == pytest.approx(sum(losses) / 5 - min(losses))
    assert s["lrs"] == ff.LRS


def test_the_verdicts_on_the_study(result):
    v = result["verdicts"]
    assert [v[h]["verdict"] for h in ("H1", "H2a", "H2b", "H3")] == [SUPPORTED] * 4
    assert v["C1"]["verdict"] == INCONCLUSIVE and "no start-matched control" in v["C1"]["reason"]
    assert "slope" in v["H3"]["evidence"][-1]
    assert set(result["rules"]) == {"2", "4", "8"}
    c = result["depths"]["4"]["comparisons"]["off vs on"]
    text = result["rules"]["4"]["text"]
    assert f"necessary from LR ~{c['threshold']['value']:.3g} (the effect reaches m" in text
    assert "90% interval" in text and "per-seed thresholds" in text
    # analysis.json's contract: settings carry the baselines and the budget per depth
    assert result["settings"]["baselines"] == {"bigram": ff.BIGRAM, "unigram": ff.UNIGRAM,
                                               "unit": "nats/token", "tokenizer": "bytes"}
    per_depth = result["settings"]["tokens_per_param"]
    assert set(per_depth) == {"2", "4", "8"} and per_depth["2"] > per_depth["8"] > 0
    entry = c["per_lr"][-1]
    assert entry["ci90"] == [entry["lower"], entry["upper"]]
    assert isinstance(result["rules"]["4"]["influence"], list)


def test_steps_to_target_are_interpolated_between_quick_evaluations():
    import pandas as pd

    curves = pd.DataFrame({"run_id": ["a"] * 3 + ["b"] * 2, "step": [0, 10, 20, 0, 10],
                           "quick_val_loss": [5.0, 3.5, 2.5, 5.0, 4.0]})
    steps = steps_to_target(curves, 3.0).set_index("run_id").steps
    assert steps["a"] == pytest.approx(15.0) and math.isnan(steps["b"])


# -- verdict edges -----------------------------------------------------------------------------
def test_an_effect_already_at_the_lowest_lr_is_not_lr_conditional(tmp_path):
    def outcome(arm, d, lr, seed):
        return "ok", ff.ON_LOSS[lr] + 0.01 * seed + (0.3 + 0.01 * seed if arm == "off" else 0)
    ff.write_study(tmp_path / "always", depths=[2], outcome=outcome)
    r = analysis_of(tmp_path / "always")
    assert r["verdicts"]["H1"]["verdict"] == NOT_SUPPORTED
    assert "already matters at the lowest LR" in r["verdicts"]["H1"]["reason"]
    assert "may be start temperature" in r["verdicts"]["H1"]["reason"]
    assert r["depths"]["2"]["comparisons"]["off vs on"]["threshold"]["kind"] == "below"
    assert "keep it at every LR" in r["rules"]["2"]["text"]


def test_a_grid_below_the_off_arms_instability_is_inconclusive(tmp_path):
    ff.write_study(tmp_path / "calm", depths=[2],
                   outcome=lambda arm, d, lr, s: ("ok", ff.ON_LOSS[lr] + 0.01 * s + (
                       ff.OFF_JITTER.get(s, 0.0) if arm == "off" else 0.0)))
    v = analysis_of(tmp_path / "calm")["verdicts"]
    assert v["H1"]["verdict"] == INCONCLUSIVE and "extend the LR grid upward" in v["H1"]["reason"]
    assert v["H2a"]["verdict"] == INCONCLUSIVE and "does not fail" in v["H2a"]["reason"]


def test_a_threshold_rising_with_depth_does_not_support_h3(tmp_path):
    rising = {2: 3e-3, 4: 1e-2, 8: 3e-2}

    def outcome(arm, d, lr, seed):
        base = ff.ON_LOSS[lr] + 0.01 * seed
        if arm == "off" and lr >= rising[d]:
            return "ok", base + 0.5 + 0.03 * seed
        return "ok", base
    ff.write_study(tmp_path / "rising", outcome=outcome)
    h3 = analysis_of(tmp_path / "rising")["verdicts"]["H3"]
    assert h3["verdict"] == NOT_SUPPORTED and "does not fall" in h3["reason"]


def test_two_depths_leave_h3_inconclusive_and_one_seed_cannot_be_paired(tmp_path):
    ff.write_study(tmp_path / "two", depths=[2, 4])
    assert "at least 3" in analysis_of(tmp_path / "two")["verdicts"]["H3"]["reason"]
    ff.write_study(tmp_path / "one", depths=[2], seeds=[0])
    v = analysis_of(tmp_path / "one")["verdicts"]
    assert v["H2a"]["verdict"] == INCONCLUSIVE and "at least 3" in v["H2a"]["reason"]


def test_without_a_preregistered_study_every_verdict_is_inconclusive(tmp_path):
    ff.write_study(tmp_path / "bare", depths=[2], study=False)
    v = analysis_of(tmp_path / "bare")["verdicts"]
    assert {x["verdict"] for x in v.values()} == {INCONCLUSIVE}
    assert all("no pre-registered [study]" in x["reason"] for x in v.values())


def test_c1_when_a_start_matched_control_closes_the_low_lr_gap(tmp_path):
    def outcome(arm, d, lr, seed):
        base = ON_LOSS_C[lr] + 0.01 * seed
        if arm == "off" and lr <= 1e-3:
            return "ok", base + 0.3 + 0.02 * seed  # the cold start costs at low LR ...
        if arm == "off" and lr >= 3e-2:
            return "diverged", None  # ... and instability at high LR
        if arm == "off-warm":  # off-warm matches on where it ran, up to seed jitter
            return "ok", base + ff.OFF_JITTER.get(seed, 0.0)
        return "ok", base
    ff.write_study(tmp_path / "control", depths=[2], arms=("off", "on", "off-warm"),
                   outcome=outcome, control_lrs=[1e-3, 3e-3], study={"start_control": "off-warm"})
    r = analysis_of(tmp_path / "control")
    assert r["verdicts"]["C1"]["verdict"] == SUPPORTED
    assert "off-warm vs on" in r["depths"]["2"]["comparisons"]
    assert r["verdicts"]["H1"]["verdict"] == NOT_SUPPORTED  # judged on the primary comparison


ON_LOSS_C = {1e-3: 2.30, 3e-3: 2.10, 1e-2: 2.00, 3e-2: 2.02, 1e-1: 2.05}


# -- the report ------------------------------------------------------------------------------
def test_a_comparison_whose_arms_share_no_finished_lr_is_inconclusive_not_a_crash(tmp_path):
    """Mid-sweep: the start control ran its low LRs, QK-norm on has not finished them yet."""
    def outcome(arm, d, lr, seed):
        if arm == "on" and lr <= 3e-3:
            return None, None  # unfinished
        return ff.study_outcome(arm, d, lr, seed) if arm != "off-warm" else (
            "ok", ff.ON_LOSS[lr] + 0.01 * seed)
    ff.write_study(tmp_path / "mid", depths=[2], arms=("off", "on", "off-warm"),
                   outcome=outcome, control_lrs=[1e-3, 3e-3],
                   study={"start_control": "off-warm"})
    r = analysis_of(tmp_path / "mid")
    control = r["depths"]["2"]["comparisons"]["off-warm vs on"]
    assert control["per_lr"] == [] and control["threshold"]["kind"] == "none"
    assert r["verdicts"]["C1"]["verdict"] == INCONCLUSIVE
    assert r["verdicts"]["H1"]["verdict"] == INCONCLUSIVE  # the lowest LR has no pairs
    assert "cannot judge the lowest base-grid LR" in r["verdicts"]["H1"]["reason"]


def test_report_states_verdicts_run_classes_tables_and_provenance(report, study):
    text = report.read_text()
    assert f"docs/STUDY.md sha256 `{STUDY_SHA256[:16]}`" in text
    for heading in ("## Setup", "### Arms", "## Runs", "### The outcome of every run",
                    "## Verdicts", "### H1", "### H2a", "### H2b", "### H3", "### C1",
                    "### The practitioner's rule", "### Critical learning rate",
                    "### eta_max(delta = 0.1 nats)", "### Paired effect, off vs on",
                    "### Necessity thresholds", "## Provenance"):
        assert heading in text, heading
    assert "**Verdict: supported.**" in text
    assert "| 0.03 | ooo | ooo | ddd | ooo | ddd | ooo |" in text  # off fails above its threshold
    doc = json.loads((report.parent / "analysis.json").read_text())
    assert set(doc["verdicts"]) == {"H1", "H2a", "H2b", "H3", "C1"}
    assert doc["study_sha256"] == STUDY_SHA256 and len(doc["runs"]) == 90


def test_figures_exist_and_open_offline(report):
    for name in CHARTS:
        for ext in ("png", "svg", "html", "vl.json"):
            path = report.parent / f"{name}.{ext}"
            assert path.exists() and path.stat().st_size > 500, path
        assert "cdn.jsdelivr" not in (report.parent / f"{name}.html").read_text()


def test_same_runs_give_identical_report_and_analysis(report, study, tmp_path):
    again = make_report(study, tmp_path / "again")
    assert again.read_text() == report.read_text()
    for name in ("analysis.json", "final_loss_vs_lr.vl.json", "paired_effect.vl.json"):
        assert (tmp_path / "again" / name).read_text() == (report.parent / name).read_text()


def test_report_names_failed_incomplete_corrupt_and_missing_runs(tmp_path):
    root = tmp_path / "messy"
    cfgs = [ff.config(arm, 2, lr, s) for arm in ("off", "on") for lr in (1e-3, 1e-2)
            for s in (0, 1)]
    for i, cfg in enumerate(cfgs):
        if i == 1:
            continue  # planned, never started
        status = {2: "failed", 4: None, 6: "unstable"}.get(i, "ok")
        ff.write_run(root, cfg, status, 2.0 + 0.1 * i if status in ("ok", "unstable") else None,
                     error="RuntimeError: CUDA error: device-side assert\nTraceback ...")
    ff.write_plan(root, "messy", cfgs)
    (root / cfgs[3].run_id / "config.json").write_text("{garbage")  # a corrupt run
    write_json_atomic(root / "crosscheck.json", {"verdict": "pass", "configs": [{"checks": [{}]}]})
    text = make_report(root).read_text()
    for status in ("failed", "incomplete", "corrupt", "missing"):
        assert f"| {status} |" in text, status
    assert "device-side assert" in text and "not valid JSON" in text
    assert "### Why runs are unstable" in text and "bigram baseline" in text
    assert "**pass** (1 checks over 1 model configs)" in text


def test_report_before_any_run_finished(tmp_path):
    cfgs = [ff.config("off", 2, 1e-3, 0)]
    ff.write_run(tmp_path / "early", cfgs[0], None)
    ff.write_plan(tmp_path / "early", "early", cfgs)
    text = make_report(tmp_path / "early").read_text()
    assert "No run has finished yet" in text and "| 0 | 0 | 0 | 0 | 1 | 0 | 0 | 1 |" in text


def test_empty_sweep_directory_raises(tmp_path):
    with pytest.raises(HarnessError, match="no run directories"):
        make_report(tmp_path)


def test_a_report_in_fewer_formats_links_only_what_it_wrote(study, tmp_path):
    from click.testing import CliRunner

    from figures.cli import figures

    out = tmp_path / "light"
    text = make_report(study, out, formats=("svg",)).read_text()
    assert "![Final validation loss vs learning rate](final_loss_vs_lr.svg)" in text
    assert ".png" not in text and ".html" not in text
    assert sorted(p.suffix for p in out.iterdir() if p.suffix != ".md") == (
        [".json"] + [".svg"] * 8)  # analysis.json and the charts
    bad = CliRunner().invoke(figures, ["study", "--runs-dir", str(study.parent), "--formats",
                                       "svg,gif"])
    assert bad.exit_code == 2 and "unknown format gif" in bad.output
