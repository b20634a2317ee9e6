"""Every committed report regenerates from its own data (issue 49 point 9): `qktorch figures NAME
--from-report docs/NAME --out OUT` writes the analysis.json and report.md that docs/NAME holds,
so no committed report is stale against the code that claims to have made it.

Charts are not rendered here (their bytes depend on the renderer's version, and their numbers
are tested chart by chart elsewhere): the text that names them is compared. docs/tiny predates
report archives (no runs.parquet): it is an earlier round's record, not regenerable, and says so
in docs/results.md.
"""

import json
from pathlib import Path

import pytest

from figures import carry, charts, side_by_side
from figures.report.assemble import make_report
from sweeps.analysis import carry_page
from sweeps.analysis import side_by_side as sbs
from sweeps.study.protocol import judged_under

DOCS = Path(__file__).resolve().parents[1] / "docs"
REPORTS = sorted(p.parent.name for p in DOCS.glob("*/runs.parquet"))
REGENERATE = "qktorch figures {name} --from-report docs/{name} --in-place --formats svg"
CARRY_PAGES = sorted(p.parent.name for p in DOCS.glob("*/carry.json"))
SIDE_BY_SIDE = sorted(p.parent.name for p in DOCS.glob("*/side_by_side.json"))


def test_the_committed_reports_are_found():
    assert {"cpu", "cpu-depth", "cpu-width"} <= set(REPORTS)
    assert not (DOCS / "tiny" / "runs.parquet").exists()  # the one exception, documented above


@pytest.mark.parametrize("name", REPORTS)
def test_a_committed_report_regenerates_from_its_own_data(name, tmp_path, monkeypatch):
    monkeypatch.setattr(charts, "save", lambda *args, **kwargs: None)
    out = tmp_path / name
    path = make_report(None, out, formats=("svg",), from_report=DOCS / name)
    hint = f"docs/{name} is stale; regenerate it: {REGENERATE.format(name=name)}"
    now = json.loads((out / "analysis.json").read_text())
    assert now == json.loads((DOCS / name / "analysis.json").read_text()), hint
    assert path.read_text() == (DOCS / name / "report.md").read_text(), hint


def _as_written(doc: dict) -> dict:
    return json.loads(json.dumps(doc))


@pytest.mark.parametrize("name", CARRY_PAGES)
def test_a_committed_carry_page_regenerates_from_its_reports(name):
    """carry.json and carry.md as `python -m figures.carry docs/NAME` writes them now (its
    plan's reference and control), the stamp of the rules that first judged them kept."""
    committed = json.loads((DOCS / name / "carry.json").read_text())
    doc = judged_under(_as_written(carry_page.build(DOCS / name)), committed)
    hint = f"docs/{name}/carry.* is stale; regenerate it: python -m figures.carry docs/{name}"
    assert doc == committed, hint
    assert carry.render(doc) == (DOCS / name / "carry.md").read_text(), hint


@pytest.mark.parametrize("name", SIDE_BY_SIDE)
def test_a_committed_side_by_side_page_regenerates_from_its_reports(name):
    committed = json.loads((DOCS / name / "side_by_side.json").read_text())
    reference = committed["reference"]
    checks = dict.fromkeys(x["against"] for x in committed["machine_check"])
    checks.pop(reference, None)
    built = side_by_side.build(DOCS / name, DOCS / reference, [DOCS / c for c in checks])
    doc = judged_under(_as_written(built), committed)
    assert doc == committed, f"docs/{name}/side_by_side.* is stale: rerun the command it names"
    assert side_by_side.render(sbs.page_of(doc)) == (DOCS / name / "side_by_side.md").read_text()


def _strings(x):
    if isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)
    elif isinstance(x, str):
        yield x


@pytest.mark.parametrize("name", CARRY_PAGES + SIDE_BY_SIDE)
def test_a_committed_pages_json_holds_numbers_and_codes_not_prose(name):
    """carry.json and side_by_side.json hold what the page says as numbers and reason codes
    (figures/ words them when it renders): no sentence, no key named text."""
    for page in ("carry.json", "side_by_side.json"):
        path = DOCS / name / page
        if path.exists():
            strings = list(_strings(json.loads(path.read_text())))
            assert "text" not in strings
            # the longest string a page needs is the study digest (64 hex); a reason code is a
            # few words
            prose = [x for x in strings if len(x) > 64 or len(x.split()) > 8]
            assert not prose, prose[:3]


def test_the_head_width_json_holds_numbers_and_codes_not_prose():
    """head_width.json keeps what the page says as numbers, names and outcome codes (the page
    words them): no sentence anywhere but the command that regenerates it."""
    doc = json.loads((DOCS / "head-width" / "head_width.json").read_text())
    doc.pop("command")
    prose = [x for x in _strings(doc) if len(x) > 40 or len(x.split()) > 3]
    assert not prose, prose[:3]
