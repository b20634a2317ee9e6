"""The report's figure set: which charts a sweep gets, with their captions (figure_set), the
LRs its training curves show, and the Figures section that lists them (section); a re-judged
report whose curves are gone keeps the earlier report's charts of them (keep_charts)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from figures import charts, present
from sweeps.analysis import archive, curve_picks
from sweeps.analysis import model as m
from sweeps.analysis.adapter import record

HEADLINE = ("final_loss_vs_lr", "necessity_map")  # the figures the answer shows
# the figures drawn from the runs' curves (the others from the analysis)
CURVE_CHARTS = (
    "training_curves",
    "attention",
    "attention_vs_lr",
    "qk_ceiling",
    "residual_kurtosis",
)


def figure_set(a: m.Analysis, curves: pd.DataFrame) -> dict:
    """name -> (caption, chart or None), in report order, from the typed analysis."""
    arms = a.settings.arms
    runs = _finished(a)
    picks = curve_picks.curve_lrs(a)  # which LRs the dynamics show: sweeps/analysis decides
    high = curve_picks.high_stable_lr(a)
    y_max = float(pd.to_numeric(runs.init_loss).max()) * 1.15
    outcomes = {r.run_id: r.outcome for r in a.runs}
    trained = "train_loss" in curves and curves.train_loss.notna().any()
    unit = present.loss_unit(a.settings)
    rung = present.ladder_of(a)
    # the trend's points: only on a ladder (one rung has no trend to draw) whose trend placed
    # some (the verdict says why when none: too few, or all censored alike)
    trend = {
        "threshold_trend": (
            f"Each seed's threshold and each {rung.name}'s value vs {rung.name}: what "
            f"{present.trends(rung)[0]} is decided on",
            charts.trend(a),
        )
    }
    # QK-norm's logit ceiling (docs/STUDY.md section 20): only runs that recorded it have one
    ceiling = {
        "qk_ceiling": (
            "QK-norm's logit ceiling at the end of training: how far the gains grew it, how "
            "much of it attention uses",
            charts.ceiling(curves, arms, rung, outcomes) if trained else None,
        )
    }
    return {
        "final_loss_vs_lr": ("Final loss vs learning rate", charts.final_loss(a)),
        "necessity_map": ("Where QK-norm is necessary", charts.necessity_map(a)),
        "stability_vs_depth": (  # the file's name from before ladders had a width
            f"Critical learning rate and stability threshold vs {rung.name}",
            charts.stability(a),
        ),
        **(trend if trend["threshold_trend"][1] is not None else {}),
        "paired_effect": ("Paired effect per learning rate", charts.paired_effect(a)),
        "eta_max_ratio": (
            "How the max-LR ratio depends on the margin delta",
            charts.eta_max_ratio(a),
        ),
        "lr_sensitivity": ("LR sensitivity per arm", charts.sensitivity(a)),
        "training_curves": (
            "Training curves at a few learning rates",
            charts.training_curves(curves, arms, picks, y_max, outcomes, unit, rung)
            if trained
            else None,
        ),
        "attention": (
            f"Attention logits and entropy over training at LR {high:.3g}",
            charts.attention(curves, arms, high, _capped(a), rung) if trained else None,
        ),
        "attention_vs_lr": (
            "Attention against the learning rate: the peak logit and the entropy at the end",
            charts.attention_vs_lr(curves, arms, rung, outcomes) if trained else None,
        ),
        **(ceiling if ceiling["qk_ceiling"][1] is not None else {}),
        "residual_kurtosis": (
            "Residual-stream kurtosis over training",
            charts.kurtosis(curves, arms, sorted({runs.lr.min(), high}), rung) if trained else None,
        ),
    }


def _finished(a: m.Analysis) -> pd.DataFrame:
    """The runs with an outcome (ok, unstable, diverged), one row each as analysis.json writes
    it."""
    return pd.DataFrame([record(r) for r in a.runs if r.outcome])


def _capped(a: m.Analysis) -> dict:
    """{arm: its attention soft cap} for the arms that cap their attention logits."""
    out = {}
    for d in a.depths.values():
        for arm, x in d.arms.items():
            cap = (x.interventions or {}).get("attn-softcap")  # keyed by intervention name
            if cap:
                out[arm] = cap
    return out


def keep_charts(report_dir: Path, out_dir: Path, names: list[str]) -> None:
    """A re-judged report re-rendered elsewhere (--out): the charts it keeps from the earlier
    report (its curves are gone with the run directories, section), copied along, so
    the re-render holds the committed report's charts. Only beside a kept earlier report."""
    if out_dir.resolve() == report_dir.resolve() or not (out_dir / archive.OLD_REPORT).is_file():
        return
    for name in names:
        for ext in ("svg", "png"):
            old, new = report_dir / f"{name}.{ext}", out_dir / f"{name}.{ext}"
            if old.is_file() and not new.exists():
                shutil.copyfile(old, new)


def section(figures: dict, formats, out_dir: Path | None = None, curves_gone: bool = False) -> str:
    """The figures, each under its caption; a chart with no data says why, and a re-judged
    report whose curves are gone (curves_gone: it holds none) links the earlier report's chart
    of them where it is kept (training curves do not depend on the study's rules), and says
    that a chart newer than its runs' report cannot be drawn."""
    image = next((ext for ext in ("png", "svg") if ext in formats), None)
    names = {"svg": "SVG", "html": "interactive HTML", "vl.json": "Vega-Lite spec"}
    lines = ["## Figures", ""]
    for name, (caption, chart) in figures.items():
        lines += [f"### {caption}", ""]
        kept = next(
            (
                f"{name}.{ext}"
                for ext in ("svg", "png")
                if out_dir and (out_dir / f"{name}.{ext}").is_file()
            ),
            None,
        )
        if chart is None and kept and (out_dir / archive.OLD_REPORT).is_file():
            lines += [
                f"_Kept from the earlier report ({archive.OLD_REPORT}), drawn from the run "
                f"directories, which are gone; its curves do not depend on the rules._",
                "",
                f"![{caption}]({kept})",
                "",
            ]
            continue
        if chart is None and curves_gone and name in CURVE_CHARTS:
            lines += [
                "_Not drawn: it is drawn from the runs' curves, which went with their run "
                "directories before this chart existed._",
                "",
            ]
            continue
        if chart is None:
            lines += ["_Not drawn: the finished runs hold no data for it._", ""]
            continue
        if name in HEADLINE:
            lines += ["_Shown under The answer, above._", ""]
        elif image:
            lines += [f"![{caption}]({name}.{image})", ""]
        links = [
            f"[{label}]({name}.{ext})"
            for ext, label in names.items()
            if ext in formats and ext != image
        ]
        if links:
            lines += [" | ".join(links), ""]
    return "\n".join(lines)
