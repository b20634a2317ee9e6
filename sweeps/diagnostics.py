"""Diagnostics at eval steps, computed once here in numpy from what either backend returns.

Per layer, on the fixed diagnostic sequences:
- attention entropy -sum_j A_ij log A_ij, mean over heads and query positions, and its
  minimum over heads (collapse shows in one head first);
- max attention logit max |q.k| / sqrt(d_head) over causal positions (Wortsman et al. 2023);
- residual-stream kurtosis mean(x^4) / mean(x^2)^2 over features, averaged over tokens,
  and max|x| / median|x| over the layer's whole output.
"""
import numpy as np


def attention_stats(scores: np.ndarray, probs: np.ndarray) -> dict[str, float]:
    """scores, probs: [B, H, T, T]; scores already divided by sqrt(d_head)."""
    T = scores.shape[-1]
    causal = np.tril(np.ones((T, T), dtype=bool))
    p = probs.astype(np.float64)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    entropy = -plogp.sum(axis=-1)  # [B, H, T]
    per_head = entropy.mean(axis=(0, 2))  # [H]
    max_logit = np.abs(np.where(causal, scores, 0.0)).max()
    return {"attn_entropy": float(per_head.mean()), "attn_entropy_min": float(per_head.min()),
            "max_attn_logit": float(max_logit)}


def residual_stats(x: np.ndarray) -> dict[str, float]:
    """x: [B, T, C], the residual stream after a block."""
    x = x.astype(np.float64)
    second = (x ** 2).mean(axis=-1)
    fourth = (x ** 4).mean(axis=-1)
    kurtosis = fourth / np.maximum(second ** 2, 1e-30)
    magnitude = np.abs(x)
    return {"resid_kurtosis": float(kurtosis.mean()),
            "resid_max_over_median": float(magnitude.max() / max(np.median(magnitude), 1e-30))}


def layer_diagnostics(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict:
    """[(scores, probs, residual) per layer] -> {name: [value per layer]} for metrics.jsonl."""
    out: dict[str, list[float]] = {}
    for scores, probs, residual in layers:
        for name, value in {**attention_stats(scores, probs), **residual_stats(residual)}.items():
            out.setdefault(name, []).append(value)
    return out
