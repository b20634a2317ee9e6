"""The paired-effect chart: per comparison and rung (depth or width), the paired difference
baseline - treatment per LR with its decided interval, cut (and marked) where it leaves the
axis.

It reads the typed analysis (sweeps/analysis/model.py's Analysis) by attribute; paired_effect
takes it. The shared helpers
of figures/present.py and figures/words/numbers.py still read a record's JSON form
(adapter.record)."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from figures import present
from figures.charts.style import (
    PLOT_WIDTH,
    chart_title,
    filtered,
    finish,
    lr_axis,
    lr_scale,
    once,
    rung_label,
)
from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.core.ladder import Ladder
from sweeps.study import rules
from sweeps.study.rules import Comparison, harms
from sweeps.study.stats import MIN_PAIRS

PANEL_WIDTH = 190  # each comparison's panel: three side by side fit a laptop screen
VERDICTS = {  # glyph per verdict at an LR: shape, fill
    "necessary": ("circle", "#000000"),
    # section 17's harm window (two adjacent LRs at 90%, or one at the family-wise level)
    "harm window": ("triangle-down", "#D55E00"),
    # worse by this LR's own 90% interval alone, short of the window's bar
    "worse at this LR alone": ("triangle-down", "#FFFFFF"),
    "no effect shown": ("circle", "#FFFFFF"),
}


def paired_effect(analysis: m.Analysis) -> alt.FacetChart | None:
    """Per comparison (rows) and rung (columns): the paired difference baseline - treatment
    per LR with the interval the analysis decided with; the minimum effect dashed; necessary
    LRs filled. An interval beyond the axis is cut at its edge and marked with a triangle."""
    min_effect = analysis.settings.min_effect
    entries = _paired_entries(analysis)
    if not entries:
        return None
    low, high = effect_domain(
        [e.mean for _, _, e, *_ in entries],
        [x for *_, lo, hi, _ in entries for x in (lo, hi)],
        min_effect,
    )
    rung = present.ladder_of(analysis)
    field = rung.field
    rows = _paired_rows(entries, low, high, min_effect, rung) + _skipped_rows(analysis)
    data = pd.DataFrame(rows)
    interval = next(lab for *_, lab in entries)
    lrs = sorted(data.lr.unique())
    n_panels = len(set(zip(data.comparison, data[field])))
    width = PANEL_WIDTH if len(set(data[field])) == 1 else PANEL_WIDTH - 20
    width = PLOT_WIDTH if n_panels == 1 else width  # one panel fills the chart's width
    x = alt.X("lr:Q", scale=lr_scale(lrs), axis=lr_axis(lrs, width))
    # A symmetric log scale: linear within +-min effect, logarithmic beyond, so an effect of
    # 0.05 nats and a failure's 4 nats both read on one axis that every panel shares (per-panel
    # scales would hide how the comparisons differ; split panels would double the charts).
    y_scale = alt.Scale(type="symlog", constant=min_effect, domain=[low, high], nice=False)
    y_title = "baseline - treatment (nats)"
    base = alt.Chart().encode(x=x)
    layers = [
        *_reference_layers(min_effect, y_scale, y_title, _ticks(low, high, min_effect)),
        *_interval_layers(base, y_scale, y_title, _ticks(low, high, min_effect), field),
        _effect_layer(base, y_scale, field),
        _skipped_layer(base, y_scale, field),
    ]
    layer = alt.layer(*layers, data=data).properties(width=width, height=170)
    return finish(
        _facet(layer, data, analysis).properties(
            title=chart_title(
                "Paired effect per learning rate",
                f"mean over paired seeds with its {interval} interval",
                "dotted interval: widened to the precision floor "
                f"({numbers.FLOORED} in the tables)",
                f"dashed: minimum effect {min_effect:g} nats; grey x on zero: an LR not judged",
            )
        )
    ).configure_axisY(labelOverlap=False)  # the facet's shared axis drops its own setting


def _ticks(low: float, high: float, min_effect: float) -> list[float]:
    """The y ticks of the symmetric log scale: 0, the minimum effect and 1-3-10 steps."""
    steps = [0.0, min_effect, 0.1, 0.3, 1.0, 3.0, 10.0]
    ticks = sorted({s * sign for s in steps for sign in (1, -1)})
    return [t for t in ticks if low <= t <= high]


def _paired_entries(analysis: m.Analysis) -> list[tuple]:
    """(comparison, rung, entry, lo, hi, interval) for each LR the analysis judged (the
    necessity rule judges an LR only below the common ceiling and on at least MIN_PAIRS pairs:
    sweeps.study.stats.judge_lrs)."""
    entries = []
    for depth, d in analysis.depths.items():
        for key, c in d.comparisons.items():
            for e in c.per_lr:
                if e.judged:
                    lo, hi, label = present.effect_interval(e)
                    entries.append((key, int(depth), e, lo, hi, label))
    return entries


def _verdict(e: m.LrEffect, hi, min_effect: float) -> str:
    """The glyph's name for what the rules decided at the LR: necessary (the lower bound above
    m), the harm window (the effect curve's mark, docs/STUDY.md section 17), worse at this LR
    alone (sweeps.study.rules.harms on the interval's upper end, short of the window's bar), or
    no effect shown."""
    if e.necessary:
        return "necessary"
    if e.mark == "harmed":
        return "harm window"
    if harms(hi, min_effect):
        return "worse at this LR alone"
    return "no effect shown"


def _paired_rows(
    entries: list[tuple], low: float, high: float, min_effect: float, rung: Ladder
) -> list[dict]:
    """The chart's table, kind = effect | clipped: each effect with its interval cut to the
    axis [low, high], and after it a row for each end that was cut (drawn as a triangle)."""
    rows = []
    for key, n, e, lo, hi, label in entries:
        row = {
            "kind": "effect",
            "comparison": key,
            "panel": _panel(key, n, rung),
            rung.field: n,
            "lr": e.lr,
            "mean": e.mean,
            "lo": lo,
            "hi": hi,
            "interval": label,
            "necessary": "necessary" if e.necessary else "not necessary",
            "verdict": _verdict(e, hi, min_effect),
            "floored": "floored" if numbers.floored(e) else "own seeds",
            "y_lo": max(lo, low) if lo is not None else e.mean,
            "y_hi": min(hi, high) if hi is not None else e.mean,
        }
        rows.append(row)
        for end, edge, shape in ((lo, low, "triangle-down"), (hi, high, "triangle-up")):
            if end is not None and (end < low if edge == low else end > high):
                rows.append(
                    {
                        "kind": "clipped",
                        "comparison": key,
                        "panel": _panel(key, n, rung),
                        rung.field: n,
                        "lr": e.lr,
                        "edge": edge,
                        "end": end,
                        "shape": shape,
                    }
                )
    return rows


def _panel(key: str, n: int, rung: Ladder) -> str:
    return f"{key}, {rung_label(rung, n)}"


# why the rule did not judge an LR (its codes), as the chart's tooltip says it
NOT_JUDGED = {
    rules.BOTH_FAILED: "every run of both arms failed",
    rules.BOTH_ARMS_FAIL: f"both arms fail: fewer than {MIN_PAIRS} pairs without a failure",
    # a pair carries evidence where one of its runs clearly trained (docs/STUDY.md section 13)
    rules.TOO_FEW_PAIRS: f"fewer than {MIN_PAIRS} pairs where either arm clearly trained",
}


def _skipped_rows(analysis: m.Analysis) -> list[dict]:
    """The LRs of a comparison the analysis did not judge, marked on zero with the reason:
    the rule's reason (sweeps.study.rules.lr_call: every run of both arms failed, too few pairs
    without a failure, or too few pairs), in the words of NOT_JUDGED."""
    rows, rung = [], present.ladder_of(analysis)
    for depth, d in analysis.depths.items():
        for key, c in d.comparisons.items():
            for e in c.per_lr:
                if e.judged:  # drawn by _paired_entries
                    continue
                why = NOT_JUDGED[e.call]
                rows.append(
                    {
                        "kind": "skipped",
                        "comparison": key,
                        "panel": _panel(key, int(depth), rung),
                        rung.field: int(depth),
                        "lr": e.lr,
                        "why": why,
                    }
                )
    return rows


def _reference_layers(min_effect: float, y_scale, y_title: str, ticks: list[float]) -> list:
    """The lines an effect is read against, once per panel: zero, and the minimum effect
    (dashed) that a necessary LR's interval must clear. The first layer with a y encoding
    gives the panel its axis, so zero's carries the ticks."""
    axis = alt.Axis(
        values=ticks, tickCount=len(ticks), format="~g", labelOverlap=False, title=y_title
    )
    return [
        once(
            alt.Chart()
            .mark_rule(color="#BBBBBB")
            .encode(y=alt.Y(datum=0.0, type="quantitative", scale=y_scale, axis=axis)),
            "zero",
        ),
        once(
            alt.Chart()
            .mark_rule(strokeDash=[4, 4], color="#000000")
            .encode(y=alt.datum(min_effect, type="quantitative")),
            "min_effect",
        ),
    ]


def _interval_layers(base, y_scale, y_title: str, ticks: list[float], field: str) -> list:
    """Each effect's interval as a rule (dotted where the precision floor widened it), and a
    triangle on the axis edge where it was cut."""
    return [
        filtered(base, "effect", "intervals")
        .mark_rule(strokeWidth=2, color="#555555")
        .encode(
            y=alt.Y(
                "y_lo:Q",
                scale=y_scale,
                title=y_title,
                axis=alt.Axis(values=ticks, tickCount=len(ticks), format="~g", labelOverlap=False),
            ),
            y2="y_hi:Q",
            strokeDash=alt.StrokeDash(
                "floored:N",
                scale=alt.Scale(domain=["own seeds", "floored"], range=[[1, 0], [2, 2]]),
                legend=None,
            ),
        ),
        filtered(base, "clipped", "clipped")
        .mark_point(filled=True, color="#555555", size=40, opacity=1)
        .encode(
            y=alt.Y("edge:Q", scale=y_scale),
            shape=alt.Shape("shape:N", scale=None),
            tooltip=[
                "comparison:N",
                f"{field}:O",
                "lr:Q",
                alt.Tooltip("end:Q", title="interval end", format=".3f"),
            ],
        ),
    ]


def _effect_layer(base, y_scale, field: str) -> alt.Chart:
    """Each mean effect, its glyph its verdict: filled black circle necessary, vermillion
    triangle the harm window, open triangle worse at this LR alone, open circle no effect
    shown."""
    return (
        filtered(base, "effect", "effects")
        .mark_point(size=60, color="#000000", opacity=1, strokeWidth=1.5)
        .encode(
            y=alt.Y("mean:Q", scale=y_scale),
            shape=alt.Shape(
                "verdict:N",
                title="at this LR",
                legend=alt.Legend(symbolStrokeColor="#000000", symbolStrokeWidth=1.5),
                scale=alt.Scale(domain=list(VERDICTS), range=[v[0] for v in VERDICTS.values()]),
            ),
            fill=alt.Fill(
                "verdict:N",
                title="at this LR",
                legend=alt.Legend(symbolStrokeColor="#000000", symbolStrokeWidth=1.5),
                scale=alt.Scale(domain=list(VERDICTS), range=[v[1] for v in VERDICTS.values()]),
            ),
            # a black outline on every glyph, in the legend too: a fill legend draws its
            # symbols without a stroke, and the white "no effect shown" circle vanished there
            stroke=alt.Stroke(
                "verdict:N",
                legend=None,
                scale=alt.Scale(domain=list(VERDICTS), range=["#000000"] * len(VERDICTS)),
            ),
            tooltip=[
                "comparison:N",
                f"{field}:O",
                "lr:Q",
                alt.Tooltip("mean:Q", format=".4f"),
                alt.Tooltip("lo:Q", format=".4f"),
                alt.Tooltip("hi:Q", format=".4f"),
                "necessary:N",
                "verdict:N",
                "floored:N",
            ],
        )
    )


def _skipped_layer(base, y_scale, field: str) -> alt.Chart:
    """An LR not judged: a grey x on zero, the reason in its tooltip."""
    return (
        filtered(base, "skipped", "skipped")
        .mark_point(shape="cross", angle=45, color="#999999", size=40, filled=True, opacity=1)
        .encode(
            y=alt.Y("zero:Q", scale=y_scale),
            tooltip=["comparison:N", f"{field}:O", "lr:Q", "why:N"],
        )
        .transform_calculate(zero="0")
    )


def _facet(layer, data: pd.DataFrame, analysis: m.Analysis):
    """One panel per comparison and rung, wrapped: as many columns as rungs (three for one),
    the comparisons in the settings' order (the study's first, any other after, by name);
    each panel names its comparison and which way is better, and labels its LRs."""
    order = [Comparison(b, t).key for b, t in analysis.settings.all_comparisons]
    comparisons = sorted(
        set(data.comparison), key=lambda k: (k not in order, order.index(k) if k in order else 0, k)
    )
    rung = present.ladder_of(analysis)
    rungs = sorted(set(data[rung.field]))
    panels = [_panel(k, n, rung) for k in comparisons for n in rungs]
    columns = len(rungs) if len(rungs) > 1 else min(3, len(panels))
    better = {_panel(k, n, rung): k.split(" vs ")[-1] for k in comparisons for n in rungs}
    label = " : ".join(
        f"datum.value == {p!r} ? {_header(p, better[p], len(rungs) > 1)}" for p in panels
    )
    return layer.facet(
        facet=alt.Facet(
            "panel:N",
            sort=panels,
            title=None,
            header=alt.Header(
                labelFontWeight="bold", labelFontSize=10, labelExpr=f"{label} : datum.value"
            ),
        ),
        columns=columns,
    ).resolve_axis(x="independent")


def _header(panel: str, better: str, rungs: bool) -> str:
    """A panel's header as a Vega expression: two lines, the comparison (and rung), then
    which way is better."""
    key, _, rung = panel.rpartition(", ")
    lines = [key, *([rung] if rungs else []), f"> 0: {better} better"]
    return "[" + ", ".join(repr(line) for line in lines) + "]"


def effect_domain(means: list[float], ends: list, min_effect: float) -> tuple[float, float]:
    """A y range that shows every mean, zero and the minimum effect, and interval ends up to
    that spread again beyond it; longer intervals are cut (and marked) at the edge."""
    core = [x for x in [*means, 0.0, min_effect] if x is not None]
    low, high = min(core), max(core)
    reach = max(high - low, 4 * min_effect)
    ends = [x for x in ends if x is not None]
    low = max(min([low, *ends]), low - reach)
    high = min(max([high, *ends]), high + reach)
    # pad 5% of the height in the axis's own (symlog) space, so a mean at an end of the range
    # sits inside the frame: a linear pad is nothing on the compressed end of a symlog axis
    a, b = _symlog(low, min_effect), _symlog(high, min_effect)
    pad = 0.05 * (b - a)
    return _symlog_inverse(a - pad, min_effect), _symlog_inverse(b + pad, min_effect)


def _symlog(x: float, constant: float) -> float:
    """Vega's symlog transform: sign(x) log1p(|x| / constant)."""
    return math.copysign(math.log1p(abs(x) / constant), x)


def _symlog_inverse(y: float, constant: float) -> float:
    return math.copysign(math.expm1(abs(y)) * constant, y)
