"""The batches both trainers see: the config's own corpus where it is available offline,
otherwise seeded random token ids (the check is about arithmetic, not data).

Either way batches come from sweeps.data (batch_starts, get_batch, val_batches), exactly as
in a run: training steps gather their windows on the device from the same starts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sweeps.core.config import RunConfig
from sweeps.data import batch_starts, get_batch, offline_tokens, val_batches

VAL_BATCHES = 2  # for the checkpoint's val loss: enough to compare, cheap at core size
RANDOM_TOKENS = 1 << 18  # length of each random split: many distinct windows


@dataclass
class Batches:
    train_tokens: np.ndarray
    val: list[tuple[np.ndarray, np.ndarray]]
    seed: int
    batch_size: int
    block_size: int
    source: str  # shown in the output: which tokens the comparison used

    def train(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        return get_batch(self.train_tokens, self.seed, step, self.batch_size, self.block_size)

    def starts(self, step: int) -> np.ndarray:
        """Where the windows of train(step) start: what a trainer gathers on its device."""
        return batch_starts(
            len(self.train_tokens), self.seed, step, self.batch_size, self.block_size
        )

    def diag(self, sequences: int) -> np.ndarray:
        return self.val[0][0][:sequences]


def make_batches(cfg: RunConfig) -> Batches:
    """Batches for cfg. A tinystories corpus that is not prepared locally (it needs the
    network) is replaced by random token ids from a numpy RNG seeded with cfg.seed."""
    data = cfg.data
    tokens = offline_tokens(data)
    if tokens is None:
        rng = np.random.default_rng([cfg.seed, 7])
        train, val = (
            rng.integers(0, cfg.vocab_size, RANDOM_TOKENS).astype(np.uint16) for _ in range(2)
        )
        source = (
            f"random token ids (numpy, seed {cfg.seed}, vocab {cfg.vocab_size}): the "
            f"tinystories corpus is not prepared here and needs the network"
        )
    else:
        train, val = tokens.train, tokens.val
        synthetic = " (synthetic)" if data.corpus == "builtin" else ""
        source = f"{data.corpus} corpus{synthetic}, tokenizer {data.tokenizer}"
    b, t = cfg.train.batch_size, cfg.model.block_size
    return Batches(train, val_batches(val, VAL_BATCHES, b, t), cfg.seed, b, t, source)
