"""The typed analysis and analysis.json (sweeps/analysis/adapter.py): every committed report's
analysis.json with a schema reads into an Analysis and writes back as its numbers, key for key;
one without a schema (written before study v4) is refused with what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweeps.analysis.adapter import ADDED, SCHEMA, WORDED, SchemaError, from_json, to_json
from sweeps.analysis.model import Analysis, Arm, Comparison, GridPoint, Rung

DOCS = Path(__file__).resolve().parent.parent / "docs"
COMMITTED = sorted(DOCS.glob("*/analysis.json"))
WITH_SCHEMA = [p for p in COMMITTED if "schema" in json.loads(p.read_text())]


def test_the_committed_reports_hold_schema_4_analyses():
    assert len(WITH_SCHEMA) >= 8
    assert {json.loads(p.read_text())["schema"] for p in WITH_SCHEMA} == {SCHEMA}


@pytest.mark.parametrize("path", WITH_SCHEMA, ids=lambda p: p.parent.name)
def test_each_committed_analysis_round_trips(path):
    """from_json then to_json gives the committed numbers: everything but the prose figures/
    words (WORDED) and what the report adds (ADDED)."""
    data = json.loads(path.read_text())
    analysis = from_json(data)
    assert isinstance(analysis, Analysis)
    numbers = {k: v for k, v in data.items() if k not in WORDED + ADDED}
    assert to_json(analysis) == numbers


def test_the_typed_analysis_is_typed_all_the_way_down():
    analysis = from_json(json.loads((DOCS / "cpu-depth" / "analysis.json").read_text()))
    rung = next(iter(analysis.depths.values()))
    assert isinstance(rung, Rung) and isinstance(rung.arms["off"], Arm)
    comparison = rung.comparisons[f"{analysis.settings.reference} vs {analysis.settings.primary}"]
    assert isinstance(comparison, Comparison)
    assert all(isinstance(k, int) for k in comparison.seed_thresholds)  # seeds are ints
    assert isinstance(rung.arms["off"].eta_crit.median, GridPoint)
    assert analysis.h3 is not None and analysis.w1 is None  # a depth ladder's trend


def test_an_analysis_without_a_schema_is_refused_with_the_fix():
    """docs/tiny's analysis.json predates schemas: reading it says so and how to regenerate."""
    with pytest.raises(SchemaError, match="no schema.*--from-report"):
        from_json(json.loads((DOCS / "tiny" / "analysis.json").read_text()))


def test_a_key_the_layout_does_not_have_is_refused():
    data = json.loads((DOCS / "cpu" / "analysis.json").read_text())
    name = next(iter(data["depths"]))
    data["depths"][name]["arms"]["off"]["surprise"] = 1
    with pytest.raises(SchemaError, match="surprise"):
        from_json(data)


def test_the_typed_analysis_holds_each_decision_the_report_words():
    """sweeps.analysis.analyze on a committed report's own runs: the registry's decision of
    each hypothesis (its STUDY.md section, verdict and per-rung calls), no prose, and the
    verdicts the committed report words from them."""
    from figures import archive
    from sweeps.analysis import analyze

    results, curves, _ = archive.load(DOCS / "cpu-control")
    analysis = analyze(results, curves)
    committed = json.loads((DOCS / "cpu-control" / "analysis.json").read_text())
    assert set(analysis.decided) == set(committed["verdicts"])
    for name, decision in analysis.decided.items():
        assert decision.verdict == committed["verdicts"][name]["verdict"]
        assert decision.section in (5, 11)
        assert set(decision.intervals) <= {*analysis.depths, ""}  # per rung, "" for a trend
    h2a = analysis.decided["H2a"].intervals  # read from the JSON form: NaN there is null
    rungs = to_json(analysis)["depths"]
    assert h2a == {name: rung["h2a"]["ci90"] for name, rung in rungs.items() if "h2a" in rung}
    assert to_json(analysis) == {k: v for k, v in committed.items() if k not in WORDED + ADDED}
