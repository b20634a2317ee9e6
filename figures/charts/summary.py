"""The summary charts by depth: critical LR and necessity threshold (stability), the max-LR
ratio over the margin delta, and each arm's LR sensitivity."""

from __future__ import annotations

import altair as alt
import pandas as pd

from figures import present
from figures.charts.style import (
    DEPTH_X,
    LR_AXIS,
    PLOT_WIDTH,
    THRESHOLD_COLOR,
    arm_color,
    arm_colors,
    chart_title,
    finish,
    log_axis,
)


def stability(analysis: dict) -> alt.LayerChart | None:
    """Critical LR per arm (median, interval) and the necessity threshold per depth."""
    rows = _stability_rows(analysis)
    if not rows:
        return None
    data = pd.DataFrame(rows)
    series = list(dict.fromkeys(data.series))
    colors = {**arm_colors(analysis["settings"]["arms"]), "threshold": THRESHOLD_COLOR}
    # The series sit side by side within each depth (xOffset), so intervals never overlap.
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
    return finish(
        alt.layer(bars, _stability_points(base, data)).properties(
            width=PLOT_WIDTH,
            height=260,
            title=chart_title(
                "Critical learning rate and necessity threshold by depth",
                "point: median over seeds; bar: its interval; triangle: beyond the grid",
            ),
        )
    )


def _stability_rows(analysis: dict) -> list[dict]:
    """Per depth: each arm's critical LR (not the subset arms'), then the primary
    comparison's necessity threshold; a series without a value is left out."""
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
    return [r for r in rows if r["value"] is not None]


def _stability_points(base, data: pd.DataFrame) -> alt.Chart:
    """The medians on a log axis that reaches the interval ends too; a value beyond the
    grid (only a bound is known) is a triangle, not a circle."""
    y = alt.Y(
        "value:Q",
        scale=alt.Scale(type="log"),
        axis=log_axis([*data.value, *data.lo.dropna(), *data.hi.dropna()], LR_AXIS),
    )
    return (
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
                axis=log_axis(
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
    return finish(
        alt.layer(lines, one, chosen).properties(
            width=PLOT_WIDTH,
            height=240,
            title=chart_title(
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
        x=DEPTH_X, xOffset=alt.XOffset("arm:N", sort=arms), color=arm_color(arms)
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
    return finish(
        alt.layer(bars, seeds).properties(
            width=PLOT_WIDTH,
            height=240,
            title=chart_title(
                "LR sensitivity per arm (lower is more robust)", "bar: mean over seeds; dots: seeds"
            ),
        )
    )
