"""The necessity map: LR x rung (depth or width) cells coloured by the primary comparison's
paired effect, a dot where QK-norm is necessary, and each rung's stability threshold with its
bracket. A row is named by the ladder ('depth 4', 'width 96'), in a column of the ladder's
name, beside the rung's value in the ladder's field (n_layer or n_embd).

It reads the typed analysis (sweeps/analysis/model.py's Analysis) by attribute; necessity_map
takes it. The shared helpers
of figures/present.py still read a record's JSON form (adapter.record)."""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from figures import present
from figures.charts.style import (
    EFFECT_COLORS,
    PLOT_WIDTH,
    chart_title,
    filtered,
    finish,
    lr_axis,
)
from sweeps.analysis import model as m
from sweeps.study import hypotheses


def necessity_map(analysis: m.Analysis) -> alt.LayerChart | None:
    """LR x rung, colour = the primary comparison's paired effect (off - on); a dot where
    QK-norm is necessary; the stability threshold of each depth as a black tick with its
    interval. One rung reads as a strip, three as the trend's answer (H3, W1)."""
    rung = present.ladder_of(analysis)
    rows = _necessity_rows(analysis)
    cells = [r for r in rows if r["kind"] == "cell"]
    if not cells:
        return None
    data = pd.DataFrame(rows)
    s = analysis.settings
    effect = present.primary_effect(s)  # "off - on": the primary comparison's arms
    order = [rung.label(d) for d in sorted({r[rung.field] for r in cells})]
    min_effect = s.min_effect
    span = colour_span(cells, min_effect)
    lrs = sorted({r["lr"] for r in cells})
    x = alt.X(
        "x:Q",
        scale=alt.Scale(
            type="log", domain=[min(r["x"] for r in cells), max(r["x2"] for r in cells)], nice=False
        ),
        axis=lr_axis(lrs, PLOT_WIDTH),
    )
    # rows apart, so each threshold bar lies in the gap above its row, clear of the cells
    y = alt.Y(
        f"{rung.name}:N",
        sort=order,
        title=None,
        scale=alt.Scale(paddingInner=ROW_GAP, paddingOuter=ROW_GAP),
    )
    base = alt.Chart().encode(y=y)
    return finish(
        alt.layer(
            *_cell_layers(base, x, span, rung.name, effect),
            *_threshold_layers(base, x, rung.name),
            data=data,
        ).properties(
            width=PLOT_WIDTH,
            height=ROW_STEP * len(order),
            title=chart_title(
                "Where QK-norm is necessary",
                f"colour: paired effect {effect} (nats), full at +-{span:.2f}; larger effects "
                "(where runs failed) are clamped",
                f"dot: necessary (the interval's lower end clears {min_effect:g} nats; a strong "
                "colour without a dot did not)",
                "grey: every run of both arms failed (no effect to measure)",
                "light grey with x: not judged (too few pairs); black bar just above a row: its "
                "threshold's bracket",
            ),
        )
    )


def colour_span(cells: list[dict], min_effect: float) -> float:
    """Where the colour saturates: the 90th percentile of the effects at LRs where no run of
    either arm failed (a failed run's effect is its loss at initialization against a trained
    run's, nats that would wash the trained effects out), never below 5x the minimum effect,
    so noise stays pale."""
    clean = [abs(r["effect"]) for r in cells if r["effect"] is not None and not r["fails"]]
    every = [abs(r["effect"]) for r in cells if r["effect"] is not None]
    effects = clean or every
    return float(max(np.quantile(effects, 0.9) if effects else 0.0, 5 * min_effect))


def _necessity_rows(analysis: m.Analysis) -> list[dict]:
    """The map's table, kind = cell | threshold: per rung the primary comparison's cells,
    then its threshold."""
    rung = present.ladder_of(analysis)
    rows = []
    for depth, d in analysis.depths.items():
        c = hypotheses.primary(analysis, d)
        if c is None:
            continue
        where = {rung.name: rung.label(depth), rung.field: int(depth)}
        rows += _cell_rows(where, c)
        t = c.threshold
        if t.kind in ("", "below"):
            lo, hi, label = present.threshold_interval(c)
            rows.append(
                {
                    "kind": "threshold",
                    **where,
                    "lr": t.value,
                    "x": lo if lo is not None else t.value,
                    "x2": hi if hi is not None else t.value,
                    "interval": label,
                }
            )
    return rows


def _cell_rows(where: dict, c: m.Comparison) -> list[dict]:
    """One cell per LR with a paired seed, spanning [x, x2] on the LR axis. A cell at the
    loss ceiling has no effect to colour (it is drawn grey)."""
    entries = [e for e in c.per_lr if e.n >= 1]
    lrs = [e.lr for e in entries]
    rows = []
    for i, e in enumerate(entries):
        lo, hi = _cell_edges(lrs, i)
        rows.append(
            {
                "kind": "cell",
                **where,
                "lr": e.lr,
                "x": lo,
                "x2": hi,
                "effect": None if e.ceiling else e.mean,
                "lower": present.lower_bound(e),
                "necessary": bool(e.necessary),
                "ceiling": bool(e.ceiling),
                # an LR the rule could not test (too few pairs where a run trained): drawn
                # apart, so its mean does not read as an effect that was tested and missed
                "unjudged": not e.ceiling and not e.judged,
                "fails": sum((e.fails or {}).values()),
            }
        )
    return rows


def _cell_tooltip(name: str) -> list:
    return [
        f"{name}:N",
        alt.Tooltip("lr:Q", format=".3g"),
        alt.Tooltip("effect:Q", format=".3f"),
        alt.Tooltip("lower:Q", format=".3f"),
        "necessary:N",
        "ceiling:N",
    ]


def _cell_layers(base, x, span: float, name: str, effect: str) -> list:
    """The cells coloured by effect on a diverging scale (clamped at +-span), grey where at
    the ceiling, light grey with an x where not judged, and a dot at the geometric middle of
    each cell where QK-norm is necessary."""
    tooltip = _cell_tooltip(name)
    rect = (
        filtered(base, "cell", "cells")
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=x,
            x2="x2:Q",
            color=alt.Color(
                "effect:Q",
                title=f"{effect} (nats)",
                scale=alt.Scale(domain=[-span, 0, span], range=EFFECT_COLORS, clamp=True),
                legend=alt.Legend(gradientLength=200, format=".2f", values=[-span, 0, span]),
            ),
            tooltip=tooltip,
        )
    )
    ceiling = (
        filtered(base, "cell", "ceilings")
        .transform_filter(alt.datum.ceiling)
        .mark_rect(color="#BBBBBB")
        .encode(x=x, x2="x2:Q", tooltip=tooltip)
    )
    unjudged = (
        filtered(base, "cell", "unjudged")
        .transform_filter(alt.datum.unjudged)
        .mark_rect(color="#E6E6E6", stroke="white", strokeWidth=1)
        .encode(x=x, x2="x2:Q", tooltip=tooltip)
    )
    crosses = (
        filtered(base, "cell", "unjudged_x")
        .transform_filter(alt.datum.unjudged)
        .mark_point(shape="cross", filled=True, color="#888888", size=60, opacity=1, angle=45)
        .encode(x=alt.X("lr:Q"), tooltip=tooltip)
    )
    dots = (  # at the cell's LR, under its tick
        filtered(base, "cell", "necessary")
        .transform_filter(alt.datum.necessary)
        .mark_point(filled=True, color="black", size=45, opacity=1)
        .encode(x=alt.X("lr:Q"), tooltip=tooltip)
    )
    return [rect, ceiling, unjudged, crosses, dots]


ROW_STEP, ROW_GAP = 44, 0.3  # px a row; the share of it between two rows' cells
# px from a row's centre to just above its cells (half a cell, the band a little under
# ROW_STEP x (1 - ROW_GAP) once the outer padding is taken, and 4 px): nearer its own row
BAR_OFFSET = -round(ROW_STEP * (1 - ROW_GAP) / 2 * 0.95 + 4)


def _threshold_layers(base, x, name: str) -> list:
    """Each rung's threshold bracket as a black bar in the gap above its row (clear of its
    cells), with end ticks."""
    interval = (
        filtered(base, "threshold", "threshold_interval")
        .mark_rule(color="black", strokeWidth=2.5, yOffset=BAR_OFFSET)
        .encode(x=x, x2="x2:Q")
    )
    tick = (
        filtered(base, "threshold", "threshold")
        .mark_tick(color="black", thickness=2, size=8, opacity=1, yOffset=BAR_OFFSET)
        .encode(
            x=alt.X("x:Q"),
            tooltip=[
                f"{name}:N",
                alt.Tooltip("lr:Q", title="threshold", format=".3g"),
                alt.Tooltip("x:Q", title="from", format=".3g"),
                alt.Tooltip("x2:Q", title="to", format=".3g"),
                "interval:N",
            ],
        )
    )
    ends = (
        filtered(base, "threshold", "threshold_end")
        .mark_tick(color="black", thickness=2, size=8, opacity=1, yOffset=BAR_OFFSET)
        .encode(x=alt.X("x2:Q"))
    )
    return [interval, tick, ends]


def _cell_edges(lrs: list[float], i: int) -> tuple[float, float]:
    """A cell's edges on the log LR axis: halfway (geometrically) to its neighbours."""

    def mid(a, b):
        return math.sqrt(a * b)

    if len(lrs) == 1:
        return lrs[0] / 1.5, lrs[0] * 1.5
    lo = mid(lrs[i - 1], lrs[i]) if i > 0 else lrs[0] ** 2 / mid(lrs[0], lrs[1])
    hi = mid(lrs[i], lrs[i + 1]) if i + 1 < len(lrs) else lrs[-1] ** 2 / mid(lrs[-2], lrs[-1])
    return lo, hi
