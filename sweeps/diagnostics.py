"""Diagnostics at eval steps, each declared once: its name, label, unit, how layers reduce, and
its computation (numpy, from what either backend's probe returns).

Per layer, on the fixed diagnostic sequences:
- max attention logit max |q.k| / sqrt(d_head) over causal positions (Wortsman et al. 2023);
- attention entropy -sum_j A_ij log A_ij, mean over heads and query positions, and its
  minimum over heads (collapse shows in one head first);
- residual-stream kurtosis mean(x^4) / mean(x^2)^2 over features, averaged over tokens,
  and max|x| / median|x| over the layer's whole output.

Adding a diagnostic is one entry in DIAGNOSTICS: metrics.jsonl, crosscheck, the curves the
figures read and (with in_report) the report's table all follow the registry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Diagnostic:
    name: str  # its key in metrics.jsonl (a list: one value per layer)
    label: str  # short name in tables
    unit: str
    reduce: str  # how the per-layer values become one number: max | min | mean
    compute: Callable[[np.ndarray, np.ndarray, np.ndarray], float]  # (scores, probs, residual)
    in_report: bool = False  # a column of the report's end-of-training table


def _causal(scores: np.ndarray) -> np.ndarray:
    T = scores.shape[-1]
    return np.tril(np.ones((T, T), dtype=bool))


def _head_entropy(probs: np.ndarray) -> np.ndarray:
    """Attention entropy per head [H], mean over batch and query positions."""
    p = probs.astype(np.float64)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return (-plogp.sum(axis=-1)).mean(axis=(0, 2))


def max_attn_logit(scores, probs, residual) -> float:
    """scores [B, H, T, T], already divided by sqrt(d_head)."""
    return float(np.abs(np.where(_causal(scores), scores, 0.0)).max())


def attn_entropy(scores, probs, residual) -> float:
    return float(_head_entropy(probs).mean())


def attn_entropy_min(scores, probs, residual) -> float:
    return float(_head_entropy(probs).min())


def resid_kurtosis(scores, probs, residual) -> float:
    """residual [B, T, C], the residual stream after the block."""
    x = residual.astype(np.float64)
    second, fourth = (x ** 2).mean(axis=-1), (x ** 4).mean(axis=-1)
    return float((fourth / np.maximum(second ** 2, 1e-30)).mean())


def resid_max_over_median(scores, probs, residual) -> float:
    magnitude = np.abs(residual.astype(np.float64))
    return float(magnitude.max() / max(np.median(magnitude), 1e-30))


DIAGNOSTICS: dict[str, Diagnostic] = {d.name: d for d in (
    Diagnostic("max_attn_logit", "max attn logit", "", "max", max_attn_logit, in_report=True),
    Diagnostic("attn_entropy", "attn entropy", "nats", "mean", attn_entropy),
    Diagnostic("attn_entropy_min", "min attn entropy", "nats", "min", attn_entropy_min,
               in_report=True),
    Diagnostic("resid_kurtosis", "resid kurtosis", "", "max", resid_kurtosis, in_report=True),
    Diagnostic("resid_max_over_median", "resid max/median", "", "max", resid_max_over_median),
)}
# Per-layer values become one number per eval step: the layer where trouble shows first
# (largest logit, lowest entropy, spikiest residual), except mean entropy, which summarises
# the whole stack.
REDUCERS = {"max": np.nanmax, "min": np.nanmin, "mean": np.nanmean}


def layer_diagnostics(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict:
    """[(scores, probs, residual) per layer] -> {name: [value per layer]} for metrics.jsonl."""
    return {name: [d.compute(*layer) for layer in layers] for name, d in DIAGNOSTICS.items()}


def reduce_layers(name: str, values) -> float:
    """A metrics.jsonl list of per-layer values (nulls allowed) -> one float by the
    diagnostic's rule; NaN when absent or all null."""
    if not isinstance(values, list):
        return np.nan
    arr = np.array([np.nan if v is None else v for v in values], dtype=float)
    return float(REDUCERS[DIAGNOSTICS[name].reduce](arr)) if np.isfinite(arr).any() else np.nan
