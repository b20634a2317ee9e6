"""The charts' shared look: the arms' colours, the LR and log axes, the facet headers, titles,
and `finish`, which puts every chart's legends under the plot. Every chart module builds on
this one; it imports no other module of the package."""

from __future__ import annotations

import math

import altair as alt

from sweeps.core.norms import QK_NORMS

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
MARKS = {"ok": "circle", "unstable": "triangle-up", "diverged": "cross"}
EFFECT_COLORS = ["#D55E00", "#F7F7F7", "#0072B2"]  # off better .. no effect .. on better


def chart_title(text: str, *subtitle: str) -> alt.TitleParams:
    return alt.TitleParams(
        text,
        subtitle=list(subtitle),
        anchor="start",
        fontSize=14,
        subtitleFontSize=11,
        subtitleColor="#444444",
    )


def finish(chart):
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


def arm_color(arms: list[str], title: str = "arm", legend: bool = True) -> alt.Color:
    colors = arm_colors(arms)
    return alt.Color(
        "arm:N",
        sort=arms,
        title=title,
        legend=alt.Legend(symbolOpacity=1) if legend else None,
        scale=alt.Scale(domain=arms, range=[colors[a] for a in arms]),
    )


def lr_axis(lrs, title: str = LR_AXIS) -> alt.Axis:
    """Ticks at the swept LRs, short labels: 3e-4, 1e-3, ..., 1; no minor gridlines."""
    return alt.Axis(
        values=sorted(set(lrs)),
        title=title,
        labelExpr=("datum.value >= 1 ? format(datum.value, '~g') : format(datum.value, '.3~e')"),
    )


def lr_scale(lrs) -> alt.Scale:
    """A log LR scale a little wider than the grid, so the end points are not on the frame."""
    lo, hi = min(lrs), max(lrs)
    pad = (hi / lo) ** 0.04 if hi > lo else 2.0
    return alt.Scale(type="log", domain=[lo / pad, hi * pad], nice=False)


def log_axis(values, title: str) -> alt.Axis:
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


def once(chart: alt.Chart, name: str) -> alt.Chart:
    """A layer drawn once per panel (a constant line or label): inside a facet every layer
    takes the panel's rows, so reduce them to one."""
    return chart.transform_aggregate(rows="count()").properties(name=name)


def filtered(base: alt.Chart, kind: str, name: str) -> alt.Chart:
    """A layer that draws the rows of one kind; named, so its marks can be found."""
    return base.transform_filter(alt.datum.kind == kind).properties(name=name)
