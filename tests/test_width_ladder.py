"""A width ladder through figures/ (issue 28, points 3-4): the analysis finds the ladder, one
rung per width, decides W1 and W2 and carries W1's line to the core width; the report, the
opening and the charts name widths, never depths. And a depth ladder's analysis stays what it
was: a committed report re-analysed gains only the ladder it records and each run's width."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import figures_fakes as ff
import numpy as np
import pytest

from figures import charts, present
from figures.report import opening
from figures.report.assemble import make_report
from figures.words import extrapolation
from figures.words.view import analyze, read_view
from sweeps.analysis import analyze as typed_analyze
from sweeps.analysis import archive
from sweeps.analysis.adapter import from_json, to_json
from sweeps.analysis.results import load_curves, load_results
from sweeps.core.errors import ConfigError
from sweeps.core.ladder import DEFAULT_LADDER, Ladder
from sweeps.study.rules import INCONCLUSIVE, SUPPORTED
from sweeps.study.stats import STUDY_SHA256, STUDY_VERSION
from sweeps.study.trend import RULED_OUT

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _analysis(root: Path) -> dict:
    results = load_results(root)
    return analyze(results, load_curves(results.runs))


@pytest.fixture(scope="module")
def falling(tmp_path_factory):
    """The planted fall: off's threshold one grid step lower per width; the report written."""
    root = tmp_path_factory.mktemp("runs") / "width"
    ff.write_width(root)
    report = make_report(root, root / "report", ("vl.json",))
    result = read_view(report.parent)  # analysis.json, worded again (its verdicts)
    return result, report.read_text()


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "flat"
    ff.write_width(root, "flat", ff.FLAT_THRESHOLD)
    return _analysis(root)


def test_the_analysis_finds_the_width_ladder_and_one_rung_per_width(falling):
    result, _ = falling
    assert result["settings"]["ladder"] == {"field": "n_embd", "name": "width"}
    assert present.ladder_of_json(result).is_width
    assert list(result["depths"]) == [str(w) for w in ff.WIDTHS]  # not one "depth 2" rung
    assert sorted(result["settings"]["tokens_per_param"]) == sorted(map(str, ff.WIDTHS))
    # each rung holds that width's runs alone: wider models, fewer tokens per parameter
    params = [result["depths"][str(w)]["tokens_per_param"]["params"] for w in ff.WIDTHS]
    assert params == sorted(params) and len(set(params)) == 3
    assert {r["n_embd"] for r in result["runs"]} == set(ff.WIDTHS)


def test_w1_and_w2_are_decided_with_both_slopes_and_their_intervals(falling):
    result, _ = falling
    assert "h3" not in result and "H3" not in result["verdicts"]
    for key in ("w1", "w2"):
        t = result[key]
        assert t["depths"] == ff.WIDTHS
        for placement in ("at_bound", "beyond"):
            s = t[placement]
            assert s["n"] == len(ff.WIDTHS)  # the rung is the unit (docs/STUDY.md section 13)
            assert s["lower"] <= s["value"] <= s["upper"] and s["ci90"] == [s["lower"], s["upper"]]
    # planted: a half-decade fall per width step; off's best LR falls with it, so the
    # threshold as a multiple of each seed's best LR stays put
    assert result["w1"]["verdict"] == SUPPORTED and result["w1"]["at_bound"]["upper"] < 0
    # the multiple stays put, but three widths cannot show it inside +-0.15 (df 1: section 13)
    assert result["w2"]["verdict"] == INCONCLUSIVE and result["w2"]["bound"] == 0.15
    assert abs(result["w2"]["at_bound"]["value"]) < 0.05 and result["w2"]["why"] == "not shown"
    assert result["w2"]["seed_best"] == {"32": [1e-2] * 3, "48": [3e-3] * 3, "64": [1e-3] * 3}
    w1, w2 = result["verdicts"]["W1"], result["verdicts"]["W2"]
    assert (w1["verdict"], w2["verdict"]) == (SUPPORTED, INCONCLUSIVE)
    assert w1["claim"] == "The stability threshold falls as width grows."
    assert "log2(n_embd)" in w1["test"] and "+-0.15" in w2["test"]
    assert any("per doubling of width" in e for e in w1["evidence"])
    assert any(
        "log10(threshold bracket top / off's best LR) per doubling of width" in e
        for e in w2["evidence"]
    )
    assert "reaches beyond ±0.15" in w2["reason"]
    assert "width 48: off's best LR per seed 0.003 (every seed)" in w2["evidence"]


def test_a_flat_threshold_does_not_support_w1(flat):
    # flat: a fall as steep as the predicted -0.3 decades per doubling is ruled out
    assert flat["w1"]["verdict"] == RULED_OUT and flat["w1"]["why"] == "steep fall ruled out"
    assert flat["verdicts"]["W1"]["verdict"] == RULED_OUT
    assert "ruled out at this scale" in flat["verdicts"]["W1"]["reason"]


def test_the_extrapolation_reads_w1s_line_at_the_core_width(falling):
    result, _ = falling
    e = result["w1"]["extrapolation"]
    assert e["width"] == 384 and e["doublings"] == pytest.approx(math.log2(384 / 64))
    # the same line by hand: every per-seed threshold (none censored here) on log2 width
    x, y = [], []
    for w in ff.WIDTHS:
        c = result["depths"][str(w)]["comparisons"]["off vs on"]
        for v in c["seed_thresholds"].values():
            assert v["kind"] == ""
            x.append(math.log2(w))
            y.append(math.log10(v["value"]))
    slope, intercept = np.polyfit(x, y, 1)
    at = e["threshold"]["at_bound"]
    assert at["log10"] == pytest.approx(intercept + slope * math.log2(384))
    assert at["value"] == pytest.approx(10 ** at["log10"]) and at["n"] == len(x)
    lo, hi = at["ci90"]
    assert lo < at["value"] < hi and at["point90"][0] <= lo and hi <= at["point90"][1]
    # off's critical LRs fall with the threshold; on never fails, so it has no line
    arms = e["critical_lr"]["arms"]
    assert arms["off"]["value"] < 1e-4 and arms["off"]["censored"] == 0
    assert arms["on"]["value"] is None and arms["on"]["censored"] == arms["on"]["n"] == 9
    # off's slope per doubling of width, by hand from its per-seed critical LRs
    x, y = [], []
    for w in ff.WIDTHS:
        for v in result["depths"][str(w)]["arms"]["off"]["eta_crit"]["seeds"].values():
            x.append(math.log2(w))
            y.append(math.log10(v["value"]))
    b = np.polyfit(x, y, 1)[0]
    assert b < -0.3 and arms["off"]["slope"] == pytest.approx(b)
    lo, hi = arms["off"]["slope90"]
    assert lo < b < hi
    assert "slope" not in arms["on"]  # no line, no slope
    # off's line at 384 lies below every LR the rungs ran: the report says no run saw it
    assert e["grid"] == [min(ff.LRS), max(ff.LRS)]
    said = next(x for x in falling[1].splitlines() if x.startswith("- off's critical LR (stuck"))
    assert "below the grid's lowest LR 0.001, where no run trained" in said
    above = {**arms["off"], "value": 5.0}
    assert extrapolation.predicted(above, e["grid"]).endswith(
        ", above the grid's top LR 0.1, where no run trained"
    )
    assert "grid" not in extrapolation.predicted(arms["off"])  # analyses without a grid
    # every seed at the same bracket midpoint at every width: no zero-width "interval"
    flat = {**arms["off"], "ci90": [0.0562, 0.0562], "point90": [0.0562, 0.0562]}
    flat.update(value=0.0562, slope=0.0, slope90=[0.0, 0.0])
    said = extrapolation.critical_lines("stuck", {"off": flat})[0]
    assert "interval" not in said.replace("no scatter to give an interval", "")
    assert "known only to within its grid bracket" in said and "+0.000 decades" in said


def test_the_critical_lr_lines_are_read_under_every_failure_definition(falling):
    from sweeps.study.rules import FAILURE_DEFINITIONS, PRIMARY_FAILURE

    result, report = falling
    e = result["w1"]["extrapolation"]
    by = e["critical_lr_by_definition"]
    assert set(by) == set(FAILURE_DEFINITIONS) and by[PRIMARY_FAILURE] == e["critical_lr"]["arms"]
    for definition, arms in by.items():
        for arm, p in arms.items():
            # by hand: the arm's per-seed critical LRs under that definition, at their bounds
            x, y = [], []
            for w in ff.WIDTHS:
                a = result["depths"][str(w)]["arms"][arm]["eta_crit_by_definition"][definition]
                for v in a["seeds"].values():
                    if v["kind"] != "none":
                        x.append(math.log2(w))
                        y.append(math.log10(v["value"]))
            assert p["n"] == len(x)
            if p["value"] is not None:
                assert p["slope"] == pytest.approx(np.polyfit(x, y, 1)[0])
    section = report.split("Under the other failure definitions")[1].split("###")[0]
    said = [x for x in section.splitlines() if x.startswith("- ")]
    others = [d for d in FAILURE_DEFINITIONS if d != PRIMARY_FAILURE]
    assert [x.split("(")[1].split(")")[0] for x in said] == [d for d in others for _ in "ab"]
    assert all(x.startswith(("- off's critical LR (", "- on's critical LR (")) for x in said)


def test_the_low_lr_gap_is_set_narrowest_to_widest_against_its_prediction(falling):
    import copy
    import dataclasses

    from sweeps.analysis import trends

    result = copy.deepcopy(falling[0])
    lrs = sorted(result["settings"]["base_lrs"])[:2]
    planted = {"32": (0.3, 0.5), "64": (0.15, 0.4)}
    for w, means in planted.items():
        for e in result["depths"][w]["comparisons"]["off vs on"]["per_lr"]:
            if e["lr"] in lrs:
                e["mean"] = means[lrs.index(e["lr"])]
    planted_analysis = ff.typed(result)  # the analysis decides the ratio; words read it
    shrink = trends.gap_shrink(planted_analysis)
    assert [(g.narrow_rung, g.wide_rung, g.ratio) for g in shrink] == [
        ("32", "64", pytest.approx(0.5)),
        ("32", "64", pytest.approx(0.8)),
    ]
    line = extrapolation.gap_line(dataclasses.replace(planted_analysis, gap_shrink=shrink))
    assert line.startswith("The low-LR gap (off - on), width 32 to width 64: 0.300 to 0.150")
    assert "(x0.50)" in line and "0.500 to 0.400" in line and "(x0.80)" in line
    assert "at least a third (x0.67 or less)" in line
    # no gap to shrink (the fixture's arms tie at low LRs): no line
    assert extrapolation.gap_line(ff.typed(falling[0])) is None


def test_the_opening_adds_the_slope_without_censored_thresholds_only_when_some_were(falling):
    import dataclasses

    from figures.report.opening_lines import trend_says
    from figures.words.view import say
    from sweeps.analysis.model import Uncensored

    result, _ = falling
    assert "uncensored" not in result["w1"] or result["w1"]["uncensored"] is None  # none here
    typed = ff.typed(result)  # the opening reads it typed, and its verdicts in words
    verdicts = say(typed).verdicts
    assert "without the censored" not in trend_says(typed, verdicts, "W1")
    uncensored = Uncensored(n=7, value=-0.057, lower=-0.152, upper=0.038, ci90=[-0.152, 0.038])
    edge = dataclasses.replace(typed.w1, censored=2, uncensored=uncensored)
    said = trend_says(dataclasses.replace(typed, w1=edge), verdicts, "W1")
    assert said.endswith(
        "; without the censored ones (descriptive, not the rule): -0.057 (-0.152 to 0.038, 7 "
        "thresholds)"
    )


def test_censoring_that_decides_says_what_it_decides():
    from figures.words.verdicts import censoring_words
    from sweeps.analysis.model import Slope

    def slope(value, upper):
        return Slope(n=4, value=value, lower=value - 0.5, upper=upper, ci90=[value - 0.5, upper])

    # support hangs on the placement: the fall is shown one way only
    said = censoring_words(slope(-0.4, -0.05), slope(-0.2, 0.1))
    assert said.startswith("the fall is shown with the censored per-seed thresholds at their")
    assert "but not moved beyond them" in said
    # cpu-depth's case: shown neither way, only the slope's sign moves
    said = censoring_words(slope(-0.011, 0.486), slope(0.052, 0.684))
    assert said.startswith("the fall is shown neither way")
    assert "negative (inconclusive) or not (not supported)" in said


def test_the_report_and_the_opening_say_width_never_depth(falling):
    result, report = falling
    assert not re.findall(r"[Dd]epths? \d", report), re.findall(r".*[Dd]epths? \d.*", report)
    assert "width 48" in report and "| width 48 off |" in report
    said = opening.terminal(ff.said(result))
    assert (
        said[0] == "How do the threshold and the rule move with width? (W1, W2; widths 32, 48, 64)"
    )
    assert said[1].startswith("  - Does the stability threshold fall as width grows? (W1) Yes:")
    assert "(W2) Not decided:" in said[2]
    assert said[3].startswith("  - At width 384, the core width, 2.58 doublings past the widest")
    assert "an extrapolation, not a measurement" in said[3]
    assert said[4].startswith("    - stability threshold ~")
    assert "Where is QK-norm necessary? (off vs on, per width)" in said
    assert any(
        line.startswith("  - Width 48: without QK-norm the best LR is 0.003") for line in said
    )
    assert not any(re.search(r"[Dd]epth", line) for line in said)
    assert any(
        line.startswith("Verdicts (pre-registered in docs/STUDY.md sections 5 and 11;")
        for line in said
    )
    # the verdicts, the ladder table and the extrapolation in the report
    assert "### W1: The stability threshold falls as width grows." in report
    assert "### W2: The practitioner's rule carries across widths" in report
    assert "### H3" not in report and "### The ladder: per width" in report
    assert "**At width 384, the core width" in report
    off = next(x for x in report.splitlines() if x.startswith("- off's critical LR (stuck) ~"))
    assert re.search(
        r"; per doubling of width -0\.\d{3} decades \(90% interval .*; as 1/width: -0\.301\)$", off
    )
    table = report.split("### The ladder: per width")[1].split("###")[0]
    assert "| width 64 | 0.0576 | (0.001, 0.003] |" in table
    assert "off - on at LR 0.001 [90% CI]" in table and "off - on at LR 0.003 [90% CI]" in table
    # off's start temperature per width, where the low-LR gap's prediction comes from: in the
    # ladder table per rung, and in the arms table per width (not one mean over widths)
    assert "| off's initial attention-logit std |" in table
    rows = {x.split(" | ")[0]: x.split(" | ") for x in table.splitlines() if x.startswith("| w")}
    header = next(x for x in table.splitlines() if x.startswith("| width | "))
    column = header.split(" | ").index("off's initial attention-logit std")
    assert [rows[f"| width {w}"][column] for w in ff.WIDTHS] == ["0.020", "0.030", "0.040"]
    arms = report.split("### Arms")[1].split("###")[0]
    assert "| 0.020 (width 32), 0.030 (width 48), 0.040 (width 64) |" in arms
    assert "| on | on (rms) | model.qk_norm=rms | whole grid | 1.000 |" in arms
    # rungs within 5% of each other start alike (seed noise): one number, their mean
    import copy

    from figures.report import tables

    noisy = copy.deepcopy(result)
    for w, std in zip(ff.WIDTHS, (0.999, 0.996, 0.999)):
        noisy["depths"][str(w)]["arms"]["on"]["init_logit_std"] = std
    assert tables._start_std(ff.typed(noisy), "on") == "0.998"


def test_the_unstable_table_names_each_runs_width():
    """Run ids name the depth, not the width: the table says which width each run is."""
    from figures.report import tables
    from sweeps.analysis.model import Run

    def run(width, lr, rid):
        fields = dict.fromkeys(Run.__dataclass_fields__)
        return Run(**fields | {"run_id": rid, "n_embd": width, "n_layer": 4, "arm": "off"} | {
            "lr": lr, "seed": 0, "unstable_reasons": [f"loss at width {width}"]
        })  # fmt: skip

    runs = [run(128, 0.1, "b"), run(64, 0.1, "a"), run(64, 0.0562, "c")]
    rows = tables.unstable(runs, Ladder("n_embd")).splitlines()
    assert rows[0] == "| run | width | arm | LR | seed | why |"
    assert [r.split(" | ")[1:3] for r in rows[2:]] == [["64", "off"], ["64", "off"], ["128", "off"]]
    assert [r.split(" | ")[3] for r in rows[2:]] == ["0.0562", "0.1", "0.1"]
    assert rows[-1].endswith("| loss at width 128 |")


def test_the_charts_name_widths(falling):
    result, _ = falling
    headline = json.dumps(charts.spec_of(charts.final_loss(ff.typed(result))))
    assert "'width ' + datum.value" in headline and "depth" not in headline
    stability = json.dumps(charts.spec_of(charts.stability(ff.typed(result))))
    assert '"title": "width (embedding dims)"' in stability and "n_embd" in stability
    necessity = charts.spec_of(charts.necessity_map(ff.typed(result)))
    rows = {r["width"] for r in necessity["datasets"][necessity["data"]["name"]]}
    assert rows == {"width 32", "width 48", "width 64"}
    for chart in (charts.paired_effect, charts.sensitivity, charts.eta_max_ratio):
        spec = json.dumps(charts.spec_of(chart(ff.typed(result))))
        assert "width" in spec and "depth" not in spec and "n_layer" not in spec


def test_a_width_sweep_with_one_width_run_so_far_is_a_width_ladder(tmp_path):
    """The planned widths count: cpu-width with only width 64 finished reads "width 64", and
    W1 and W2 wait for the others."""
    root = tmp_path / "partial"
    ff.write_width(root, "partial", run=[32])
    result = _analysis(root)
    assert result["settings"]["ladder"]["name"] == "width" and list(result["depths"]) == ["32"]
    for name in ("W1", "W2"):
        v = result["verdicts"][name]
        assert v["verdict"] == INCONCLUSIVE
        assert v["reason"] == (
            "1 width with both arms; a trend needs at least 3 (sweeps/specs/cpu-width.toml runs 3)"
        )
    assert result["rules"]["32"]["text"].startswith("At width 32 (")


def test_a_sweep_that_ladders_both_depth_and_width_is_refused():
    import pandas as pd

    from sweeps.analysis.run_table import ladder_field

    runs = pd.DataFrame({"n_layer": [2, 4], "n_embd": [32, 64]})
    with pytest.raises(ConfigError, match="ladders depth or width, not both"):
        ladder_field(runs)
    assert Ladder(ladder_field(pd.DataFrame({"n_layer": [4, 4]}))) == DEFAULT_LADDER
    assert (
        present.ladder_of_json({}).label(4) == "depth 4"
    )  # an analysis from before ladders had a width


def test_a_committed_depth_report_analyses_as_before_but_for_its_ladder_and_widths():
    """docs/cpu re-analysed from its archive: its analysis.json as committed (re-rendered
    since ladders had a width: the ladder it records, depth, and each run's width); every
    verdict, table number and rule the same."""
    committed = json.loads((DOCS / "cpu" / "analysis.json").read_text())
    results, curves, _ = archive.load(DOCS / "cpu")
    now = json.loads(json.dumps(to_json(typed_analyze(results, curves)), sort_keys=True))
    # the protocol digest names the docs/STUDY.md it ran under; sections added later (12)
    # change it without changing a rule docs/cpu is judged by
    assert now.pop("study_sha256") == STUDY_SHA256 and now.pop("study_version") == STUDY_VERSION
    committed.pop("study_sha256"), committed.pop("study_version")
    assert now["settings"]["ladder"] == {"field": "n_layer", "name": "depth"}
    assert {r["n_embd"] for r in now["runs"]} == {64}
    # whether any arm beats the bigram baseline (docs/cpu's do: not a toy), and the runs'
    # baseline rule (docs/cpu's runs table predates the column: None)
    assert now["baseline_check"]["beaten"] is True
    assert now["settings"]["baseline_rule"] is None
    assert now == committed
    assert committed["decided"]["H3"]["verdict"] == INCONCLUSIVE  # one depth: no trend


def test_the_gap_line_fits_each_seeds_paired_gap_on_log2_width():
    from sweeps.study import ladders, rules

    # planted: the gap halves per doubling of width, each seed offset by its own constant
    # (persistent per seed); a seed whose on run did not finish at width 128 is no pair there
    planted = {64: 0.4, 128: 0.2, 256: 0.1}
    offsets = {0: 0.03, 1: -0.02, 2: 0.0}
    rows, x, y = [], [], []
    for w, gap in planted.items():
        for s, o in offsets.items():
            for arm, loss in (("off", 1.0 + gap + o), ("on", 1.0)):
                if (w, s, arm) == (128, 2, "on"):
                    continue
                rows.append(
                    {"run_id": f"{arm}{w}{s}", "n_embd": w, "arm": arm, "lr": 3.16e-4, "seed": s}
                    | {"status": "ok", "init_loss": 5.5, "final_val_loss": loss}
                )
            if (w, s) != (128, 2):
                x.append(math.log2(w))
                y.append(gap + o)
    cells = rules.build_cells(rows, "n_embd")
    line = ladders.gap_line(cells, "off", "on", 3.16e-4)
    slope, intercept = np.polyfit(x, y, 1)
    assert line.n == 8 and line.slope == pytest.approx(slope) and slope < 0
    assert line.intercept == pytest.approx(intercept)
    lo, hi = line.slope_bounds()
    assert lo < slope < hi < 0  # the shrink is shown: the seeds' offsets are small against it
    # an LR no width ran, or an arm no width has, is no line
    assert ladders.gap_line(cells, "off", "on", 1e-3) is None
    assert ladders.gap_line(cells, "off", "off-warm", 3.16e-4) is None


def test_the_extrapolation_reads_the_low_lr_gap_at_the_core_width(falling):
    import copy

    result, report = falling
    gaps = result["w1"]["extrapolation"]["low_lr_gap"]
    lrs = sorted(result["settings"]["base_lrs"])[:2]
    assert [g["lr"] for g in gaps] == lrs and {g["of"] for g in gaps} == {"off - on"}
    # with every seed at each (width, LR) present, the least-squares slope over the pairs is
    # the slope over the widths' mean gaps: the fixture's arms tie at 0.001 (a flat line at 0)
    # and off fails at 0.003 from width 64 on (a rising one)
    x = [math.log2(w) for w in ff.WIDTHS]
    for g in gaps:
        assert g["n"] == len(ff.WIDTHS) * len(ff.SEEDS)
        means = []
        for w in ff.WIDTHS:
            per = result["depths"][str(w)]["comparisons"]["off vs on"]["per_lr"]
            means.append(next(e["mean"] for e in per if e["lr"] == g["lr"]))
        slope, intercept = np.polyfit(x, means, 1)
        assert g["slope"] == pytest.approx(slope, abs=1e-9)
        assert g["value"] == pytest.approx(intercept + slope * math.log2(384), abs=1e-9)
        assert g["ci90"][0] <= g["value"] <= g["ci90"][1]
        assert g["point90"][0] <= g["ci90"][0] and g["ci90"][1] <= g["point90"][1]
    assert gaps[0]["value"] == 0 and gaps[1]["slope"] > 0.3
    said = [x for x in report.splitlines() if x.startswith("- off - on at LR ")]
    assert len(said) == 2 and "nats (90% interval of the line" in said[0]
    assert "; 9 pairs); per doubling of width +0.000 nats" in said[0]
    # a planted reading is worded as it is recorded
    e = copy.deepcopy(result["w1"]["extrapolation"])
    e["low_lr_gap"] = [
        {"lr": 3.16e-4, "of": "off - on", "value": -0.05, "ci90": [-0.2, 0.1], "n": 12}
        | {"point90": [-0.3, 0.2], "slope": -0.12, "slope90": [-0.18, -0.06]}
    ]
    line = extrapolation.extrapolation_lines(e)[-1]
    assert line == (
        "off - on at LR 0.000316 ~-0.050 nats (90% interval of the line -0.200 to 0.100; of one "
        "seed -0.300 to 0.200; 12 pairs); per doubling of width -0.120 nats (90% interval -0.180 "
        "to -0.060)"
    )


def test_the_sensitivity_line_recovers_a_planted_rise_and_not_a_null():
    """LR sensitivity per doubling (descriptive), over 200 simulated ladders with persistent
    per-seed offsets and noise: the 90% interval holds a planted rise of 0.1 nats per doubling
    (and excludes 0) about as often as it should, and holds 0 on a flat ladder; an incomplete
    (NaN) seed value is left out, not counted as 0."""
    from sweeps.study import ladders

    rng = np.random.default_rng(0)

    def ladder_of(rise):
        offsets = rng.normal(0, 0.05, 4)
        return {
            size: {
                s: 1.0 + rise * math.log2(size) + o + rng.normal(0, 0.02)
                for s, o in enumerate(offsets)
            }
            for size in (2, 4, 8)
        }

    def bounds(values):
        line = ladders.sensitivity_line(values)
        assert line.n == 12
        return line.slope_bounds()

    rising = [bounds(ladder_of(0.1)) for _ in range(200)]
    assert np.mean([lo < 0.1 < hi for lo, hi in rising]) >= 0.85
    assert np.mean([lo > 0 for lo, _ in rising]) >= 0.9
    flat = [bounds(ladder_of(0.0)) for _ in range(200)]
    assert np.mean([lo < 0 < hi for lo, hi in flat]) >= 0.85
    gappy = ladder_of(0.1)
    gappy[8][3] = math.nan
    assert ladders.sensitivity_line(gappy).n == 11
    assert ladders.sensitivity_line({4: {0: 1.0, 1: 1.1, 2: 0.9}}) is None  # one size


def test_the_report_gives_lr_sensitivity_per_doubling_from_the_seeds_values(falling):
    result, report = falling
    t = result["sensitivity_trend"]
    assert t["sizes"] == list(ff.WIDTHS) and set(t["lines"]) == {"off", "on", "off - on"}
    x, y = [], {"off": [], "on": [], "off - on": []}
    for w in ff.WIDTHS:
        arms = result["depths"][str(w)]["arms"]
        for seed, off in arms["off"]["sensitivity"]["seeds"].items():
            on = arms["on"]["sensitivity"]["seeds"][seed]
            x.append(math.log2(w))
            y["off"].append(off), y["on"].append(on), y["off - on"].append(off - on)
    for name, values in y.items():
        assert t["lines"][name]["value"] == pytest.approx(np.polyfit(x, values, 1)[0])
        lo, hi = t["lines"][name]["ci90"]
        assert lo <= t["lines"][name]["value"] <= hi
    said = next(x for x in report.splitlines() if x.startswith("LR sensitivity per doubling"))
    assert said.startswith("LR sensitivity per doubling of width, least squares over each seed")
    assert f"off {t['lines']['off']['value']:+.3f} nats (90% interval" in said
    assert "not pre-registered" in said and "Wortsman et al. 2023" in said


def test_the_low_lr_gaps_shrink_is_the_analysiss_ratio_of_its_own_means():
    """docs/cpu-width: the gap at the narrowest and widest width at the two lowest grid LRs, as
    the primary comparison's per-LR means hold them, and their ratio; the report words it."""
    a = from_json(json.loads((DOCS / "cpu-width" / "analysis.json").read_text()))
    widths = sorted(a.depths, key=int)
    assert [g.lr for g in a.gap_shrink] == sorted(a.settings.base_lrs)[:2]
    key = f"{a.settings.reference} vs {a.settings.primary}"
    for g in a.gap_shrink:
        means = [
            next(e.mean for e in a.depths[w].comparisons[key].per_lr if e.lr == g.lr)
            for w in (widths[0], widths[-1])
        ]
        assert (g.narrow, g.wide) == tuple(means) and g.ratio == pytest.approx(g.wide / g.narrow)
        assert f"(x{g.ratio:.2f})" in (DOCS / "cpu-width" / "report.md").read_text()
    assert from_json(json.loads((DOCS / "cpu" / "analysis.json").read_text())).gap_shrink is None
