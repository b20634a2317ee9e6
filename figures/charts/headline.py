"""The headline chart, final loss vs learning rate per depth: its one data table (every run,
the seed means and ranges, the arms' critical LRs, the necessity threshold and the labels,
stacked above the data) and the layers that draw it, with the bigram baseline."""

from __future__ import annotations

import altair as alt
import pandas as pd

from figures import fmt, present
from figures.charts.style import (
    BASELINE_COLOR,
    DEPTH,
    MARKS,
    THRESHOLD_COLOR,
    arm_color,
    chart_title,
    filtered,
    finish,
    lr_axis,
    lr_scale,
    once,
    panel_width,
)


def final_loss(analysis: dict) -> alt.FacetChart | None:
    """Per depth: every run's effective final loss by outcome, the seed mean per arm with the
    range over seeds as a band, each arm's critical LR, the necessity threshold with its
    interval, and the bigram baseline. Failed runs (diverged or unstable) count at their loss
    at initialization; diverged ones are drawn on the top edge, the axis stopping a little above
    the runs that finished."""
    runs = pd.DataFrame([r for r in analysis["runs"] if r["outcome"]])
    if runs.empty:
        return None
    arms = [a for a in analysis["settings"]["arms"] if a in set(runs.arm)]
    base_loss = present.baselines(analysis)
    bigram = base_loss["bigram"]
    low, high = _loss_range(runs, bigram)
    pad = 0.06 * max(high - low, 0.05)
    top = high + pad
    rows = headline_rows(analysis, top, _baseline_note(base_loss, low - pad, top))
    ceiling = stack_labels(rows, low - pad, top)
    data = pd.DataFrame(rows)
    lrs = sorted(runs.lr.unique())
    x = alt.X("x:Q", scale=lr_scale(lrs), axis=lr_axis(lrs))
    y_title = "effective final loss (nats/token)"
    y_scale = alt.Scale(domain=[low - pad, ceiling], nice=False)
    y = alt.Y("y:Q", title=y_title, scale=y_scale)
    base = alt.Chart().encode(x=x)
    layers = _headline_layers(base, arm_color(arms), y, y_scale)
    if bigram is not None and low - pad <= bigram <= top:  # else a label says where it is
        layers += _bigram_layers(
            bigram, base_loss["rule"] == "none", panel_width(data.n_layer.nunique())
        )
    depths = sorted(data.n_layer.unique())
    return finish(
        alt.layer(*layers, data=data)
        .properties(width=panel_width(len(depths)), height=260)
        .facet(column=DEPTH)
        .properties(
            title=chart_title(
                "Final loss vs learning rate",
                "band: range over seeds; dashed: critical LR per arm; "
                "grey: the necessity threshold's bracket",
            )
        )
    )


def _loss_range(runs: pd.DataFrame, bigram: float | None) -> tuple[float, float]:
    """The loss range the y axis must show: the finished runs (a diverged run's loss at
    initialization would squash them; it is drawn on the top edge instead), stretched to a
    bigram baseline that lies among or a little above them."""
    finished = runs[runs.outcome != "diverged"].loss
    low = float(finished.min()) if not finished.empty else float(runs.loss.min())
    high = float(finished.max()) if not finished.empty else float(runs.loss.max())
    if bigram is not None and low - 2 * max(high - low, 0.05) <= bigram <= high:
        low = min(low, bigram)
    elif bigram is not None and high < bigram <= high + 0.25 * max(high - low, 0.05):
        high = bigram  # just above the runs: draw it rather than say "above the axis"
    return low, high


def _headline_layers(base, color, y, y_scale) -> list:
    """The headline chart's layers over one data table, back to front: the threshold band
    and line, the arms' critical LRs, seed bands and means, every run by outcome, the
    labels (on top, so no mark hides them)."""
    return [
        *_threshold_layers(base),
        *_arm_layers(base, color, y, y_scale),
        _run_layer(base, color, y),
        filtered(base, "label", "labels")
        .mark_text(align="left", dx=3, fontSize=10, baseline="top")
        .encode(y=alt.Y("y:Q", scale=y_scale), text="text:N", color=alt.value(THRESHOLD_COLOR)),
    ]


def _threshold_layers(base) -> list:
    """The necessity threshold as a grey rule over the band of its bracket."""
    return [
        filtered(base, "threshold", "threshold_band")
        .mark_rect(color=THRESHOLD_COLOR, opacity=0.12)
        .encode(x="x_lo:Q", x2="x_hi:Q"),
        filtered(base, "threshold", "threshold")
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
    ]


def _arm_layers(base, color, y, y_scale) -> list:
    """Per arm: its critical LR dashed, the range over seeds as a band and the seed mean as
    a line. The mean is drawn capped at the top edge ('shown') like the runs."""
    return [
        filtered(base, "critical", "critical")
        .mark_rule(strokeDash=[6, 3], strokeWidth=1.5)
        .encode(
            color=color,
            tooltip=["n_layer:O", "arm:N", alt.Tooltip("x:Q", title="critical LR", format=".3g")],
        ),
        filtered(base, "cell", "band")
        .mark_area(opacity=0.18)
        .encode(y=y, y2="y_hi:Q", color=color),
        filtered(base, "cell", "mean")
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
    ]


def _run_layer(base, color, y) -> alt.Chart:
    """Every run as a point, its shape the outcome (ok, unstable, diverged)."""
    return (
        filtered(base, "run", "runs")
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
        )
    )


def _bigram_layers(bigram: float, rule_off: bool, width: float) -> list:
    """The bigram baseline as a dotted rule with its label at the right edge."""
    return [
        once(
            alt.Chart()
            .mark_rule(strokeDash=[2, 2], color=BASELINE_COLOR)
            .encode(y=alt.datum(bigram)),
            "bigram",
        ),
        once(
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
    """The headline chart's table: kind = run | cell | critical | threshold | label. A loss
    above `top` (a diverged run's) is capped there, so it is drawn on the top edge."""
    runs = [r for r in analysis["runs"] if r["outcome"]]
    rows = [_run_row(r, top) for r in runs]
    for depth, d in analysis["depths"].items():
        n = int(depth)
        at = [r for r in runs if int(r["n_layer"]) == n]
        rows += _cell_rows(n, d, at, top)
        critical, labels = _critical_rows(n, d, analysis["settings"]["subset_arms"])
        rows += critical
        threshold = _threshold_row(n, d, present.primary_key(analysis))
        if threshold is not None:
            row, label = threshold
            rows.append(row)
            labels.append(label)
        lrs = sorted({r["lr"] for r in at})
        rows += _label_rows(n, labels, note, lrs[0] if lrs else 1.0, top)
    return rows


def _run_row(r: dict, top: float) -> dict:
    return {
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


def _cell_rows(n: int, d: dict, at: list[dict], top: float) -> list[dict]:
    """One row per arm and LR with runs: the seed mean and the range over seeds. A cell
    without a mean or without runs here has nothing to draw."""
    rows = []
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
    return rows


def _critical_rows(n: int, d: dict, subset_arms) -> tuple[list[dict], list[tuple]]:
    """Each arm's critical LR (the subset arms have none worth drawing) and the labels that
    say each arm's fate, as (LR, text) so they sort by LR."""
    rows, fates = [], {}
    for arm, a in d["arms"].items():
        median = a["eta_crit"]["median"]
        if arm in subset_arms or not median or median["value"] is None:
            continue
        rows.append({"kind": "critical", "n_layer": n, "arm": arm, "x": median["value"]})
        fate = (
            f"no failure up to {fmt.lr(median['value'])}"
            if median["kind"] == "above"
            else f"fails from {fmt.grid(median)}"
        )
        fates.setdefault((median["value"], fate), []).append(arm)
    # Arms with the same fate share a line: 'off, on: no failure up to 0.1'.
    labels = [
        (value, f"{', '.join(arms)}{':' if fate.startswith('no') else ''} {fate}")
        for (value, fate), arms in fates.items()
    ]
    return rows, labels


def _threshold_row(n: int, d: dict, key: str) -> tuple[dict, tuple] | None:
    """The primary comparison's necessity threshold at this depth with its bracket, and its
    label; None when there is none on the grid (QK-norm never needed, or no comparison)."""
    c = d["comparisons"].get(key)
    if not c or c["threshold"]["kind"] not in ("", "below"):
        return None
    t = c["threshold"]["value"]
    lo, hi, label = present.threshold_interval(c, d)
    row = {
        "kind": "threshold",
        "n_layer": n,
        "x": t,
        "interval": label,
        "x_lo": lo if lo is not None else t,
        "x_hi": hi if hi is not None else t,
    }
    text = (
        "QK-norm needed already at the lowest LR"
        if c["threshold"]["kind"] == "below"
        else f"QK-norm needed from {fmt.lr(c['threshold']['bracket'][1])} up"
    )
    return row, (t, text)


def _label_rows(n: int, labels: list[tuple], note: str, x: float, top: float) -> list[dict]:
    """The labels in LR order, then the note; `row` numbers the lines for stack_labels."""
    # Labels stack at the panel's top left, so none can leave the panel on the right.
    texts = [text for _, text in sorted(labels)] + ([note] if note else [])
    return [
        {"kind": "label", "n_layer": n, "x": x, "y": top, "text": text, "row": i}
        for i, text in enumerate(texts)
    ]


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
