"""Altair charts of the study, and their export as PNG, SVG, HTML and JSON spec.

The study's charts render from the analysis dict (figures/words/view.py), the training-dynamics
charts from the curves (sweeps/analysis/results.py); each returns a chart, or None when the
sweep has no data for it. One colour per arm in every chart: QK-norm off vermillion, on blue, the
controls in their own colours (Okabe-Ito, colour-blind safe).

A faceted chart keeps all its rows in one table, with a `kind` column that each layer filters
on: a layer that carried its own data inside a facet would be drawn whole in every panel.
Titles are short (the report text holds the detail) and legends sit under the plot, so the
plots fill the canvas and no renderer's wider font pushes text off it.

The modules, bottom to top (each imports only those above it in this list):
- style: colours, axes, headers, titles and the common finish of every chart;
- headline: final loss vs LR, the report's headline chart;
- necessity: the necessity map (LR x rung);
- paired: the paired effect per LR, per comparison and rung;
- summary: critical LR and threshold by rung, the trend's points, the max-LR ratio, LR
  sensitivity;
- curves: training curves, the diagnostics over training, attention and QK-norm's logit
  ceiling at the end against the LR;
- output: a chart's spec and its files (PNG, SVG, HTML, JSON).
A rung is a depth or a width (sweeps/core/ladder.py): the study's charts read the ladder from the
analysis dict, the curves charts are given it; headers, axes and labels name it.
This package re-exports what the report and the tests use.
"""

from figures.charts.curves import attention, attention_vs_lr, ceiling, kurtosis, training_curves
from figures.charts.headline import final_loss
from figures.charts.necessity import necessity_map
from figures.charts.output import save, spec_of, write_vega_js
from figures.charts.paired import effect_domain, paired_effect
from figures.charts.style import PLOT_WIDTH, VL_VERSION, arm_colors
from figures.charts.summary import eta_max_ratio, sensitivity, stability, trend

__all__ = [
    "PLOT_WIDTH",
    "VL_VERSION",
    "arm_colors",
    "attention",
    "attention_vs_lr",
    "ceiling",
    "effect_domain",
    "eta_max_ratio",
    "final_loss",
    "kurtosis",
    "necessity_map",
    "paired_effect",
    "save",
    "sensitivity",
    "spec_of",
    "stability",
    "training_curves",
    "trend",
    "write_vega_js",
]
