"""The charts' shared look: the arms' colours, the LR and log axes, the facet headers, titles,
and `finish`, which puts every chart's legends under the plot. Every chart module builds on
this one; it imports no other module of the package (only sweeps/core/ladder.py, for the rung)."""

from __future__ import annotations

import math

import altair as alt

from sweeps.core.ladder import Ladder
from sweeps.core.norms import QK_NORMS

# Fixed colours for the arms docs/STUDY.md names; any other arm takes the next free colour.
ARM_COLORS = {"off": "#D55E00", "on": "#0072B2", "off-warm": "#E69F00", "on-cool": "#56B4E9"}
SPARE_COLORS = ("#009E73", "#CC79A7", "#F0E442", "#000000", "#999999", "#882255")
THRESHOLD_COLOR = "#333333"
UNCENSORED_COLOR = "#8c8c8c"  # a trend's line without its censored points (descriptive)
BASELINE_COLOR = "#777777"
LR_AXIS = "peak learning rate"
LR_HEADER = alt.Header(
    labelExpr="'LR ' + format(datum.value, '.3~g')", labelFontSize=12, labelFontWeight="bold"
)  # a facet by LR, in LR order


# -- the rung: what a sweep's ladder steps over ---------------------------------------------------
# Every chart reaches a sweep's rung through these few helpers and the analysis's ladder
# (sweeps/core/ladder.py): the chart tables carry the rung in the ladder's own column (n_layer on
# a depth ladder, n_embd on a width ladder) and every header, axis and label names it.


def rung_label(rung: Ladder, value) -> str:
    """A rung as a panel header or legend entry says it: 'depth 4', 'width 96'."""
    return rung.label(value)


def rung_header(rung: Ladder) -> alt.Header:
    return alt.Header(
        labelExpr=f"'{rung.name} ' + datum.value", labelFontSize=12, labelFontWeight="bold"
    )


def rung_column(rung: Ladder) -> alt.Column:
    return alt.Column(f"{rung.field}:O", title=None, header=rung_header(rung))


def rung_row(rung: Ladder) -> alt.Row:
    return alt.Row(f"{rung.field}:O", title=None, header=rung_header(rung))


def rung_x(rung: Ladder) -> alt.X:
    return alt.X(f"{rung.field}:O", title=f"{rung.name} ({rung.unit})", axis=alt.Axis(labelAngle=0))


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
            columnPadding=24,  # vl-convert measures labels narrower than DejaVu draws them
            rowPadding=4,
        )
        .configure_axis(
            titleFontSize=11, labelFontSize=10, titleFontWeight="normal", titlePadding=8
        )
        .configure_header(titleFontSize=12)
    )


def panel_width(panels: int) -> int:
    """Each of `panels` side-by-side panels' width: together they fill PLOT_WIDTH."""
    return max(160, int((PLOT_WIDTH - 20 * (panels - 1)) / max(panels, 1)))


def arm_colors(arms: list[str]) -> dict[str, str]:
    """A colour per arm: the fixed ones, a QK-norm kind's for 'qk<kind>' arms, then spares. An
    arm that runs another arm longer ('off-4x', `budget_base`) takes a darker shade of that
    arm's colour: the two read as one arm at two budgets."""
    spare = iter(c for c in SPARE_COLORS if c not in ARM_COLORS.values())
    out = {}
    for arm in sorted(arms, key=lambda a: budget_base(a, arms) is not None):
        base = budget_base(arm, arms)
        if base is not None:
            out[arm] = shade(out[base], 0.55)
            continue
        kind = QK_NORMS.get(arm[2:]) if arm.startswith("qk") else None
        out[arm] = ARM_COLORS.get(arm) or (kind.color if kind else next(spare, "#777777"))
    return {arm: out[arm] for arm in arms}


def budget_base(arm: str, arms) -> str | None:
    """The arm that `arm` runs at another budget: 'off' for 'off-4x' when off is an arm."""
    base, _, suffix = arm.rpartition("-")
    if base in arms and suffix[:-1].replace(".", "", 1).isdigit() and suffix.endswith("x"):
        return base
    return None


def shade(color: str, factor: float) -> str:
    """`color` darkened towards black by `factor` (0: unchanged, 1: black)."""
    rgb = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c * (1 - factor)):02X}" for c in rgb)


def arm_dash(arms: list[str]) -> dict[str, list[int]]:
    """A budget arm's lines are dashed, so its shade is not the only thing telling it apart."""
    return {a: ([5, 3] if budget_base(a, arms) else [1, 0]) for a in arms}


def arm_color(arms: list[str], title: str = "arm", legend: bool = True) -> alt.Color:
    colors = arm_colors(arms)
    return alt.Color(
        "arm:N",
        sort=arms,
        title=title,
        legend=alt.Legend(symbolOpacity=1, columns=min(len(arms), 4)) if legend else None,
        scale=alt.Scale(domain=arms, range=[colors[a] for a in arms]),
    )


# -- the LR axis --------------------------------------------------------------------------------
LABEL_EM = 0.64  # a tick label's width per character at the axis font (DejaVu digits: 0.636)
LABEL_SIZE = 10
LABEL_GAP = 8  # px between two labels on one line


def lr_text(value: float) -> str:
    """An LR as its tick says it: '3.16e-4', '1e-3', '1' (d3's '.3~e', '~g' from 1 up)."""
    if value >= 1:
        return f"{value:g}"
    mantissa, exponent = f"{value:.2e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def _decade(value: float) -> bool:
    return abs(math.log10(value) - round(math.log10(value))) < 1e-9


def lr_labels(lrs, width: float, domain) -> dict[float, str]:
    """The swept LRs whose tick gets a label in a panel `width` px wide over the log `domain`,
    each with its alignment: decades first, then the grid's ends, then the rest, each only
    where it clears the labels already placed (a tick without a label is still a swept LR).
    A grid end whose centred label would stick out of the panel is aligned to its tick
    instead, inwards ('left' / 'right'): a narrow panel of three LRs kept only its middle one."""
    lo, hi = (math.log10(x) for x in domain)

    def px(v):
        return width * (math.log10(v) - lo) / (hi - lo or 1.0)

    def extent(v, align):
        w = len(lr_text(v)) * LABEL_EM * LABEL_SIZE
        return {"center": (px(v) - w / 2, px(v) + w / 2), "left": (px(v), px(v) + w)}.get(
            align, (px(v) - w, px(v))
        )

    values = sorted(set(lrs))
    order = [v for v in values if _decade(v)] + [values[0], values[-1]] + values
    placed: dict[float, tuple[float, float]] = {}
    align: dict[float, str] = {}
    for v in dict.fromkeys(order):
        ways = (
            ["center"]
            + (["left"] if v == values[0] else [])
            + (["right"] if v == values[-1] else [])
        )
        for way in ways:
            left, right = extent(v, way)
            if left < -8 or right > width + 8:
                continue  # would stick out of the panel (and into its neighbour's)
            if all(left >= b + LABEL_GAP or right <= a - LABEL_GAP for a, b in placed.values()):
                placed[v], align[v] = (left, right), way
                break
    return {v: align[v] for v in sorted(placed)}


def lr_axis(lrs, width: float | None = None, title: str = LR_AXIS) -> alt.Axis:
    """Ticks at the swept LRs; short labels (3.16e-4, 1e-3, ..., 1) on those that fit a panel
    `width` px wide (lr_labels), so no two run together; no minor gridlines."""
    values = sorted(set(lrs))
    shown = lr_labels(values, width, lr_scale(values).domain) if width else dict.fromkeys(values)
    text = "datum.value >= 1 ? format(datum.value, '~g') : format(datum.value, '.3~e')"

    def listed(vs) -> str:
        return "[" + ", ".join(repr(float(v)) for v in vs) + "]"

    ends = {way: [v for v, a in shown.items() if a == way] for way in ("left", "right")}
    aligned = " : ".join(
        f"indexof({listed(vs)}, datum.value) >= 0 ? '{way}'" for way, vs in ends.items() if vs
    )
    return alt.Axis(
        values=values,
        title=title,
        labelExpr=f"indexof({listed(shown)}, datum.value) >= 0 ? ({text}) : ''",
        labelOverlap=False,
        labelBound=True,
        **({"labelAlign": alt.ExprRef(expr=f"{aligned} : 'center'")} if aligned else {}),
    )


def lr_scale(lrs) -> alt.Scale:
    """A log LR scale a little wider than the grid, so the end points are not on the frame."""
    lo, hi = min(lrs), max(lrs)
    pad = (hi / lo) ** 0.04 if hi > lo else 2.0
    return alt.Scale(type="log", domain=[lo / pad, hi * pad], nice=False)


def dodge(arms: list[str], lrs, width: float, px: float = 3.0) -> dict[str, float]:
    """Per arm, the factor that moves its marks `px` pixels (times its place among the arms,
    centred) along a log LR axis `width` px wide: where arms coincide, each still shows."""
    lo, hi = (math.log10(x) for x in lr_scale(lrs).domain)
    per_px = (hi - lo) / max(width, 1.0)
    middle = (len(arms) - 1) / 2
    return {a: 10 ** ((i - middle) * px * per_px) for i, a in enumerate(arms)}


def interleaved(arms: list[str], dash: float = 6.0) -> dict[str, tuple[list[float], float]]:
    """Per arm a dash pattern and offset that interleave with every other arm's: drawn over
    the arms' solid lines, where lines coincide each arm shows in turn, dash by dash; where
    they part each dash lies on its own line and changes nothing."""
    n = len(arms)
    return {a: ([dash, dash * (n - 1)], -dash * i) for i, a in enumerate(arms)}


def log_axis(values, title: str) -> alt.Axis:
    """A log axis with ticks and gridlines at decades, at 1-3 steps (half decades, the study's
    LR grid) when the values span three decades or less, and at 1-2-5 within one: Vega's
    default draws a line at every minor tick, which renders as grey bands, and decades alone
    left a chart of LRs from 0.02 to 0.75 one labelled tick. Labels read 1e+6 beyond four
    decades."""
    v = [x for x in values if x and x > 0 and math.isfinite(x)]
    lo, hi = math.floor(math.log10(min(v))), math.ceil(math.log10(max(v)))
    ticks = [10.0**k for k in range(lo, hi + 1)]
    steps = (1, 2, 5) if hi - lo <= 1 else (1, 3) if hi - lo <= 3 else (1,)
    if len(steps) > 1:
        near = [m * t for t in ticks for m in steps if min(v) / 2 <= m * t <= 2 * max(v)]
        ticks = sorted({float(f"{x:.3g}") for x in near})  # 0.3, not 0.30000000000000004
    # over many decades (a diverging run's logits reach 1e9) plain numbers run into the plot
    return alt.Axis(values=ticks, title=title, format="~g" if hi - lo <= 4 else ".0e")


def once(chart: alt.Chart, name: str) -> alt.Chart:
    """A layer drawn once per panel (a constant line or label): inside a facet every layer
    takes the panel's rows, so reduce them to one."""
    return chart.transform_aggregate(rows="count()").properties(name=name)


def filtered(base: alt.Chart, kind: str, name: str) -> alt.Chart:
    """A layer that draws the rows of one kind; named, so its marks can be found."""
    return base.transform_filter(alt.datum.kind == kind).properties(name=name)
