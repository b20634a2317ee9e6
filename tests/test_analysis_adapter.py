"""The typed analysis and analysis.json (sweeps/analysis/adapter.py): every committed report's
analysis.json with a schema reads into an Analysis and writes back as its numbers, key for key;
one without a schema (written before study v4) is refused with what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweeps.analysis.adapter import ADDED, SCHEMA, WORDED, SchemaError, from_json, to_json
from sweeps.analysis.model import Analysis, Arm, Comparison, GridPoint, Rung
from sweeps.study.protocol import judged_under

DOCS = Path(__file__).resolve().parent.parent / "docs"
COMMITTED = sorted(DOCS.glob("*/analysis.json"))
WITH_SCHEMA = [p for p in COMMITTED if "schema" in json.loads(p.read_text())]


def test_the_committed_reports_hold_schema_6_analyses_without_words():
    assert len(WITH_SCHEMA) >= 8
    for path in WITH_SCHEMA:
        data = json.loads(path.read_text())
        assert data["schema"] == SCHEMA == 6
        assert not set(data) & set(WORDED + ADDED), path  # numbers and decisions only
        assert data["decided"] and data["caveats"] is not None


@pytest.mark.parametrize("path", WITH_SCHEMA, ids=lambda p: p.parent.name)
def test_each_committed_analysis_round_trips(path):
    """from_json then to_json gives the committed analysis.json back, key for key."""
    data = json.loads(path.read_text())
    analysis = from_json(data)
    assert isinstance(analysis, Analysis)
    assert to_json(analysis) == data


def _strings(x):
    if isinstance(x, dict):
        return [s for v in x.values() for s in _strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in _strings(v)]
    return [x] if isinstance(x, str) else []


def test_the_decisions_are_codes_not_prose():
    """Every verdict and reason in analysis.json's decisions is a short code (figures/ words
    it): no sentence, no clause, no number formatted into a string."""
    for path in WITH_SCHEMA:
        data = json.loads(path.read_text())
        for said in _strings(data["decided"]) + _strings(data["decisions"]):
            assert len(said.split()) <= 4 and not set(said) & set(".,:;()="), (path, said)


def test_a_schema_4_analysis_is_read_with_its_words_set_aside_and_no_decisions():
    """The layout before schema 5: figures/'s words beside the numbers, no decided or caveats."""
    data = json.loads((DOCS / "cpu-depth" / "analysis.json").read_text())
    assert data["early_warning"]  # its predictors are named in schema 4
    old = {k: v for k, v in data.items() if k not in ("decided", "caveats")}
    old |= {"schema": 4, "verdicts": {"H1": {"verdict": "supported", "reason": "a sentence"}}}
    old |= {"budget_warnings": ["a sentence"], "source": {"kind": "archive", "gaps": ""}}
    old["early_warning"] = {  # schema 4 named each predictor in words
        rung: {a: {p: auc | {"label": p} for p, auc in ps.items()} for a, ps in arms.items()}
        for rung, arms in data["early_warning"].items()
    }
    analysis = from_json(old)
    assert analysis.decided == {} and analysis.caveats is None
    assert analysis.depths == from_json(data).depths  # the numbers as schema 5 reads them
    assert analysis.early_warning == from_json(data).early_warning
    with pytest.raises(SchemaError, match="verdicts"):  # schema 5 holds no words
        from_json(data | {"verdicts": {}})
    with pytest.raises(SchemaError, match="schema 3; this reader reads schemas 4 and 5"):
        from_json(data | {"schema": 3})


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
    from sweeps.analysis import analyze, archive

    results, curves, _ = archive.load(DOCS / "cpu-control")
    analysis = analyze(results, curves)
    committed = json.loads((DOCS / "cpu-control" / "analysis.json").read_text())
    said = (DOCS / "cpu-control" / "report.md").read_text()
    assert set(analysis.decided) == set(committed["decided"])
    for name, decision in analysis.decided.items():
        assert decision.verdict == committed["decided"][name]["verdict"]
        assert f"### {name}: " in said  # the report words each
        assert decision.section in (5, 11)
        assert set(decision.intervals) <= {*analysis.depths, ""}  # per rung, "" for a trend
    h2a = analysis.decided["H2a"].intervals  # read from the JSON form: NaN there is null
    rungs = to_json(analysis)["depths"]
    assert h2a == {name: rung["h2a"]["ci90"] for name, rung in rungs.items() if "h2a" in rung}
    # the same numbers as committed; the stamp names the rules that first judged them
    assert judged_under(to_json(analysis), committed) == committed


def test_an_unrefined_rungs_brackets_are_records_not_sentences():
    """The caveats hold what refinement would bisect as brackets (an arm's seed, or the
    threshold), worded only by the report and the runner (sweeps.sweep.grid.bisected)."""
    from sweeps.analysis.adapter import read, record
    from sweeps.analysis.model import Unrefined
    from sweeps.study.rules import Bracket
    from sweeps.sweep.grid import bisected

    u = Unrefined("4", 0.25, {0.0178: [Bracket(0.01, 0.0316, "off", 1), Bracket(0.01, 0.0316)]})
    written = record(u)
    assert written["lrs"]["0.0178"][0] == {"lo": 0.01, "hi": 0.0316, "arm": "off", "seed": 1}
    assert read(Unrefined, written) == u
    assert [bisected(b) for b in u.lrs[0.0178]] == [
        "off seed 1: 0.01 ok, 0.0316 fails",
        "stability threshold between 0.01 and 0.0316",
    ]
