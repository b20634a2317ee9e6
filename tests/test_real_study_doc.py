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


# -- issue 72: one source for every price ------------------------------------------------------
def dry_run_output(name: str, *args: str) -> list[str]:
    out = CliRunner().invoke(make_cli("torch", []), ["sweep", name, "--dry-run", *args])
    assert out.exit_code == 0, out.output
    return out.output.splitlines()


def _si(n: float) -> str:
    """51,609,600 -> '51.6M', 142,950,400 -> '143M': three significant digits."""
    return f"{float(f'{n / 1e6:.3g}'):g}M"


def dry_run_facts(name: str) -> dict:
    """What `sweep NAME --dry-run` says of the sweep's size and price, as the docs quote it."""
    lines = dry_run_output(name)
    runs = int(re.search(r" = (\d+) runs$", next(x for x in lines if "  grid: " in x)).group(1))
    each = next(x for x in lines if x.startswith("  each run: "))
    budgets = [
        (int(s), int(t.replace(",", "")))
        for s, t in re.findall(r"(\d+) steps x [\d,]+ tokens = ([\d,]+) tokens", each)
    ]
    cost = {}
    for line in lines:
        found = re.search(
            r"NVIDIA H200, qktorch (\w+) float32: .*estimated ([\d.]+) h \(\$[\d,]+\) for the "
            r"\d+ planned runs, ([\d.]+) h \(\$[\d,]+\) at most with growth",
            line,
        )
        if found:
            cost[found.group(1)] = (float(found.group(2)), float(found.group(3)))
    steps, tokens = [b[0] for b in budgets], [b[1] for b in budgets]
    planned = sorted(h for h, _ in cost.values())
    return {
        "runs": runs,
        "steps": f"{min(steps):,}" if len(set(steps)) == 1 else f"{min(steps):,} to {max(steps):,}",
        "tokens": _si(tokens[0])
        if len(set(tokens)) == 1
        else f"{_si(min(tokens))} to {_si(max(tokens))}",
        "hours": f"{planned[0]} h to {planned[-1]} h",
        "cost": cost,
    }


# Every line of the docs that gives `core` or `depth` a run count, a step or token count or
# hours, as the dry run's facts fill it in (docs/usage.md's table: the test above; the dry run's
# own lines in real-study.md: the first test).
CLAIMS = {
    "docs/real-study.md": [
        "start-matched control `off-warm` at the three lowest LRs: {core[runs]} runs of "
        "{core[steps]} steps",
        "{core[hours]} for its planned runs on one H200",
        "({depth[steps]} steps): {depth[runs]} runs.",
        "{depth[hours]} for\n  its planned runs on one H200",
        "its hours are {ratio[planned]} times `core`'s for the planned runs and {ratio[worst]} "
        "times at most with growth\n({depth[runs]} runs to `core`'s {core[runs]},",
    ],
    "docs/results.md": [
        "{depth[runs]} planned runs at depths 2, 3, 4, 6, 8 and 12 with depth 1 set apart,\n"
        "{depth[tokens]} tokens each",
    ],
    "docs/install.md": ["a `core` run is now {core[steps]}\nsteps, {core[tokens]} tokens"],
}


def _ratio(core: dict, depth: dict) -> dict:
    """depth's hours over core's, the same on every measured device to the digit quoted."""
    planned = {f"{depth['cost'][k][0] / core['cost'][k][0]:.1f}" for k in core["cost"]}
    worst = {f"{depth['cost'][k][1] / core['cost'][k][1]:.1f}" for k in core["cost"]}
    assert len(planned) == 1 and len(worst) == 1, (planned, worst)
    return {"planned": planned.pop(), "worst": worst.pop()}


def test_every_doc_line_that_prices_core_or_depth_is_what_the_dry_run_prints():
    core, depth = dry_run_facts("core"), dry_run_facts("depth")
    facts = {"core": core, "depth": depth, "ratio": _ratio(core, depth)}
    assert core["runs"] == 84 and depth["runs"] == 448  # the parse found them
    for page, claims in CLAIMS.items():
        text = (ROOT / page).read_text()
        for claim in claims:
            said = claim.format(**facts)
            assert said in text, f"{page} does not say what the dry run prints: {said!r}"


def test_no_page_prices_core_or_depth_in_words_the_dry_run_does_not_give():
    """Issue 72's stale figures, gone: a Mac nobody measured, 'six times' (the ratio of run
    counts, not hours), a token count of another step budget."""
    for page in ("docs/real-study.md", "docs/results.md", "docs/install.md", "README.md"):
        text = (ROOT / page).read_text()
        for stale in ("overnight", "six times", "87.7M tokens", "whole core run\n(13.9M"):
            assert stale not in text, (page, stale)


def test_the_dry_run_ends_with_its_cost_and_counts_its_runs():
    lines = dry_run_output("depth")
    assert lines[-1] == "dry run: nothing was written"
    start = next(i for i, line in enumerate(lines) if line.startswith("  cost on measured"))
    assert all(line.startswith("    ") for line in lines[start + 1 : -1])  # nothing after it
    assert "  runs: 448 pending (each with its state: --dry-run --list-runs)" in lines[:start]
    assert not any(line.startswith("  pending ") for line in lines)
    listed = dry_run_output("depth", "--list-runs")
    assert sum(line.startswith("  pending ") for line in listed) == 448
    assert listed[-len(lines) + start :] == lines[start:]  # the cost, still last


# -- docs/STUDY.md section 27: the design benchmark's chosen candidate is the shipped spec -------
def test_the_design_benchmarks_chosen_candidate_is_the_depth_spec_and_v19s_is_v19s():
    from benchmarks import real_study_design as design

    chosen = next(c for c in design.CANDIDATES if "(chosen)" in c.name)
    shipped = load_spec("depth")
    built = design.spec_of(chosen)
    assert [c.run_id for c in built.configs("torch")] == [
        c.run_id for c in shipped.configs("torch")
    ]
    assert (built.study, built.extend) == (shipped.study, shipped.extend)
    # v19's row rebuilds v19's spec: 504 runs with off-warm, priced as its dry run printed
    v19 = design.cost_row(design.CANDIDATES[0])
    assert v19["planned runs (at most with growth)"] == "504 (1704)"
    assert v19["H200 eager float32: h planned ($), at most"].startswith("33.8 ($101)")
    row = design.cost_row(chosen)
    said = dry_run_facts("depth")["cost"]["eager"]
    assert row["H200 eager float32: h planned ($), at most"].startswith(f"{said[0]} (")


def bfloat16_hours(name: str) -> tuple[float, str, str]:
    """The dry run's bfloat16 line for a float32 spec: (planned hours, 'H h ($D)' planned, the
    same at most with growth)."""
    line = next(x for x in dry_run_lines(name) if x.strip().startswith("in bfloat16, not this"))
    planned = re.search(r"estimated (([\d.]+) h \(\$[\d,]+\)) for", line)
    worst = re.search(r"runs, ([\d.]+ h \(\$[\d,]+\)) at most", line).group(1)
    return float(planned.group(2)), planned.group(1), worst


def test_the_bfloat16_price_and_the_goals_it_misses_are_what_the_dry_run_prints():
    """Section 27 and real-study.md state the bfloat16 price of `depth` and how far `depth` and
    `core` miss the project's goals (3 hours, 45 minutes) at that price."""
    study = " ".join((ROOT / "docs" / "STUDY.md").read_text().split("## 27.")[1].split())
    page = " ".join(DOC.read_text().split())  # words, whatever the line breaks
    depth, said, worst = bfloat16_hours("depth")
    core = bfloat16_hours("core")[0]
    for figure in (said, worst):
        assert figure.split(" (")[0] in study and figure.split("(")[1][:-1] in study, figure
    for hours, goal in ((depth, 3.0), (core, 0.75)):
        times = f"{hours / goal:.1f} times"
        assert times in study and times in page, times


def test_section_27s_chosen_design_keeps_its_false_rates_and_states_its_power():
    """The chosen row of section 27's table on 600 ladders (the table: 4000): power at -0.25
    under the reversal rule 71%, false "supported" 2.4% and false "ruled out" 2.0%, on the LRs
    a sweep grown at the shipped spec's resolution judges, H3 on its rungs but the set-apart one."""
    import math

    from benchmarks import real_study_design as design
    from sweeps.study.simulation import rungs as sim

    n = 600
    spec = load_spec("depth")
    rungs = tuple(d for d in spec.n_layer if d not in spec.study.set_apart)
    grid = tuple(sim.ladder_lrs(spec.extend.resolution))
    lad = sim.Ladder("depth", rungs, len(spec.seed), 0.15, design.SCATTER, grid=grid)
    power, kept, false_ruled_out = sim.verdict_rates(lad, n, -0.25, 31)
    false_supported = sim.verdict_rates(lad, n, 0.0, 51)[1]

    def margin(p: float) -> float:
        return 2.5 * math.sqrt(p * (1 - p) / n)

    assert abs(kept - 0.71) <= margin(0.71) and kept <= power
    assert false_supported <= 0.05 + margin(0.05) and false_ruled_out <= 0.05 + margin(0.05)
