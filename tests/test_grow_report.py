"""Growing a committed report (sweeps/sweep/archived.py, sweeps.analysis.archive.add_runs): a sweep
given the report counts the report's runs as finished and trains only the runs its grid rules
add; `figures --from-report --add-runs` reports all of them, and the report keeps them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from test_sweeps import sweep, write_spec

from figures.cli import figures
from figures.report.assemble import make_report
from sweeps.analysis.archive import RUNS_FILE
from sweeps.cli import make_cli
from sweeps.run.rundir import RunDir

LRS = (1e-3, 1e-2)


def _report(tmp_path):
    """A finished 2-LR sweep that never extends, and its report."""
    first = tmp_path / "first"
    first.mkdir()
    spec = write_spec(first, "grow", LRS)
    result = sweep("torch", spec, first / "runs", "--workers", "2")
    assert result.exit_code == 0, result.output
    report = make_report(first / "runs" / "grow", tmp_path / "report", ("svg",))
    return report.parent


@pytest.mark.slow
def test_a_grown_sweep_trains_only_what_the_report_lacks_and_the_report_keeps_it(tmp_path):
    report = _report(tmp_path)
    held = set(pd.read_parquet(report / RUNS_FILE).run_id)
    assert len(held) == 12  # off/on x 2 LRs x 3 seeds
    # the same grid, now extending once above its top LR (nothing failed at 1e-2)
    grown = tmp_path / "grown"
    grown.mkdir()
    spec = write_spec(grown, "grow", LRS, extend={"max_extra_lrs": 1})
    dry = sweep("torch", spec, grown / "runs", "--from-report", str(report), "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"grows the report {report}: 12 of its 12 finished runs are planned" in dry.output
    result = sweep("torch", spec, grown / "runs", "--from-report", str(report), "--workers", "2")
    assert result.exit_code == 0, result.output
    trained = {p.parent.name for p in (grown / "runs" / "grow").glob("*/summary.json")}
    # resumed without the flag, the plan remembers the report: nothing trains again
    again = sweep("torch", spec, grown / "runs", "--dry-run")
    assert "grows the report" in again.output and "; 0 to run" in again.output
    # and `status` shows the report's runs as finished, saying where they are held
    status = CliRunner().invoke(
        make_cli("torch"), ["status", "grow", "--runs-dir", str(grown / "runs")]
    )
    assert status.exit_code == 0, status.output
    assert f"18 runs: 18 ok (12 of them held by the report {report}" in status.output
    assert status.output.count("(in the report)") == 12 and "pending" not in status.output
    assert len(trained) == 6 and not trained & held  # the extension LR only, each arm x seed
    lrs = {RunDir(grown / "runs" / "grow" / r).record().config.train.lr for r in trained}
    assert len(lrs) == 1 and lrs.pop() > max(LRS)
    # the grown sweep's crosscheck (of every config it plans) replaces the report's
    checks = {"verdict": "pass", "configs": [{"checks": [{"name": "a"}, {"name": "b"}]}]}
    (grown / "runs" / "grow" / "crosscheck.json").write_text(json.dumps(checks))
    # the report with the runs it lacked: 18 runs, the new LR judged, kept in its own table
    out = CliRunner().invoke(
        figures,
        ["grow", "--runs-dir", str(grown / "runs"), "--from-report", str(report), "--add-runs"]
        + ["--in-place", "--formats", "svg"],
    )
    assert out.exit_code == 0, out.output
    table = pd.read_parquet(report / RUNS_FILE)
    assert set(table.run_id) == held | trained
    analysis = json.loads((report / "analysis.json").read_text())
    assert len(analysis["runs"]) == 18
    assert "**pass** (2 checks over 1 model configs)" in (report / "report.md").read_text()
    # and it regenerates from itself alone, the grown runs included
    again = make_report(None, tmp_path / "again", ("svg",), from_report=report)
    assert json.loads((again.parent / "analysis.json").read_text()) == analysis


@pytest.mark.slow
def test_another_sweeps_report_or_add_runs_without_a_report_is_one_line(tmp_path):
    report = _report(tmp_path)
    other = write_spec(tmp_path, "other", LRS)
    result = sweep("torch", other, tmp_path / "runs", "--from-report", str(report), "--dry-run")
    assert result.exit_code == 2 and "is sweep grow's report, not other's" in result.output
    assert result.output.strip().count("\n") == 0
    # the other program's sweep plans none of the report's runs: refused, not trained anew
    result = sweep(
        "mlx", write_spec(tmp_path, "grow", LRS), tmp_path / "mlx", "--from-report", str(report)
    )
    assert result.exit_code == 2 and "they are torch runs, this is mlx" in result.output
    assert "(qktorch)" in result.output and not (tmp_path / "mlx").exists()
    # a damaged report is one line, and nothing is written
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / RUNS_FILE).write_bytes(b"not parquet")
    (broken / "sweep.json").write_text('{"name": "grow"}')
    result = sweep("torch", other, tmp_path / "b", "--from-report", str(broken), "--dry-run")
    assert result.exit_code == 2 and "cannot be read (" in result.output
    assert result.output.strip().count("\n") == 0 and not (tmp_path / "b").exists()
    # a plan that grows a report no longer there says so, instead of training it all again
    (tmp_path / "runs" / "other").mkdir(parents=True)
    (tmp_path / "runs" / "other" / "plan.json").write_text(json.dumps({"grows": "gone"}))
    result = sweep("torch", other, tmp_path / "runs", "--dry-run")
    assert result.exit_code == 2 and "grows the report gone, which is not there" in result.output
    out = CliRunner().invoke(figures, ["grow", "--runs-dir", str(tmp_path), "--add-runs"])
    assert out.exit_code != 0 and "give the report with --from-report" in str(
        out.exception or out.output
    )
