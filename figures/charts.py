"""Altair charts of the study, and their export as PNG, SVG, self-contained HTML and JSON spec.

The study's charts render from the analysis dict (figures/analysis.py), the training-dynamics
charts from the curves (figures/results.py); each returns a chart, or None when the sweep has
no data for it. One colour per arm in every chart: QK-norm off vermillion, on blue, the
controls in their own colours (Okabe-Ito, colour-blind safe).
"""
from __future__ import annotations

import json
from pathlib import Path

import altair as alt
import pandas as pd
import vl_convert as vlc

from figures.formats import FORMATS
from sweeps.core.files import write_atomic
from sweeps.core.norms import QK_NORMS
from sweeps.study.rules import Comparison

# Fixed colours for the arms docs/STUDY.md names; any other arm takes the next free colour.
ARM_COLORS = {"off": "#D55E00", "on": "#0072B2", "off-warm": "#E69F00", "on-cool": "#56B4E9"}
SPARE_COLORS = ("#009E73", "#CC79A7", "#F0E442", "#000000", "#999999", "#882255")
THRESHOLD_COLOR = "#333333"
LR_AXIS = "peak learning rate (log scale)"
DEPTH_HEADER = alt.Header(labelExpr="'depth n_layer = ' + datum.value", labelFontSize=12,
                          labelFontWeight="bold")
DEPTH = alt.Column("n_layer:O", title=None, header=DEPTH_HEADER)
DEPTH_X = alt.X("n_layer:O", title="depth (n_layer)", axis=alt.Axis(labelAngle=0))
STEP_X = alt.X("step:Q", title="optimizer step")
VL_VERSION = "_".join(alt.SCHEMA_VERSION.split(".")[:2])  # 'v6_4': the library altair targets
PANEL = {"width": 250, "height": 170}
CURVE_POINTS = 100  # training curves are averaged into this many step bins per run
MARKS = {"ok": "circle", "unstable": "triangle-up", "diverged": "cross"}


def _title(text: str, *subtitle: str) -> alt.TitleParams:
    return alt.TitleParams(text, subtitle=list(subtitle), anchor="start")


def arm_colors(arms: list[str]) -> dict[str, str]:
    """A colour per arm: the fixed ones, a QK-norm kind's for 'qk<kind>' arms, then spares."""
    spare = iter(c for c in SPARE_COLORS if c not in ARM_COLORS.values())
    out = {}
    for arm in arms:
        kind = QK_NORMS.get(arm[2:]) if arm.startswith("qk") else None
        out[arm] = ARM_COLORS.get(arm) or (kind.color if kind else next(spare, "#777777"))
    return out


def _arm_color(arms: list[str], title: str = "arm") -> alt.Color:
    colors = arm_colors(arms)
    return alt.Color("arm:N", sort=arms, title=title, legend=alt.Legend(symbolOpacity=1),
                     scale=alt.Scale(domain=arms, range=[colors[a] for a in arms]))


def _lr_axis(lrs) -> alt.Axis:
    """Ticks at the swept LRs, short labels: 3e-4, 1e-3, ..., 1."""
    return alt.Axis(values=sorted(set(lrs)), labelExpr=(
        "datum.value >= 1 ? format(datum.value, '~g') : format(datum.value, '.0e')"))


# -- from the analysis -------------------------------------------------------------------------
def final_loss(analysis: dict) -> alt.FacetChart | None:
    """Effective final loss vs LR per depth and arm: seed mean (line) and every run (marks by
    outcome). Diverged runs count at their loss at initialization, far above the rest: the
    axis stops a little above the finished runs and draws them at its top edge."""
    runs = pd.DataFrame([r for r in analysis["runs"] if r["outcome"]])
    if runs.empty:
        return None
    arms = [a for a in analysis["settings"]["arms"] if a in set(runs.arm)]
    finished = runs[runs.outcome != "diverged"].loss
    top = float(finished.max()) * 1.05 if not finished.empty else float(runs.loss.max())
    runs = runs.assign(shown=runs.loss.clip(upper=top))
    y_title = "final validation loss, effective (nats/token)"
    y = alt.Y("shown:Q", title=y_title, scale=alt.Scale(zero=False, padding=8, domainMax=top))
    base = alt.Chart(runs).encode(
        x=alt.X("lr:Q", scale=alt.Scale(type="log"), title=LR_AXIS, axis=_lr_axis(runs.lr)),
        color=_arm_color(arms))
    line = base.mark_line().encode(y=alt.Y("mean(shown):Q", title=y_title))
    points = base.mark_point(size=45, filled=True, opacity=0.8).encode(
        y=y, shape=alt.Shape("outcome:N", title="outcome", scale=alt.Scale(
            domain=list(MARKS), range=list(MARKS.values()))),
        tooltip=["run_id", "arm", "n_layer", "lr", "seed", "outcome",
                 alt.Tooltip("loss:Q", format=".4f")])
    return alt.layer(line, points).properties(**PANEL).facet(column=DEPTH).properties(
        title=_title("Final validation loss vs learning rate, by arm",
                     "Line: mean over seeds of the effective loss; marks: every run by outcome. "
                     "Diverged runs (at their loss at initialization) sit on the top edge."))


def stability(analysis: dict) -> alt.LayerChart | None:
    """Critical LR per arm (median, seed range) and the necessity threshold per depth."""
    s = analysis["settings"]
    rows = []
    for depth, d in analysis["depths"].items():
        for arm, a in d["arms"].items():
            if arm in s["subset_arms"] or not a["eta_crit"]["median"]:
                continue
            rows.append(_stability_row(f"critical LR, {arm}", arm, depth, a["eta_crit"]))
        primary = d["comparisons"].get(Comparison(s["reference"], s["primary"]).key)
        if primary and primary["threshold"]["kind"] in ("", "below"):
            seeds = list(primary["seed_thresholds"].values())
            rows.append(_stability_row("necessity threshold", "threshold", depth, {
                "median": primary["threshold"],
                "min": min(seeds, key=lambda v: v["value"] or 0),
                "max": max(seeds, key=lambda v: v["value"] or 0)}))
    if not rows:
        return None
    data = pd.DataFrame(rows)
    series = list(dict.fromkeys(data.series))
    colors = {**arm_colors(s["arms"]), "threshold": THRESHOLD_COLOR}
    base = alt.Chart(data).encode(
        x=DEPTH_X, xOffset=alt.XOffset("series:N", sort=series),
        color=alt.Color("series:N", sort=series, title=None, legend=alt.Legend(
            symbolOpacity=1, labelLimit=400), scale=alt.Scale(
            domain=series, range=[colors[k] for k in data.drop_duplicates("series").key])))
    bars = base.mark_rule(strokeWidth=2).encode(y=alt.Y("lo:Q", title=LR_AXIS), y2="hi:Q")
    points = base.mark_point(filled=True, size=90, opacity=1).encode(
        y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=LR_AXIS),
        shape=alt.Shape("bound:N", title="value", scale=alt.Scale(
            domain=["inside the grid", "beyond the grid (a bound)"],
            range=["circle", "triangle-up"])),
        tooltip=["series", "n_layer", alt.Tooltip("value:Q", format=".3g"),
                 alt.Tooltip("lo:Q", format=".3g"), alt.Tooltip("hi:Q", format=".3g")])
    return alt.layer(bars, points).properties(width=380, height=260, title=_title(
        "Critical learning rate per arm and QK-norm necessity threshold vs depth",
        "Critical LR: the first LR above a seed's best where its run diverges or ends unstable "
        "(docs/STUDY.md), median over seeds; bars span the seeds.",
        "Threshold: the smallest LR from which QK-norm is necessary; bars span the per-seed "
        "thresholds. Triangles: beyond the grid."))


def _stability_row(series: str, key: str, depth: str, stat: dict) -> dict:
    median = stat["median"]
    return {"series": series, "key": key, "n_layer": int(depth), "value": median["value"],
            "lo": stat["min"]["value"], "hi": stat["max"]["value"],
            "bound": "inside the grid" if median["kind"] == "" else "beyond the grid (a bound)"}


def eta_max_ratio(analysis: dict) -> alt.LayerChart | None:
    """The on/off ratio of eta_max(delta) over delta, per depth: does the answer depend on
    the margin? The pre-registered delta is marked."""
    s = analysis["settings"]
    primary = Comparison(s["reference"], s["primary"]).key
    rows = [{"n_layer": depth, "delta": r["delta"], "ratio": r["ratio"]}
            for depth, d in analysis["depths"].items()
            for key, c in d["comparisons"].items() if key == primary
            for r in c["eta_max_ratio"] if r["ratio"]]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    lines = alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("delta:Q", title="delta: margin above the best loss L* (nats)"),
        y=alt.Y("ratio:Q", scale=alt.Scale(type="log"),
                title=f"eta_max(delta), {s['primary']} / {s['reference']}"),
        color=alt.Color("n_layer:O", title="n_layer"),
        tooltip=["n_layer", "delta", alt.Tooltip("ratio:Q", format=".3g")])
    one = alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(
        y="ratio:Q")
    chosen = alt.Chart(pd.DataFrame({"delta": [s["delta"]]})).mark_rule(
        color="#777777").encode(x="delta:Q")
    return alt.layer(lines, one, chosen).properties(width=380, height=240, title=_title(
        "How the max-LR ratio depends on the margin delta",
        "eta_max(delta): the largest LR at which every seed ends within delta of the best loss "
        "of all arms (docs/STUDY.md).", f"Grey line: the pre-registered delta "
        f"({s['delta']:g}); dashed: no difference."))


def paired_effect(analysis: dict) -> alt.FacetChart | None:
    """Per comparison and depth: the paired difference baseline - treatment per LR with its
    90% interval (its ends are the one-sided 95% bounds that decide); the minimum effect as a
    dashed line; necessary LRs filled."""
    rows = []
    for depth, d in analysis["depths"].items():
        for key, c in d["comparisons"].items():
            for e in c["per_lr"]:
                if e["judged"]:
                    rows.append({"comparison": key, "n_layer": int(depth), "lr": e["lr"],
                                 "mean": e["mean"], "lo": e["ci90"][0], "hi": e["ci90"][1],
                                 "necessary": "necessary" if e["necessary"] else "not"})
    if not rows:
        return None
    data = pd.DataFrame(rows)
    m = analysis["settings"]["min_effect"]
    x = alt.X("lr:Q", scale=alt.Scale(type="log"), title=LR_AXIS, axis=_lr_axis(data.lr))
    base = alt.Chart(data).encode(x=x)
    bars = base.mark_rule(strokeWidth=2, color="#555555").encode(
        y=alt.Y("lo:Q", title="paired loss difference, baseline - treatment (nats)"), y2="hi:Q")
    points = base.mark_point(size=60, color="#000000").encode(
        y="mean:Q", fill=alt.Fill("necessary:N", scale=alt.Scale(
            domain=["necessary", "not"], range=["#000000", "#FFFFFF"]), title=None),
        tooltip=["comparison", "n_layer", "lr", alt.Tooltip("mean:Q", format=".3f"),
                 alt.Tooltip("lo:Q", format=".3f"), alt.Tooltip("hi:Q", format=".3f")])
    rule = alt.Chart(pd.DataFrame({"m": [m]})).mark_rule(strokeDash=[4, 4]).encode(y="m:Q")
    return alt.layer(bars, points, rule, data=data).properties(width=220, height=160).facet(
        row=alt.Row("comparison:N", title=None), column=DEPTH).resolve_scale(
        y="independent").properties(title=_title(
            "Paired effect per learning rate, with 90% intervals",
            "Baseline minus treatment effective loss over paired seeds (positive: the "
            "treatment is better); filled: necessary (one-sided 95% bound above the minimum "
            "effect, dashed)."))


def sensitivity(analysis: dict) -> alt.LayerChart | None:
    rows = [{"arm": arm, "n_layer": int(depth), "seed": int(seed), "sensitivity": v}
            for depth, d in analysis["depths"].items() for arm, a in d["arms"].items()
            if a["sensitivity"]["complete"] for seed, v in a["sensitivity"]["seeds"].items()]
    if not rows:
        return None
    data = pd.DataFrame(rows)
    arms = [a for a in analysis["settings"]["arms"] if a in set(data.arm)]
    y_title = "LR sensitivity (nats)"
    base = alt.Chart(data).encode(x=DEPTH_X, xOffset=alt.XOffset("arm:N", sort=arms),
                                  color=_arm_color(arms))
    bars = base.mark_bar(opacity=0.55).encode(y=alt.Y("mean(sensitivity):Q", title=y_title))
    seeds = base.mark_point(filled=True, size=30, opacity=1).encode(
        y=alt.Y("sensitivity:Q", title=y_title),
        tooltip=["arm", "n_layer", "seed", alt.Tooltip("sensitivity:Q", format=".4f")])
    low, high = analysis["settings"]["sensitivity_range"]
    return alt.layer(bars, seeds).properties(width=360, height=240, title=_title(
        "LR sensitivity per arm (Wortsman et al. 2023)",
        f"mean - min of the effective loss over the base-grid LRs in [{low:g}, {high:g}]; "
        "lower is more robust.", "Bar: mean over seeds; dots: seeds."))


# -- from the curves ---------------------------------------------------------------------------
def training_curves(curves: pd.DataFrame, arms: list[str], lrs: list[float],
                    y_max: float) -> alt.FacetChart | None:
    """Train loss over steps at a few LRs, one line per run, rows = depth, columns = LR."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=["train_loss"])
    if data.empty:
        return None
    # Average into bins: a readable line and a small inline dataset for long runs.
    width = max(1, int(data.step.max()) // CURVE_POINTS)
    data = (data.assign(bin=data.step // width)
            .groupby(["run_id", "arm", "n_layer", "lr", "seed", "bin"], as_index=False)
            .agg(step=("step", "mean"), train_loss=("train_loss", "mean")))
    data, labels = _lr_label(data)
    return alt.Chart(data).mark_line(clip=True, strokeWidth=1.2, opacity=0.85).encode(
        x=STEP_X, y=alt.Y("train_loss:Q", title="train loss (nats/token)",
                          scale=alt.Scale(domain=[float(data.train_loss.min()) * 0.95, y_max])),
        color=_arm_color([a for a in arms if a in set(data.arm)]), detail="run_id:N",
        tooltip=["run_id", "seed", alt.Tooltip("train_loss:Q", format=".4f")],
    ).properties(width=180, height=130).facet(
        row=alt.Row("n_layer:O", title=None, header=DEPTH_HEADER),
        column=alt.Column("lr_label:N", sort=labels, title=None),
    ).properties(title=_title(
        "Training curves at a few learning rates, by arm",
        f"One line per run (seeds), averaged over bins of {width} step(s); curves above the "
        "loss at initialization are clipped."))


def diagnostic(curves: pd.DataFrame, arms: list[str], field: str, lrs: list[float],
               y_title: str, log: bool) -> alt.FacetChart | None:
    """A diagnostic over training at the eval steps, one line per run; rows = LR, cols = depth."""
    data = curves[curves.lr.isin(lrs)].dropna(subset=[field])
    if log:
        data = data[data[field] > 0]
    if data.empty:
        return None
    data, labels = _lr_label(data[["run_id", "arm", "n_layer", "lr", "seed", "step", field]])
    return alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=15), strokeWidth=1.2).encode(
        x=STEP_X, y=alt.Y(f"{field}:Q", title=y_title,
                          scale=alt.Scale(type="log") if log else alt.Scale(zero=False)),
        color=_arm_color([a for a in arms if a in set(data.arm)]), detail="run_id:N",
        tooltip=["run_id", "seed", "step", alt.Tooltip(f"{field}:Q", format=".4g")],
    ).properties(width=200, height=140).facet(
        row=alt.Row("lr_label:N", sort=labels, title=None), column=DEPTH)


def attention(curves: pd.DataFrame, arms: list[str], lr: float) -> alt.VConcatChart | None:
    logit = diagnostic(curves, arms, "max_attn_logit", [lr], "max attention logit (log)", True)
    entropy = diagnostic(curves, arms, "attn_entropy", [lr], "attention entropy (nats)", False)
    parts = [c for c in (logit, entropy) if c is not None]
    if not parts:
        return None
    return alt.vconcat(*parts).properties(title=_title(
        f"Attention logits and entropy over training at LR {lr:.3g}, by arm",
        "Max |q.k|/sqrt(d_head) over heads, positions and layers (top); attention entropy, "
        "mean over heads, queries and layers (bottom).", "One line per run (seeds), at the "
        "eval steps."))


def kurtosis(curves: pd.DataFrame, arms: list[str], lrs: list[float]) -> alt.FacetChart | None:
    chart = diagnostic(curves, arms, "resid_kurtosis", lrs, "residual kurtosis (log)", True)
    return None if chart is None else chart.properties(title=_title(
        "Residual-stream kurtosis over training, by arm",
        "mean(x^4)/mean(x^2)^2 over features, averaged over tokens; the spikiest layer. "
        f"Rows: the lowest LR and LR {max(lrs):.3g}. One line per run, at the eval steps."))


def _lr_label(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A readable 'LR 0.00316' facet label and the labels in LR order."""
    labels = {lr: f"LR {lr:.3g}" for lr in sorted(df.lr.unique())}
    return df.assign(lr_label=df.lr.map(labels)), list(labels.values())


# Each format from the one validated spec (altair's own save would rebuild it per format):
# PNG at 2x, SVG, HTML with vega bundled inline (opens offline), the Vega-Lite spec itself.
RENDERERS = {
    "png": lambda spec: vlc.vegalite_to_png(spec, vl_version=VL_VERSION, scale=2),
    "svg": lambda spec: vlc.vegalite_to_svg(spec, vl_version=VL_VERSION),
    "html": lambda spec: vlc.vegalite_to_html(spec, vl_version=VL_VERSION, bundle=True),
    "vl.json": lambda spec: json.dumps(spec, indent=2, sort_keys=True) + "\n",
}


def save(chart: alt.TopLevelMixin, out_dir: Path, name: str, formats=FORMATS) -> list[Path]:
    """name.<format> for each of the formats; returns the paths."""
    with alt.data_transformers.disable_max_rows():  # bins and eval steps bound the size
        spec = chart.to_dict()
    paths = [out_dir / f"{name}.{ext}" for ext in formats]
    for path, ext in zip(paths, formats):
        write_atomic(path, RENDERERS[ext](spec))
    return paths
