"""docs/real-study.md (issue 58): the cost and run count it quotes for `depth` and `core` are
what `qktorch sweep NAME --dry-run` prints now, line for line; the spec table of docs/usage.md
gives every spec's planned runs; no other page quotes a study's cost of its own (a figure that
would go stale); docs/STUDY.md section 19's figures are the dry run's too."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.sweep.spec import known_specs, load_spec

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "real-study.md"


def dry_run_lines(name: str) -> list[str]:
    out = CliRunner().invoke(make_cli("torch", []), ["sweep", name, "--dry-run"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  cost on measured"))
    grid = next(line for line in lines if line.startswith("  grid: "))
    cost = [grid, lines[start]]
    cost += [line for line in lines[start + 1 :] if line.startswith("    ")]
    return cost


def quoted(name: str) -> list[str]:
    text = DOC.read_text()
    block = text.split(f"<!-- dry-run {name} -->")[1].split(f"<!-- /dry-run {name} -->")[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("```")]


@pytest.mark.parametrize("name", ["depth", "core"])
def test_the_real_study_page_quotes_the_dry_run_as_it_prints_today(name):
    assert quoted(name) == dry_run_lines(name), (
        f"docs/real-study.md's {name} block is stale: paste what `qktorch sweep {name} "
        "--dry-run` prints (its grid line and its cost lines)"
    )


def test_the_readme_links_the_real_study_from_the_quick_start():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start")[1].split("## The answer so far")[0]
    assert "docs/real-study.md" in quick


def test_the_spec_table_gives_every_specs_planned_runs():
    table = (ROOT / "docs" / "usage.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z-]+)` \|[^\n]*\| ([0-9,]+)(?: \+ growth)? \|$", table, re.M))
    assert {"depth", "core", "cpu-depth-matched"} <= set(rows)
    for name, runs in rows.items():
        assert name in known_specs(), name
        assert int(runs.replace(",", "")) == load_spec(name).grid_runs, name


def test_no_other_page_quotes_a_study_cost_of_its_own():
    """Hours or dollars for a whole study live in real-study.md (generated from the dry run)
    and in docs/STUDY.md (the pre-registration's record); elsewhere they went stale."""
    pattern = re.compile(r"\$\d|\d+(?:\.\d+)? (?:GPU-)?h(?:ours)? (?:eager|compiled)|GPU-hours")
    pages = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*/*.md")]
    for page in pages:
        if page.name in ("real-study.md", "STUDY.md") or page.parent.name == "protocol":
            continue
        found = pattern.findall(page.read_text())
        assert not found, (page, found)


def test_study_section_19_quotes_the_dry_run():
    study = (ROOT / "docs" / "STUDY.md").read_text().split("## 19.")[1]
    for name in ("depth", "core"):
        for line in dry_run_lines(name)[2:4]:  # the eager and compiled lines
            hours = re.findall(r"estimated ([\d.]+ h \(\$[\d,]+\))", line)
            worst = re.findall(r"runs, ([\d.]+ h \(\$[\d,]+\)) at most", line)
            for figure in hours + worst:
                assert figure.split(" (")[0] in study and figure.split("(")[1][:-1] in study, (
                    name,
                    figure,
                )
