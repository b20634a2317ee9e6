"""The training-dynamics charts, drawn from the curves rather than the analysis: train loss
over steps, and the diagnostics at the eval steps (attention logit and entropy, residual
kurtosis). The curves carry each run's depth and width (sweeps.analysis.results.RUN_KEYS); the
charts facet by the sweep's rung, the ladder they are given (sweeps/core/ladder.py)."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from figures.charts.style import (
    LR_HEADER,
    STEP_X,
    arm_color,
    chart_title,
    dodge,
    filtered,
    finish,
    interleaved,
    log_axis,
    lr_axis,
    lr_scale,
    once,
    panel_width,
    rung_column,
    rung_row,
)
from sweeps.core.ladder import DEFAULT_LADDER, Ladder

CURVE_POINTS = 40  # training curves are averaged into this many step bins per run


def training_curves(
    curves: pd.DataFrame,
    arms: list[str],
    lrs: list[float],
    y_max: float,
    outcomes: dict | None = None,
    unit: str = "nats/token",
    rung: Ladder = DEFAULT_LADDER,
) -> alt.FacetChart | None:
    """Train loss over steps at a few LRs, one line per run, rows = rung, columns = LR. A
    diverged run's line ends with a cross where it stopped (on the top edge if above it)."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=["train_loss"])
    if data.empty:
        return None
    data = _binned(data, rung.field)
    low = float(data.train_loss.min()) * 0.95
    data = _short_runs(_with_diverged_ends(data.assign(kind="curve"), outcomes or {}))
    arms_here = [a for a in arms if a in set(data.arm)]
    y = alt.Y(
        "shown:Q", title=f"train loss ({unit})", scale=alt.Scale(domain=[low, y_max], nice=False)
    )
    base = (
        alt.Chart()
        .encode(x=STEP_X, color=arm_color(arms_here))
        .transform_calculate(shown=f"min(datum.train_loss, {y_max!r})")
    )  # above the top: drawn on the edge
    lines = (
        filtered(base, "curve", "curves")
        .mark_line(strokeWidth=1.2, opacity=0.85)
        .encode(
            y=y,
            detail="run:N",
            tooltip=["run:N", f"{rung.field}:O", "lr:Q", alt.Tooltip("train_loss:Q", format=".4f")],
        )
    )
    n_cols = data.lr.nunique()
    # Runs that stop at one step and loss: each cross a few pixels apart, by arm.
    per_px = float(data.step.max()) / panel_width(n_cols)
    middle = (len(arms_here) - 1) / 2
    place = {a: (i - middle) * 4 * per_px for i, a in enumerate(arms_here)}
    data["at"] = data.step + data.arm.map(place).where(data.kind == "diverged", 0.0)
    crosses = (
        filtered(base, "diverged", "diverged")
        .mark_point(shape="cross", filled=True, size=70, opacity=1)
        .encode(
            x=alt.X("at:Q", title="optimizer step"),
            y=y,
            tooltip=["run:N", f"{rung.field}:O", "lr:Q", alt.Tooltip("step:Q", title="stopped at")],
        )
    )

    def panels(part: pd.DataFrame):
        return alt.layer(lines, *seen(base, arms_here, "curves", y), crosses, data=part).properties(
            width=panel_width(n_cols), height=130
        )

    return finish(
        present_panels(
            panels,
            data,
            (rung.field, rung_row(rung)),
            ("lr", alt.Column("lr:O", title=None, header=LR_HEADER)),
        ).properties(
            title=chart_title(
                "Training curves at a few learning rates",
                "one line per run; +: where a run that diverged stopped",
            )
        )
    )


def seen(base, arms: list[str], name: str, y, **encode) -> list:
    """Each arm's lines again in interleaved dashes (style.interleaved), over every arm's
    solid lines: where the arms' lines coincide each still shows, dash by dash."""
    if len(arms) < 2:
        return []
    kw = {"detail": "run:N", **encode}
    return [
        base.transform_filter(alt.datum.arm == arm)
        .properties(name=f"{name}__{i}")
        .mark_line(strokeWidth=1.2, strokeDash=dash, strokeDashOffset=offset)
        .encode(y=y, **kw)
        for i, (arm, (dash, offset)) in enumerate(interleaved(arms).items())
    ]


def _binned(data: pd.DataFrame, field: str) -> pd.DataFrame:
    """Each run's train loss averaged into at most CURVE_POINTS step bins: a readable line
    and a small inline dataset for long runs."""
    width = max(1, math.ceil(int(data.step.max()) / CURVE_POINTS))
    return (
        data.assign(bin=data.step // width)
        .groupby(["run_id", "arm", field, "lr", "seed", "bin"], as_index=False)
        .agg(step=("step", "mean"), train_loss=("train_loss", "mean"))
        .drop(columns="bin")
        .round({"step": 1, "train_loss": 4})
    )


def _with_diverged_ends(data: pd.DataFrame, outcomes: dict) -> pd.DataFrame:
    """The curve rows, then each diverged run's last point again as kind 'diverged' (the
    cross that marks where it stopped)."""
    ends = data.sort_values("step").drop_duplicates("run_id", keep="last")
    ends = ends[ends.run_id.map(outcomes.get) == "diverged"].assign(kind="diverged")
    return pd.concat([data, ends], ignore_index=True)


def diagnostic(
    curves: pd.DataFrame,
    arms: list[str],
    field: str,
    lrs: list[float],
    y_title: str,
    log: bool,
    width: int | None = None,
    rung: Ladder = DEFAULT_LADDER,
) -> alt.FacetChart | None:
    """A diagnostic over training at the eval steps, one line per run; rows = LR, cols = rung."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=[field])
    if log:
        data = data[data[field] > 0]
    if data.empty:
        return None
    data = _short_runs(data[["run_id", "arm", rung.field, "lr", "seed", "step", field]])
    data[field] = data[field].map(lambda v: float(f"{v:.4g}"))
    depths = data[rung.field].nunique()
    y = alt.Y(
        f"{field}:Q",
        scale=alt.Scale(type="log") if log else alt.Scale(zero=False),
        axis=log_axis(data[field], y_title) if log else alt.Axis(title=y_title),
    )
    arms_here = [a for a in arms if a in set(data.arm)]
    base = alt.Chart().encode(x=STEP_X, color=arm_color(arms_here))
    lines = (
        base.mark_line(strokeWidth=1.2)
        .encode(
            y=y,
            detail="run:N",
            tooltip=[
                "run:N",
                f"{rung.field}:O",
                "lr:Q",
                "step:Q",
                alt.Tooltip(f"{field}:Q", format=".4g"),
            ],
        )
        .properties(name=field)
    )

    def panels(part: pd.DataFrame):
        return alt.layer(lines, *seen(base, arms_here, field, y), data=part).properties(
            width=width or panel_width(depths), height=140
        )

    if data.lr.nunique() > 1:
        return present_panels(
            panels,
            data,
            ("lr", alt.Row("lr:O", title=None, header=LR_HEADER)),
            (rung.field, rung_column(rung)),
        )
    return panels(data).facet(column=rung_column(rung))


def present_panels(panels, data: pd.DataFrame, row: tuple, column: tuple):
    """panels(data) in a grid of rows and columns, (field, encoding) each, with no empty
    panel: where every row has every column, one facet; where some row lacks a column (a
    ladder's rung trained on a subset of the LRs, [rung_lr]), each row faceted by the columns
    it has, the rows stacked. Vega-Lite's facet crosses rows and columns and would draw each
    missing one as an empty panel."""
    (row_field, row_encoding), (column_field, column_encoding) = row, column
    rows = sorted(set(data[row_field]))
    columns = set(data[column_field])
    held = {r: set(data[data[row_field] == r][column_field]) for r in rows}
    if all(held[r] == columns for r in rows):
        return panels(data).facet(row=row_encoding, column=column_encoding)
    return alt.vconcat(
        *(
            _renamed(panels(data[data[row_field] == r]), f"__row{i}").facet(
                row=row_encoding, column=column_encoding
            )
            for i, r in enumerate(rows)
        )
    )


def _renamed(chart: alt.LayerChart, suffix: str) -> alt.LayerChart:
    """The layers' names with a suffix: a name is one view's, so the stacked rows of
    present_panels each need their own ('curves__row1'; a reader strips it)."""
    chart = chart.copy(deep=True)
    for layer in chart.layer:
        name = getattr(layer, "name", alt.Undefined)
        if isinstance(name, str):
            layer.name = name + suffix
    return chart


def attention(
    curves: pd.DataFrame,
    arms: list[str],
    lr: float,
    capped: dict | None = None,
    rung: Ladder = DEFAULT_LADDER,
) -> alt.VConcatChart | None:
    """Max attention logit and entropy over training at one LR; capped: {arm: soft cap} for
    the arms whose logits a soft cap bounds (their max logit is measured before the cap)."""
    logit = diagnostic(curves, arms, "max_attn_logit", [lr], "max attention logit", True, rung=rung)
    entropy = diagnostic(
        curves, arms, "attn_entropy", [lr], "attention entropy (nats)", False, rung=rung
    )
    parts = [c for c in (logit, entropy) if c is not None]
    if not parts:
        return None
    return finish(
        alt.vconcat(*parts).properties(
            title=chart_title(
                f"Attention over training at LR {lr:.3g}",
                "top: max attention logit (log); bottom: attention entropy",
                *(
                    [
                        "the max logit of "
                        + ", ".join(f"{a} (cap {c:g})" for a, c in sorted(capped.items()))
                        + " is before the cap: attention sees at most the cap"
                    ]
                    if capped
                    else []
                ),
            )
        )
    )


CEILING_FIELDS = ("qk_logit_ceiling", "qk_ceiling_use")


def _evaluations(curves: pd.DataFrame, fields) -> pd.api.typing.DataFrameGroupBy | None:
    """Each run's evaluations that recorded every one of `fields`, in step order, grouped by
    run; None when no run recorded them."""
    if not set(fields) <= set(curves):
        return None
    data = curves.dropna(subset=list(fields)).sort_values(["run_id", "step"])
    return None if data.empty else data.groupby("run_id", sort=True)


def _ends(runs, rung: Ladder, **values) -> pd.DataFrame:
    """One row per run: its keys at its last evaluation and `values` (columns keyed by run)."""
    last = runs.tail(1).set_index("run_id")
    keys = ["arm", rung.field, "lr", "seed", "step"]
    return last[keys].assign(**values).reset_index()


def ceiling_ends(curves: pd.DataFrame, rung: Ladder = DEFAULT_LADDER) -> pd.DataFrame:
    """Per run with a QK-norm logit ceiling (docs/STUDY.md section 20): its growth over training,
    the ceiling at the last evaluation over the one at the first (the gain product's growth; 1:
    the gains as initialized), and the share of the ceiling attention uses at the last
    evaluation (each layer's max logit over its own ceiling, the most of any layer)."""
    runs = _evaluations(curves, CEILING_FIELDS)
    if runs is None:
        return pd.DataFrame()
    first, last = runs.head(1).set_index("run_id"), runs.tail(1).set_index("run_id")
    return _ends(
        runs,
        rung,
        growth=last.qk_logit_ceiling / first.qk_logit_ceiling,
        use=last.qk_ceiling_use,
        ceiling=last.qk_logit_ceiling,
    )


def ceiling(
    curves: pd.DataFrame,
    arms: list[str],
    rung: Ladder = DEFAULT_LADDER,
    outcomes: dict | None = None,
) -> alt.VConcatChart | None:
    """QK-norm's logit ceiling at the end of training against the LR, for the arms with QK-norm:
    top, how far the gains grew it (log; 1 = as initialized); bottom, how much of it attention
    uses (1 = the bound binds). A dot per run (arms a few pixels apart where they coincide),
    the line through the seed medians (interleaved dashes over coinciding lines); columns by
    rung."""
    ends = ceiling_ends(curves, rung)
    if ends.empty:
        return None
    top = max(1.0, float(ends.use.max())) * 1.05
    growth = pd.concat([ends.growth, pd.Series([1.0])])
    rows = {
        "growth": (
            alt.Scale(type="log"),
            log_axis(growth, "ceiling growth (end / start)"),
            1.0,
        ),
        "use": (
            alt.Scale(domain=[0, top], nice=False),
            alt.Axis(title="max logit / ceiling at the end"),
            1.0,
        ),
    }
    return _ends_vs_lr(
        ends,
        arms,
        rung,
        rows,
        outcomes,
        "QK-norm's logit ceiling at the end of training",
        "ceiling: sqrt(head width) x the largest q gain x k gain; no logit passes it",
        "top: its growth over training (1: the gains as initialized)",
        "bottom: the share attention uses (1: the bound binds); dots: runs, line: median",
    )


ATTENTION_FIELDS = ("max_attn_logit", "attn_entropy")


def attention_ends(curves: pd.DataFrame, rung: Ladder = DEFAULT_LADDER) -> pd.DataFrame:
    """Per run with attention diagnostics: the largest max attention logit of any evaluation
    (`peak`: how far the logits grew at any time) and the attention entropy at the last one
    (`entropy`: how sharp attention ended; a run that diverged, its last before it stopped)."""
    runs = _evaluations(curves, ATTENTION_FIELDS)
    if runs is None:
        return pd.DataFrame()
    last = runs.tail(1).set_index("run_id")
    return _ends(runs, rung, peak=runs.max_attn_logit.max(), entropy=last.attn_entropy)


def attention_vs_lr(
    curves: pd.DataFrame,
    arms: list[str],
    rung: Ladder = DEFAULT_LADDER,
    outcomes: dict | None = None,
) -> alt.VConcatChart | None:
    """Attention against the LR, every arm (docs/STUDY.md section 20's mechanism at every LR,
    where the attention chart shows one LR over training): top, the largest max attention
    logit any evaluation saw (log); bottom, the attention entropy at the end. A dot per run,
    the line through the seed medians; columns by rung. A run that diverged before its first
    evaluation after the start has only its starting values: it is not drawn (it would sit at
    its starting logit, below every trained run), and the subtitle says how many."""
    ends = attention_ends(curves, rung)
    if ends.empty:
        return None
    unseen = ends.step <= 0  # its last evaluation with attention diagnostics is its first
    ends = ends[~unseen]
    if ends.empty:
        return None
    rows = {
        "peak": (alt.Scale(type="log"), log_axis(ends.peak, "peak max attention logit"), None),
        "entropy": (
            alt.Scale(zero=True),
            alt.Axis(title="attention entropy at the end (nats)"),
            None,
        ),
    }
    title = "Attention against the learning rate"
    peak = "top: the largest max attention logit over training (log)"
    entropy = "bottom: attention entropy at the end (low: sharp); dots: runs, line: median"
    lines = [title, peak, entropy]
    if unseen.any():
        n = int(unseen.sum())
        runs = f"{n} runs that diverged before their" if n > 1 else "1 run that diverged before its"
        lines.append(
            f"not drawn: {runs} first evaluation after the start (no attention measured while "
            "training)"
        )
    return _ends_vs_lr(ends, arms, rung, rows, outcomes, *lines)


# a run's glyph at the end of training: a diverged run's values are its last evaluation's,
# before it stopped, drawn apart (the headline chart's cross)
TRAINED, STOPPED = "trained to the end", "diverged: its last evaluation"


def _ends_vs_lr(
    ends: pd.DataFrame, arms: list[str], rung: Ladder, rows: dict, outcomes: dict, *title: str
):
    """Per-run values at the end of training against the LR, one panel row per field (rows:
    {field: (scale, axis, a reference value drawn dashed or None)}), columns by rung: a glyph
    per run (arms a few pixels apart where they coincide; a cross where it diverged, by
    outcomes {run_id: outcome}: its values are its last evaluation's), the line through the
    seed medians (interleaved dashes over coinciding lines). Medians over the seeds that
    trained alone were tried: where most seeds diverge the lines grow so short that arms which
    coincide no longer show (tests/test_charts_read.py). title: the title and subtitle."""
    stopped = ends.run_id.map(outcomes or {}).eq("diverged")
    ends = _short_runs(ends.assign(fate=stopped.map({True: STOPPED, False: TRAINED})))
    arms_here = [a for a in arms if a in set(ends.arm)]
    lrs = sorted(set(ends.lr))
    width = panel_width(ends[rung.field].nunique())
    shift = dodge(arms_here, lrs, width) if len(arms_here) > 1 else dict.fromkeys(arms_here, 1.0)
    fields = list(rows)
    medians = (
        ends.groupby(["arm", rung.field, "lr"], as_index=False)[fields]
        .median()
        .assign(kind="median", x=lambda d: d.lr)
    )
    data = pd.concat(
        [ends.assign(kind="run", x=ends.lr * ends.arm.map(shift)), medians], ignore_index=True
    )
    x = alt.X("x:Q", scale=lr_scale(lrs), axis=lr_axis(lrs, width))

    def panel(field: str, scale, axis, reference) -> alt.FacetChart:
        y = alt.Y(f"{field}:Q", scale=scale, axis=axis)
        base = alt.Chart().encode(x=x, color=arm_color(arms_here))
        line = filtered(base, "median", f"{field}_medians")
        lines = [line.mark_line(strokeWidth=1.5).encode(y=y, detail="arm:N")]
        lines += seen(line, arms_here, f"{field}_medians", y, detail="arm:N")
        dots = (
            filtered(base, "run", f"{field}_runs")
            .mark_point(filled=True, size=28, opacity=0.85)
            .encode(
                y=y,
                shape=alt.Shape(
                    "fate:N",
                    scale=alt.Scale(domain=[TRAINED, STOPPED], range=["circle", "cross"]),
                    legend=alt.Legend(title="run", orient="bottom"),
                ),
                tooltip=[
                    "run:N",
                    f"{rung.field}:O",
                    "lr:Q",
                    "fate:N",
                    alt.Tooltip(f"{field}:Q", format=".3g"),
                ],
            )
        )
        refs = []
        if reference is not None:
            rule = alt.Chart().mark_rule(strokeDash=[4, 3], color="#777")
            refs = [once(rule.encode(y=alt.datum(reference)), f"{field}_one")]
        return (
            alt.layer(*refs, *lines, dots, data=data)
            .properties(width=width, height=150)
            .facet(column=rung_column(rung))
        )

    diverged = "a cross: a run that diverged, at its last evaluation before it stopped"
    return finish(
        alt.vconcat(*(panel(f, *spec) for f, spec in rows.items())).properties(
            title=chart_title(*title, diverged)
        )
    )


def kurtosis(
    curves: pd.DataFrame, arms: list[str], lrs: list[float], rung: Ladder = DEFAULT_LADDER
) -> alt.FacetChart | None:
    chart = diagnostic(curves, arms, "resid_kurtosis", lrs, "residual kurtosis", True, rung=rung)
    return (
        None
        if chart is None
        else finish(
            chart.properties(
                title=chart_title(
                    "Residual-stream kurtosis over training",
                    f"the spikiest layer; rows: the lowest LR and LR {max(lrs):.3g}",
                )
            )
        )
    )


def _short_runs(df: pd.DataFrame) -> pd.DataFrame:
    """A run named by arm and seed ('off s0'), unique within a panel of one rung and LR:
    the curves' rows stay short (the run id would repeat in every row)."""
    run = df.arm.astype(str) + " s" + df.seed.astype(int).astype(str)
    return df.drop(columns=["run_id", "arm", "seed"]).assign(run=run, arm=df.arm)
