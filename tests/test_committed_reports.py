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

from figures import charts
from figures.report.assemble import make_report

DOCS = Path(__file__).resolve().parents[1] / "docs"
REPORTS = sorted(p.parent.name for p in DOCS.glob("*/runs.parquet"))
REGENERATE = "qktorch figures {name} --from-report docs/{name} --in-place --formats svg"


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
