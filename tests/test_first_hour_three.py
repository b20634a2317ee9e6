"""Issue 72, the first hour's third pass: no traceback, no self-contradiction, one source for
every price. Each test fails on the code before the issue's fix."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sweeps.analysis.compute import analyze
from sweeps.analysis.results import load_curves, load_results
from sweeps.cli import make_cli
from sweeps.run.rundir import RunDir
from sweeps.sweep import record
from tests import figures_fakes as fakes

ROOT = Path(__file__).resolve().parent.parent


def invoke(*args, backend="torch"):
    from figures.cli import figures

    return CliRunner().invoke(make_cli(backend, [figures]), [str(a) for a in args])


def small_study(root: Path, name: str = "study", **kw) -> list:
    return fakes.write_study(root / name, name, depths=[2], **kw)


# -- 1: a summary.json whose numbers are not numbers is corrupt, in status and figures alike ---
def test_a_summary_with_a_non_numeric_loss_is_corrupt_not_a_traceback(tmp_path):
    cfgs = small_study(tmp_path)
    damaged = RunDir(tmp_path / "study" / cfgs[0].run_id)
    summary = json.loads(damaged.summary_path.read_text())
    damaged.summary_path.write_text(json.dumps({**summary, "final_val_loss": "abc"}))
    record = damaged.record()
    assert record.status == "corrupt"
    assert record.problem == 'summary.json\'s final_val_loss is not a number ("abc")'
    results = load_results(tmp_path / "study")  # raised ValueError before
    analysis = analyze(results, load_curves(results.runs))
    assert [(p.run_id, p.status) for p in analysis.problems] == [(cfgs[0].run_id, "corrupt")]
    status = invoke("status", "study", "--runs-dir", tmp_path)
    assert status.exit_code == 0, status.output
    assert "1 corrupt" in status.output and "final_val_loss is not a number" in status.output


# -- 2: a renamed sweep folder is that sweep under its new name --------------------------------
def test_a_renamed_sweep_folder_is_resumed_shown_and_checked_where_it_is(tmp_path):
    asked = ("smoke", ["train.lr=0.01,0.1,1"], 3, "sweep ... --name mine")
    record.adhoc_spec(tmp_path, "mine", *asked, write=True)
    (tmp_path / "mine").rename(tmp_path / "other")
    assert record.find_spec("other", tmp_path).name == "other"
    assert record.base_raw("other", tmp_path)["name"] == "other"
    status = invoke("status", "other", "--runs-dir", tmp_path)
    assert status.exit_code == 0, status.output
    assert status.output.startswith(f"sweep other ({tmp_path / 'other'}): 18 runs")
    dry = invoke("sweep", "other", "--dry-run", "--runs-dir", tmp_path)
    assert dry.exit_code == 0, dry.output
    assert f"sweep other: preset smoke, backend torch -> {tmp_path / 'other'}" in dry.output
    assert not (tmp_path / "mine").exists()


# -- 3: one seed that failed inside the grid is not 'no failure' -------------------------------
def one_seed_fails_at_the_top(arm, n_layer, lr, seed):
    base = fakes.ON_LOSS[lr] + 0.01 * seed + (0.004 if arm == "off" else 0.0)
    if arm == "off" and lr == fakes.LRS[-1] and seed == 1:
        return "diverged", None
    return "ok", base


def test_one_seed_failing_at_the_top_lr_is_said_in_the_report_the_rule_and_the_chart(tmp_path):
    from figures.charts.headline import _critical_rows
    from figures.report.opening import _failing
    from figures.words.practitioner import practitioner_rules

    small_study(tmp_path, outcome=one_seed_fails_at_the_top)
    results = load_results(tmp_path / "study")
    a = analyze(results, load_curves(results.runs))
    rung = a.depths["2"]
    assert rung.arms["off"].eta_crit.median.kind == "above"  # the median alone says no failure
    said = _failing(a, rung, ["off", "on"], [])
    assert "No arm's runs failed" not in said
    assert said.startswith(
        "Runs start to fail (critical LR, stuck): off > 0.1 (seed range 0.0548 to > 0.1), on > 0.1."
    )
    rule = practitioner_rules(a)["2"]
    assert "did not fail" not in rule
    assert "Without QK-norm runs failed in 1 of 3 seeds inside the grid (from LR 0.0548)" in rule
    _, labels = _critical_rows({}, rung, [], {})
    assert labels[0] == "off: 1 of 3 seeds fail inside the grid, the median above 0.1"
    assert "on: no failure up to 0.1" in labels
