"""figures/: the analysis with known answers, verdict edges, and the report from hand-made runs.

The study fixture (tests/figures_fakes.py) has a flat QK-norm-on arm and an off arm that is
0.4 nats worse at a depth-dependent threshold LR (3e-2, 1e-2, 3e-3 at n_layer 2, 4, 8) and
diverges above it. Reports render once per module (PNG export is the slow part).
"""

import dataclasses
import json
import math
import re
from dataclasses import replace

import figures_fakes as ff
import pytest

from figures import charts, present
from figures.report.assemble import make_report
from figures.words.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from figures.words.view import analyze
from sweeps.analysis.adapter import from_json
from sweeps.analysis.compute import steps_to_target
from sweeps.analysis.results import load_curves, load_results
from sweeps.core.errors import HarnessError
from sweeps.core.files import write_json_atomic
from sweeps.study.stats import STUDY_SHA256
from sweeps.study.trend import RULED_OUT

CHARTS = list(ff.CHARTS)


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
def test_critical_lr_is_the_midpoint_after_the_last_ok_lr_under_each_definition(result):
    """off is stuck (worse than the bigram baseline) at its threshold LR and diverges above it:
    its critical LR is one grid step lower when stuck counts as failing than when only a
    divergence does; on never fails."""
    for depth, thr in ff.THRESHOLD.items():
        below, above = ff.LRS[ff.LRS.index(thr) - 1], ff.LRS[ff.LRS.index(thr) + 1]
        arms = result["depths"][str(depth)]["arms"]
        off = arms["off"]["eta_crit"]
        assert off["definition"] == "stuck" and off["censored"] == []
        assert off["median"]["value"] == pytest.approx(math.sqrt(below * thr))
        by = arms["off"]["eta_crit_by_definition"]
        assert by["stuck"]["median"] == off["median"]
        assert by["diverged"]["median"]["value"] == pytest.approx(math.sqrt(thr * above))
        # degraded (worse than the seed's best + 0.1): off at thr is 0.4 worse than its best
        assert by["degraded"]["median"]["value"] == pytest.approx(math.sqrt(below * thr))
        on = arms["on"]["eta_crit"]
        assert on["median"] == {
            "value": 0.1,
            "kind": "above",
            "bracket": None,
            "interpolated": False,
        }


def test_necessity_threshold_sits_just_above_the_last_lr_without_an_effect(result):
    for depth, thr in ff.THRESHOLD.items():
        c = result["depths"][str(depth)]["comparisons"]["off vs on"]
        below = ff.LRS[ff.LRS.index(thr) - 1]
        assert c["threshold"]["kind"] == "" and c["threshold"]["bracket"] == [below, thr]
        assert c["threshold_bracket"] == [below, thr]
        # off is stuck at thr and trained below it: a change of failure class, so no
        # interpolation across the bracket, its midpoint stands in
        assert not c["threshold"]["interpolated"]
        assert c["threshold"]["value"] == pytest.approx(math.sqrt(below * thr))
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
    assert any("slope" in e for e in v["H3"]["evidence"])
    assert any("left out" in e for e in v["H3"]["evidence"])
    assert set(result["rules"]) == {"2", "4", "8"}
    c = result["depths"]["4"]["comparisons"]["off vs on"]
    text = result["rules"]["4"]["text"]
    lo, hi = c["threshold_bracket"]  # the rule in both forms: absolute, and x off's best LR
    best = result["depths"]["4"]["arms"]["off"]["best_lr"]
    assert best == 3e-3 and (lo, hi) == (3e-3, 1e-2)
    assert f"QK-norm is necessary from LR {hi:.3g} up ({hi / best:.3g}x that best LR)" in text
    assert f"at {lo:.3g} (1x) it was not shown necessary" in text
    assert "Per seed: (0.003, 0.01] (every seed)." in text
    h1 = result["depths"]["4"]["h1"]
    assert h1["lr"] == best and h1["why"] == "negligible"
    assert -0.05 < h1["stats"]["lower"] and h1["stats"]["upper"] < 0.05
    # analysis.json's contract: settings carry the baselines and the budget per depth
    assert result["settings"]["baselines"] == {
        "bigram": ff.BIGRAM,
        "unigram": ff.UNIGRAM,
        "unit": "nats/token",
        "tokenizer": "bytes",
    }
    per_depth = result["settings"]["tokens_per_param"]
    assert set(per_depth) == {"2", "4", "8"} and per_depth["2"] > per_depth["8"] > 0
    entry = c["per_lr"][-1]
    assert entry["ci90"] == [entry["lower"], entry["upper"]]
    assert isinstance(c["influence"], list)  # the runs that alone move it: the comparison's


def test_steps_to_target_are_interpolated_between_quick_evaluations():
    import pandas as pd

    curves = pd.DataFrame(
        {
            "run_id": ["a"] * 3 + ["b"] * 2,
            "step": [0, 10, 20, 0, 10],
            "quick_val_loss": [5.0, 3.5, 2.5, 5.0, 4.0],
        }
    )
    steps = steps_to_target(curves, 3.0).set_index("run_id").steps
    assert steps["a"] == pytest.approx(15.0) and math.isnan(steps["b"])


# -- verdict edges -----------------------------------------------------------------------------
def test_an_effect_already_at_the_lowest_lr_is_not_lr_conditional(tmp_path):
    def outcome(arm, d, lr, seed):
        return "ok", ff.ON_LOSS[lr] + 0.01 * seed + (0.3 + 0.01 * seed if arm == "off" else 0)

    ff.write_study(tmp_path / "always", depths=[2], outcome=outcome)
    r = analysis_of(tmp_path / "always")
    assert r["verdicts"]["H1"]["verdict"] == NOT_SUPPORTED
    assert "already matters at off's best LR" in r["verdicts"]["H1"]["reason"]
    assert r["depths"]["2"]["comparisons"]["off vs on"]["threshold"]["kind"] == "below"
    assert "keep it at every LR" in r["rules"]["2"]["text"]


def test_a_grid_below_the_off_arms_instability_is_inconclusive(tmp_path):
    ff.write_study(
        tmp_path / "calm",
        depths=[2],
        outcome=lambda arm, d, lr, s: (
            "ok",
            ff.ON_LOSS[lr] + 0.01 * s + (ff.OFF_JITTER.get(s, 0.0) if arm == "off" else 0.0),
        ),
    )
    r = analysis_of(tmp_path / "calm")
    v = r["verdicts"]
    assert v["H1"]["verdict"] == INCONCLUSIVE and "extend the LR grid upward" in v["H1"]["reason"]
    # no off run failed: the rule says so, not "runs fail from LR ~> 0.1"
    assert r["rules"]["2"]["text"].endswith(
        "Without QK-norm runs did not fail up to LR 0.1, the grid's top."
    )
    assert v["H2a"]["verdict"] == INCONCLUSIVE and "do not fail" in v["H2a"]["reason"]


def test_a_threshold_rising_with_depth_does_not_support_h3(tmp_path):
    rising = {2: 3e-3, 4: 1e-2, 8: 3e-2}

    def outcome(arm, d, lr, seed):
        base = ff.ON_LOSS[lr] + 0.01 * seed
        if arm == "off" and lr >= rising[d]:
            return "ok", base + 0.5 + 0.03 * seed
        return "ok", base

    ff.write_study(tmp_path / "rising", outcome=outcome)
    h3 = analysis_of(tmp_path / "rising")["verdicts"]["H3"]
    assert h3["verdict"] == RULED_OUT and "ruled out at this scale" in h3["reason"]


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

    ff.write_study(
        tmp_path / "control",
        depths=[2],
        arms=("off", "on", "off-warm"),
        outcome=outcome,
        control_lrs=[1e-3, 3e-3],
        study={"start_control": "off-warm"},
    )
    r = analysis_of(tmp_path / "control")
    assert r["verdicts"]["C1"]["verdict"] == SUPPORTED
    assert "off-warm vs on" in r["depths"]["2"]["comparisons"]
    # H1 is judged at off's best LR (1e-2), where the arms tie; the low-LR (start
    # temperature) gap is named apart in the practitioner's rule, with the control's test
    assert r["verdicts"]["H1"]["verdict"] == SUPPORTED
    assert r["depths"]["2"]["h1"]["lr"] == 1e-2
    text = r["rules"]["2"]["text"]
    assert "Separately, QK-norm also helped below that best LR: at 0.001." in text
    assert "The start-temperature control tests that (C1)." in text


ON_LOSS_C = {1e-3: 2.30, 3e-3: 2.10, 1e-2: 2.00, 3e-2: 2.02, 1e-1: 2.05}


# -- the report ------------------------------------------------------------------------------
def test_a_comparison_whose_arms_share_no_finished_lr_is_inconclusive_not_a_crash(tmp_path):
    """Mid-sweep: the start control ran its low LRs, QK-norm on has not finished them yet."""

    def outcome(arm, d, lr, seed):
        if arm == "on" and lr <= 3e-3:
            return None, None  # unfinished
        return (
            ff.study_outcome(arm, d, lr, seed)
            if arm != "off-warm"
            else ("ok", ff.ON_LOSS[lr] + 0.01 * seed)
        )

    ff.write_study(
        tmp_path / "mid",
        depths=[2],
        arms=("off", "on", "off-warm"),
        outcome=outcome,
        control_lrs=[1e-3, 3e-3],
        study={"start_control": "off-warm"},
    )
    r = analysis_of(tmp_path / "mid")
    control = r["depths"]["2"]["comparisons"]["off-warm vs on"]
    assert control["per_lr"] == [] and control["threshold"]["kind"] == "none"
    assert r["verdicts"]["C1"]["verdict"] == INCONCLUSIVE
    # H1 is judged at off's best LR, 1e-2, where both arms finished
    assert r["depths"]["2"]["h1"]["lr"] == 1e-2 and r["verdicts"]["H1"]["verdict"] == SUPPORTED


def test_report_states_verdicts_run_classes_tables_and_provenance(report, study):
    text = report.read_text()
    assert f"docs/STUDY.md sha256 `{STUDY_SHA256[:16]}`" in text
    for heading in (
        "## Setup",
        "### Arms",
        "## Runs",
        "### The outcome of every run",
        "## Verdicts",
        "### H1",
        "### H2a",
        "### H2b",
        "### H3",
        "### C1",
        "### The practitioner's rule",
        "### Critical learning rate",
        "### eta_max(delta = 0.1 nats)",
        "### Paired effect, off vs on",
        "### Stability thresholds",
        "## Provenance",
    ):
        assert heading in text, heading
    assert "**Verdict: supported.**" in text
    # the host each run trained on: a CPU run is bit-identical only on the same kind
    assert "- Hosts: Test CPU (avx2), 2 CPUs, threads OMP_NUM_THREADS=1 (90 runs)" in text
    # the loss table's unit is the tokenizer's, as the charts say it
    unit = present.loss_unit(
        from_json(json.loads((report.parent / "analysis.json").read_text())).settings
    )
    assert f"### Effective loss ({unit}, mean" in text
    assert "| 0.03 | ooo | ooo | ddd | ooo | ddd | ooo |" in text  # off fails above its threshold
    doc = json.loads((report.parent / "analysis.json").read_text())
    assert set(doc["decided"]) == {"H1", "H2a", "H2b", "H3", "C1"}
    assert doc["study_sha256"] == STUDY_SHA256 and len(doc["runs"]) == 90


def test_figures_exist_and_open_offline(report):
    for name in CHARTS:
        for ext in ("png", "svg", "html"):
            path = report.parent / f"{name}.{ext}"
            assert path.exists() and path.stat().st_size > 500, path
        assert "cdn.jsdelivr" not in (report.parent / f"{name}.html").read_text()


@pytest.mark.slow
def test_same_runs_give_identical_report_and_analysis(report, study, tmp_path):
    again = make_report(study, tmp_path / "again")
    assert again.read_text() == report.read_text()
    for name in ("analysis.json", "final_loss_vs_lr.html", "paired_effect.html"):
        assert (tmp_path / "again" / name).read_text() == (report.parent / name).read_text()


@pytest.mark.slow
def test_report_names_failed_incomplete_corrupt_and_missing_runs(tmp_path):
    root = tmp_path / "messy"
    cfgs = [
        ff.config(arm, 2, lr, s) for arm in ("off", "on") for lr in (1e-3, 1e-2) for s in (0, 1)
    ]
    for i, cfg in enumerate(cfgs):
        if i == 1:
            continue  # planned, never started
        status = {2: "failed", 4: None, 6: "unstable"}.get(i, "ok")
        ff.write_run(
            root,
            cfg,
            status,
            2.0 + 0.1 * i if status in ("ok", "unstable") else None,
            error="RuntimeError: CUDA error: device-side assert\nTraceback ...",
        )
    ff.write_plan(root, "messy", cfgs)
    (root / cfgs[3].run_id / "config.json").write_text("{garbage")  # a corrupt run
    write_json_atomic(root / "crosscheck.json", {"verdict": "pass", "configs": [{"checks": [{}]}]})
    text = make_report(root).read_text()
    for status in ("failed", "incomplete", "corrupt", "missing"):
        assert f"| {status} |" in text, status
    from click.testing import CliRunner

    from figures.cli import figures

    out = CliRunner().invoke(
        figures,
        ["messy", "--runs-dir", str(tmp_path), "--out", str(tmp_path / "o"), "--formats", "svg"],
    )
    assert out.exit_code == 0, out.output
    assert "left out of every statistic: 1 corrupt, 1 failed, 1 incomplete, 1 missing" in out.output
    # the planned runs still to train are said first, before any verdict, in the report and on
    # the terminal: failed and corrupt runs ended, so they are not counted there
    unfinished = (
        "Not finished: 2 of the plan's 8 runs have not finished training (1 not started, 1 "
        "part-trained).** Every verdict and number here rests on the 6 that have"
    )
    assert f"> **{unfinished}" in text
    assert text.index(unfinished) < text.index("## The answer")
    said = out.output.index(unfinished.replace("**", ""))
    assert said < out.output.index("H1 ")
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


@pytest.mark.slow
def test_a_report_in_fewer_formats_links_only_what_it_wrote(study, tmp_path):
    from click.testing import CliRunner

    from figures.cli import figures

    out = tmp_path / "light"
    text = make_report(study, out, formats=("svg",)).read_text()
    assert "![Final loss vs learning rate](final_loss_vs_lr.svg)" in text
    assert ".png" not in text and ".html" not in text
    assert sorted(p.name for p in out.iterdir() if p.suffix not in (".md", ".svg")) == [
        "analysis.json",
        "curves.parquet",
        "runs.parquet",
        "sweep.json",
    ]  # the analysis, and the report's own data (sweeps/analysis/archive.py)
    assert sorted(p.stem for p in out.glob("*.svg")) == sorted(CHARTS)
    bad = CliRunner().invoke(
        figures, ["study", "--runs-dir", str(study.parent), "--formats", "svg,gif"]
    )
    assert bad.exit_code == 2 and "unknown format gif" in bad.output


def test_html_charts_share_one_vega_script(report):
    pages = [report.parent / f"{name}.html" for name in CHARTS]
    assert all('<script src="vega.js"></script>' in p.read_text() for p in pages)
    library = (report.parent / "vega.js").read_text()
    assert len(library) > 100_000 and "window.vegaEmbed" in library
    assert not any(library[:300] in p.read_text() for p in pages)  # none inlines it again


# -- the answer up front, and the words ---------------------------------------------------------
def test_report_opens_with_the_answer_and_the_headline_figures(report):
    text = report.read_text()
    answer, setup = text.index("## The answer"), text.index("## Setup")
    assert answer < setup < text.index("## Runs") < text.index("## Verdicts")
    opening = text[answer:setup]
    for needed in (
        "**Does the stability threshold fall as depth grows? (H3, depths 2, 4, 8)**",
        "- Depth 4: without QK-norm the best LR is 0.003. QK-norm is necessary from LR 0.01 up "
        "(3.33x that best LR); at 0.003 (1x) it was not shown necessary.",
        "Critical LR: off 0.0173, on > 0.1.",
        "- H2a supported. Does QK-norm raise the LR at which runs start to fail? Yes:",
        "  - depth 2: on's critical LR is x5.77 [x3.38, x9.85] off's. When only a divergence "
        "counts: x1.83 [x1.02, x3.28], supported.",
        "*Effective loss*",
        "7,680 tokens",
        "corpus builtin",
        "![Final loss vs learning rate]",
        "![Where QK-norm is necessary]",
    ):
        assert needed in opening, needed
    # the sweep's own question (a ladder: the trend) first, then QK-norm per depth, then the
    # verdicts, then the data and the figures
    order = [
        "**Does the stability threshold fall",
        "**Where is QK-norm necessary?",
        "**Verdicts",
        "These runs: corpus builtin",
        "![Final loss vs learning rate]",
    ]
    assert [opening.index(x) for x in order] == sorted(opening.index(x) for x in order)
    # the fake runs switch the bigram rule on (a study spec's): the outcome definition says so
    assert "*stuck*: it diverged or finished worse than the bigram baseline" in opening
    assert "worse than the data's bigram baseline (2.350 nats)" in text[setup:]
    assert "| LR | depth 2 off | depth 2 on |" in text and "L2 off" not in text
    assert "n_layer 2:" not in text  # verdict text speaks of depth


@pytest.mark.slow
def test_figures_command_prints_the_answer(study, tmp_path):
    from click.testing import CliRunner

    from figures.cli import figures

    out = CliRunner().invoke(
        figures,
        [
            "study",
            "--runs-dir",
            str(study.parent),
            "--out",
            str(tmp_path / "r"),
            "--formats",
            "svg",
        ],
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    # the fixture trains under 1 token per parameter: the budget warnings come first
    assert lines[0].startswith("budget warning: depth 2: 0.514 tokens per parameter")
    lines = [line for line in lines if not line.startswith("budget warning")]
    assert lines[-1].startswith("report: ")
    said = lines[:-1]  # the opening, as the report has it (titles bold, bullets one level up)
    report = (tmp_path / "r" / "report.md").read_text()
    opening = report[report.index("## The answer") : report.index("These runs:")]
    assert said[0] == "Does the stability threshold fall as depth grows? (H3, depths 2, 4, 8)"
    for line in said:
        text = line.strip().removeprefix("- ")
        assert (f"**{text}**" if line == line.lstrip() else text) in opening, line
    assert len(said) == len([x for x in opening.splitlines() if x.startswith(("**", "- ", "  - "))])
    assert said[4].startswith("  - Depth 4: without QK-norm the best LR is 0.003.")
    assert said[-1] == (
        "  - C1 inconclusive. Is the low-LR gap the start temperature? Not assessed: this sweep "
        "has no start-matched control arm."
    )


@pytest.mark.parametrize("seconds,text", [(22.4, "22 s"), (270, "4.5 min"), (7092, "1 h 58 min")])
def test_compute_reads_in_seconds_minutes_or_hours(seconds, text):
    assert present.seconds(seconds) == text


def test_steps_to_target_show_the_precision_their_speedup_uses(result):
    from figures.report import tables

    table = tables.steps(ff.typed(result))  # steps to the target loss / to the bigram baseline
    parts = [
        part
        for row in table.splitlines()[2:]
        for cell in row.strip("| ").split(" | ")[1:]
        for part in cell.split(" / ")
    ]
    assert parts and all(p.count(".") == 1 for p in parts if p != "-")
    assert any(p != "-" for p in parts[1::2])  # the fixture's runs reach the baseline


def test_interval_readers_print_the_interval_that_decided():
    """Only the decided intervals: ci90 (whose ends are the one-sided 95% bounds) and lower;
    the threshold as the bracket it is, a critical LR as its seeds' range."""
    from sweeps.analysis import model as m

    entry = m.Paired(3, 0.1, 0.1, 0.1, None, None, [None, None], None)
    assert present.effect_interval(entry) == (None, None, "90%")
    assert present.lower_bound(entry) is None
    entry = replace(entry, ci90=[0.0, 0.2], lower=0.01)
    assert present.effect_interval(entry) == (0.0, 0.2, "90%")
    assert present.lower_bound(entry) == 0.01
    fields = {f.name: None for f in dataclasses.fields(m.Comparison)}
    c = m.Comparison(**fields | {"threshold_bracket": None})
    assert present.threshold_interval(c) == (None, None, "")
    # the threshold is drawn as the bracket it is (docs/STUDY.md section 4), never a 90% CI
    c = replace(c, threshold_bracket=[0.005, 0.05])
    assert present.threshold_interval(c) == (0.005, 0.05, "bracket")
    point = [m.GridPoint(v, "", None, False) for v in (0.1, 0.05, 0.2)]
    crit = m.CriticalLRs({}, *point, [])
    assert present.crit_interval(crit) == (0.05, 0.2, "seed range")
    assert (
        fmt_pm({"mean": 0.1, "lo": -0.1, "hi": 0.3, "n": 3, "ci90": [0.0, 0.2]})
        == "0.100 [0.000, 0.200], n=3"
    )


def fmt_pm(entry):
    from types import SimpleNamespace

    from figures.words import numbers

    return numbers.pm_interval(SimpleNamespace(**entry))  # any record with its fields


def test_a_bigram_baseline_just_above_the_runs_is_drawn_not_only_named(result):
    """The axis stretches to a baseline a little above every finished run (the start-
    temperature control: runs end at 0.96-2.23, the baseline is 2.34) instead of labelling
    it 'above the axis'; one far above stays a label."""
    import copy

    finished = [r["loss"] for r in result["runs"] if r["outcome"] in ("ok", "unstable")]
    span = max(finished) - min(finished)  # beyond the axis' 6% pad, within a quarter span
    for bigram, drawn in ((max(finished) + 0.15 * span, True), (max(finished) + 50.0, False)):
        analysis = copy.deepcopy(result)
        analysis["settings"]["baselines"] = {**analysis["settings"]["baselines"], "bigram": bigram}
        spec = json.dumps(charts.final_loss(ff.typed(analysis)).to_dict())
        assert ('"name": "bigram"' in spec) is drawn
        assert (re.search(r"bigram [0-9.]+:? above", spec) is None) is drawn


def test_seed_spreads_and_floored_intervals_say_agreement_in_words():
    from figures.words import numbers
    from sweeps.analysis import model as m

    def g(value, kind=""):
        return m.GridPoint(value, kind, None, False)

    def crit(median, low, high):
        return m.CriticalLRs({}, median, low, high, [])

    def paired(sd, sd_used):
        return m.Paired(3, 0.1, sd, sd_used, None, None, [None, None], None)

    assert numbers.median_range(crit(g(0.562), g(0.562), g(0.562))) == "0.562 (every seed)"
    assert numbers.floored(paired(0.011, 0.603)) == " †"  # the floor set the width
    assert numbers.floored(paired(0.2, 0.2)) == numbers.floored(paired(None, 0.2)) == ""
    spread = crit(g(0.075), g(0.042), g(0.075))
    assert numbers.median_range(spread) == "0.075 (seeds 0.042 to 0.075)"
    # one LR per seed (W2's best LRs): agreeing seeds counted once, lowest first, none last
    assert numbers.seed_lrs([0.01] * 4) == "0.01 (every seed)"
    assert numbers.seed_lrs([0.0316, 0.01, float("nan"), 0.01]) == (
        "0.01 (2 seeds), 0.0316 (1 seed), none (1 seed)"
    )
    assert numbers.seed_lrs([0.01]) == "0.01 (1 seed)"


def test_runs_stuck_below_the_best_lr_are_a_budget_warning_not_a_failure(tmp_path):
    """The 300-step case: off at the lowest LR ends just above the bigram baseline (2.36 vs
    2.35). v4 counts it at 2.36, not at its loss at init, and the report warns that the budget
    is too short for that LR instead of calling QK-norm necessary by 3 nats."""

    def outcome(arm, d, lr, seed):
        status, loss = ff.study_outcome(arm, d, lr, seed)
        if arm == "off" and lr == 1e-3:
            return "unstable", 2.36 + 0.002 * seed
        return status, loss

    ff.write_study(tmp_path / "short", depths=[2], outcome=outcome)
    r = analysis_of(tmp_path / "short")
    low = r["depths"]["2"]["comparisons"]["off vs on"]["per_lr"][0]
    assert low["lr"] == 1e-3 and abs(low["mean"] - (2.36 - 2.30 - 0.008 / 3)) < 0.01
    warning = next(w for w in r["budget_warnings"] if "off run(s)" in w)
    assert "3 off run(s) at LR 0.001" in warning and "too short a budget" in warning
    report = make_report(tmp_path / "short", tmp_path / "out", ("svg",)).read_text()
    assert "**Budget warning:** depth 2: 3 off run(s) at LR 0.001" in report
