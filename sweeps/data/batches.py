"""Batches: a pure function of (seed, step), so resumed runs and both backends see the same
tokens without carrying any data-loader state.
"""

from __future__ import annotations

import numpy as np

from sweeps.core.errors import DataError


def batch_starts(
    n_tokens: int, seed: int, step: int, batch_size: int, block_size: int
) -> np.ndarray:
    """int64 [batch_size]: where the windows of the batch of (seed, step) start."""
    rng = np.random.default_rng([seed, step])
    return rng.integers(0, _max_start(n_tokens, block_size) + 1, size=batch_size)


def get_batch(
    tokens: np.ndarray, seed: int, step: int, batch_size: int, block_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """x, y: int32 [batch_size, block_size], windows at random starts; y is x shifted by one.
    A trainer gathers the same windows on its device from batch_starts."""
    return windows(
        tokens, batch_starts(len(tokens), seed, step, batch_size, block_size), block_size
    )


def val_batches(
    tokens: np.ndarray, n_batches: int, batch_size: int, block_size: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fixed, evenly spaced windows over the split: every run evaluates on the same tokens."""
    n = n_batches * batch_size
    starts = np.arange(n, dtype=np.int64) * _max_start(len(tokens), block_size) // max(n - 1, 1)
    return [
        windows(tokens, starts[i : i + batch_size], block_size) for i in range(0, n, batch_size)
    ]


def check_splits(train: np.ndarray, val: np.ndarray, block_size: int) -> None:
    """Refuse, before a run writes anything, splits shorter than one sequence."""
    for name, tokens in (("train", train), ("validation", val)):
        if len(tokens) < block_size + 1:
            raise DataError(
                f"the {name} split has {len(tokens)} tokens, fewer than one "
                f"sequence (model.block_size + 1 = {block_size + 1}); use a larger "
                f"corpus or a smaller model.block_size"
            )


def _max_start(n_tokens: int, block_size: int) -> int:
    if n_tokens < block_size + 1:
        raise DataError(
            f"the token split has {n_tokens} tokens, fewer than block_size + 1 "
            f"= {block_size + 1}; use a smaller model.block_size or a larger corpus"
        )
    return n_tokens - block_size - 1


def windows(tokens: np.ndarray, starts: np.ndarray, block_size: int):
    """x, y int32 [len(starts), block_size]: tokens[s : s + block_size + 1] split in two."""
    w = tokens[starts[:, None] + np.arange(block_size + 1)].astype(np.int32)
    return np.ascontiguousarray(w[:, :-1]), np.ascontiguousarray(w[:, 1:])
