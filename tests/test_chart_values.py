"""Every chart draws exactly the analysis, panel by panel, and keeps its text on the canvas:
charts read back from the renderer (tests/chart_marks.py) on a hand-made sweep with three
arms, three comparisons and three depths (tests/figures_fakes.py write_multi)."""

import json
import math
from pathlib import Path

import chart_marks as cm
import figures_fakes as ff
import numpy as np
import pytest

from figures import charts, present
from figures.charts.headline import FATE_LABELS
from sweeps.analysis import model
from sweeps.analysis.adapter import from_json, read

# -- every chart draws exactly the analysis, panel by panel ----------------------------------
# Read back from the renderer (tests/chart_marks.py) on a sweep with three arms, three
# comparisons and three depths, so a mark in the wrong panel, a panel missing, or a number
# other than analysis.json's fails here.
CLOSE = {"rel": 5e-3, "abs": 5e-4}  # tooltips print 3-4 significant digits


def settings_of(result: dict) -> model.Settings:
    """The typed settings of an analysis.json dict (what present's readers take)."""
    return read(model.Settings, result["settings"])


def primary_of(result: dict) -> str:
    """The primary comparison's key, 'off vs on'."""
    s = settings_of(result)
    return f"{s.reference} vs {s.primary}"


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "multi"
    ff.write_multi(root)
    return ff.drawn(root)


def _close(a, b) -> bool:
    return (
        a is None
        and b is None
        or (a is not None and b is not None and a == pytest.approx(b, **CLOSE))
    )


def _one(panel: dict, layer: str, *keys) -> tuple:
    """The one value of `keys` every mark of a layer in a panel shares (its panel's key).
    A chart without that layer name (an older one) is read by its first layer with `keys`."""
    marks = panel.get(layer) or next(
        v for v in panel.values() if v and all(k in v[0] for k in keys)
    )
    values = {tuple(m[k] for k in keys) for m in marks}
    assert len(values) == 1, f"{layer}: marks of several panels in one: {sorted(values)}"
    return values.pop()


def test_paired_chart_draws_each_comparison_and_depth_in_its_own_panel(multi):
    result, _ = multi
    panels = cm.panels(charts.paired_effect(ff.typed(result)))
    expected = {
        (key, int(d)): c
        for d, depth in result["depths"].items()
        for key, c in depth["comparisons"].items()
    }
    assert len(expected) == 9 and len(panels) == len(expected)
    seen = set()
    for panel in panels:
        key, depth = _one(panel, "effects", "comparison", "n_layer")
        c = expected[(key, int(depth))]
        judged = {e["lr"]: e for e in c["per_lr"] if e["n"] >= 2 and not e["ceiling"]}
        drawn = {m["lr"]: m for m in panel["effects"]}
        assert set(drawn) == set(judged), (key, depth)
        for lr, m in drawn.items():
            lo, hi, _ = present.effect_interval(read(model.LrEffect, judged[lr]))
            assert _close(m["mean"], judged[lr]["mean"]) and _close(m["lo"], lo)
            assert _close(m["hi"], hi)
            assert (m["necessary"] == "necessary") == judged[lr]["necessary"]
        assert len(panel["min_effect"]) == 1  # the minimum-effect line, once per panel
        seen.add((key, int(depth)))
    assert seen == set(expected)


def test_the_panel_check_catches_layers_that_bring_their_own_data(multi):
    """Today's bug, rebuilt: each layer carries the whole table inside the facet, so every
    panel draws every comparison and depth. The check above must reject it."""
    result, _ = multi
    spec = charts.spec_of(charts.paired_effect(ff.typed(result)))
    for layer in spec["spec"]["layer"]:
        layer["data"] = spec["data"]
    with pytest.raises(AssertionError, match="marks of several panels"):
        for panel in cm.panels(spec):
            _one(panel, "effects", "comparison", "n_layer")


def test_headline_chart_draws_runs_means_critical_lrs_threshold_and_baseline(multi):
    result, _ = multi
    panels = cm.panels(charts.final_loss(ff.typed(result)))
    assert len(panels) == 3
    primary = primary_of(result)
    for panel in panels:
        (depth,) = _one(panel, "runs", "n_layer")
        d = result["depths"][str(int(depth))]
        runs = {r["run_id"]: r for r in result["runs"] if r["n_layer"] == depth}
        assert {m["run_id"] for m in panel["runs"]} == set(runs)
        for m in panel["runs"]:
            assert _close(m["loss"], runs[m["run_id"]]["loss"])
            fate = present.fate(read(model.Run, runs[m["run_id"]]), settings_of(result))
            assert m["fate"] == FATE_LABELS[fate]
        medians = {(m["arm"], m["lr"]): m for m in panel["median"]}
        assert medians.keys() == {
            (arm, c["lr"]) for arm, a in d["arms"].items() for c in a["cells"]
        }
        for arm, a in d["arms"].items():
            for c in a["cells"]:
                seeds = sorted(
                    r["loss"] for r in runs.values() if (r["arm"], r["lr"]) == (arm, c["lr"])
                )
                k = len(seeds)
                m = medians[(arm, c["lr"])]
                assert _close(m["seed median"], (seeds[(k - 1) // 2] + seeds[k // 2]) / 2)
                assert _close(m["seed mean"], c["loss_mean"])
        # a critical LR only where the arm failed inside the grid
        crit = {m["arm"]: m["critical LR"] for m in panel["critical"]}
        assert crit == {
            arm: pytest.approx(a["eta_crit"]["median"]["value"], rel=5e-3)  # shown to 3 digits
            for arm, a in d["arms"].items()
            if a["eta_crit"]["median"]["kind"] == ""
        }
        lo, hi, _ = present.threshold_interval(read(model.Comparison, d["comparisons"][primary]))
        (drawn,) = panel["threshold"]  # the bracket, a bar from lo to hi
        assert _close(drawn["last LR not shown necessary"], lo)
        assert _close(drawn["necessary from"], hi)
        assert len(panel["threshold_ends"]) == 2
        assert len(panel["bigram"]) == 1  # the baseline line, once per panel
        assert any(m["text"].startswith("threshold ") for m in panel["labels"])


def test_headline_marks_every_failed_run_by_its_fate(multi):
    result, _ = multi
    (panel, *_) = cm.panels(charts.final_loss(ff.typed(result)))
    fates = {m["fate"] for m in panel["runs"]}
    # off at its threshold LR finishes worse than the bigram baseline (figures_fakes): stuck
    assert fates == set(FATE_LABELS.values())
    shapes = {m["fate"]: m["run"] for m in panel["runs"]}  # the shape legend's value
    assert shapes[FATE_LABELS["diverged"]] == FATE_LABELS["diverged"]


def test_necessity_map_colours_each_cell_with_its_effect_and_marks_the_thresholds(multi):
    result, _ = multi
    (panel,) = cm.panels(charts.necessity_map(ff.typed(result)))
    primary = primary_of(result)
    expected = {
        (f"depth {d}", e["lr"]): e
        for d, depth in result["depths"].items()
        for e in depth["comparisons"][primary]["per_lr"]
    }
    cells = {(m["depth"], m["lr"]): m for m in panel["cells"]}
    assert cells.keys() == expected.keys()
    for key, m in cells.items():
        assert _close(m["effect"], expected[key]["mean"])
    assert {(m["depth"], m["lr"]) for m in panel["necessary"]} == {
        k for k, e in expected.items() if e["necessary"]
    }
    ticks = {m["depth"]: m["threshold"] for m in panel["threshold"]}
    assert ticks == {
        f"depth {d}": pytest.approx(
            depth["comparisons"][primary]["threshold"]["value"], rel=5e-3
        )  # shown to 3 digits
        for d, depth in result["depths"].items()
    }


def test_trend_chart_draws_every_point_h3_was_fitted_to_and_its_line(multi):
    """The per-seed thresholds H3 regresses, censored ones as triangles at their bounds, and
    the least-squares line: the same points and slope as the verdict, recomputed by hand."""
    result, _ = multi
    h3 = result["h3"]
    (panel,) = cm.panels(charts.trend(ff.typed(result)))
    drawn = sorted((int(m["n_layer"]), m["lr"]) for m in panel["points"])

    def same(a: list, b: list) -> bool:
        return len(a) == len(b) and all(
            x[0] == y[0] and x[1] == pytest.approx(y[1], rel=5e-3) for x, y in zip(a, b)
        )

    assert same(drawn, sorted((p["rung"], p["lr"]) for p in h3["points"]))
    # the points are every per-seed threshold of the primary comparison, at its bound
    expected = []
    for depth, d in result["depths"].items():
        judged = [e["lr"] for e in d["comparisons"]["off vs on"]["per_lr"] if e["judged"]]
        for v in d["comparisons"]["off vs on"]["seed_thresholds"].values():
            bound = {"": v["value"], "below": v["value"], "none": max(judged)}[v["kind"]]
            expected.append((int(depth), bound))
    assert same(sorted(expected), drawn)
    slope, _ = np.polyfit(
        [math.log2(p["rung"]) for p in h3["points"]], [math.log10(p["lr"]) for p in h3["points"]], 1
    )
    assert h3["line"]["slope"] == pytest.approx(slope) == pytest.approx(h3["at_bound"]["value"])
    # each rung's value, the unit the rule fits (section 13): drawn, and the line fits them
    values = sorted((v["rung"], v["lr"]) for v in h3["rung_values"])
    assert same(sorted((int(m["n_layer"]), m["lr"]) for m in panel["rung_values"]), values)
    by_rung, _ = np.polyfit(
        [math.log2(r) for r, _ in values], [math.log10(lr) for _, lr in values], 1
    )
    assert h3["line"]["slope"] == pytest.approx(by_rung)
    (line,) = [panel["line"]]
    ends = {round(m["depth (layers)"]): m["lr"] for m in line}
    for depth, lr in ends.items():
        fitted = 10 ** (h3["line"]["intercept"] + slope * math.log2(depth))
        assert lr == pytest.approx(fitted, rel=5e-3)
    assert set(ends) == {min(p["rung"] for p in h3["points"]), max(p["rung"] for p in h3["points"])}
    spec = json.dumps(charts.spec_of(charts.trend(ff.typed(result))))
    assert f"{h3['at_bound']['value']:+.3f} decades per doubling" in spec
    # a censored point is a triangle pointing where its value lies beyond the bound
    from figures.charts.summary import _trend_rows
    from sweeps.analysis.model import TrendPoint

    rows = _trend_rows(
        [
            TrendPoint(rung=4, lr=3e-4, beyond=1e-4, censored=True),
            TrendPoint(rung=4, lr=0.5, beyond=1.6, censored=True),
            TrendPoint(rung=4, lr=0.02, beyond=0.02, censored=False),
        ],
        "n_layer",
    )
    assert [r["shape"] for r in rows] == ["triangle-down", "triangle-up", "circle"]
    assert rows[0]["x"] < rows[1]["x"] == 4 < rows[2]["x"]  # seeds set apart around the rung


def test_trend_chart_draws_the_fit_without_censored_points_only_when_there_is_one(multi):
    """A dotted line for the slope without the censored thresholds (descriptive), at the fit
    analysis.json records, named with its slope; absent when nothing was censored."""
    result, _ = multi
    assert "uncensored" not in cm.panels(charts.trend(ff.typed(result)))[0]
    fit = {"slope": -0.2, "intercept": -1.5}
    inside = {
        "n": 7,
        "value": -0.2,
        "lower": -0.35,
        "upper": -0.05,
        "ci90": [-0.35, -0.05],
        "line": fit,
    }
    with_line = ff.typed({**result, "h3": {**result["h3"], "uncensored": inside}})
    (panel,) = cm.panels(charts.trend(with_line))
    rungs = sorted({p["rung"] for p in result["h3"]["points"]})
    ends = {round(m["depth (layers)"]): m["lr"] for m in panel["uncensored"]}
    assert set(ends) == {rungs[0], rungs[-1]}
    for depth, lr in ends.items():
        assert lr == pytest.approx(10 ** (-1.5 - 0.2 * math.log2(depth)), rel=5e-3)
    spec = json.dumps(charts.spec_of(charts.trend(with_line)))
    assert "dotted: without the censored ones (descriptive), -0.200 (-0.350 to -0.050)" in spec


def test_trend_chart_is_left_out_of_a_one_depth_report(tmp_path):
    from figures.report.figure_set import figure_set

    ff.write_study(tmp_path / "one", depths=[2], seeds=[0, 1, 2])
    analysis, curves = ff.drawn(tmp_path / "one")
    assert "threshold_trend" not in figure_set(ff.typed(analysis), curves)
    assert charts.trend(ff.typed(analysis)) is None


def test_necessity_map_sets_an_lr_it_could_not_judge_apart(multi):
    """An LR the rule did not test (too few pairs where a run trained, not every run failed)
    is drawn light grey with an x, never as a coloured effect without a dot."""
    import copy

    result = copy.deepcopy(multi[0])
    primary = primary_of(result)
    depth, d = next(iter(result["depths"].items()))
    entry = next(e for e in d["comparisons"][primary]["per_lr"] if not e["ceiling"])
    entry.update(judged=False, necessary=False, mean=1.7)
    (panel,) = cm.panels(charts.necessity_map(ff.typed(result)))
    where = {(f"depth {depth}", entry["lr"])}
    assert {(m["depth"], m["lr"]) for m in panel["unjudged"]} == where
    assert {(m["depth"], m["lr"]) for m in panel["unjudged_x"]} == where
    assert where.isdisjoint((m["depth"], m["lr"]) for m in panel["necessary"])
    (unjudged,) = cm.panels(charts.necessity_map(ff.typed(multi[0])))
    assert not unjudged.get("unjudged")  # the fixture itself judges every LR it colours


def test_necessity_map_names_the_primary_comparisons_arms(multi):
    """The colour is the primary comparison's effect, whatever its arms are called."""
    import copy

    result = copy.deepcopy(multi[0])
    result["settings"]["reference"] = "off-warm"  # off-warm vs on: the fixture compares it
    spec = json.dumps(charts.necessity_map(ff.typed(result)).to_dict())
    assert "paired effect off-warm - on (nats)" in spec and "off - on" not in spec


def test_stability_chart_draws_each_critical_lr_and_threshold_at_its_depth(multi):
    result, _ = multi
    (panel,) = cm.panels(charts.stability(ff.typed(result)))
    drawn = {(m["series"], int(m["n_layer"])): m for m in panel["values"]}
    expected = {}
    for d, depth in result["depths"].items():
        for arm, a in depth["arms"].items():
            # the bar spans the seeds' brackets: lowest seed's last LR held, highest's first
            # failure (a censored end at its value)
            e = a["eta_crit"]
            lo = (e["min"].get("bracket") or [e["min"]["value"]])[0]
            hi = (e["max"].get("bracket") or [None, e["max"]["value"]])[-1]
            expected[(f"critical LR, {arm}", int(d))] = (e["median"]["value"], lo, hi)
        c = depth["comparisons"][primary_of(result)]
        lo, hi, _ = present.threshold_interval(read(model.Comparison, c))
        expected[("stability threshold", int(d))] = (c["threshold"]["value"], lo, hi)
    assert drawn.keys() == expected.keys()
    for key, (value, lo, hi) in expected.items():
        assert _close(drawn[key]["value"], value) and _close(drawn[key]["lo"], lo)
        assert _close(drawn[key]["hi"], hi)
    # wider than the seeds' midpoints wherever a bracket is known: a value is not that exact
    midpoints_lo = {
        (f"critical LR, {arm}", int(d)): present.crit_interval(
            read(model.CriticalLRs, a["eta_crit"])
        )[0]
        for d, depth in result["depths"].items()
        for arm, a in depth["arms"].items()
    }
    assert any(drawn[k]["lo"] < lo for k, lo in midpoints_lo.items())


def test_a_censored_value_on_the_stability_chart_points_the_way_it_lies(multi):
    import copy

    result = copy.deepcopy(multi[0])
    depths = sorted(result["depths"], key=int)
    first, last = (result["depths"][d]["arms"]["off"]["eta_crit"]["median"] for d in depths[:2])
    first.update(kind="below", value=1e-3)  # failed from the lowest LR: at or under it
    last.update(kind="above", value=1.0)  # never failed: beyond the top LR
    spec = charts.stability(ff.typed(result)).to_dict()
    (panel,) = cm.panels(charts.stability(ff.typed(result)))
    drawn = {int(m["n_layer"]): m["bound"] for m in panel["values"] if m["series"].endswith("off")}
    assert drawn[int(depths[0])] == "below the grid" and drawn[int(depths[1])] == "above the grid"
    shapes = json.dumps(spec)
    assert '"range": ["circle", "triangle-up", "triangle-down"]' in shapes
    assert '"domain": ["inside the grid", "above the grid", "below the grid"]' in shapes


def test_one_lr_on_a_log_axis_gets_a_domain_around_it_not_a_single_point():
    from figures.charts.summary import _lr_y_scale

    # cpu-budget: every arm's critical LR is "> 0.0316"; a one-value domain stacked the 0.02
    # and 0.05 tick labels on top of each other
    scale = _lr_y_scale([0.0316] * 4)
    lo, hi = scale.domain
    assert lo < 0.02 and hi > 0.05
    # two values: a domain 6% of the log span beyond each (issue 58: a value on the frame)
    lo, hi = _lr_y_scale([0.01, 0.1]).domain
    assert lo == pytest.approx(0.01 / 10**0.06) and hi == pytest.approx(0.1 * 10**0.06)


def test_eta_max_ratio_and_sensitivity_charts_draw_the_analysis(multi):
    result, _ = multi
    (panel,) = cm.panels(charts.eta_max_ratio(ff.typed(result)))
    primary = primary_of(result)
    expected = {
        (int(d), r["delta"]): r["ratio"]
        for d, depth in result["depths"].items()
        for r in depth["comparisons"][primary]["eta_max_ratio"]
        if r["ratio"]
    }
    drawn = {(int(m["n_layer"]), m["delta"]): m["ratio"] for m in panel["ratios"]}
    assert drawn.keys() == expected.keys()
    assert all(_close(drawn[k], v) for k, v in expected.items())
    (panel,) = cm.panels(charts.sensitivity(ff.typed(result)))
    expected = {
        (arm, int(d), int(seed)): v
        for d, depth in result["depths"].items()
        for arm, a in depth["arms"].items()
        for seed, v in a["sensitivity"]["seeds"].items()
    }
    drawn = {
        (m["arm"], int(m["n_layer"]), int(m["seed"])): m["sensitivity"] for m in panel["seeds"]
    }
    assert drawn.keys() == expected.keys()
    assert all(_close(drawn[k], v) for k, v in expected.items())


def test_training_curves_show_the_lr_where_arms_differ_most_and_mark_divergence(multi):
    from figures.report.figure_set import figure_set
    from sweeps.analysis.curve_picks import most_different_lr

    result, curves = multi
    figures = figure_set(ff.typed(result), curves)
    panels = cm.panels(figures["training_curves"][1])
    diverged = {
        (r["n_layer"], r["lr"], f"{r['arm']} s{r['seed']}")
        for r in result["runs"]
        if r["outcome"] == "diverged"
    }
    keys = set()
    for panel in panels:
        depth, lr = _one(panel, "curves", "n_layer", "lr")
        keys.add((depth, lr))
        runs = {m["run"] for m in panel["curves"]}
        crossed = {m["run"] for m in panel.get("diverged", [])}
        assert crossed == {run for d, x, run in diverged if (d, x) == (depth, lr)} & runs
    assert len(keys) == len(panels)  # one depth and LR per panel, each once
    assert most_different_lr(ff.typed(result)) in {lr for _, lr in keys}
    for name in ("attention", "residual_kurtosis"):
        for panel in cm.panels(figures[name][1]):
            for layer, marks in panel.items():
                if marks and "n_layer" in marks[0]:
                    _one(panel, layer, "n_layer", "lr")


# -- layout: no text leaves the canvas, plots fill the width ---------------------------------
def test_no_chart_has_text_outside_its_canvas(multi):
    from figures.report.figure_set import figure_set

    for name, (_, chart) in figure_set(ff.typed(multi[0]), multi[1]).items():
        assert chart is not None, name
        assert cm.text_outside(chart) == [], name


def test_one_depth_charts_fill_the_width_and_keep_text_inside(tmp_path):
    from figures.report.figure_set import figure_set

    ff.write_study(tmp_path / "one", depths=[2], seeds=[0, 1, 2])
    analysis, curves = ff.drawn(tmp_path / "one")
    for name, (_, chart) in figure_set(ff.typed(analysis), curves).items():
        assert chart is not None and cm.text_outside(chart) == [], name
        spec = charts.spec_of(chart)
        widths = [s.get("width") for s in [spec, spec.get("spec", {})] if s.get("width")]
        if name in ("final_loss_vs_lr", "necessity_map", "paired_effect", "stability_vs_depth"):
            assert widths and max(widths) >= 0.9 * charts.PLOT_WIDTH, name


def test_every_label_of_a_narrow_headline_panel_fits_its_panel(multi):
    """Labels start at a panel's left edge: in panels too narrow for the words (3 or more
    side by side) each, at a conservative glyph width, still ends inside its own panel, the
    longest ones included: 'needed from the lowest LR' and a baseline above the axis."""
    import copy

    from chart_reader import text_width

    from figures.charts import headline
    from figures.charts.style import panel_width

    analysis = copy.deepcopy(multi[0])
    for d in analysis["depths"].values():
        c = d["comparisons"][primary_of(analysis)]
        c["threshold"] = {**c["threshold"], "kind": "below", "bracket": None}
        c["threshold_bracket"] = None
    baseline = {"bigram": 9.99, "rule": "none"}
    note = headline._baseline_note(baseline, 0.5, 3.0, wide=False)
    assert note == "bigram 9.99 above, rule off"
    rows = headline.headline_rows(ff.typed(analysis), 3.0, note, wide=False)
    labels = [r["text"] for r in rows if r["kind"] == "label"]
    assert "needed from the lowest LR" in labels and note in labels
    narrowest = min(panel_width(n) for n in range(3, 6))
    for text in labels:  # dx 3 px from the panel's left edge, 10 px text
        assert 3 + text_width(text, 10) <= narrowest, text


def test_paired_axis_clips_an_extreme_interval_and_keeps_the_minimum_effect(multi):
    result, _ = multi
    import copy

    wild = copy.deepcopy(result)
    entry = wild["depths"]["2"]["comparisons"]["off vs on"]["per_lr"][0]
    entry.update(ci90=[-14.0, 16.0])  # the interval the chart draws (effect_interval)
    low, high = charts.effect_domain(
        [
            e["mean"]
            for d in wild["depths"].values()
            for c in d["comparisons"].values()
            for e in c["per_lr"]
        ],
        [-14.0, 16.0],
        0.02,
    )
    assert -14.0 < low < 0.02 < high < 16.0
    panels = cm.panels(charts.paired_effect(ff.typed(wild)))
    clipped = [m for p in panels for m in p["clipped"]]
    assert {m["interval end"] for m in clipped} == {-14.0, 16.0}


def _dicts(node):
    """Every dict of a chart spec, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _dicts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _dicts(value)


def _legend_titles(node, out: list) -> list:
    """(channel, title) of every encoding that draws a legend, anywhere in a spec."""
    for d in _dicts(node):
        for channel in ("color", "fill", "shape"):
            enc = (d.get("encoding") or {}).get(channel)
            if (
                isinstance(enc, dict)
                and "field" in enc
                and enc.get("legend", {}) is not None
                and enc.get("scale") is not None
            ):
                out.append((channel, enc.get("title")))
    return out


def test_legends_have_titles(multi):
    result, _ = multi
    for chart in (
        charts.final_loss(ff.typed(result)),
        charts.paired_effect(ff.typed(result)),
        charts.necessity_map(ff.typed(result)),
        charts.stability(ff.typed(result)),
    ):
        legends = _legend_titles(charts.spec_of(chart), [])
        assert legends and all(title for _, title in legends), legends


def test_an_lr_not_judged_is_marked_with_the_rules_own_reason():
    """docs/interventions has LRs where every run of both arms failed, an LR with a partial
    ceiling (both arms fail, too few pairs without a failure) and LRs with too few pairs that
    carry evidence (the others: both arms failed, or one failed and the other only just
    trained): the paired chart's grey x says which, in the rule's terms
    (sweeps.study.rules.lr_call, on section 13's failure model), never a count of its own."""
    from pathlib import Path

    from figures.charts.paired import NOT_JUDGED, _skipped_rows
    from sweeps.study import rules

    docs = Path(__file__).resolve().parents[1] / "docs"
    a = from_json(json.loads((docs / "interventions" / "analysis.json").read_text()))
    rows = _skipped_rows(a)
    said = {r["why"] for r in rows}
    reasons = (rules.BOTH_FAILED, rules.BOTH_ARMS_FAIL, rules.TOO_FEW_PAIRS)
    assert said == {NOT_JUDGED[r] for r in reasons}
    unjudged = [e for d in a.depths.values() for c in d.comparisons.values() for e in c.per_lr]
    assert len(rows) == sum(not e.judged for e in unjudged)
    assert "fewer than 3 pairs without a failure" in NOT_JUDGED[rules.BOTH_ARMS_FAIL]


@pytest.mark.parametrize("report", ["cpu-depth", "cpu-text"])
def test_the_paired_chart_marks_the_harm_window_apart_from_a_lone_worse_lr(report):
    """docs/STUDY.md section 17: the harm window (the analysis' effect-curve mark) is its own
    glyph; an LR worse only by its own 90% interval is drawn apart from it. On the committed
    reports: depth 8's best LR 0.01 lies in a harm window (cpu-depth), Shakespeare's 0.0316 is
    worse at that LR alone (cpu-text)."""
    root = Path(__file__).resolve().parents[1] / "docs" / report
    result = json.loads((root / "analysis.json").read_text())
    panels = cm.panels(charts.paired_effect(ff.typed(result)))
    drawn = {}
    for panel in panels:
        key, depth = _one(panel, "effects", "comparison", "n_layer")
        for m in panel["effects"]:
            drawn[(key, int(depth), m["lr"])] = m["verdict"]
    m_effect = result["settings"]["min_effect"]
    for d, depth in result["depths"].items():
        for key, c in depth["comparisons"].items():
            for e in c["per_lr"]:
                if (key, int(d), e["lr"]) not in drawn:
                    continue
                glyph = drawn[(key, int(d), e["lr"])]
                assert (glyph == "harm window") == (e["mark"] == "harmed" and not e["necessary"])
                alone = e["mark"] != "harmed" and e["upper"] is not None
                alone = alone and e["upper"] < -m_effect and not e["necessary"]
                assert (glyph == "worse at this LR alone") == alone
    if report == "cpu-depth":
        assert drawn[("off vs on", 8, 0.01)] == "harm window"
    else:
        assert drawn[("off vs on", 4, 0.0316)] == "worse at this LR alone"


def _y_domains(node, out: list) -> list:
    """Every explicit y scale domain of a chart spec."""
    for d in _dicts(node):
        y = d.get("y")
        if isinstance(y, dict) and isinstance(y.get("scale"), dict) and "domain" in y["scale"]:
            out.append((y["scale"].get("type"), y["scale"]["domain"]))
    return out


@pytest.mark.parametrize("report", ["cpu-text", "cpu-depth", "cpu-width"])
def test_the_extreme_points_sit_inside_the_frame_not_on_it(report):
    """Issue 58: a triangle at the grid's top (stability chart) and a mean at the top of the
    range (paired chart, symlog) were drawn on the frame. Each y domain now reaches beyond every
    value it shows by at least 4% of its height, in the axis's own space."""
    root = Path(__file__).resolve().parents[1] / "docs" / report
    result = json.loads((root / "analysis.json").read_text())
    a = read(model.Analysis, result)
    m_effect = result["settings"]["min_effect"]

    def space(kind, x):
        if kind == "log":
            return math.log10(x)
        return math.copysign(math.log1p(abs(x) / m_effect), x)  # symlog, constant m

    stability = charts.spec_of(charts.stability(a))
    shown = [
        v
        for r in stability["datasets"].values()
        for row in r
        for k, v in row.items()
        if k in ("value", "lo", "hi") and isinstance(v, float)
    ]
    ((kind, (lo, hi)),) = {(k, tuple(d)) for k, d in _y_domains(stability, [])}
    span = space(kind, hi) - space(kind, lo)
    assert space(kind, min(shown)) - space(kind, lo) >= 0.04 * span
    assert space(kind, hi) - space(kind, max(shown)) >= 0.04 * span
    paired = charts.spec_of(charts.paired_effect(a))
    means = [
        row["mean"]
        for r in paired["datasets"].values()
        for row in r
        if row.get("kind") == "effect" and row.get("mean") is not None
    ]
    for kind, (lo, hi) in {(k, tuple(d)) for k, d in _y_domains(paired, [])}:
        span = space(kind, hi) - space(kind, lo)
        assert space(kind, min(means)) - space(kind, lo) >= 0.04 * span
        assert space(kind, hi) - space(kind, max(means)) >= 0.04 * span


def test_the_ceiling_chart_draws_each_runs_growth_and_use_at_its_last_evaluation(multi):
    """Panel by panel: each run's dot is its ceiling at the last evaluation over the first and
    its use there, as the fakes recorded them (tests/figures_fakes.py: on's use grows to
    0.5 + 0.4 min(1, 10 LR)); off has no ceiling and no dot."""
    from figures.report.figure_set import figure_set

    result, curves = multi
    chart = figure_set(ff.typed(result), curves)["qk_ceiling"][1]
    on = curves[curves.qk_logit_ceiling.notna()].sort_values("step")
    expected = {}
    for _, rows in on.groupby("run_id"):
        last = rows.iloc[-1]
        key = (int(last.n_layer), float(last.lr), f"{last.arm} s{int(last.seed)}")
        growth = last.qk_logit_ceiling / rows.iloc[0].qk_logit_ceiling
        expected[key] = (growth, last.qk_ceiling_use)
    assert {k[2].split()[0] for k in expected} == {"on"}
    drawn = {"growth": {}, "use": {}}
    for panel in cm.panels(chart):
        for field in drawn:
            for m in panel.get(f"{field}_runs", []):
                drawn[field][(int(m["n_layer"]), float(m["lr"]), m["run"])] = m[field]
    for i, field in enumerate(drawn):
        assert drawn[field].keys() == expected.keys(), field
        assert all(_close(drawn[field][k], v[i]) for k, v in expected.items()), field
    uses = [v[1] for v in expected.values()]
    assert max(uses) <= 0.9 + 1e-9 and min(uses) >= 0.5 - 1e-9


def test_the_attention_chart_draws_each_runs_peak_logit_and_final_entropy_per_lr(multi):
    """Panel by panel: each run's dots are the largest max attention logit of any evaluation
    and the entropy at its last one, every arm, a diverged run a cross; the medians are the
    seeds'."""
    from figures.report.figure_set import figure_set

    result, curves = multi
    # the fakes' logits only grow; here each run's last evaluation falls back to half its
    # logit, as a real run's can after a spike, so the peak and the end differ
    curves = curves.sort_values("step").copy()
    last_rows = curves.dropna(subset=["max_attn_logit"]).groupby("run_id").tail(1).index
    curves.loc[last_rows, "max_attn_logit"] *= 0.5
    chart = figure_set(ff.typed(result), curves)["attention_vs_lr"][1]
    data = curves.dropna(subset=["max_attn_logit", "attn_entropy"]).sort_values("step")
    outcome = {r["run_id"]: r["outcome"] for r in result["runs"]}
    expected, diverged = {}, set()
    for run_id, rows in data.groupby("run_id"):
        last = rows.iloc[-1]
        key = (int(last.n_layer), float(last.lr), f"{last.arm} s{int(last.seed)}")
        expected[key] = (rows.max_attn_logit.max(), last.attn_entropy)
        if outcome[run_id] == "diverged":
            diverged.add(key)
    assert {k[2].split()[0] for k in expected} == {"off", "off-warm", "on"}  # every arm
    assert diverged and len(diverged) < len(expected)
    drawn = {"peak": {}, "entropy": {}}
    medians = {"peak": {}, "entropy": {}}
    crossed = set()
    for panel in cm.panels(chart):
        for field in drawn:
            for m in panel.get(f"{field}_runs", []):
                drawn[field][(int(m["n_layer"]), float(m["lr"]), m["run"])] = m[field]
                if m["fate"] != "trained to the end":
                    crossed.add((int(m["n_layer"]), float(m["lr"]), m["run"]))
            # a median's marks name no rung (no tooltip): the panel's runs do (a panel is
            # one row's, peak or entropy)
            depths = {int(m["n_layer"]) for m in panel.get(f"{field}_runs", [])}
            assert len(depths) <= 1
            for m in panel.get(f"{field}_medians", []):
                (depth,) = depths
                medians[field][(depth, float(m["x"]), m["arm"])] = m[field]
    for i, field in enumerate(drawn):
        assert drawn[field].keys() == expected.keys(), field
        assert all(_close(drawn[field][k], v[i]) for k, v in expected.items()), field
        assert len(medians[field]) == len({(d, lr, r.split()[0]) for d, lr, r in expected})
        for (depth, lr, arm), value in medians[field].items():
            seeds = [
                v[i]
                for k, v in expected.items()
                if k[:2] == (depth, lr) and k[2].startswith(arm + " ")
            ]
            assert _close(value, float(np.median(seeds))), (field, depth, lr, arm)
    assert crossed == diverged  # a diverged run is a cross, at its last evaluation
    last_logit = data.groupby("run_id").tail(1).set_index("run_id").max_attn_logit
    peaks = data.groupby("run_id").max_attn_logit.max()
    assert (peaks > last_logit.reindex(peaks.index)).all()  # the peak is drawn, not the end


def test_a_report_whose_runs_hold_no_ceiling_draws_no_ceiling_chart(multi):
    from figures.report.figure_set import figure_set

    result, curves = multi
    without = curves.drop(columns=["qk_logit_ceiling", "qk_ceiling_use"])
    figures = figure_set(ff.typed(result), without)
    assert "qk_ceiling" not in figures and "attention" in figures
    assert "attention_vs_lr" in figures  # every arm's attention, with QK-norm's ceiling or not
