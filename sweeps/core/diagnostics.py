"""Diagnostics at eval steps, each declared once: its name, label, unit, how layers reduce, and
its computation (numpy, from the Probe either backend's probe returns).

Per layer, on the fixed diagnostic sequences:
- max attention logit max |q.k| / sqrt(d_head) over causal positions (Wortsman et al. 2023),
  and the std of those logits (the attention temperature: 0.05 vs 1 at init, off vs on);
- attention entropy -sum_j A_ij log A_ij, mean over heads and query positions, and its
  minimum over heads (collapse shows in one head first);
- residual-stream kurtosis mean(x^4) / mean(x^2)^2 over features, averaged over tokens,
  and max|x| / median|x| over the layer's whole output;
- the largest |gain| of q_norm and k_norm (null without QK-norm): gains are not decayed;
- the logit ceiling QK-norm sets, sqrt(d_head) max_i |g_q,i g_k,i| (null without QK-norm):
  with RMS-normalized q and k (squared norms d_head) no attention logit can exceed it
  (Cauchy-Schwarz), 4 at heads of 16 and 8 at 64 with unit gains (docs/STUDY.md section 20),
  and how much of it attention uses: the layer's max attention logit over its own ceiling.
For the whole model: the output logits' max |z| and RMS.

Adding a diagnostic is one entry in DIAGNOSTICS: metrics.jsonl, crosscheck, the curves the
figures read and (with in_report) the report's table all follow the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class LayerProbe(NamedTuple):
    # [B, H, T, T] attention logits q.k / sqrt(d_head), before any soft cap (model.attn_softcap)
    # (upper triangle unused)
    scores: np.ndarray
    probs: np.ndarray  # [B, H, T, T] attention weights
    residual: np.ndarray  # [B, T, C] the residual stream after the block
    q_gain: np.ndarray | None  # [d_head] gain of q_norm; None without QK-norm
    k_gain: np.ndarray | None


class Probe(NamedTuple):
    """What Trainer.probe returns: float32 numpy from the explicit attention path."""

    layers: list[LayerProbe]
    logits: np.ndarray  # [B, T, V]


@dataclass(frozen=True)
class Diagnostic:
    name: str  # its key in metrics.jsonl: a list with one value per layer, or one value
    label: str  # short name in tables
    unit: str
    reduce: str  # how the per-layer values become one number: max | min | mean
    compute: Callable  # (LayerProbe) -> float | None; (Probe) -> float when not per_layer
    in_report: bool = False  # a column of the report's end-of-training table
    per_layer: bool = True  # False: one value for the whole model


def _causal(scores: np.ndarray) -> np.ndarray:
    T = scores.shape[-1]
    return np.tril(np.ones((T, T), dtype=bool))


def _head_entropy(probs: np.ndarray) -> np.ndarray:
    """Attention entropy per head [H], mean over batch and query positions."""
    p = probs.astype(np.float64)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return (-plogp.sum(axis=-1)).mean(axis=(0, 2))


def max_attn_logit(layer: LayerProbe) -> float:
    return float(np.abs(np.where(_causal(layer.scores), layer.scores, 0.0)).max())


def attn_logit_std(layer: LayerProbe) -> float:
    """Std of the causal attention logits: the temperature attention starts at."""
    return float(layer.scores[..., _causal(layer.scores)].astype(np.float64).std())


def attn_entropy(layer: LayerProbe) -> float:
    return float(_head_entropy(layer.probs).mean())


def attn_entropy_min(layer: LayerProbe) -> float:
    return float(_head_entropy(layer.probs).min())


def resid_kurtosis(layer: LayerProbe) -> float:
    x = layer.residual.astype(np.float64)
    second, fourth = (x**2).mean(axis=-1), (x**4).mean(axis=-1)
    return float((fourth / np.maximum(second**2, 1e-30)).mean())


def resid_max_over_median(layer: LayerProbe) -> float:
    magnitude = np.abs(layer.residual.astype(np.float64))
    return float(magnitude.max() / max(np.median(magnitude), 1e-30))


def qk_gain_max(layer: LayerProbe) -> float | None:
    if layer.q_gain is None:
        return None
    return float(max(np.abs(layer.q_gain).max(), np.abs(layer.k_gain).max()))


def qk_logit_ceiling(layer: LayerProbe) -> float | None:
    if layer.q_gain is None:
        return None
    g = np.abs(layer.q_gain.astype(np.float64) * layer.k_gain.astype(np.float64))
    return float(np.sqrt(g.size) * g.max())


def qk_ceiling_use(layer: LayerProbe) -> float | None:
    ceiling = qk_logit_ceiling(layer)
    return None if ceiling is None else max_attn_logit(layer) / max(ceiling, 1e-30)


def logit_max(probe: Probe) -> float:
    return float(np.abs(probe.logits).max())


def logit_rms(probe: Probe) -> float:
    return float(np.sqrt((probe.logits.astype(np.float64) ** 2).mean()))


DIAGNOSTICS: dict[str, Diagnostic] = {
    d.name: d
    for d in (
        Diagnostic("max_attn_logit", "max attn logit", "", "max", max_attn_logit, in_report=True),
        Diagnostic("attn_logit_std", "attn logit std", "", "mean", attn_logit_std),
        Diagnostic("attn_entropy", "attn entropy", "nats", "mean", attn_entropy),
        Diagnostic(
            "attn_entropy_min", "min attn entropy", "nats", "min", attn_entropy_min, in_report=True
        ),
        Diagnostic("resid_kurtosis", "resid kurtosis", "", "max", resid_kurtosis, in_report=True),
        Diagnostic("resid_max_over_median", "resid max/median", "", "max", resid_max_over_median),
        Diagnostic("qk_gain_max", "max QK-norm gain", "", "max", qk_gain_max, in_report=True),
        Diagnostic("qk_logit_ceiling", "QK-norm logit ceiling", "", "max", qk_logit_ceiling),
        Diagnostic("qk_ceiling_use", "max logit / ceiling", "", "max", qk_ceiling_use),
        Diagnostic(
            "logit_max", "max output logit", "", "max", logit_max, in_report=True, per_layer=False
        ),
        Diagnostic("logit_rms", "output logit RMS", "", "max", logit_rms, per_layer=False),
    )
}
# Per-layer values become one number per eval step: the layer where trouble shows first
# (largest logit, lowest entropy, spikiest residual), except mean entropy, which summarises
# the whole stack.
REDUCERS = {"max": np.nanmax, "min": np.nanmin, "mean": np.nanmean}


def diagnostics_row(probe: Probe) -> dict:
    """{name: [value per layer] or value} of every registered diagnostic, for metrics.jsonl."""
    return {
        name: [d.compute(layer) for layer in probe.layers] if d.per_layer else d.compute(probe)
        for name, d in DIAGNOSTICS.items()
    }


def reduce_layers(name: str, values) -> float:
    """A metrics.jsonl value -> one float: a list of per-layer values (nulls allowed) by the
    diagnostic's rule, a number as it is; NaN when absent or all null."""
    if isinstance(values, (int, float)) and not isinstance(values, bool):
        return float(values)
    if not isinstance(values, list):
        return np.nan
    arr = np.array([np.nan if v is None else v for v in values], dtype=float)
    return float(REDUCERS[DIAGNOSTICS[name].reduce](arr)) if np.isfinite(arr).any() else np.nan
