"""The paired-effect chart: per comparison and depth, the paired difference baseline -
treatment per LR with its decided interval, cut (and marked) where it leaves the axis."""

from __future__ import annotations

import altair as alt
import pandas as pd

from figures import present
from figures.charts.style import (
    DEPTH,
    chart_title,
    filtered,
    finish,
    lr_axis,
    lr_scale,
    once,
    panel_width,
)
from sweeps.study.rules import Comparison


def paired_effect(analysis: dict) -> alt.FacetChart | None:
    """Per comparison (rows) and depth (columns): the paired difference baseline - treatment
    per LR with the interval the analysis decided with; the minimum effect dashed; necessary
    LRs filled. An interval beyond the axis is cut at its edge and marked with a triangle."""
    m = analysis["settings"]["min_effect"]
    entries = _paired_entries(analysis)
    if not entries:
        return None
    low, high = effect_domain(
        [e["mean"] for _, _, e, *_ in entries],
        [x for *_, lo, hi, _ in entries for x in (lo, hi)],
        m,
    )
    data = pd.DataFrame(_paired_rows(entries, low, high))
    interval = next(lab for *_, lab in entries)
    lrs = sorted(data.lr.unique())
    x = alt.X("lr:Q", scale=lr_scale(lrs), axis=lr_axis(lrs))
    y_scale = alt.Scale(domain=[low, high], nice=False)
    # One comparison is the study's off vs on; several are named by their row headers.
    y_title = (
        "off - on, effective loss (nats)"
        if len({k for k, *_ in entries}) == 1
        else "baseline - treatment (nats)"
    )
    base = alt.Chart().encode(x=x)
    layers = [
        *_reference_layers(m),
        *_interval_layers(base, y_scale, y_title),
        _effect_layer(base, y_scale),
    ]
    depths = sorted(data.n_layer.unique())
    layer = alt.layer(*layers, data=data).properties(width=panel_width(len(depths)), height=170)
    return finish(
        _facet(layer, data, analysis).properties(
            title=chart_title(
                "Paired effect per learning rate",
                f"mean over paired seeds with its {interval} interval; dashed: minimum effect "
                f"{m:g} nats",
            )
        )
    )


def _paired_entries(analysis: dict) -> list[tuple]:
    """(comparison, depth, entry, lo, hi, interval) for each LR the analysis judged with at
    least two paired seeds (one has no spread) and below the loss ceiling."""
    entries = []
    for depth, d in analysis["depths"].items():
        for key, c in d["comparisons"].items():
            for e in c["per_lr"]:
                if e["n"] >= 2 and not e["ceiling"] and e.get("judged", True):
                    lo, hi, label = present.effect_interval(e)
                    entries.append((key, int(depth), e, lo, hi, label))
    return entries


def _paired_rows(entries: list[tuple], low: float, high: float) -> list[dict]:
    """The chart's table, kind = effect | clipped: each effect with its interval cut to the
    axis [low, high], and after it a row for each end that was cut (drawn as a triangle)."""
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
    return rows


def _reference_layers(min_effect: float) -> list:
    """The lines an effect is read against, once per panel: zero, and the minimum effect
    (dashed) that a necessary LR's interval must clear."""
    return [
        once(alt.Chart().mark_rule(color="#BBBBBB").encode(y=alt.datum(0.0)), "zero"),
        once(
            alt.Chart()
            .mark_rule(strokeDash=[4, 4], color="#000000")
            .encode(y=alt.datum(min_effect, type="quantitative")),
            "min_effect",
        ),
    ]


def _interval_layers(base, y_scale, y_title: str) -> list:
    """Each effect's interval as a rule, and a triangle on the axis edge where it was cut."""
    return [
        filtered(base, "effect", "intervals")
        .mark_rule(strokeWidth=2, color="#555555")
        .encode(y=alt.Y("y_lo:Q", scale=y_scale, title=y_title), y2="y_hi:Q"),
        filtered(base, "clipped", "clipped")
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
    ]


def _effect_layer(base, y_scale) -> alt.Chart:
    """Each mean effect as a circle, filled black where QK-norm (the treatment) is necessary."""
    return (
        filtered(base, "effect", "effects")
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
            tooltip=[
                "comparison:N",
                "n_layer:O",
                "lr:Q",
                alt.Tooltip("mean:Q", format=".4f"),
                alt.Tooltip("lo:Q", format=".4f"),
                alt.Tooltip("hi:Q", format=".4f"),
                "necessary:N",
            ],
        )
    )


def _facet(layer, data: pd.DataFrame, analysis: dict):
    """Columns by depth; rows by comparison only when there are several, in the settings'
    order (the study's comparisons first, any other after, by name)."""
    order = [Comparison(b, t).key for b, t in analysis["settings"]["all_comparisons"]]
    comparisons = sorted(
        set(data.comparison), key=lambda k: (k not in order, order.index(k) if k in order else 0, k)
    )
    if len(comparisons) > 1:
        row = alt.Row(
            "comparison:N",
            sort=comparisons,
            title=None,
            header=alt.Header(labelFontWeight="bold", labelFontSize=12),
        )
        return layer.facet(column=DEPTH, row=row)
    return layer.facet(column=DEPTH)


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
