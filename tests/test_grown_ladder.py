"""A report grown by a rung (sweeps.analysis.archive.add_runs, sweeps.study.rules.h2b_unjudged): a
2-depth sweep is reported, its spec grows by a depth on an LR subset ([rung_lr]), the sweep
grown from the report trains only that depth, and `figures --from-report --add-runs` makes one
report of all of them. A grown spec that changes anything else is refused in one line."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from click.testing import CliRunner
from test_sweeps import sweep, write_spec

from figures.cli import figures
from figures.report.assemble import make_report
from figures.words.view import read_view
from sweeps.analysis.archive import RUNS_FILE, SWEEP_FILE
from sweeps.cli import make_cli
from sweeps.study import rules

LRS = (1e-3, 1e-2)  # the sensitivity range is both (test_sweeps.write_spec)
SUBSET = [1e-2]  # the new depth's [rung_lr]: it leaves out 1e-3 of the range
STEPS = {"train.max_steps": 8, "train.eval_interval": 4}


def _figures(*args):
    return CliRunner().invoke(make_cli("torch", [figures]), [str(a) for a in args])


def _spec(folder, n_layer, rung_lr=None) -> str:
    path = write_spec(folder, "ladder", LRS, n_layer=n_layer, settings=STEPS)
    if rung_lr:  # [rung_lr] appended: test_sweeps.write_spec does not write it
        lines = [f'"{k}" = {json.dumps(v)}' for k, v in rung_lr.items()]
        with open(path, "a") as f:
            f.write("[rung_lr]\n" + "\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """(report, its run ids, the grown sweep folder, the runs it trained, the merged report)."""
    root = tmp_path_factory.mktemp("ladder")
    (root / "first").mkdir()
    result = sweep(
        "torch", _spec(root / "first", (1, 2)), root / "first" / "runs", "--workers", "2"
    )
    assert result.exit_code == 0, result.output
    report = make_report(root / "first" / "runs" / "ladder", root / "report", ("vl.json",)).parent
    held = set(pd.read_parquet(report / RUNS_FILE).run_id)
    (root / "grown").mkdir()
    spec = _spec(root / "grown", (1, 2, 3), rung_lr={"3": SUBSET})
    runs = root / "grown" / "runs"
    result = sweep("torch", spec, runs, "--from-report", str(report), "--workers", "2")
    assert result.exit_code == 0, result.output
    trained = {p.parent.name for p in (runs / "ladder").glob("*/summary.json")}
    merged = root / "merged"
    shutil.copytree(report, merged)
    out = _figures(
        "figures", "ladder", "--runs-dir", runs, "--from-report", merged, "--add-runs",
        "--in-place", "--formats", "vl.json",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    return report, held, runs / "ladder", trained, merged


@pytest.mark.slow
def test_a_report_grown_by_a_subset_rung_covers_every_run_and_says_why_h2b_is_not_judged(
    grown, tmp_path
):
    report, held, _, trained, merged = grown
    assert len(held) == 24  # off/on x 2 LRs x 2 depths x 3 seeds
    assert len(trained) == 6 and not trained & held  # depth 3 at 1e-2 only
    assert all("-L3-" in r for r in trained)
    # one report of both: the report's runs from its table, the new ones from their folders
    analysis = read_view(merged)  # analysis.json, worded again (its verdicts)
    assert {r["run_id"] for r in analysis["runs"]} == held | trained
    assert set(pd.read_parquet(merged / RUNS_FILE).run_id) == held | trained
    assert not [p for p in analysis["problems"] if p["status"] == "missing"]
    assert json.loads((merged / SWEEP_FILE).read_text())["missing"] == []
    text = (merged / "report.md").read_text()
    counts = text.split("| total |\n|---|---|---|---|---|---|---|---|\n")[1].split("\n")[0]
    assert counts.endswith("| 0 | 30 |")  # no run missing, 30 in all
    # the grown spec is the report's now: its depths and the new depth's LR subset
    spec = json.loads((merged / SWEEP_FILE).read_text())["spec"]
    assert spec["grid"]["n_layer"] == [1, 2, 3] and spec["rung_lr"] == {"3": SUBSET}
    assert "[rung_lr] (LR subsets): depth 3 0.01 (the other depths: the whole grid)" in text
    # H2b: depth 3 is not judged (its S over the range was never planned), with its own code
    assert sorted(analysis["depths"]) == ["1", "2", "3"]
    assert analysis["depths"]["3"]["h2b"]["why"] == rules.H2B_RUNG_SUBSET
    assert analysis["depths"]["3"]["h2b"].get("trained") is None  # nor its robustness check
    per_depth = analysis["verdicts"]["H2b"]["per_depth"]
    assert per_depth["3"] == {
        "verdict": rules.INCONCLUSIVE,
        "reason": "not judged: this depth trains only [rung_lr] LRs (0.01), which do not span "
        "the sensitivity range (0.001 left out)",
    }
    for depth in ("1", "2"):  # the whole grid: judged as before, no code
        assert "why" not in analysis["depths"][depth]["h2b"]
        assert not per_depth[depth]["reason"].startswith("not judged")
    # H2b is judged at the rungs that train the range: depth 3 is named, but does not count
    # (here depths 1 and 2 agree, not supported: without the rule, inconclusive)
    judged = {per_depth[d]["verdict"] for d in ("1", "2")}
    expected = judged.pop() if len(judged) == 1 else rules.INCONCLUSIVE
    assert analysis["verdicts"]["H2b"]["verdict"] == expected
    assert "| 3 | off | not judged ([rung_lr]) |" in text and "| 1 of 2 |" in text
    # the merged report regenerates from itself alone
    again = make_report(None, tmp_path / "again", ("vl.json",), from_report=merged)
    assert read_view(again.parent) == analysis


def _edit(plan: dict, what: str) -> dict:
    spec = plan["spec"]
    if what == "set":
        spec["set"]["train.max_steps"] = 9
    elif what == "old rung":
        spec["rung_lr"]["1"] = SUBSET
    elif what == "dropped rung":
        spec["grid"]["n_layer"] = [2, 3]
    elif what == "lr":
        spec["grid"]["lr"] = [*LRS, 0.1]
    elif what == "unplanned":  # the grown spec, but a run of the report no longer planned
        plan["runs"] = [r for r in plan["runs"] if "-L1-" not in r["run_id"]]
    return plan


@pytest.mark.parametrize(
    "what, says",
    [
        ("set", "whose set, grid, rung_lr differ from the report's"),
        ("old rung", "whose grid, rung_lr differ from the report's"),
        ("dropped rung", "whose grid, rung_lr differ from the report's"),
        ("lr", "whose grid, rung_lr differ from the report's"),
        ("unplanned", "adds n_layer 3 but no longer plans 12 of the report's runs"),
    ],
)
def test_a_grown_spec_that_changes_anything_else_is_refused_in_one_line(
    grown, tmp_path, what, says
):
    report, _, folder, _, _ = grown
    other = tmp_path / "runs"
    shutil.copytree(folder, other / "ladder", ignore=shutil.ignore_patterns("report"))
    plan = json.loads((other / "ladder" / "plan.json").read_text())
    (other / "ladder" / "plan.json").write_text(json.dumps(_edit(plan, what)))
    out = _figures(
        "figures", "ladder", "--runs-dir", other, "--from-report", report, "--add-runs",
        "--out", tmp_path / "out",
    )  # fmt: skip
    assert out.exit_code == 2, out.output
    assert says in out.output and out.output.strip().count("\n") == 0
    if what != "unplanned":  # the refusal says what growth is allowed
        assert "or with one that only adds rungs" in out.output
    assert not (tmp_path / "out").exists()
