"""The headline chart, final loss vs learning rate per rung (a depth or a width): its one data
table (every run, the seed medians and ranges, the arms' critical LRs, the necessity
threshold's bracket and the labels, stacked above the data) and the layers that draw it, with
the bigram baseline.

Drawn for the eye (issue 29): each run at the loss it ended with, its glyph its fate (ok,
unstable, stuck, diverged: a diverged run has no final loss and sits on the top edge); the line
through the seed median (a bimodal cell's mean is a loss no seed had); the arms a few pixels
apart along the LR axis (where arms coincide each still shows); a critical LR only where an arm
failed, as a diamond of the arm's colour on the bottom edge (stacked where arms share one; a
triangle is a run's fate, unstable);
the threshold as the bracket it is, a short bar above the data, not a shaded region.

The chart reads the typed analysis (sweeps/analysis/model.py's Analysis) by attribute;
final_loss and headline_rows take it. The shared helpers of figures/words/numbers.py and
figures/present.py still read a record's JSON form (adapter.record). The chart's own rows are
dicts (its data table)."""

from __future__ import annotations

import dataclasses

import altair as alt
import pandas as pd

from figures import present
from figures.charts.style import (
    BASELINE_COLOR,
    THRESHOLD_COLOR,
    arm_color,
    arm_dash,
    chart_title,
    dodge,
    filtered,
    finish,
    lr_axis,
    lr_scale,
    once,
    panel_width,
    rung_column,
)
from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.study import hypotheses, rules

FATE_SHAPES = {
    "ok": "circle",
    "unstable": "triangle-up",
    "stuck": "square",
    "diverged": "cross",
}
FATE_LABELS = {
    "ok": "ok",
    "unstable": "unstable (spike)",
    "stuck": "stuck (worse than bigram)",
    "diverged": "diverged (top edge)",
}
WIDE = 400  # px: a panel this wide also says each arm's fate in words


def final_loss(analysis: m.Analysis) -> alt.FacetChart | None:
    """Per rung: every run's effective final loss by fate, the seed median per arm with the
    range over seeds as a band, each failing arm's critical LR, the stability threshold's
    bracket, and the bigram baseline."""
    runs = pd.DataFrame([dataclasses.asdict(r) for r in analysis.runs if r.outcome])
    if runs.empty:
        return None
    arms = [a for a in analysis.settings.arms if a in set(runs.arm)]
    settings = analysis.settings
    base_loss = present.baselines(settings)  # {"bigram", "unigram", "rule"}
    bigram = base_loss["bigram"]
    low, high = _loss_range(runs, bigram)
    pad = 0.06 * max(high - low, 0.05)
    top = high + pad
    rung = present.ladder_of(analysis)
    depths = sorted({int(r) for r in runs[rung.field]})
    width = panel_width(len(depths))
    lrs = sorted(runs.lr.unique())
    shift = dodge(arms, lrs, width) if len(arms) > 1 else {a: 1.0 for a in arms}
    note = _baseline_note(base_loss, low - pad, top, wide=width >= WIDE)
    rows = headline_rows(analysis, top, note, shift, wide=width >= WIDE)
    ceiling = stack_labels(rows, low - pad, top)
    data = pd.DataFrame(rows)
    x = alt.X("x:Q", scale=lr_scale(lrs), axis=lr_axis(lrs, width))
    y_title = f"effective final loss ({present.loss_unit(settings)})"
    y_scale = alt.Scale(domain=[low - pad, ceiling], nice=False)
    y = alt.Y("y:Q", title=y_title, scale=y_scale)
    base = alt.Chart().encode(x=x)
    layers = _headline_layers(base, arms, y, y_scale, rung.field, label_width=width - 6)
    drawn = bigram is not None and low - pad <= bigram <= top  # else a label says where it is
    if drawn:
        layers += _bigram_layers(bigram)
    rule_off = " (its rule is off)" if base_loss["rule"] == "none" else ""
    return finish(
        alt.layer(*layers, data=data)
        .properties(width=width, height=260)
        .facet(column=rung_column(rung))
        .resolve_axis(x="independent")
        .properties(
            title=chart_title(
                "Final loss vs learning rate",
                "line: median over seeds; band: their range; glyph: each run's fate",
                "bottom diamond: an arm's critical LR (its runs fail from there); "
                "top bar: the threshold's bracket",
                *([f"dotted: the bigram baseline{rule_off}"] if drawn else []),
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


def _headline_layers(base, arms: list[str], y, y_scale, field: str, label_width=0) -> list:
    """The headline chart's layers over one data table, back to front: the arms' seed bands
    and medians, every run by fate, the critical LRs, the threshold's bracket, the labels (on
    top, so no mark hides them; cut to label_width px, so none reaches the next panel and
    every panel keeps its place)."""
    color = arm_color(arms)
    return [
        *_arm_layers(base, arms, color, y, y_scale, field),
        _run_layer(base, color, y, field),
        _critical_layer(base, color, y_scale, field),
        *_threshold_layers(base, y_scale, field),
        filtered(base, "label", "labels")
        .mark_text(align="left", dx=3, fontSize=10, baseline="top", limit=label_width)
        .encode(
            x=alt.X("x:Q"),
            y=alt.Y("y:Q", scale=y_scale),
            text="text:N",
            color=alt.value(THRESHOLD_COLOR),
        ),
    ]


def _threshold_layers(base, y_scale, field: str) -> list:
    """The stability threshold's bracket, (last LR not shown necessary, first from which it
    stays necessary], as a bar with end ticks above the data: where the threshold lies, not
    where QK-norm is needed."""
    tooltip = [
        f"{field}:O",
        alt.Tooltip("x_lo:Q", title="last LR not shown necessary", format=".3g"),
        alt.Tooltip("x_hi:Q", title="necessary from", format=".3g"),
    ]
    bar = (
        filtered(base, "threshold", "threshold")
        .mark_rule(color=THRESHOLD_COLOR, strokeWidth=2)
        .encode(x="x_lo:Q", x2="x_hi:Q", y=alt.Y("y:Q", scale=y_scale), tooltip=tooltip)
    )
    ends = (
        filtered(base, "threshold_end", "threshold_ends")
        .mark_tick(color=THRESHOLD_COLOR, orient="vertical", size=9, thickness=2, opacity=1)
        .encode(y=alt.Y("y:Q", scale=y_scale))
    )
    return [bar, ends]


def _arm_layers(base, arms: list[str], color, y, y_scale, field: str) -> list:
    """Per arm: the range over seeds as a band and the seed median as a line (dashed for an
    arm at another budget); the median is drawn capped at the top edge ('shown')."""
    dashes = arm_dash(arms)
    return [
        filtered(base, "cell", "band")
        .mark_area(opacity=0.15)
        .encode(y=y, y2="y_hi:Q", color=color),
        filtered(base, "cell", "median")
        .mark_line(strokeWidth=2)
        .encode(
            y=alt.Y("shown:Q", scale=y_scale),
            color=color,
            strokeDash=alt.StrokeDash(
                "arm:N", scale=alt.Scale(domain=arms, range=[dashes[a] for a in arms]), legend=None
            ),
            tooltip=[
                f"{field}:O",
                "arm:N",
                alt.Tooltip("lr:Q", title="lr"),
                alt.Tooltip("median:Q", title="seed median", format=".4f"),
                alt.Tooltip("mean:Q", title="seed mean", format=".4f"),
            ],
        ),
    ]


def _run_layer(base, color, y, field: str) -> alt.Chart:
    """Every run as a point, its shape its fate (ok, unstable, stuck, diverged)."""
    return (
        filtered(base, "run", "runs")
        .mark_point(size=42, filled=True, opacity=0.9)
        .encode(
            y=y,
            color=color,
            shape=alt.Shape(
                "fate:N",
                title="run",
                scale=alt.Scale(
                    domain=list(FATE_LABELS.values()), range=list(FATE_SHAPES.values())
                ),
                legend=alt.Legend(columns=2),
            ),
            tooltip=[
                "run_id:N",
                f"{field}:O",
                "arm:N",
                alt.Tooltip("lr:Q", title="lr"),
                "seed:O",
                "fate:N",
                alt.Tooltip("loss:Q", format=".4f"),
            ],
        )
    )


def _critical_layer(base, color, y_scale, field: str) -> alt.Chart:
    """Each failing arm's critical LR: a diamond of its colour on the bottom edge (a triangle
    is a run's fate, unstable), arms that share one stacked upwards."""
    return (
        filtered(base, "critical", "critical")
        .mark_point(shape="diamond", filled=True, size=60, opacity=1)
        .encode(
            y=alt.Y("y:Q", scale=y_scale),
            color=color,
            tooltip=[f"{field}:O", "arm:N", alt.Tooltip("lr:Q", title="critical LR", format=".3g")],
        )
    )


def _bigram_layers(bigram: float) -> list:
    """The bigram baseline as a dotted rule; the subtitle names it (a label inside the panel
    lay under the runs at the LRs where losses cross the baseline)."""
    return [
        once(
            alt.Chart()
            .mark_rule(strokeDash=[2, 2], color=BASELINE_COLOR)
            .encode(y=alt.datum(bigram)),
            "bigram",
        )
    ]


def _baseline_note(baseline: dict, low: float, top: float, wide: bool = True) -> str:
    """A label for a bigram baseline the axis does not reach ('' when drawn or unknown),
    short enough for a narrow panel when not `wide`."""
    b = baseline["bigram"]
    if b is None or low <= b <= top:
        return ""
    where = "below" if b < low else "above"
    off = baseline["rule"] == "none"
    if not wide:
        return f"bigram {b:.2f} {where}" + (", rule off" if off else "")
    return f"bigram {b:.2f}: {where} the axis" + (" (rule off)" if off else "")


def headline_rows(
    analysis: m.Analysis,
    top: float,
    note: str = "",
    shift: dict | None = None,
    wide: bool = True,
) -> list[dict]:
    """The headline chart's table: kind = run | cell | critical | threshold | threshold_end |
    label. `x` is where a mark is drawn (its LR moved by its arm's `shift`), `lr` the LR. A
    loss above `top` (a diverged run's) is capped there, so it is drawn on the top edge."""
    shift = shift or {}
    field = present.ladder_of(analysis).field
    settings = analysis.settings
    runs = [r for r in analysis.runs if r.outcome]
    rows = [_run_row(r, top, shift.get(r.arm, 1.0), settings, field) for r in runs]
    # every panel's labels start at the chart's lowest LR (a rung's own lowest LR lies further
    # right where it trains fewer LRs, and its labels ran into the next panel)
    left = min((r.lr for r in runs), default=1.0)
    for depth, d in analysis.depths.items():
        n = {field: int(depth)}  # the rung every row of this panel carries
        at = [r for r in runs if int(getattr(r, field)) == n[field]]
        rows += _cell_rows(n, d, at, top, shift)
        critical, labels = _critical_rows(n, d, analysis.settings.subset_arms, shift)
        rows += critical  # their y: stack_labels, one step up per arm sharing the LR
        threshold = _threshold_rows(n, hypotheses.primary(analysis, d), wide)
        if threshold is not None:
            bracket, label = threshold
            rows += bracket
            labels.insert(0, label)
        rows += _label_rows(n, labels if wide else labels[:1], note, left, top)
    return rows


def _run_row(r: m.Run, top: float, shift: float, settings: m.Settings, field: str) -> dict:
    """One run's glyph at its fate (present.fate) and effective loss."""
    fate = present.fate(r, settings)
    return {
        "kind": "run",
        field: int(getattr(r, field)),
        "arm": r.arm,
        "lr": r.lr,
        "x": r.lr * shift,
        "seed": r.seed,
        "fate": FATE_LABELS[fate],
        "run_id": r.run_id,
        "loss": r.loss,
        "y": min(r.loss, top),
    }


def _cell_rows(n: dict, d: m.Rung, at: list[m.Run], top: float, shift: dict) -> list[dict]:
    """One row per arm and LR with runs: the seed median and the range over seeds. A cell
    without runs here has nothing to draw."""
    rows = []
    for arm, a in d.arms.items():
        for c in a.cells:
            seeds = sorted(r.loss for r in at if r.arm == arm and r.lr == c.lr)
            if not seeds:
                continue
            k = len(seeds)
            median = (seeds[(k - 1) // 2] + seeds[k // 2]) / 2
            rows.append(
                {
                    "kind": "cell",
                    **n,
                    "arm": arm,
                    "lr": c.lr,
                    "x": c.lr * shift.get(arm, 1.0),
                    "mean": c.loss_mean,
                    "median": median,
                    "shown": min(median, top),
                    "y": min(seeds[0], top),
                    "y_hi": min(seeds[-1], top),
                }
            )
    return rows


def _critical_rows(n: dict, d: m.Rung, subset_arms, shift: dict) -> tuple[list[dict], list[tuple]]:
    """Each arm's critical LR where its runs failed inside the grid (an arm that never failed
    has none to draw; the subset arms have none worth drawing), and the labels that say each
    arm's fate, as (LR, text) so they sort by LR."""
    rows, fates = [], {}
    for arm, a in d.arms.items():
        median = a.eta_crit.median
        if arm in subset_arms or median is None or median.value is None:
            continue
        if median.kind == "":
            share = sum(1 for r in rows if r["lr"] == median.value)
            rows.append(
                {
                    "kind": "critical",
                    **n,
                    "arm": arm,
                    "lr": median.value,
                    "x": median.value,
                    "stack": share,
                }
            )
        fate = (
            f": {rules.failed_seeds(a.eta_crit)} of {len(a.eta_crit.seeds)} seeds fail "
            f"inside the grid, the median above {numbers.lr(median.value)}"
            if rules.median_hides_failures(a.eta_crit)
            else f": no failure up to {numbers.lr(median.value)}"
            if median.kind == "above"
            else f" fail{{s}} from {numbers.grid(median)}"
        )
        fates.setdefault((median.value, fate), []).append(arm)
    # Arms with the same fate share a line, its verb agreeing: 'off fails from 0.1', 'off and
    # on fail from 1.78', 'off and on: no failure up to 0.1'.
    labels = [
        (value, f"{_and(arms)}{fate.format(s='s' if len(arms) == 1 else '')}")
        for (value, fate), arms in fates.items()
    ]
    return rows, [text for _, text in sorted(labels)]


def _and(names: list[str]) -> str:
    """'off', 'off and on', 'off, on and off-warm'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _threshold_rows(n: dict, c: m.Comparison | None, wide: bool) -> tuple[list[dict], str] | None:
    """The primary comparison's stability threshold at this rung (c, None without one) as its
    bracket (a bar and its two ends), and its label; None when there is no bracket on the grid
    (QK-norm never needed, needed already at the lowest LR, or no comparison)."""
    if c is None or c.threshold.kind not in ("", "below"):
        return None
    lo, hi, _ = present.threshold_interval(c)
    if c.threshold.kind == "below" or lo is None:
        return (
            [],
            "QK-norm needed already at the lowest LR" if wide else "needed from the lowest LR",
        )
    bar = {"kind": "threshold", **n, "x": lo, "x_lo": lo, "x_hi": hi}
    ends = [{"kind": "threshold_end", **n, "x": x, "lr": x} for x in (lo, hi)]
    bracket = f"({numbers.lr(lo)}, {numbers.lr(hi)}]"
    text = (
        f"threshold in {bracket}: QK-norm needed from {numbers.lr(hi)} up"
        if wide
        else f"threshold {bracket}"
    )
    return [bar, *ends], text


def _label_rows(n: dict, labels: list[str], note: str, x: float, top: float) -> list[dict]:
    """The labels (the threshold's first), then the note; `row` numbers the lines for
    stack_labels."""
    # Labels stack at the panel's top left, so none can leave the panel on the right.
    texts = labels + ([note] if note else [])
    return [
        {"kind": "label", **n, "x": x, "y": top, "text": text, "row": i}
        for i, text in enumerate(texts)
    ]


def stack_labels(rows: list[dict], low: float, top: float) -> float:
    """Stack the label rows above the data (above `top`, where diverged runs sit), one line
    per 6% of the axis, with the threshold's bracket on a line of its own below them; the
    critical-LR triangles one step (3% of the axis) apart from `low` up. Returns the axis'
    new top."""
    lines = max((r["row"] + 1 for r in rows if r["kind"] == "label"), default=0)
    bracket = any(r["kind"] == "threshold" for r in rows)
    lines += bracket
    step = 0.06 * (top - low) / max(1 - 0.06 * lines, 0.4)
    ceiling = top + step * (lines + 0.2)
    for r in rows:
        if r["kind"] == "label":
            r["y"] = ceiling - step * (r.pop("row") + 0.1)
        elif r["kind"] in ("threshold", "threshold_end"):
            r["y"] = top + step * 0.6
        elif r["kind"] == "critical":
            r["y"] = low + step * (0.35 + 0.5 * r.pop("stack"))
    return ceiling
