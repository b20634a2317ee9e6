"""The summary charts by rung (depth or width, sweeps/core/ladder.py): critical LR and necessity
threshold (stability), the points the ladder's trend is decided on (trend), the max-LR ratio
over the margin delta, and each arm's LR sensitivity.

The charts read the typed analysis (sweeps/analysis/model.py's Analysis) by attribute; each
public chart takes it. The
shared helpers of figures/present.py still read a record's JSON form (adapter.record)."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from figures import present
from figures.charts.style import (
    LR_AXIS,
    PLOT_WIDTH,
    THRESHOLD_COLOR,
    UNCENSORED_COLOR,
    arm_color,
    arm_colors,
    chart_title,
    finish,
    log_axis,
    lr_scale,
    rung_x,
)
from sweeps.analysis import model as m
from sweeps.study import hypotheses


def stability(analysis: m.Analysis) -> alt.LayerChart | None:
    """Critical LR per arm (median, interval) and the stability threshold per rung."""
    rung = present.ladder_of(analysis)
    rows = _stability_rows(analysis)
    if not rows:
        return None
    data = pd.DataFrame(rows)
    series = list(dict.fromkeys(data.series))
    colors = {**arm_colors(analysis.settings.arms), "threshold": THRESHOLD_COLOR}
    # The series sit side by side within each rung (xOffset), so intervals never overlap.
    base = alt.Chart(data).encode(
        x=rung_x(rung),
        xOffset=alt.XOffset("series:N", sort=series),
        color=alt.Color(
            "series:N",
            sort=series,
            title="series",
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
    arrows = (  # a censored end: the bar stops at the grid's edge and points on
        base.transform_filter(alt.datum.open_end != "")
        .mark_point(filled=True, size=45, opacity=1)
        .encode(
            y=alt.Y("open_at:Q"),
            shape=alt.Shape("open_end:N", scale=None),
        )
        .properties(name="open_ends")
    )
    return finish(
        alt.layer(bars, arrows, _stability_points(base, data, rung.field)).properties(
            width=PLOT_WIDTH,
            height=260,
            title=chart_title(
                f"Critical learning rate and stability threshold by {rung.name}",
                "critical LR: point at the median over seeds, bar over the seeds' brackets",
                "(from the lowest seed's last LR that held to the highest's first that failed)",
                "threshold: point inside its bracket, bar over the bracket",
                "triangle: beyond the grid (a bound), pointing the way the value lies",
                "a small arrow: the bar's end is censored, the value lies further",
            ),
        )
    )


def _stability_rows(analysis: m.Analysis) -> list[dict]:
    """Per rung: each arm's critical LR (not the subset arms'), then the primary
    comparison's stability threshold; a series without a value is left out."""
    s, field = analysis.settings, present.ladder_of(analysis).field
    rows = []
    for depth, d in analysis.depths.items():
        for arm, a in d.arms.items():
            crit = a.eta_crit
            if arm in s.subset_arms or crit.median is None:
                continue
            lo, hi = present.crit_span(crit)
            ends = tuple(end.kind if end is not None else "" for end in (crit.min, crit.max))
            rows.append(
                _stability_row(
                    f"critical LR, {arm}", arm, {field: int(depth)}, crit.median, lo, hi, ends
                )
            )
        primary = hypotheses.primary(analysis, d)
        if primary is not None and primary.threshold.kind in ("", "below"):
            lo, hi, _ = present.threshold_interval(primary)
            rows.append(
                _stability_row(
                    "stability threshold",
                    "threshold",
                    {field: int(depth)},
                    primary.threshold,
                    lo,
                    hi,
                    (primary.threshold.kind, ""),
                )
            )
    return [r for r in rows if r["value"] is not None]


def _stability_points(base, data: pd.DataFrame, field: str) -> alt.Chart:
    """The medians on a log axis that reaches the interval ends too; a value beyond the
    grid (only a bound is known) is a triangle, not a circle."""
    values = [*data.value, *data.lo.dropna(), *data.hi.dropna()]
    y = alt.Y("value:Q", scale=_lr_y_scale(values), axis=log_axis(values, LR_AXIS))
    return (
        base.mark_point(filled=True, size=90, opacity=1)
        .encode(
            y=y,
            shape=alt.Shape(
                "bound:N",
                # the subtitle says what a triangle is: a second legend beside the series
                # legend ran into its last label (DejaVu draws labels wider than vl-convert
                # measures them)
                legend=None,
                scale=alt.Scale(domain=list(BOUND_SHAPES), range=list(BOUND_SHAPES.values())),
            ),
            tooltip=[
                "series:N",
                f"{field}:O",
                alt.Tooltip("value:Q", format=".3g"),
                alt.Tooltip("lo:Q", format=".3g"),
                alt.Tooltip("hi:Q", format=".3g"),
            ],
        )
        .properties(name="values")
    )


def _lr_y_scale(values) -> alt.Scale:
    """A log LR axis padded so a bracket that ends at the grid's edge ends inside the frame;
    where every value is one LR (cpu-budget: each arm's bound at 0.0316) a domain around it,
    else Vega centres one point and draws every tick label on top of each other."""
    if min(values) == max(values):
        return lr_scale(values)
    # an explicit domain 6% of the span beyond each end (in log space): Vega's pixel `padding`
    # left a triangle at the grid's top edge on the frame (issue 58)
    lo, hi = min(values), max(values)
    pad = (hi / lo) ** 0.06
    return alt.Scale(type="log", domain=[lo / pad, hi * pad], nice=False)


# a value only bounded by the grid points the way it lies: a critical LR <= the lowest LR (its
# runs fail from there) must not read as one above the grid
BOUND_NAMES = {"": "inside the grid", "above": "above the grid", "below": "below the grid"}
BOUND_SHAPES = {
    "inside the grid": "circle",
    "above the grid": "triangle-up",
    "below the grid": "triangle-down",
}


def _stability_row(
    series: str, key: str, where: dict, median: m.GridPoint, lo, hi, ends: tuple = ("", "")
) -> dict:
    """ends: the kind of the low and high end ('below', 'above': censored, '': on the grid);
    a censored end is drawn open (an arrow), not as a finite bar end."""
    low_open, high_open = ends[0] == "below", ends[1] == "above"
    return {
        "series": series,
        "key": key,
        **where,  # the rung: {field: value}
        "value": median.value,
        "lo": lo if lo is not None else median.value,
        "hi": hi if hi is not None else median.value,
        "bound": BOUND_NAMES.get(median.kind, "inside the grid"),
        "open_end": "triangle-up" if high_open else ("triangle-down" if low_open else ""),
        "open_at": hi if high_open else (lo if low_open else None),
    }


SEED_SPREAD = 0.05  # doublings between neighbouring seeds' points at one rung


def trend(analysis: m.Analysis) -> alt.LayerChart | None:
    """What H3 (W1 on a width ladder) regresses (docs/STUDY.md section 13): every per-seed
    threshold by rung, a censored one at its bound, each rung's value (the geometric mean of its
    seeds', the unit the rule fits) and the least-squares line over those values with its slope.
    None before the trend was decided on points (one rung, too few points, or all censored
    alike)."""
    rung = present.ladder_of(analysis)
    name = present.trends(rung)[0]
    t: m.Trend | None = getattr(analysis, name.lower())
    if t is None or not t.points or t.line is None:
        return None
    data = pd.DataFrame(_trend_rows(t.points, rung.field))
    rungs = sorted({p.rung for p in t.points})
    line = _line_ends(t.line, rungs, rung.field)
    inside = t.uncensored  # the fit without censored points: descriptive, dotted
    inside_line = _line_ends(inside.line, rungs, rung.field) if inside is not None else None
    x = alt.X(
        "x:Q",
        title=f"{rung.name} ({rung.unit})",
        scale=alt.Scale(type="log", base=2, padding=24, nice=False),
        axis=alt.Axis(values=rungs, format="d", labelAngle=0, grid=False),
    )
    values = [*data.lr, *line.lr, *(inside_line.lr if inside_line is not None else [])]
    y = alt.Y("lr:Q", scale=_lr_y_scale(values), axis=log_axis(values, LR_AXIS))
    fit = (
        alt.Chart(line.assign(x=line[rung.field]))
        .mark_line(color=THRESHOLD_COLOR, strokeDash=[6, 4], strokeWidth=1.5)
        .encode(x=x, y=y)
        .properties(name="line")
    )
    layers = [fit]
    if inside_line is not None:
        layers.append(
            alt.Chart(inside_line.assign(x=inside_line[rung.field]))
            .mark_line(color=UNCENSORED_COLOR, strokeDash=[1.5, 3], strokeWidth=2)
            .encode(x=x, y=y)
            .properties(name="uncensored")
        )
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=70, opacity=1, color=THRESHOLD_COLOR)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape("shape:N", scale=None),
            tooltip=[f"{rung.field}:O", alt.Tooltip("lr:Q", format=".3g"), "placed:N"],
        )
        .properties(name="points")
    )
    if t.rung_values:  # what the rule fits (section 13): one value per rung, not the seeds
        means = pd.DataFrame(
            [{"x": v.rung, rung.field: v.rung, "lr": v.lr, "seeds": v.seeds} for v in t.rung_values]
        )
        layers.append(
            alt.Chart(means)
            .mark_point(shape="diamond", size=150, filled=False, strokeWidth=2, opacity=1)
            .encode(
                x=x,
                y=y,
                color=alt.value(THRESHOLD_COLOR),
                tooltip=[f"{rung.field}:O", alt.Tooltip("lr:Q", format=".3g"), "seeds:Q"],
            )
            .properties(name="rung_values")
        )
    a = t.at_bound
    notes = [
        f"diamond: each {rung.name}'s value, the geometric mean of its seeds' (the rule's unit)",
        f"dashed: least squares over those values (the rule), {a.value:+.3f} decades per doubling",
        f"(90% interval {a.lower:+.3f} to {a.upper:+.3f})",
    ]
    if inside is not None:
        notes += [
            f"dotted: without the censored ones (descriptive), {inside.value:+.3f} "
            f"({inside.lower:+.3f} to {inside.upper:+.3f})"
        ]
    return finish(
        alt.layer(*layers, points).properties(
            width=PLOT_WIDTH,
            height=240,
            title=chart_title(
                f"{name}'s points: each seed's stability threshold by {rung.name}",
                "circle: a seed's threshold (interpolated, or its bracket's midpoint)",
                "triangle: censored, at its bound (down: at or under the lowest LR; up: none, at "
                "the top LR)",
                *notes,
            ),
        )
    )


def _line_ends(fit: m.Line, rungs: list, field: str) -> pd.DataFrame:
    """A fitted line (intercept and slope of log10 LR on log2 rung) at the ends of the rungs."""
    ends = [10 ** (fit.intercept + fit.slope * math.log2(r)) for r in (rungs[0], rungs[-1])]
    return pd.DataFrame({field: [rungs[0], rungs[-1]], "lr": ends})


def _trend_rows(points: list[m.TrendPoint], field: str) -> list[dict]:
    """One row per point, seeds at one rung set a little apart along x (in doublings)."""
    rows, seen = [], {}
    for p in points:
        i = seen[p.rung] = seen.get(p.rung, -1) + 1
        n = sum(q.rung == p.rung for q in points)
        shape = "circle"
        if p.censored:
            shape = "triangle-down" if p.beyond < p.lr else "triangle-up"
        rows.append(
            {
                field: p.rung,
                "x": p.rung * 2 ** (SEED_SPREAD * (i - (n - 1) / 2)),
                "lr": p.lr,
                "shape": shape,
                "placed": "censored, at its bound" if p.censored else "inside the grid",
            }
        )
    return rows


def eta_max_ratio(analysis: m.Analysis) -> alt.LayerChart | None:
    """The on/off ratio of eta_max(delta) over delta, per rung: does the answer depend on
    the margin? The pre-registered delta is marked; a ratio where an arm's eta_max sits at the
    grid's top LR (censored) is an open point: there the grid ended, not the arm."""
    s, rung = analysis.settings, present.ladder_of(analysis)
    rows = [
        {
            rung.field: int(depth),
            "delta": r.delta,
            "ratio": r.ratio,
            "at_top": _at_top(d, c, r.delta),
        }
        for depth, d in analysis.depths.items()
        if (c := hypotheses.primary(analysis, d)) is not None
        for r in c.eta_max_ratio
        if r.ratio
    ]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    # The x axis reaches the pre-registered delta even where the curve starts above it, so
    # its grey line is drawn; ticks every 0.1 (labels at 0.05 ran together).
    lo, hi = min(float(data.delta.min()), s.delta), max(float(data.delta.max()), s.delta)
    ticks = [round(0.1 * k, 10) for k in range(int(lo * 10 - 1e-9), int(hi * 10 + 1e-9) + 1)]
    ticks = [t for t in ticks if lo - 1e-9 <= t <= hi + 1e-9]
    x = alt.X(
        "delta:Q",
        title=f"delta: margin above the best loss ({present.loss_unit(s)})",
        scale=alt.Scale(domain=[lo, hi], nice=False, zero=False),
        axis=alt.Axis(values=ticks, format="~g"),
    )
    y = alt.Y(
        "ratio:Q",
        scale=alt.Scale(type="log", domain=_ratio_domain([*data.ratio, 1.0]), nice=False),
        axis=log_axis([*data.ratio, 1.0], f"eta_max ratio {s.primary} / {s.reference}"),
    )
    color = alt.Color(f"{rung.field}:O", title=rung.name)
    points = (
        alt.Chart(data)
        .mark_point(filled=False, size=30, strokeWidth=1.5)
        .encode(
            x=x,
            y=y,
            color=alt.Color(f"{rung.field}:O", legend=None),  # the line's legend says it
            fill=alt.condition("datum.at_top", alt.value("white"), color, legend=None),
            tooltip=[
                f"{rung.field}:O",
                "delta:Q",
                alt.Tooltip("ratio:Q", format=".3g"),
                alt.Tooltip("at_top:N", title="an arm's eta_max at the grid's top"),
            ],
        )
        .properties(name="ratio_points")
    )
    lines = (
        alt.Chart(data)
        .mark_line()
        .encode(
            x=x,
            y=y,
            color=color,
            tooltip=[f"{rung.field}:O", "delta:Q", alt.Tooltip("ratio:Q", format=".3g")],
        )
        .properties(name="ratios")
    )
    one = alt.Chart().mark_rule(strokeDash=[4, 4]).encode(y=alt.datum(1.0))
    chosen = (
        alt.Chart()
        .mark_rule(color="#777777", strokeWidth=2)
        .encode(x=alt.datum(s.delta, type="quantitative"))
    )
    return finish(
        alt.layer(lines, points, one, chosen).properties(
            width=PLOT_WIDTH,
            height=240,
            title=chart_title(
                "Max-LR ratio vs the margin delta",
                f"grey: the pre-registered delta ({s.delta:g}); dashed: no difference",
                "open point: an arm's eta_max is the grid's top LR (a bound)",
            ),
        )
    )


def _at_top(depth: m.Rung, c: m.Comparison, delta: float) -> bool:
    """Either arm's eta_max at this delta is censored at the grid's top LR."""
    for arm in (c.baseline, c.treatment):
        curve = depth.arms[arm].eta_max_curve if arm in depth.arms else []
        if any(abs(p.delta - delta) < 1e-9 and p.kind == "above" for p in curve):
            return True
    return False


def _ratio_domain(values) -> list[float]:
    """The ratio axis's range: the data's, widened to a factor of 2 either side where it spans
    less than 4x, so a flat curve (every ratio 1) gets an axis with room between its ticks
    (a log scale over [1, 1] drew its '1' and '2' on one spot)."""
    lo, hi = min(values), max(values)
    return [lo / 2, hi * 2] if hi / lo < 4 else [lo, hi]


def sensitivity(analysis: m.Analysis) -> alt.LayerChart | None:
    rung = present.ladder_of(analysis)
    rows = [
        {"arm": arm, rung.field: int(depth), "seed": int(seed), "sensitivity": v}
        for depth, d in analysis.depths.items()
        for arm, a in d.arms.items()
        if a.sensitivity.complete
        for seed, v in a.sensitivity.seeds.items()
    ]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    arms = [a for a in analysis.settings.arms if a in set(data.arm)]
    y_title = "LR sensitivity (nats)"
    base = alt.Chart(data).encode(
        x=rung_x(rung), xOffset=alt.XOffset("arm:N", sort=arms), color=arm_color(arms)
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
            tooltip=[
                "arm:N",
                f"{rung.field}:O",
                "seed:O",
                alt.Tooltip("sensitivity:Q", format=".4f"),
            ],
        )
        .properties(name="seeds")
    )
    return finish(
        alt.layer(bars, seeds).properties(
            width=PLOT_WIDTH,
            height=240,
            title=chart_title(
                "LR sensitivity per arm (lower is more robust)", "bar: mean over seeds; dots: seeds"
            ),
        )
    )
