"""Every chart read as a reader reads it (issue 29, point 4): on a sweep of five depths and
the seven arms of the interventions spec, no two texts of a chart run together, every arm a
layer draws in a panel shows, and nothing leaves the canvas; each check is first shown to find
a planted collision (tests/chart_reader.py measures the rendered chart)."""

from __future__ import annotations

import altair as alt
import pandas as pd
import pytest

from figures import charts
from figures.report.figure_set import figure_set
from tests import chart_reader as cr
from tests import figures_fakes as ff
from tests.chart_marks import text_outside

NAMES = ff.CHARTS


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "ladder"
    ff.write_ladder(root)
    view, curves = ff.drawn(root)
    figures = figure_set(ff.typed(view), curves)
    return {name: chart for name, (_, chart) in figures.items()}


@pytest.fixture(scope="module")
def rendered(ladder):
    return {name: (cr.render_svg(chart), cr.scenegraph(chart)) for name, chart in ladder.items()}


def test_the_ladder_has_five_depths_seven_arms_and_every_chart(ladder, rendered):
    assert set(NAMES) <= {n for n, c in ladder.items() if c is not None}
    _, scene = rendered["final_loss_vs_lr"]
    panels = cr.drawn_marks(scene)
    assert len(panels) == 5
    assert {m["key"] for m in panels[0] if m["layer"] == "median"} == set(ff.LADDER_ARMS)


@pytest.mark.parametrize("name", NAMES)
def test_no_two_texts_of_a_chart_run_together(rendered, name):
    svg, _ = rendered[name]
    assert cr.overlapping_texts(svg) == []


@pytest.mark.parametrize("name", NAMES)
def test_every_arm_drawn_in_a_panel_shows(rendered, name):
    _, scene = rendered[name]
    assert cr.hidden_arms(scene) == []


@pytest.mark.parametrize("name", NAMES)
def test_no_mark_or_text_leaves_the_canvas(ladder, name):
    assert cr.marks_outside(ladder[name]) == []
    assert text_outside(ladder[name]) == []


# -- each check finds a planted collision ---------------------------------------------------------
def _texts(rows) -> alt.Chart:
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_text(align="left", fontSize=10)
        .encode(x=alt.X("x:Q", scale=alt.Scale(domain=[0, 100])), y="y:Q", text="t:N")
        .properties(width=300, height=100)
    )


def test_overlap_check_finds_two_labels_that_run_together():
    """'3.16e-25.62e-2': two tick labels 2 px apart read as one; 10 px apart they do not."""
    close = _texts([{"x": 10, "y": 1, "t": "3.16e-2"}, {"x": 23, "y": 1, "t": "5.62e-2"}])
    found = cr.overlapping_texts(cr.render_svg(close))
    assert any("'3.16e-2' overlaps '5.62e-2'" in f for f in found), found
    apart = _texts([{"x": 10, "y": 1, "t": "3.16e-2"}, {"x": 40, "y": 1, "t": "5.62e-2"}])
    assert cr.overlapping_texts(cr.render_svg(apart)) == []


def _lines(arms, dashed: bool) -> alt.LayerChart:
    """Two arms' identical lines, the second drawn over the first; `dashed`: each arm again
    in interleaved dashes on top (the charts' fix)."""
    data = pd.DataFrame(
        [{"arm": a, "x": x, "y": y} for a in arms for x, y in ((0, 1), (1, 2), (2, 1.5))]
    )
    base = alt.Chart(data).encode(x="x:Q", y="y:Q", color="arm:N", tooltip=["arm:N"])
    layers = [base.mark_line(strokeWidth=2).properties(name="lines")]
    if dashed:
        layers += [
            base.transform_filter(alt.datum.arm == arm)
            .mark_line(strokeWidth=2, strokeDash=dash, strokeDashOffset=offset)
            .properties(name=f"lines__{i}")
            for i, (arm, (dash, offset)) in enumerate(charts.style.interleaved(arms).items())
        ]
    return alt.layer(*layers).properties(width=300, height=100)


def test_hidden_arm_check_finds_a_line_under_another_arms():
    """off under off-z-loss, as docs/interventions drew them: found; with the interleaved
    dashes every arm shows."""
    arms = ["off", "off-z-loss"]
    assert cr.hidden_arms(cr.scenegraph(_lines(arms, dashed=False))) == ["panel 0, lines: off"]
    assert cr.hidden_arms(cr.scenegraph(_lines(arms, dashed=True))) == []


def test_hidden_arm_check_finds_a_point_under_another_arms_and_not_one_beside_it():
    def chart(gap):
        data = pd.DataFrame([{"arm": "off", "x": 1.0}, {"arm": "on", "x": 1.0 + gap}])
        return (
            alt.Chart(data)
            .mark_point(filled=True, size=60, opacity=1)
            .encode(
                x=alt.X("x:Q", scale=alt.Scale(domain=[0, 3])),
                y=alt.datum(1.0),
                color="arm:N",
                tooltip=["arm:N"],
            )
            .properties(width=300, height=100)
        )

    assert cr.hidden_arms(cr.scenegraph(chart(0.0))) == ["panel 0, marks: off"]
    assert cr.hidden_arms(cr.scenegraph(chart(0.1))) == []  # 10 px apart


def test_outside_check_finds_a_mark_and_a_text_off_the_canvas():
    """Vega grows the canvas to what it measures; a fixed canvas (autosize none) stands for
    a renderer that draws wider than Vega measured."""
    data = pd.DataFrame([{"arm": "off", "x": 5.0, "t": "far out"}])
    x = alt.X("x:Q", scale=alt.Scale(domain=[0, 1], clamp=False))
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=60)
        .encode(x=x, y=alt.datum(1.0), tooltip=["arm:N"])
    )
    text = alt.Chart(data).mark_text().encode(x=x, y=alt.datum(1.0), text="t:N")
    chart = alt.layer(points, text).properties(
        width=300, height=100, autosize=alt.AutoSizeParams(type="none")
    )
    assert cr.marks_outside(chart) and text_outside(chart)
    inside = points.encode(x=alt.X("x:Q", scale=alt.Scale(domain=[0, 10]))).properties(
        width=300, height=100
    )
    assert cr.marks_outside(inside) == []


# -- leftovers the committed reports showed (docs/cpu-control) ---------------------------------
def _flat_ratios(ladder_view: dict) -> dict:
    """The analysis with every eta_max ratio 1 (docs/cpu-control: no arm failed)."""
    import copy

    flat = copy.deepcopy(ladder_view)
    for d in flat["depths"].values():
        for c in d["comparisons"].values():
            for r in c["eta_max_ratio"]:
                r["ratio"] = 1.0
    return flat


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "three"
    ff.write_study(root, depths=[4], lrs=[1e-3, 3e-3, 1e-2])
    return ff.drawn(root)[0]


def test_a_flat_max_lr_ratio_gets_an_axis_whose_ticks_stand_apart(view):
    chart = charts.eta_max_ratio(ff.typed(_flat_ratios(view)))
    texts = [t for t, _ in cr.text_boxes(cr.render_svg(chart))]
    assert "1" in texts and "2" in texts  # a log axis over [0.5, 2]: its '1' and '2' ...
    assert cr.overlapping_texts(cr.render_svg(chart)) == []  # ... no longer on one spot


def test_a_narrow_panel_of_three_lrs_labels_each_its_ends_turned_inwards():
    from figures.charts.style import lr_axis, lr_labels, lr_scale

    lrs = [3.16e-4, 1e-3, 3.16e-3]
    width = 170  # a panel of the paired chart beside others
    assert lr_labels(lrs, width, lr_scale(lrs).domain) == {
        3.16e-4: "left",
        1e-3: "center",
        3.16e-3: "right",
    }
    chart = (
        alt.Chart(pd.DataFrame({"lr": lrs, "y": [0, 1, 2]}))
        .mark_point()
        .encode(x=alt.X("lr:Q", scale=lr_scale(lrs), axis=lr_axis(lrs, width)), y="y:Q")
        .properties(width=width, height=60)
    )
    svg = cr.render_svg(chart)
    assert {"3.16e-4", "1e-3", "3.16e-3"} <= {t for t, _ in cr.text_boxes(svg)}
    assert cr.overlapping_texts(svg) == [] and text_outside(chart) == []
    # a wide panel keeps its labels centred on their ticks
    assert set(lr_labels(lrs, 600, lr_scale(lrs).domain).values()) == {"center"}


def test_the_paired_legend_outlines_each_glyph(view):
    scene = cr.scenegraph(charts.paired_effect(ff.typed(view)))
    symbols = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("role") == "legend-symbol":
                symbols.extend(node.get("items", []))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(scene)
    fills = {s["fill"] for s in symbols}
    assert "#FFFFFF" in fills  # the open circle of "no effect shown" ...
    assert all(s["stroke"] == "#000000" for s in symbols)  # ... with an outline to show it


def test_a_log_lr_axis_over_a_few_decades_labels_half_decades():
    """Critical LRs from 0.0178 to 0.75 (docs/cpu-depth): decades alone labelled only 0.1 and
    1; half-decade ticks give a reader 0.03, 0.1, 0.3 and 1 to read the points against."""
    from figures.charts.style import log_axis

    lrs = [0.0178, 0.0562, 0.075, 0.75]
    assert log_axis(lrs, "lr").to_dict()["values"] == [0.01, 0.03, 0.1, 0.3, 1.0]
    chart = (
        alt.Chart(pd.DataFrame({"lr": lrs, "x": range(4)}))
        .mark_point()
        .encode(x="x:Q", y=alt.Y("lr:Q", scale=alt.Scale(type="log"), axis=log_axis(lrs, "lr")))
        .properties(width=200, height=200)
    )
    svg = cr.render_svg(chart)
    assert {"0.03", "0.1", "0.3"} <= {t for t, _ in cr.text_boxes(svg)}
    assert cr.overlapping_texts(svg) == []
    assert log_axis([1e-4, 1.0], "lr").to_dict()["values"] == [1e-4, 1e-3, 1e-2, 0.1, 1.0]
    assert log_axis([0.02, 0.06], "lr").to_dict()["values"] == [0.01, 0.02, 0.05, 0.1]
