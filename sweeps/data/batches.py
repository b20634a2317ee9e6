"""Batches: a pure function of (seed, step), so resumed runs and both backends see the same
tokens without carrying any data-loader state; and the entropies of a token array.
"""
from __future__ import annotations

import numpy as np

from sweeps.errors import DataError


def get_batch(tokens: np.ndarray, seed: int, step: int, batch_size: int,
              block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """x, y: int32 [batch_size, block_size], windows at random starts; y is x shifted by one."""
    rng = np.random.default_rng([seed, step])
    starts = rng.integers(0, _max_start(tokens, block_size) + 1, size=batch_size)
    return _windows(tokens, starts, block_size)


def val_batches(tokens: np.ndarray, n_batches: int, batch_size: int,
                block_size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fixed, evenly spaced windows over the split: every run evaluates on the same tokens."""
    n = n_batches * batch_size
    starts = np.arange(n, dtype=np.int64) * _max_start(tokens, block_size) // max(n - 1, 1)
    return [_windows(tokens, starts[i:i + batch_size], block_size)
            for i in range(0, n, batch_size)]


def entropies(tokens: np.ndarray, vocab_size: int) -> dict:
    """Unigram entropy and H(next | current) in bits per token; a large gap means learnable.

    Plug-in estimates from counts (a slice is enough for a large corpus).
    """
    ids = np.asarray(tokens, dtype=np.int64)
    pairs = np.unique(ids[:-1] * vocab_size + ids[1:], return_counts=True)[1]
    current = np.bincount(ids[:-1], minlength=vocab_size)
    return {"unigram_bits": _entropy(np.bincount(ids, minlength=vocab_size)),
            "bigram_bits": _entropy(pairs) - _entropy(current), "tokens": int(ids.size)}


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def _max_start(tokens: np.ndarray, block_size: int) -> int:
    if len(tokens) < block_size + 1:
        raise DataError(f"the token split has {len(tokens)} tokens, fewer than block_size + 1 "
                        f"= {block_size + 1}; use a smaller model.block_size or a larger corpus")
    return len(tokens) - block_size - 1


def _windows(tokens: np.ndarray, starts: np.ndarray, block_size: int):
    w = tokens[starts[:, None] + np.arange(block_size + 1)].astype(np.int32)
    return np.ascontiguousarray(w[:, :-1]), np.ascontiguousarray(w[:, 1:])
