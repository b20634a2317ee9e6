"""The committed reports as the rulebook judges them (docs/STUDY.md sections 13 and 17): what
analysis.json and report.md say where the rules moved a verdict or a number from v4's, read
from the committed files (tests/test_committed_reports.py proves they regenerate)."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def analysis(name: str) -> dict:
    return json.loads((DOCS / name / "analysis.json").read_text())


def test_cpu_depth_h3_is_not_decided_because_depth_1_alone_decides():
    a = analysis("cpu-depth")
    h3 = a["h3"]
    # six rungs: the predicted -0.25 lies below the slope's 90% interval under both placements
    # ("ruled out" by section 13 alone), but without depth 1 the interval lies below 0
    assert (h3["verdict"], h3["why"]) == ("inconclusive", "one rung decides")
    assert h3["reversed_by"] == [1] and len(h3["rung_values"]) == 6
    for way in ("at_bound", "beyond"):
        low, high = h3[way]["ci90"]
        assert -0.25 < low < 0 < high, (way, low, high)
    without_1 = next(x for x in h3["left_out"] if x["rung"] == 1)
    assert without_1["verdict"] == "supported" and without_1["slope"]["ci90"][1] < 0
    assert without_1["influence"] == pytest.approx(-0.121, abs=0.001)
    assert a["decided"]["H3"]["verdict"] == "inconclusive"
    report = (DOCS / "cpu-depth" / "report.md").read_text()
    assert "Without depth 1 it is -0.172 (-0.294 to -0.049), supported" in report
    # what v4 said stays beside it
    assert "| H3 | not supported | inconclusive | **yes** |" in report


def test_cpu_depth_states_its_power_at_three_rung_sds_and_without_depth_1():
    """Sections 18 and 22: the report gives H3's power at rung sds 0.15, 0.25 and 0.3, simulated
    under the reversal rule at the seed scatter its own depths show, on the LRs it trained, and
    H3 on the depths without depth 1 (set apart: one layer cannot compose heads) with that
    design's."""
    import pandas as pd

    from sweeps.study import trend
    from sweeps.study.simulation import rungs as simulated

    a = analysis("cpu-depth")
    h3 = a["h3"]
    depths = [r["rung"] for r in h3["rung_values"]]
    grid = sorted(set(pd.read_parquet(DOCS / "cpu-depth" / "runs.parquet").lr))
    scatter = h3["seed_scatter"]
    assert 0.15 < scatter < 0.25  # the seeds' own scatter, not the pre-registered 0.2

    def power(rungs):
        return simulated.design_power(rungs, 4, grid, -0.25, trend.POWER_RUNG_SDS, scatter)

    want = dict(zip((f"{sd:g}" for sd in trend.POWER_RUNG_SDS), power(depths)))
    assert h3["powers"] == pytest.approx(want) and h3["power"] == pytest.approx(want["0.25"])
    without_1 = next(x for x in h3["left_out"] if x["rung"] == 1)
    rest = power([d for d in depths if d != 1])
    assert without_1["powers"]["0.15"] == pytest.approx(rest[0])
    # simulated power sits below the analytic figure that ignores the seed floor and the grid
    assert want["0.15"] < trend.power(depths, 4, -0.25, rung_sd=0.15, seed_sd=scatter)
    report = (DOCS / "cpu-depth" / "report.md").read_text()
    assert (
        "with probability 52% at a rung sd of 0.25, 79% at 0.15 and 42% at 0.3 (simulated under "
        "the reversal rule at the seed scatter its depths show, 0.20 decades)" in report
    )
    assert (
        "Without depth 1, the other depths show the predicted -0.25 with probability 28% at a "
        "rung sd of 0.25, 47% at 0.15 and 23% at 0.3" in report
    )
    assert (
        "- without depth 1 (a one-layer model cannot compose attention heads; docs/STUDY.md "
        "section 18): supported, -0.172 (-0.294 to -0.049); the other depths show" in report
    )


def test_the_ladder_table_gives_each_rungs_cost_at_the_best_lr():
    """What QK-norm costs sits beside the threshold in the ladder table (section 17): each arm's
    best LR and the paired effect at off's and at each arm's own, as analysis.json has them."""
    a = analysis("cpu-depth")
    report = (DOCS / "cpu-depth" / "report.md").read_text()
    table = report.split("### The ladder: per depth")[1].split("\n\n\n")[0]
    lines = [x for x in table.splitlines() if x.startswith("| ")]
    cells = [[c.strip() for c in x.strip().strip("|").split("|")] for x in lines]
    header, rows = cells[0], {r[0]: r for r in cells[1:]}
    best = header.index("best LR, off / on")
    at_off = header.index("off - on at off's best LR [90% CI]")
    own = header.index("off - on, each at its own best LR [90% CI]")

    def cell(stats):
        lo, hi = stats["ci90"]
        return f"{stats['mean']:.3f} [{lo:.3f}, {hi:.3f}], n={stats['n']}"

    for depth, d in a["depths"].items():
        row = rows[f"depth {depth}"]
        b = d["best_cost"]
        assert row[best] == f"{b['off_lr']:g} / {b['on_lr']:g}"
        assert row[at_off] == cell(d["h1"]["stats"])
        assert row[own] == cell(b["stats"])
    assert rows["depth 8"][at_off].startswith("-0.126 [-0.146, -0.106]")
    assert rows["depth 8"][best] == "0.01 / 0.0178"


def test_cpu_depth_rungs_under_the_rulebook():
    a = analysis("cpu-depth")
    d8 = a["depths"]["8"]
    # depth 8 seed 0 is judged by its evidence, not by LR 1 where both arms failed
    assert d8["comparisons"]["off vs on"]["seed_thresholds"]["0"]["bracket"] == [0.0178, 0.0316]
    # the low-LR gap no longer reaches into depth 4's per-seed thresholds (v4: "<= 3.16e-4")
    seeds = a["depths"]["4"]["comparisons"]["off vs on"]["seed_thresholds"].values()
    assert all(s["kind"] == "" for s in seeds)
    # the two runs within 0.01 nats of the cut are named, and what they move is shown
    assert d8["borderline"] == ["torch-off-L8-lr0.1-s0-7021c7aeb5", "torch-on-L8-lr1-s1-188f5a33be"]
    assert "off stuck edge" in d8["both_ways"]
    # QK-norm is worse at off's best LR at depth 8: harm said, in the window and at the best LR
    assert d8["h1"]["why"] == "harms" and d8["comparisons"]["off vs on"]["harm"] == [[0.01, 0.01]]
    cost = d8["best_cost"]
    assert (cost["off_lr"], cost["on_lr"]) == (0.01, 0.0178) and cost["stats"]["ci90"][1] < 0
    # the rungs trained 3.16e-3 .. 1 read the low-LR effect at 3.16e-3 alone
    assert a["depths"]["3"]["low_lr"]["lrs"] == [0.00316]
    assert a["depths"]["4"]["edges"]["off"]["stuck"]["value"] == pytest.approx(0.0649, abs=1e-4)


def test_cpu_width_w1_is_not_decided_by_three_collinear_rungs():
    w1 = analysis("cpu-width")["w1"]
    assert w1["verdict"] == "inconclusive"
    assert w1["at_bound"]["value"] == pytest.approx(-0.315, abs=0.001)
    assert w1["at_bound"]["ci90"][1] > 0  # the seed floor keeps the interval honest


def test_the_token_matched_check_reads_the_rulebooks_thresholds():
    tc = analysis("cpu-depth-tokens")["token_check"]
    # the check's threshold lies below depth 4's, off's stuck edge does not: mixed
    assert (tc["threshold_below"], tc["critical_below"]) == (True, False)
    assert (tc["verdict"], tc["why"]) == ("inconclusive", "mixed")


def test_shakespeares_cost_just_above_the_best_lr_is_said():
    report = (DOCS / "cpu-text" / "report.md").read_text()
    assert "QK-norm is worse at 0.0316: -0.072 [-0.095, -0.049] nats" in report


@pytest.mark.slow
def test_a_report_v4_judged_keeps_v4s_files_and_shows_them_beside_the_rulebooks(tmp_path):
    """Regenerated in place, a report whose analysis.json v4 wrote (schema 5) keeps it and its
    report.md as analysis-v4.json and report-v4.md, once, and the report's Re-judged section
    sets v4's verdicts beside the rulebook's."""
    from figures.report.assemble import make_report
    from sweeps.analysis import archive

    folder = tmp_path / "cpu-control"
    shutil.copytree(DOCS / "cpu-control", folder)
    for name, kept in (("analysis.json", archive.V4_ANALYSIS), ("report.md", archive.V4_REPORT)):
        (folder / kept).replace(folder / name)  # as it was before this stop's regeneration
    v4 = json.loads((folder / "analysis.json").read_text())
    assert v4["schema"] == 5
    text = make_report(None, None, ("svg",), from_report=folder).read_text()
    assert json.loads((folder / archive.V4_ANALYSIS).read_text()) == v4
    assert json.loads((folder / "analysis.json").read_text())["schema"] == 6
    assert "(v4: report-v4.md, analysis-v4.json beside this report" in text
    assert "| quantity | before (v4) | now | changed |" in text
    again = make_report(None, None, ("svg",), from_report=folder).read_text()
    assert json.loads((folder / archive.V4_ANALYSIS).read_text()) == v4  # kept once, not replaced
    assert again == text


def test_h2a_a_borderline_run_decides_is_inconclusive_with_its_reason():
    """The rulebook's H2a (section 13): when the borderline runs counted failed and trained
    give different verdicts, H2a is inconclusive and says why, whatever the ratio."""
    from figures.words.hypotheses import reason
    from sweeps.analysis import model as m
    from sweeps.study import hypotheses, rules

    shown = m.H2a(
        n=4,
        mean=1.0,
        sd=0.1,
        sd_used=0.1,
        lower=0.9,
        upper=1.1,
        ci90=[0.9, 1.1],
        lower75=0.95,
        log10_ratios=[1.0] * 4,
        verdict=rules.SUPPORTED,
    )
    assert hypotheses.h2a_call(shown).verdict == rules.SUPPORTED
    decided = dataclasses.replace(
        shown, verdict=rules.INCONCLUSIVE, censored=rules.BORDERLINE_DECIDES
    )
    call = hypotheses.h2a_call(decided)
    assert (call.verdict, call.why) == (rules.INCONCLUSIVE, rules.BORDERLINE_DECIDES)
    assert "counted failed and counted trained" in reason("H2a", call.why, ref="off")


def test_the_logit_crossing_is_interpolated_in_log_lr_and_censored_at_the_grid_ends():
    from sweeps.analysis.logit_growth import crossing

    lrs = [0.01, 0.0316, 0.1]
    # 10 at 0.01, 100 at 0.1 (log-linear): 30 is crossed at 10^(-2 + log10(3)) = 0.03
    assert crossing(lrs, [10.0, 31.6, 100.0], 30.0) == (pytest.approx(0.03, rel=1e-3), "")
    assert crossing(lrs, [40.0, 60.0, 90.0], 30.0) == (0.01, "below")
    assert crossing(lrs, [1.0, 2.0, 3.0], 30.0) == (None, "above")


def test_cpu_depth_logit_crossing_falls_with_depth():
    """Section 18's descriptive measure on docs/cpu-depth (its curves at step 120): the LR at
    which off's max attention logit first exceeds 50 falls with depth, the interval below 0
    (the issue's independent re-analysis: 0.05-0.08 decades per doubling)."""
    g = analysis("cpu-depth")["logit_growth"]
    assert (
        g["step"] == 120
        and g["arm"] == "off"
        and sorted(g["rungs"], key=int) == ["1", "2", "3", "4", "6", "8"]
    )
    for level in ("30", "50", "100"):
        slope = g["slopes"][level]
        assert -0.1 < slope["value"] < -0.04 and slope["ci90"][1] < 0, level
    report = (DOCS / "cpu-depth" / "report.md").read_text()
    assert "above 50: -0.069 decades per doubling (90% interval -0.093 to -0.046)" in report
