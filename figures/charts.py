"""Altair charts of the study, and their export as PNG, SVG, self-contained HTML and JSON spec.

One colour for QK-norm off and one for on in every chart; a sweep with a second
normalisation (layernorm beside rms) shows it in a lighter shade of the "on" colour.
Charts take prepared tables (figures.metrics) and return a chart, or None when the sweep
has no data for it.
"""
from __future__ import annotations

import json
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import vl_convert as vlc

from figures.results import qk_key
from sweeps.norms import qk_norm

# Thresholds are drawn in greys, one per "on" kind in legend order (colours are the arms').
THRESHOLD_GREYS = ("#333333", "#999999", "#666666", "#BBBBBB")
LR_AXIS = "peak learning rate (log scale)"
DEPTH_HEADER = alt.Header(labelExpr="'depth n_layer = ' + datum.value", labelFontSize=12,
                          labelFontWeight="bold")
DEPTH = alt.Column("n_layer:O", title=None, header=DEPTH_HEADER)
DEPTH_X = alt.X("n_layer:O", title="depth (n_layer)", axis=alt.Axis(labelAngle=0))
STEP_X = alt.X("step:Q", title="optimizer step")
VL_VERSION = "_".join(alt.SCHEMA_VERSION.split(".")[:2])  # 'v6_4': the library altair targets
PANEL = {"width": 250, "height": 170}
CURVE_POINTS = 100  # training curves are averaged into this many step bins per run


def _title(text: str, *subtitle: str) -> alt.TitleParams:
    return alt.TitleParams(text, subtitle=list(subtitle), anchor="start")


def _qk_order(values) -> list[str]:
    return sorted(set(values), key=qk_key)


def _qk_color(df: pd.DataFrame) -> alt.Color:
    """Colour by qk_norm, legend 'off' / 'on (rms)'; symbols opaque even for translucent marks."""
    domain = _qk_order(df.qk_norm)
    return alt.Color("qk_norm:N", sort=domain, scale=alt.Scale(
        domain=domain, range=[qk_norm(q).color for q in domain]),
        legend=alt.Legend(title="QK-norm", symbolOpacity=1, labelExpr=(
            "datum.label == 'none' ? 'off' : 'on (' + datum.label + ')'")))


def _by_qk(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows in legend order: off first, then rms, then layernorm (stable within)."""
    order = _qk_order(df[column])
    return df.sort_values(column, key=lambda s: s.map(order.index), kind="stable")


def _lr_label(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A readable 'LR 0.00316' facet label and the labels in LR order."""
    labels = {lr: f"LR {lr:.3g}" for lr in sorted(df.lr.unique())}
    return df.assign(lr_label=df.lr.map(labels)), list(labels.values())


def final_loss(done: pd.DataFrame) -> alt.FacetChart:
    """Final val loss vs LR per depth: seed mean (line), seed range (band), every run (points)."""
    data = done[["run_id", "qk_norm", "n_layer", "lr", "seed", "status", "loss"]].assign(
        outcome=done.status.map({"ok": "finished", "diverged": "diverged (at init loss)"}))
    y_title = "final validation loss (nats/token)"
    # Ticks at the swept LRs, short labels: 3e-4, 1e-3, ..., 1.
    lr_axis = alt.Axis(values=sorted(data.lr.unique()), labelExpr=(
        "datum.value >= 1 ? format(datum.value, '~g') : format(datum.value, '.0e')"))
    base = alt.Chart(data).encode(
        x=alt.X("lr:Q", scale=alt.Scale(type="log"), title=LR_AXIS, axis=lr_axis),
        color=_qk_color(data))
    ok = base.transform_filter(alt.datum.status == "ok")
    band = ok.mark_area(opacity=0.2).encode(
                y=alt.Y("min(loss):Q", title=y_title, scale=alt.Scale(zero=False, padding=8)),
        y2="max(loss):Q")
    line = ok.mark_line().encode(y=alt.Y("mean(loss):Q", title=y_title))
    points = base.mark_point(size=45, filled=True, opacity=0.8).encode(
        y=alt.Y("loss:Q", title=y_title),
        shape=alt.Shape("outcome:N", title="run", scale=alt.Scale(
            domain=["finished", "diverged (at init loss)"], range=["circle", "cross"])),
        tooltip=["run_id", "qk_norm", "n_layer", "lr", "seed", "status",
                 alt.Tooltip("loss:Q", format=".4f")])
    return alt.layer(band, line, points).properties(**PANEL).facet(column=DEPTH).properties(
        title=_title("Final validation loss vs learning rate, QK-norm on and off",
                     "Line: mean over finished seeds; band: seed range; crosses: diverged runs, "
                     "drawn at their loss at initialization."))


def stability_vs_depth(stable: pd.DataFrame, thresholds: pd.DataFrame) -> alt.LayerChart | None:
    """Max stable LR per arm (seed range) and the necessity threshold (bootstrap interval)."""
    rows = []
    for r in _by_qk(stable, "qk_norm").itertuples():
        if np.isfinite(r.max_stable_lr):  # NaN: below the grid, shown in the table instead
            arm = qk_norm(r.qk_norm).display
            rows.append({"series": f"max stable LR, {arm}", "color": qk_norm(r.qk_norm).color,
                         "n_layer": r.n_layer, "value": r.max_stable_lr, "lo": r.seed_lo,
                         "hi": r.seed_hi, "top": bool(r.at_top)})
    # An inf threshold (necessary at no swept LR) is drawn at the depth's top LR: a bound.
    greys = {arm: THRESHOLD_GREYS[i % len(THRESHOLD_GREYS)]
             for i, arm in enumerate(_qk_order(thresholds.on_arm))}
    for r in _by_qk(thresholds, "on_arm").itertuples():
        rows.append({"series": f"necessity threshold (vs {r.on_arm})",
                     "color": greys[r.on_arm], "n_layer": r.n_layer,
                     "value": min(r.threshold, r.lr_top), "lo": min(r.lo, r.lr_top),
                     "hi": min(r.hi, r.lr_top), "top": not np.isfinite(r.threshold)})
    if not rows:
        return None
    data = pd.DataFrame(rows).assign(bound=lambda d: np.where(
        d.top, "at or above the largest swept LR", "within the grid"))
    order = data.drop_duplicates("series")[["series", "color"]]
    series = list(order.series)
    base = alt.Chart(data.drop(columns="color")).encode(
        x=DEPTH_X, xOffset=alt.XOffset("series:N", sort=series),
        color=alt.Color("series:N", sort=series, title=None,
                        scale=alt.Scale(domain=series, range=list(order.color)),
                        legend=alt.Legend(symbolOpacity=1, labelLimit=400)))
    bars = base.mark_rule(strokeWidth=2).encode(y=alt.Y("lo:Q", title=LR_AXIS), y2="hi:Q")
    points = base.mark_point(filled=True, size=90, opacity=1).encode(
        y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=LR_AXIS),
        shape=alt.Shape("bound:N", title="value", scale=alt.Scale(
            domain=["within the grid", "at or above the largest swept LR"],
            range=["circle", "triangle-up"])),
        tooltip=["series", "n_layer", alt.Tooltip("value:Q", format=".3g"),
                 alt.Tooltip("lo:Q", format=".3g"), alt.Tooltip("hi:Q", format=".3g")])
    return alt.layer(bars, points).properties(width=360, height=260, title=_title(
        "Max stable learning rate and QK-norm necessity threshold vs depth",
        "Max stable LR: bars span the per-seed values. Threshold: smallest LR where QK-norm off "
        "is worse than on beyond the seed spread;",
        "bars are a 95% bootstrap interval over seeds. Triangles: at the largest swept LR or "
        "beyond it."))


def sensitivity(per_seed: pd.DataFrame) -> alt.LayerChart:
    """LR sensitivity per depth and arm: mean over seeds (bar), seed range (rule), seeds (dots)."""
    y_title = "LR sensitivity (nats)"
    base = alt.Chart(per_seed).encode(
        x=DEPTH_X, xOffset=alt.XOffset("qk_norm:N", sort=_qk_order(per_seed.qk_norm)),
        color=_qk_color(per_seed))
    bars = base.mark_bar(opacity=0.55).encode(y=alt.Y("mean(sensitivity):Q", title=y_title))
    spread = base.mark_rule(strokeWidth=2).encode(y=alt.Y("min(sensitivity):Q", title=y_title),
                                                  y2="max(sensitivity):Q")
    seeds = base.mark_point(filled=True, size=30, opacity=1).encode(
        y=alt.Y("sensitivity:Q", title=y_title),
        tooltip=["qk_norm", "n_layer", "seed", alt.Tooltip("sensitivity:Q", format=".4f")])
    return alt.layer(bars, spread, seeds).properties(width=360, height=240, title=_title(
        "LR sensitivity, QK-norm on vs off",
        "E_lr[min(loss, init loss)] - min_lr loss over the swept LRs (Wortsman et al. 2023); "
        "lower is more robust.", "Bar: mean over seeds; line: seed range; dots: seeds."))


def training_curves(curves: pd.DataFrame, lrs: list[float],
                    y_max: float) -> alt.FacetChart | None:
    """Train loss over steps at a few LRs, one line per run, rows = depth, columns = LR."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=["train_loss"])
    if data.empty:
        return None
    # Average into bins: a readable line and a small inline dataset for long runs.
    width = max(1, int(data.step.max()) // CURVE_POINTS)
    data = (data.assign(bin=data.step // width)
            .groupby(["run_id", "qk_norm", "n_layer", "lr", "seed", "bin"], as_index=False)
            .agg(step=("step", "mean"), train_loss=("train_loss", "mean")))
    data, labels = _lr_label(data)
    return alt.Chart(data).mark_line(clip=True, strokeWidth=1.2, opacity=0.85).encode(
        x=STEP_X, y=alt.Y("train_loss:Q", title="train loss (nats/token)",
                          scale=alt.Scale(domain=[float(data.train_loss.min()) * 0.95, y_max])),
        color=_qk_color(data), detail="run_id:N",
        tooltip=["run_id", "seed", alt.Tooltip("train_loss:Q", format=".4f")],
    ).properties(width=180, height=130).facet(
        row=alt.Row("n_layer:O", title=None, header=DEPTH_HEADER),
        column=alt.Column("lr_label:N", sort=labels, title=None),
    ).properties(title=_title(
        "Training curves at a few learning rates, QK-norm on and off",
        f"One line per run (seeds), averaged over bins of {width} step(s); curves above the "
        "loss at initialization are clipped."))


def diagnostic(curves: pd.DataFrame, field: str, lrs: list[float], y_title: str,
               log: bool) -> alt.FacetChart | None:
    """A diagnostic over training at the eval steps, one line per run; rows = LR, cols = depth."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=[field])
    if log:
        data = data[data[field] > 0]
    if data.empty:
        return None
    data, labels = _lr_label(data[["run_id", "qk_norm", "n_layer", "lr", "seed", "step", field]])
    return alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=15), strokeWidth=1.2).encode(
        x=STEP_X, y=alt.Y(f"{field}:Q", title=y_title,
                          scale=alt.Scale(type="log") if log else alt.Scale(zero=False)),
        color=_qk_color(data), detail="run_id:N",
        tooltip=["run_id", "seed", "step", alt.Tooltip(f"{field}:Q", format=".4g")],
    ).properties(width=200, height=140).facet(
        row=alt.Row("lr_label:N", sort=labels, title=None), column=DEPTH)


def attention(curves: pd.DataFrame, lr: float) -> alt.VConcatChart | None:
    logit = diagnostic(curves, "max_attn_logit", [lr], "max attention logit (log scale)", True)
    entropy = diagnostic(curves, "attn_entropy", [lr], "attention entropy (nats)", False)
    parts = [c for c in (logit, entropy) if c is not None]
    if not parts:
        return None
    return alt.vconcat(*parts).properties(title=_title(
        f"Attention logits and entropy over training at LR {lr:.3g}, QK-norm on and off",
        "Max |q.k|/sqrt(d_head) over heads, positions and layers (top); attention entropy, "
        "mean over heads, queries and layers (bottom).", "One line per run (seeds), at the "
        "eval steps."))


def kurtosis(curves: pd.DataFrame, lrs: list[float]) -> alt.FacetChart | None:
    chart = diagnostic(curves, "resid_kurtosis", lrs, "residual kurtosis (log scale)", True)
    return None if chart is None else chart.properties(title=_title(
        "Residual-stream kurtosis over training, QK-norm on and off",
        "mean(x^4)/mean(x^2)^2 over features, averaged over tokens; the spikiest layer. "
        f"Rows: the lowest LR and LR {max(lrs):.3g}. One line per run, at the eval steps."))


def save(chart: alt.TopLevelMixin, out_dir: Path, name: str) -> list[Path]:
    """name.vl.json, name.png (2x), name.svg, name.html (vega bundled inline: opens offline).

    All four come from one validated spec (altair's own save would rebuild it per format).
    """
    with alt.data_transformers.disable_max_rows():  # bins and eval steps bound the size
        spec = chart.to_dict()
    paths = [out_dir / f"{name}.{ext}" for ext in ("vl.json", "png", "svg", "html")]
    paths[0].write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
    paths[1].write_bytes(vlc.vegalite_to_png(spec, vl_version=VL_VERSION, scale=2))
    paths[2].write_text(vlc.vegalite_to_svg(spec, vl_version=VL_VERSION))
    paths[3].write_text(vlc.vegalite_to_html(spec, vl_version=VL_VERSION, bundle=True))
    return paths
