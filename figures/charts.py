"""Altair charts of the study, and their export as PNG, SVG, HTML and JSON spec.

The study's charts render from the analysis dict (figures/analysis.py), the training-dynamics
charts from the curves (figures/results.py); each returns a chart, or None when the sweep has
no data for it. One colour per arm in every chart: QK-norm off vermillion, on blue, the
controls in their own colours (Okabe-Ito, colour-blind safe).

A faceted chart keeps all its rows in one table, with a `kind` column that each layer filters
on: a layer that carried its own data inside a facet would be drawn whole in every panel.
Titles are short (the report text holds the detail) and legends sit under the plot, so the
plots fill the canvas and no renderer's wider font pushes text off it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import vl_convert as vlc

from figures import fmt, present
from figures.formats import FORMATS
from sweeps.core.files import write_atomic
from sweeps.core.norms import QK_NORMS
from sweeps.study.rules import Comparison

# Fixed colours for the arms docs/STUDY.md names; any other arm takes the next free colour.
ARM_COLORS = {"off": "#D55E00", "on": "#0072B2", "off-warm": "#E69F00", "on-cool": "#56B4E9"}
SPARE_COLORS = ("#009E73", "#CC79A7", "#F0E442", "#000000", "#999999", "#882255")
THRESHOLD_COLOR = "#333333"
BASELINE_COLOR = "#777777"
LR_AXIS = "peak learning rate"
DEPTH_HEADER = alt.Header(
    labelExpr="'depth ' + datum.value", labelFontSize=12, labelFontWeight="bold"
)
DEPTH = alt.Column("n_layer:O", title=None, header=DEPTH_HEADER)
LR_HEADER = alt.Header(
    labelExpr="'LR ' + format(datum.value, '.3~g')", labelFontSize=12, labelFontWeight="bold"
)  # a facet by LR, in LR order
DEPTH_X = alt.X("n_layer:O", title="depth (layers)", axis=alt.Axis(labelAngle=0))
STEP_X = alt.X("step:Q", title="optimizer step")
VL_VERSION = "_".join(alt.SCHEMA_VERSION.split(".")[:2])  # 'v6_4': the library altair targets
PLOT_WIDTH = 600  # the plotting width of a chart, shared by its panels
CURVE_POINTS = 40  # training curves are averaged into this many step bins per run
MARKS = {"ok": "circle", "unstable": "triangle-up", "diverged": "cross"}
EFFECT_COLORS = ["#D55E00", "#F7F7F7", "#0072B2"]  # off better .. no effect .. on better


def _title(text: str, *subtitle: str) -> alt.TitleParams:
    return alt.TitleParams(
        text,
        subtitle=list(subtitle),
        anchor="start",
        fontSize=14,
        subtitleFontSize=11,
        subtitleColor="#444444",
    )


def _finish(chart):
    """Legends under the plot (the plot keeps the width), one look for every chart."""
    return (
        chart.properties(padding={"left": 16, "right": 16, "top": 8, "bottom": 8})
        .configure_legend(
            orient="bottom",
            direction="horizontal",
            titleFontSize=11,
            labelFontSize=11,
            symbolOpacity=1,
            labelLimit=260,
        )
        .configure_axis(titleFontSize=11, labelFontSize=10, titleFontWeight="normal")
        .configure_header(titleFontSize=12)
    )


def panel_width(panels: int) -> int:
    """Each of `panels` side-by-side panels' width: together they fill PLOT_WIDTH."""
    return max(160, int((PLOT_WIDTH - 20 * (panels - 1)) / max(panels, 1)))


def arm_colors(arms: list[str]) -> dict[str, str]:
    """A colour per arm: the fixed ones, a QK-norm kind's for 'qk<kind>' arms, then spares."""
    spare = iter(c for c in SPARE_COLORS if c not in ARM_COLORS.values())
    out = {}
    for arm in arms:
        kind = QK_NORMS.get(arm[2:]) if arm.startswith("qk") else None
        out[arm] = ARM_COLORS.get(arm) or (kind.color if kind else next(spare, "#777777"))
    return out


def _arm_color(arms: list[str], title: str = "arm", legend: bool = True) -> alt.Color:
    colors = arm_colors(arms)
    return alt.Color(
        "arm:N",
        sort=arms,
        title=title,
        legend=alt.Legend(symbolOpacity=1) if legend else None,
        scale=alt.Scale(domain=arms, range=[colors[a] for a in arms]),
    )


def _lr_axis(lrs, title: str = LR_AXIS) -> alt.Axis:
    """Ticks at the swept LRs, short labels: 3e-4, 1e-3, ..., 1; no minor gridlines."""
    return alt.Axis(
        values=sorted(set(lrs)),
        title=title,
        labelExpr=("datum.value >= 1 ? format(datum.value, '~g') : format(datum.value, '.3~e')"),
    )


def _lr_scale(lrs) -> alt.Scale:
    """A log LR scale a little wider than the grid, so the end points are not on the frame."""
    lo, hi = min(lrs), max(lrs)
    pad = (hi / lo) ** 0.04 if hi > lo else 2.0
    return alt.Scale(type="log", domain=[lo / pad, hi * pad], nice=False)


def _log_axis(values, title: str) -> alt.Axis:
    """A log axis with ticks and gridlines at decades (or 1-2-5 within one decade): Vega's
    default draws a line at every minor tick, which renders as grey bands."""
    v = [x for x in values if x and x > 0 and math.isfinite(x)]
    lo, hi = math.floor(math.log10(min(v))), math.ceil(math.log10(max(v)))
    ticks = [10.0**k for k in range(lo, hi + 1)]
    if hi - lo <= 1:
        ticks = sorted(
            {m * t for t in ticks for m in (1, 2, 5) if min(v) / 2 <= m * t <= 2 * max(v)}
        )
    return alt.Axis(values=ticks, title=title, format="~g")


def _once(chart: alt.Chart, name: str) -> alt.Chart:
    """A layer drawn once per panel (a constant line or label): inside a facet every layer
    takes the panel's rows, so reduce them to one."""
    return chart.transform_aggregate(rows="count()").properties(name=name)


def _filtered(base: alt.Chart, kind: str, name: str) -> alt.Chart:
    """A layer that draws the rows of one kind; named, so its marks can be found."""
    return base.transform_filter(alt.datum.kind == kind).properties(name=name)


# -- the headline: final loss vs LR -------------------------------------------------------------
def final_loss(analysis: dict) -> alt.FacetChart | None:
    """Per depth: every run's effective final loss by outcome, the seed mean per arm with the
    range over seeds as a band, each arm's critical LR, the necessity threshold with its
    interval, and the bigram baseline. Diverged runs count at their loss at initialization,
    far above the rest: the axis stops a little above the finished runs and draws them on its
    top edge."""
    runs = pd.DataFrame([r for r in analysis["runs"] if r["outcome"]])
    if runs.empty:
        return None
    s = analysis["settings"]
    arms = [a for a in s["arms"] if a in set(runs.arm)]
    base_loss = present.baselines(analysis)
    finished = runs[runs.outcome != "diverged"].loss
    low = float(finished.min()) if not finished.empty else float(runs.loss.min())
    high = float(finished.max()) if not finished.empty else float(runs.loss.max())
    bigram = base_loss["bigram"]
    if bigram is not None and low - 2 * max(high - low, 0.05) <= bigram <= high:
        low = min(low, bigram)
    elif bigram is not None and high < bigram <= high + 0.25 * max(high - low, 0.05):
        high = bigram  # just above the runs: draw it rather than say "above the axis"
    pad = 0.06 * max(high - low, 0.05)
    top = high + pad
    rows = headline_rows(analysis, top, _baseline_note(base_loss, low - pad, top))
    ceiling = stack_labels(rows, low - pad, top)
    data = pd.DataFrame(rows)
    lrs = sorted(runs.lr.unique())
    x = alt.X("x:Q", scale=_lr_scale(lrs), axis=_lr_axis(lrs))
    y_title = "effective final loss (nats/token)"
    y_scale = alt.Scale(domain=[low - pad, ceiling], nice=False)
    y = alt.Y("y:Q", title=y_title, scale=y_scale)
    base = alt.Chart().encode(x=x)
    layers = _headline_layers(base, _arm_color(arms), y, y_scale)
    if bigram is not None and low - pad <= bigram <= top:  # else a label says where it is
        layers += _bigram_layers(
            bigram, base_loss["rule"] == "none", panel_width(data.n_layer.nunique())
        )
    depths = sorted(data.n_layer.unique())
    return _finish(
        alt.layer(*layers, data=data)
        .properties(width=panel_width(len(depths)), height=260)
        .facet(column=DEPTH)
        .properties(
            title=_title(
                "Final loss vs learning rate",
                "band: range over seeds; dashed: critical LR per arm; "
                "grey: necessity threshold with its interval",
            )
        )
    )


def _headline_layers(base, color, y, y_scale) -> list:
    """The headline chart's layers over one data table: the threshold band and line, the
    arms' critical LRs, seed bands and means, every run by outcome, the labels."""
    return [
        _filtered(base, "threshold", "threshold_band")
        .mark_rect(color=THRESHOLD_COLOR, opacity=0.12)
        .encode(x="x_lo:Q", x2="x_hi:Q"),
        _filtered(base, "threshold", "threshold")
        .mark_rule(color=THRESHOLD_COLOR, strokeWidth=2)
        .encode(
            tooltip=[
                "n_layer:O",
                alt.Tooltip("x:Q", title="threshold", format=".3g"),
                alt.Tooltip("x_lo:Q", format=".3g"),
                alt.Tooltip("x_hi:Q", format=".3g"),
                "interval:N",
            ]
        ),
        _filtered(base, "critical", "critical")
        .mark_rule(strokeDash=[6, 3], strokeWidth=1.5)
        .encode(
            color=color,
            tooltip=["n_layer:O", "arm:N", alt.Tooltip("x:Q", title="critical LR", format=".3g")],
        ),
        _filtered(base, "cell", "band")
        .mark_area(opacity=0.18)
        .encode(y=y, y2="y_hi:Q", color=color),
        _filtered(base, "cell", "mean")
        .mark_line(strokeWidth=2)
        .encode(
            y=alt.Y("shown:Q", scale=y_scale),
            color=color,
            tooltip=[
                "n_layer:O",
                "arm:N",
                alt.Tooltip("x:Q", title="lr"),
                alt.Tooltip("mean:Q", format=".4f"),
            ],
        ),
        _filtered(base, "run", "runs")
        .mark_point(size=50, filled=True, opacity=0.85)
        .encode(
            y=y,
            color=color,
            shape=alt.Shape(
                "outcome:N",
                title="run",
                scale=alt.Scale(domain=list(MARKS), range=list(MARKS.values())),
            ),
            tooltip=[
                "run_id:N",
                "n_layer:O",
                "arm:N",
                alt.Tooltip("x:Q", title="lr"),
                "seed:O",
                "outcome:N",
                alt.Tooltip("loss:Q", format=".4f"),
            ],
        ),
        _filtered(base, "label", "labels")
        .mark_text(align="left", dx=3, fontSize=10, baseline="top")
        .encode(y=alt.Y("y:Q", scale=y_scale), text="text:N", color=alt.value(THRESHOLD_COLOR)),
    ]


def _bigram_layers(bigram: float, rule_off: bool, width: float) -> list:
    """The bigram baseline as a dotted rule with its label at the right edge."""
    return [
        _once(
            alt.Chart()
            .mark_rule(strokeDash=[2, 2], color=BASELINE_COLOR)
            .encode(y=alt.datum(bigram)),
            "bigram",
        ),
        _once(
            alt.Chart()
            .mark_text(
                align="right",
                baseline="bottom",
                dx=-4,
                dy=-2,
                fontSize=10,
                color=BASELINE_COLOR,
            )
            .encode(
                x=alt.value(width),
                y=alt.datum(bigram),
                text=alt.datum("bigram baseline" + (" (rule off)" if rule_off else "")),
            ),
            "bigram_label",
        ),
    ]


def _baseline_note(baseline: dict, low: float, top: float) -> str:
    """A label for a bigram baseline the axis does not reach ('' when drawn or unknown)."""
    b = baseline["bigram"]
    if b is None or low <= b <= top:
        return ""
    where = "below" if b < low else "above"
    return f"bigram baseline {b:.2f}: {where} the axis" + (
        " (rule off)" if baseline["rule"] == "none" else ""
    )


def headline_rows(analysis: dict, top: float, note: str = "") -> list[dict]:
    """The headline chart's table: kind = run | cell | critical | threshold | label."""
    s = analysis["settings"]
    runs = [r for r in analysis["runs"] if r["outcome"]]
    rows = [
        {
            "kind": "run",
            "n_layer": int(r["n_layer"]),
            "arm": r["arm"],
            "x": r["lr"],
            "seed": r["seed"],
            "outcome": r["outcome"],
            "run_id": r["run_id"],
            "loss": r["loss"],
            "y": min(r["loss"], top),
        }
        for r in runs
    ]
    for depth, d in analysis["depths"].items():
        n = int(depth)
        at = [r for r in runs if int(r["n_layer"]) == n]
        for arm, a in d["arms"].items():
            for c in a["cells"]:
                seeds = [r["loss"] for r in at if r["arm"] == arm and r["lr"] == c["lr"]]
                if c["loss_mean"] is None or not seeds:
                    continue
                rows.append(
                    {
                        "kind": "cell",
                        "n_layer": n,
                        "arm": arm,
                        "x": c["lr"],
                        "mean": c["loss_mean"],
                        "shown": min(c["loss_mean"], top),
                        "y": min(min(seeds), top),
                        "y_hi": min(max(seeds), top),
                    }
                )
        lrs = sorted({r["lr"] for r in at})
        labels, fates = [], {}
        for arm, a in d["arms"].items():
            median = a["eta_crit"]["median"]
            if arm in s["subset_arms"] or not median or median["value"] is None:
                continue
            rows.append({"kind": "critical", "n_layer": n, "arm": arm, "x": median["value"]})
            fate = (
                f"no failure up to {fmt.lr(median['value'])}"
                if median["kind"] == "above"
                else f"fails from {fmt.grid(median)}"
            )
            fates.setdefault((median["value"], fate), []).append(arm)
        # Arms with the same fate share a line: 'off, on: no failure up to 0.1'.
        labels += [
            (value, f"{', '.join(arms)}{':' if fate.startswith('no') else ''} {fate}")
            for (value, fate), arms in fates.items()
        ]
        c = d["comparisons"].get(present.primary_key(analysis))
        if c and c["threshold"]["kind"] in ("", "below"):
            t = c["threshold"]["value"]
            lo, hi, label = present.threshold_interval(c, d)
            rows.append(
                {
                    "kind": "threshold",
                    "n_layer": n,
                    "x": t,
                    "interval": label,
                    "x_lo": lo if lo is not None else t,
                    "x_hi": hi if hi is not None else t,
                }
            )
            labels.append(
                (
                    t,
                    "QK-norm needed already at the lowest LR"
                    if c["threshold"]["kind"] == "below"
                    else f"QK-norm needed from {fmt.grid(c['threshold'])}",
                )
            )
        # Labels stack at the panel's top left, so none can leave the panel on the right.
        texts = [text for _, text in sorted(labels)] + ([note] if note else [])
        for i, text in enumerate(texts):
            rows.append(
                {
                    "kind": "label",
                    "n_layer": n,
                    "x": lrs[0] if lrs else 1.0,
                    "y": top,
                    "text": text,
                    "row": i,
                }
            )
    return rows


def stack_labels(rows: list[dict], low: float, top: float) -> float:
    """Stack the label rows above the data (above `top`, where diverged runs sit), one line
    per 6% of the axis; returns the axis' new top."""
    lines = max((r["row"] + 1 for r in rows if r["kind"] == "label"), default=0)
    step = 0.06 * (top - low) / max(1 - 0.06 * lines, 0.4)
    ceiling = top + step * (lines + 0.2)
    for r in rows:
        if r["kind"] == "label":
            r["y"] = ceiling - step * (r.pop("row") + 0.1)
    return ceiling


# -- the necessity map ------------------------------------------------------------------------
def necessity_map(analysis: dict) -> alt.LayerChart | None:
    """LR x depth, colour = paired effect off - on of the primary comparison; a dot where
    QK-norm is necessary; the necessity threshold of each depth as a black tick with its
    interval. One depth reads as a strip, three as H3's answer."""
    key = present.primary_key(analysis)
    rows = []
    for depth, d in analysis["depths"].items():
        c = d["comparisons"].get(key)
        if c is None:
            continue
        entries = [e for e in c["per_lr"] if e["n"] >= 1]
        lrs = [e["lr"] for e in entries]
        for i, e in enumerate(entries):
            lo, hi = _cell_edges(lrs, i)
            rows.append(
                {
                    "kind": "cell",
                    "depth": f"depth {depth}",
                    "n_layer": int(depth),
                    "lr": e["lr"],
                    "x": lo,
                    "x2": hi,
                    "effect": None if e["ceiling"] else e["mean"],
                    "lower": present.lower_bound(e),
                    "necessary": bool(e["necessary"]),
                    "ceiling": bool(e["ceiling"]),
                }
            )
        t = c["threshold"]
        if t["kind"] in ("", "below"):
            lo, hi, label = present.threshold_interval(c, d)
            rows.append(
                {
                    "kind": "threshold",
                    "depth": f"depth {depth}",
                    "n_layer": int(depth),
                    "lr": t["value"],
                    "x": lo if lo is not None else t["value"],
                    "x2": hi if hi is not None else t["value"],
                    "interval": label,
                }
            )
    cells = [r for r in rows if r["kind"] == "cell"]
    if not cells:
        return None
    data = pd.DataFrame(rows)
    order = [f"depth {d}" for d in sorted({r["n_layer"] for r in cells})]
    effects = [abs(r["effect"]) for r in cells if r["effect"] is not None]
    m = analysis["settings"]["min_effect"]
    span = max(np.quantile(effects, 0.9) if effects else 0.0, 5 * m)
    lrs = sorted({r["lr"] for r in cells})
    x = alt.X(
        "x:Q",
        scale=alt.Scale(
            type="log", domain=[min(r["x"] for r in cells), max(r["x2"] for r in cells)], nice=False
        ),
        axis=_lr_axis(lrs),
    )
    y = alt.Y("depth:N", sort=order, title=None)
    base = alt.Chart().encode(y=y)
    tooltip = [
        "depth:N",
        alt.Tooltip("lr:Q", format=".3g"),
        alt.Tooltip("effect:Q", format=".3f"),
        alt.Tooltip("lower:Q", format=".3f"),
        "necessary:N",
        "ceiling:N",
    ]
    rect = (
        _filtered(base, "cell", "cells")
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=x,
            x2="x2:Q",
            color=alt.Color(
                "effect:Q",
                title="off - on (nats)",
                scale=alt.Scale(domain=[-span, 0, span], range=EFFECT_COLORS, clamp=True),
                legend=alt.Legend(gradientLength=200, format=".2f"),
            ),
            tooltip=tooltip,
        )
    )
    ceiling = (
        _filtered(base, "cell", "ceilings")
        .transform_filter(alt.datum.ceiling)
        .mark_rect(color="#BBBBBB")
        .encode(x=x, x2="x2:Q", tooltip=tooltip)
    )
    dots = (
        _filtered(base, "cell", "necessary")
        .transform_filter(alt.datum.necessary)
        .transform_calculate(mid="sqrt(datum.x * datum.x2)")
        .mark_point(filled=True, color="black", size=45, opacity=1)
        .encode(x=alt.X("mid:Q"), tooltip=tooltip)
    )
    interval = (
        _filtered(base, "threshold", "threshold_interval")
        .mark_rule(color="black", strokeWidth=1.5)
        .encode(x=x, x2="x2:Q")
    )
    tick = (
        _filtered(base, "threshold", "threshold")
        .mark_tick(color="black", thickness=3, size=26, opacity=1)
        .encode(
            x=alt.X("lr:Q"),
            tooltip=[
                "depth:N",
                alt.Tooltip("lr:Q", title="threshold", format=".3g"),
                alt.Tooltip("x:Q", title="from", format=".3g"),
                alt.Tooltip("x2:Q", title="to", format=".3g"),
                "interval:N",
            ],
        )
    )
    return _finish(
        alt.layer(rect, ceiling, dots, interval, tick, data=data).properties(
            width=PLOT_WIDTH,
            height=34 * len(order),
            title=_title(
                "Where QK-norm is necessary",
                "colour: paired effect off - on; dot: necessary; black tick: threshold, "
                "line: its interval",
            ),
        )
    )


def _cell_edges(lrs: list[float], i: int) -> tuple[float, float]:
    """A cell's edges on the log LR axis: halfway (geometrically) to its neighbours."""

    def mid(a, b):
        return math.sqrt(a * b)

    if len(lrs) == 1:
        return lrs[0] / 1.5, lrs[0] * 1.5
    lo = mid(lrs[i - 1], lrs[i]) if i > 0 else lrs[0] ** 2 / mid(lrs[0], lrs[1])
    hi = mid(lrs[i], lrs[i + 1]) if i + 1 < len(lrs) else lrs[-1] ** 2 / mid(lrs[-2], lrs[-1])
    return lo, hi


# -- the paired effect ------------------------------------------------------------------------
def paired_effect(analysis: dict) -> alt.FacetChart | None:
    """Per comparison (rows) and depth (columns): the paired difference baseline - treatment
    per LR with the interval the analysis decided with; the minimum effect dashed; necessary
    LRs filled. An interval beyond the axis is cut at its edge and marked with a triangle."""
    m = analysis["settings"]["min_effect"]
    entries = []
    for depth, d in analysis["depths"].items():
        for key, c in d["comparisons"].items():
            for e in c["per_lr"]:
                if e["n"] >= 2 and not e["ceiling"] and e.get("judged", True):
                    lo, hi, label = present.effect_interval(e)
                    entries.append((key, int(depth), e, lo, hi, label))
    if not entries:
        return None
    low, high = effect_domain(
        [e["mean"] for _, _, e, *_ in entries],
        [x for *_, lo, hi, _ in entries for x in (lo, hi)],
        m,
    )
    rows = []
    for key, n, e, lo, hi, label in entries:
        row = {
            "kind": "effect",
            "comparison": key,
            "n_layer": n,
            "lr": e["lr"],
            "mean": e["mean"],
            "lo": lo,
            "hi": hi,
            "interval": label,
            "necessary": "necessary" if e["necessary"] else "not necessary",
            "y_lo": max(lo, low) if lo is not None else e["mean"],
            "y_hi": min(hi, high) if hi is not None else e["mean"],
        }
        rows.append(row)
        for end, edge, shape in ((lo, low, "triangle-down"), (hi, high, "triangle-up")):
            if end is not None and (end < low if edge == low else end > high):
                rows.append(
                    {
                        "kind": "clipped",
                        "comparison": key,
                        "n_layer": n,
                        "lr": e["lr"],
                        "edge": edge,
                        "end": end,
                        "shape": shape,
                    }
                )
    data = pd.DataFrame(rows)
    interval = next(lab for *_, lab in entries)
    lrs = sorted(data.lr.unique())
    x = alt.X("lr:Q", scale=_lr_scale(lrs), axis=_lr_axis(lrs))
    y_scale = alt.Scale(domain=[low, high], nice=False)
    y_title = (
        "off - on, effective loss (nats)"
        if len({k for k, *_ in entries}) == 1
        else "baseline - treatment (nats)"
    )
    base = alt.Chart().encode(x=x)
    tooltip = [
        "comparison:N",
        "n_layer:O",
        "lr:Q",
        alt.Tooltip("mean:Q", format=".4f"),
        alt.Tooltip("lo:Q", format=".4f"),
        alt.Tooltip("hi:Q", format=".4f"),
        "necessary:N",
    ]
    layers = [
        _once(alt.Chart().mark_rule(color="#BBBBBB").encode(y=alt.datum(0.0)), "zero"),
        _once(
            alt.Chart()
            .mark_rule(strokeDash=[4, 4], color="#000000")
            .encode(y=alt.datum(m, type="quantitative")),
            "min_effect",
        ),
        _filtered(base, "effect", "intervals")
        .mark_rule(strokeWidth=2, color="#555555")
        .encode(y=alt.Y("y_lo:Q", scale=y_scale, title=y_title), y2="y_hi:Q"),
        _filtered(base, "clipped", "clipped")
        .mark_point(filled=True, color="#555555", size=40, opacity=1)
        .encode(
            y=alt.Y("edge:Q", scale=y_scale),
            shape=alt.Shape("shape:N", scale=None),
            tooltip=[
                "comparison:N",
                "n_layer:O",
                "lr:Q",
                alt.Tooltip("end:Q", title="interval end", format=".3f"),
            ],
        ),
        _filtered(base, "effect", "effects")
        .mark_point(size=60, color="#000000", opacity=1, strokeWidth=1.5)
        .encode(
            y=alt.Y("mean:Q", scale=y_scale),
            fill=alt.Fill(
                "necessary:N",
                title="treatment",
                scale=alt.Scale(
                    domain=["necessary", "not necessary"], range=["#000000", "#FFFFFF"]
                ),
            ),
            tooltip=tooltip,
        ),
    ]
    order = [Comparison(b, t).key for b, t in analysis["settings"]["all_comparisons"]]
    comparisons = sorted(
        set(data.comparison), key=lambda k: (k not in order, order.index(k) if k in order else 0, k)
    )
    depths = sorted(data.n_layer.unique())
    layer = alt.layer(*layers, data=data).properties(width=panel_width(len(depths)), height=170)
    row = alt.Row(
        "comparison:N",
        sort=comparisons,
        title=None,
        header=alt.Header(labelFontWeight="bold", labelFontSize=12),
    )
    chart = (
        layer.facet(column=DEPTH, row=row) if len(comparisons) > 1 else layer.facet(column=DEPTH)
    )
    return _finish(
        chart.properties(
            title=_title(
                "Paired effect per learning rate",
                f"mean over paired seeds with its {interval} interval; dashed: minimum effect "
                f"{m:g} nats",
            )
        )
    )


def effect_domain(means: list[float], ends: list, min_effect: float) -> tuple[float, float]:
    """A y range that shows every mean, zero and the minimum effect, and interval ends up to
    that spread again beyond it; longer intervals are cut (and marked) at the edge."""
    core = [x for x in [*means, 0.0, min_effect] if x is not None]
    low, high = min(core), max(core)
    reach = max(high - low, 4 * min_effect)
    ends = [x for x in ends if x is not None]
    low = max(min([low, *ends]), low - reach)
    high = min(max([high, *ends]), high + reach)
    pad = 0.04 * (high - low)
    return low - pad, high + pad


# -- stability, eta_max, sensitivity -----------------------------------------------------------
def stability(analysis: dict) -> alt.LayerChart | None:
    """Critical LR per arm (median, interval) and the necessity threshold per depth."""
    s = analysis["settings"]
    rows = []
    for depth, d in analysis["depths"].items():
        for arm, a in d["arms"].items():
            if arm in s["subset_arms"] or not a["eta_crit"]["median"]:
                continue
            lo, hi, _ = present.crit_interval(a["eta_crit"])
            rows.append(
                _stability_row(f"critical LR, {arm}", arm, depth, a["eta_crit"]["median"], lo, hi)
            )
        primary = d["comparisons"].get(present.primary_key(analysis))
        if primary and primary["threshold"]["kind"] in ("", "below"):
            lo, hi, _ = present.threshold_interval(primary, d)
            rows.append(
                _stability_row(
                    "necessity threshold", "threshold", depth, primary["threshold"], lo, hi
                )
            )
    rows = [r for r in rows if r["value"] is not None]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    series = list(dict.fromkeys(data.series))
    colors = {**arm_colors(s["arms"]), "threshold": THRESHOLD_COLOR}
    y = alt.Y(
        "value:Q",
        scale=alt.Scale(type="log"),
        axis=_log_axis([*data.value, *data.lo.dropna(), *data.hi.dropna()], LR_AXIS),
    )
    base = alt.Chart(data).encode(
        x=DEPTH_X,
        xOffset=alt.XOffset("series:N", sort=series),
        color=alt.Color(
            "series:N",
            sort=series,
            title="median over seeds",
            legend=alt.Legend(columns=2),
            scale=alt.Scale(
                domain=series, range=[colors[k] for k in data.drop_duplicates("series").key]
            ),
        ),
    )
    bars = (
        base.mark_rule(strokeWidth=2)
        .encode(y=alt.Y("lo:Q"), y2="hi:Q")
        .properties(name="intervals")
    )
    points = (
        base.mark_point(filled=True, size=90, opacity=1)
        .encode(
            y=y,
            shape=alt.Shape(
                "bound:N",
                title="value",
                legend=alt.Legend(columns=1),
                scale=alt.Scale(
                    domain=["inside the grid", "beyond the grid"], range=["circle", "triangle-up"]
                ),
            ),
            tooltip=[
                "series:N",
                "n_layer:O",
                alt.Tooltip("value:Q", format=".3g"),
                alt.Tooltip("lo:Q", format=".3g"),
                alt.Tooltip("hi:Q", format=".3g"),
            ],
        )
        .properties(name="values")
    )
    return _finish(
        alt.layer(bars, points).properties(
            width=PLOT_WIDTH,
            height=260,
            title=_title(
                "Critical learning rate and necessity threshold by depth",
                "point: median over seeds; bar: its interval; triangle: beyond the grid",
            ),
        )
    )


def _stability_row(series: str, key: str, depth: str, median: dict, lo, hi) -> dict:
    return {
        "series": series,
        "key": key,
        "n_layer": int(depth),
        "value": median["value"],
        "lo": lo if lo is not None else median["value"],
        "hi": hi if hi is not None else median["value"],
        "bound": "inside the grid" if median["kind"] == "" else "beyond the grid",
    }


def eta_max_ratio(analysis: dict) -> alt.LayerChart | None:
    """The on/off ratio of eta_max(delta) over delta, per depth: does the answer depend on
    the margin? The pre-registered delta is marked."""
    s = analysis["settings"]
    rows = [
        {"n_layer": int(depth), "delta": r["delta"], "ratio": r["ratio"]}
        for depth, d in analysis["depths"].items()
        for key, c in d["comparisons"].items()
        if key == present.primary_key(analysis)
        for r in c["eta_max_ratio"]
        if r["ratio"]
    ]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    lines = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("delta:Q", title="delta: margin above the best loss (nats)"),
            y=alt.Y(
                "ratio:Q",
                scale=alt.Scale(type="log"),
                axis=_log_axis(
                    [*data.ratio, 1.0], f"eta_max ratio {s['primary']} / {s['reference']}"
                ),
            ),
            color=alt.Color("n_layer:O", title="depth"),
            tooltip=["n_layer:O", "delta:Q", alt.Tooltip("ratio:Q", format=".3g")],
        )
        .properties(name="ratios")
    )
    one = alt.Chart().mark_rule(strokeDash=[4, 4]).encode(y=alt.datum(1.0))
    chosen = alt.Chart().mark_rule(color="#777777").encode(x=alt.datum(s["delta"]))
    return _finish(
        alt.layer(lines, one, chosen).properties(
            width=PLOT_WIDTH,
            height=240,
            title=_title(
                "Max-LR ratio vs the margin delta",
                f"grey: the pre-registered delta ({s['delta']:g}); dashed: no difference",
            ),
        )
    )


def sensitivity(analysis: dict) -> alt.LayerChart | None:
    rows = [
        {"arm": arm, "n_layer": int(depth), "seed": int(seed), "sensitivity": v}
        for depth, d in analysis["depths"].items()
        for arm, a in d["arms"].items()
        if a["sensitivity"]["complete"]
        for seed, v in a["sensitivity"]["seeds"].items()
    ]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    arms = [a for a in analysis["settings"]["arms"] if a in set(data.arm)]
    y_title = "LR sensitivity (nats)"
    base = alt.Chart(data).encode(
        x=DEPTH_X, xOffset=alt.XOffset("arm:N", sort=arms), color=_arm_color(arms)
    )
    bars = (
        base.mark_bar(opacity=0.55)
        .encode(y=alt.Y("mean(sensitivity):Q", title=y_title))
        .properties(name="means")
    )
    seeds = (
        base.mark_point(filled=True, size=30, opacity=1)
        .encode(
            y=alt.Y("sensitivity:Q", title=y_title),
            tooltip=["arm:N", "n_layer:O", "seed:O", alt.Tooltip("sensitivity:Q", format=".4f")],
        )
        .properties(name="seeds")
    )
    return _finish(
        alt.layer(bars, seeds).properties(
            width=PLOT_WIDTH,
            height=240,
            title=_title(
                "LR sensitivity per arm (lower is more robust)", "bar: mean over seeds; dots: seeds"
            ),
        )
    )


# -- from the curves ---------------------------------------------------------------------------
def training_curves(
    curves: pd.DataFrame,
    arms: list[str],
    lrs: list[float],
    y_max: float,
    outcomes: dict | None = None,
) -> alt.FacetChart | None:
    """Train loss over steps at a few LRs, one line per run, rows = depth, columns = LR. A
    diverged run's line ends with a cross where it stopped (on the top edge if above it)."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=["train_loss"])
    if data.empty:
        return None
    # Average into bins: a readable line and a small inline dataset for long runs.
    width = max(1, math.ceil(int(data.step.max()) / CURVE_POINTS))
    data = (
        data.assign(bin=data.step // width)
        .groupby(["run_id", "arm", "n_layer", "lr", "seed", "bin"], as_index=False)
        .agg(step=("step", "mean"), train_loss=("train_loss", "mean"))
        .drop(columns="bin")
        .round({"step": 1, "train_loss": 4})
    )
    low = float(data.train_loss.min()) * 0.95
    data = data.assign(kind="curve")
    outcomes = outcomes or {}
    ends = data.sort_values("step").drop_duplicates("run_id", keep="last")
    ends = ends[ends.run_id.map(outcomes.get) == "diverged"].assign(kind="diverged")
    data = _short_runs(pd.concat([data, ends], ignore_index=True))
    arms_here = [a for a in arms if a in set(data.arm)]
    y = alt.Y(
        "shown:Q", title="train loss (nats/token)", scale=alt.Scale(domain=[low, y_max], nice=False)
    )
    base = (
        alt.Chart()
        .encode(x=STEP_X, color=_arm_color(arms_here))
        .transform_calculate(shown=f"min(datum.train_loss, {y_max!r})")
    )  # above the top: drawn on the edge
    lines = (
        _filtered(base, "curve", "curves")
        .mark_line(strokeWidth=1.2, opacity=0.85)
        .encode(
            y=y,
            detail="run:N",
            tooltip=["run:N", "n_layer:O", "lr:Q", alt.Tooltip("train_loss:Q", format=".4f")],
        )
    )
    crosses = (
        _filtered(base, "diverged", "diverged")
        .mark_point(shape="cross", filled=True, size=70, opacity=1)
        .encode(
            y=y, tooltip=["run:N", "n_layer:O", "lr:Q", alt.Tooltip("step:Q", title="stopped at")]
        )
    )
    n_cols = data.lr.nunique()
    return _finish(
        alt.layer(lines, crosses, data=data)
        .properties(width=panel_width(n_cols), height=130)
        .facet(
            row=alt.Row("n_layer:O", title=None, header=DEPTH_HEADER),
            column=alt.Column("lr:O", title=None, header=LR_HEADER),
        )
        .properties(
            title=_title(
                "Training curves at a few learning rates",
                "one line per run; x: a run that diverged, where it stopped",
            )
        )
    )


def diagnostic(
    curves: pd.DataFrame,
    arms: list[str],
    field: str,
    lrs: list[float],
    y_title: str,
    log: bool,
    width: int | None = None,
) -> alt.FacetChart | None:
    """A diagnostic over training at the eval steps, one line per run; rows = LR, cols = depth."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=[field])
    if log:
        data = data[data[field] > 0]
    if data.empty:
        return None
    data = _short_runs(data[["run_id", "arm", "n_layer", "lr", "seed", "step", field]])
    data[field] = data[field].map(lambda v: float(f"{v:.4g}"))
    depths = data.n_layer.nunique()
    y = alt.Y(
        f"{field}:Q",
        scale=alt.Scale(type="log") if log else alt.Scale(zero=False),
        axis=_log_axis(data[field], y_title) if log else alt.Axis(title=y_title),
    )
    chart = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=15), strokeWidth=1.2)
        .encode(
            x=STEP_X,
            y=y,
            color=_arm_color([a for a in arms if a in set(data.arm)]),
            detail="run:N",
            tooltip=[
                "run:N",
                "n_layer:O",
                "lr:Q",
                "step:Q",
                alt.Tooltip(f"{field}:Q", format=".4g"),
            ],
        )
        .properties(width=width or panel_width(depths), height=140, name=field)
    )
    if data.lr.nunique() > 1:
        return chart.facet(row=alt.Row("lr:O", title=None, header=LR_HEADER), column=DEPTH)
    return chart.facet(column=DEPTH)


def attention(curves: pd.DataFrame, arms: list[str], lr: float) -> alt.VConcatChart | None:
    logit = diagnostic(curves, arms, "max_attn_logit", [lr], "max attention logit", True)
    entropy = diagnostic(curves, arms, "attn_entropy", [lr], "attention entropy (nats)", False)
    parts = [c for c in (logit, entropy) if c is not None]
    if not parts:
        return None
    return _finish(
        alt.vconcat(*parts).properties(
            title=_title(
                f"Attention over training at LR {lr:.3g}",
                "top: max attention logit (log); bottom: attention entropy",
            )
        )
    )


def kurtosis(curves: pd.DataFrame, arms: list[str], lrs: list[float]) -> alt.FacetChart | None:
    chart = diagnostic(curves, arms, "resid_kurtosis", lrs, "residual kurtosis", True)
    return (
        None
        if chart is None
        else _finish(
            chart.properties(
                title=_title(
                    "Residual-stream kurtosis over training",
                    f"the spikiest layer; rows: the lowest LR and LR {max(lrs):.3g}",
                )
            )
        )
    )


def _short_runs(df: pd.DataFrame) -> pd.DataFrame:
    """A run named by arm and seed ('off s0'), unique within a panel of one depth and LR:
    the curves' rows stay short (the run id would repeat in every row)."""
    run = df.arm.astype(str) + " s" + df.seed.astype(int).astype(str)
    return df.drop(columns=["run_id", "arm", "seed"]).assign(run=run, arm=df.arm)


# -- export ------------------------------------------------------------------------------------
# The HTML charts share one copy of Vega, Vega-Lite and vega-embed (vega.js, about 0.9 MB,
# written once per report directory) instead of inlining it in every page.
VEGA_JS = "vega.js"
PNG_SCALE = 1  # the report directory stays light (issue 18: smoke under 2 MB)
HTML = """<!DOCTYPE html>
<html>
<head>
<meta charset="UTF-8">
<title>{title}</title>
<script src="{script}"></script>
</head>
<body>
<div id="chart"></div>
<script>
vegaEmbed("#chart", {spec}, {{"renderer": "svg"}}).catch(console.error);
</script>
</body>
</html>
"""


def html(spec: dict, title: str) -> str:
    """A page that draws the spec with the report directory's one copy of the libraries (it
    opens offline: the script is a file beside it)."""
    return HTML.format(
        title=title, script=VEGA_JS, spec=json.dumps(spec, sort_keys=True, separators=(",", ":"))
    )


def write_vega_js(out_dir: Path) -> Path:
    path = Path(out_dir) / VEGA_JS
    write_atomic(path, vlc.javascript_bundle(vl_version=VL_VERSION))
    return path


# Each format from the one validated spec (altair's own save would rebuild it per format).
RENDERERS = {
    "png": lambda spec, name: vlc.vegalite_to_png(spec, vl_version=VL_VERSION, scale=PNG_SCALE),
    "svg": lambda spec, name: vlc.vegalite_to_svg(spec, vl_version=VL_VERSION),
    "html": lambda spec, name: html(spec, name),
    "vl.json": lambda spec, name: json.dumps(spec, sort_keys=True, separators=(",", ":")) + "\n",
}


def spec_of(chart: alt.TopLevelMixin) -> dict:
    with alt.data_transformers.disable_max_rows():  # bins and eval steps bound the size
        return chart.to_dict()


def save(chart: alt.TopLevelMixin, out_dir: Path, name: str, formats=FORMATS) -> list[Path]:
    """name.<format> for each of the formats (and vega.js for HTML); returns the paths."""
    spec = spec_of(chart)
    paths = [out_dir / f"{name}.{ext}" for ext in formats]
    for path, ext in zip(paths, formats):
        write_atomic(path, RENDERERS[ext](spec, name))
    if "html" in formats and not (Path(out_dir) / VEGA_JS).exists():
        write_vega_js(out_dir)
    return paths
