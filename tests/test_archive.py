"""sweeps/analysis/archive.py, sweeps/analysis/previous.py and figures/report/rejudged.py: a
report regenerates from its own data, and a report made before its data was kept is re-judged
from its analysis.json's runs table, beside what its earlier analysis decided."""

import json
from pathlib import Path

import figures_fakes as ff
import pytest
from click.testing import CliRunner

from figures.report.assemble import make_report
from sweeps.analysis.adapter import SCHEMA
from sweeps.analysis.archive import (
    CURVES_FILE,
    OLD_ANALYSIS,
    OLD_REPORT,
    RUNS_FILE,
    SWEEP_FILE,
    V4_ANALYSIS,
)
from sweeps.analysis.previous import previous_of

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    root = tmp_path_factory.mktemp("archive")
    ff.write_study(root / "study", depths=[2, 4])
    report = make_report(root / "study", root / "report", ("svg",))
    return root, report


@pytest.mark.slow
def test_a_report_regenerates_from_its_own_data_alone(reported, tmp_path):
    """The same analysis and report.md from runs.parquet and curves.parquet as from the run
    directories; the curves are thinned to what the charts draw."""
    root, report = reported
    for name in (RUNS_FILE, CURVES_FILE, SWEEP_FILE):
        assert (report.parent / name).is_file(), name
    again = make_report(None, tmp_path / "again", ("svg",), from_report=report.parent)
    first = json.loads((report.parent / "analysis.json").read_text())
    assert json.loads((tmp_path / "again" / "analysis.json").read_text()) == first
    assert again.read_text() == report.read_text()
    assert "## Re-judged" not in again.read_text()  # nothing earlier to compare with


def _pre_v4_report(root, tmp_path):
    """A report as the v3 harness left it: analysis.json without a schema whose verdicts differ
    (H1 'not supported'), report.md with its crosscheck line, no archive; its spec a file."""
    src = json.loads((root / "report" / "analysis.json").read_text())
    del src["schema"]
    src["verdicts"] = {"H1": {"verdict": "not supported"}}  # v3 wrote its verdicts in words
    spec = tmp_path / "fixture.toml"
    spec.write_text(
        'name = "fixture"\npreset = "smoke"\n'
        '[set]\n"train.max_steps" = 30\n"train.warmup_steps" = 5\n"train.eval_interval" = 10\n'
        '"train.baseline" = "bigram"\n'
        f"[grid]\nlr = {ff.LRS}\nn_layer = [2, 4]\nseed = {ff.SEEDS}\n"
        '[arms.off]\nset = { "model.qk_norm" = "none" }\n'
        '[arms.on]\nset = { "model.qk_norm" = "rms" }\n'
        "[study]\ndelta = 0.1\nsensitivity_range = [1e-3, 3e-3]\ntarget_loss = 3.0\n"
    )
    src["sweep"] = str(spec)
    old = tmp_path / "old"
    old.mkdir()
    (old / "analysis.json").write_text(json.dumps(src))
    (old / "report.md").write_text("crosscheck: **pass** (74 checks over 2 model configs)\n")
    return old


@pytest.mark.slow
def test_a_pre_v4_report_is_rejudged_in_place_from_its_runs_table(reported, tmp_path):
    root, report = reported
    old = _pre_v4_report(root, tmp_path)
    text = make_report(None, None, ("svg",), from_report=old).read_text()
    # v3's files kept beside it, by name, and the comparison opens the report
    assert (old / OLD_ANALYSIS).is_file() and (old / OLD_REPORT).is_file()
    assert "## Re-judged under the current rules" in text
    assert "| H1 | not supported | supported | **yes** |" in text
    assert "could not recompute the training curves" in text
    assert "**pass** (74 checks over 2 model configs)" in text  # the crosscheck it recorded
    assert "report-v3.md beside this report records it" in text  # provenance stayed there
    now = json.loads((old / "analysis.json").read_text())
    first = json.loads((report.parent / "analysis.json").read_text())
    assert now["decided"]["H2a"] == first["decided"]["H2a"]  # the same runs, the same rules
    assert now["schema"] == SCHEMA and "source" not in now  # numbers only: the report says it
    # again from the archive it now has: still compared with v3, the gaps still said
    again = make_report(None, None, ("svg",), from_report=old).read_text()
    assert "| H1 | not supported | supported | **yes** |" in again
    assert "could not recompute the training curves" in again


def test_figures_from_report_is_one_line_on_a_directory_without_report_data(tmp_path):
    from figures.cli import figures

    (tmp_path / "empty").mkdir()
    out = CliRunner().invoke(figures, ["x", "--from-report", str(tmp_path / "empty")])
    assert out.exit_code != 0 and "holds no report data" in str(out.exception or out.output)
    out = CliRunner().invoke(figures, ["x", "--from-report", str(tmp_path / "missing")])
    assert out.exit_code != 0 and "does not exist" in str(out.exception or out.output)


def test_figures_from_report_leaves_the_report_alone_unless_asked(tmp_path):
    """A committed report changes only with --in-place (or where --out points); NAME must be
    the report's sweep (issue 58)."""
    import shutil

    from figures.cli import figures

    committed = Path(__file__).resolve().parents[1] / "docs" / "cpu-budget"
    report = tmp_path / "cpu-budget"
    shutil.copytree(committed, report)
    before = {p.name: p.read_bytes() for p in report.iterdir() if p.is_file()}
    runs = tmp_path / "runs"
    args = ["--from-report", str(report), "--runs-dir", str(runs), "--formats", "vl.json"]
    out = CliRunner().invoke(figures, ["cpu-budget", *args])
    assert out.exit_code == 0, out.output
    assert {p.name: p.read_bytes() for p in report.iterdir() if p.is_file()} == before
    assert (runs / "cpu-budget" / "report" / "report.md").is_file()
    wrong = CliRunner().invoke(figures, ["smoke", *args])
    assert wrong.exit_code != 0 and "is sweep cpu-budget's report" in str(wrong.exception)
    both = CliRunner().invoke(figures, ["cpu-budget", *args, "--in-place", "--out", str(tmp_path)])
    assert both.exit_code != 0 and "takes no --out" in str(both.exception)


@pytest.mark.parametrize("name, rules", [(OLD_ANALYSIS, "v3"), (V4_ANALYSIS, "v4")])
def test_an_earlier_analysis_reads_typed_as_its_rules_wrote_it(name, rules):
    """docs/cpu's kept analyses (v3: `verdicts`; v4: `decided`, schema 4 or 5): every verdict,
    threshold, critical LR and sensitivity the Re-judged section compares, read from the keys
    that version wrote."""
    doc = json.loads((DOCS / "cpu" / name).read_text())
    p = previous_of(doc)
    assert p.rules == rules and p.study_sha256 == doc["study_sha256"]
    said = doc["decided" if rules == "v4" else "verdicts"]
    assert p.verdicts and p.verdicts == {h: v["verdict"] for h, v in said.items()}
    for rung, d in doc["depths"].items():
        for k, c in d["comparisons"].items():
            t = p.thresholds[rung][k]
            assert t.point.value == c["threshold"]["value"]
            assert t.point.kind == c["threshold"]["kind"]
        for arm, a in d["arms"].items():
            assert p.arms[rung][arm].sensitivity == a["sensitivity"]["mean"]
            assert p.arms[rung][arm].critical_lr.value == a["eta_crit"]["median"]["value"]
