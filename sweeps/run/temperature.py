"""The attention temperature a config starts at: the std of the attention logits
q.k / sqrt(d_head) at initialization, measured by the backend's own probe on a batch.

QK-norm off with N(0, 0.02) weights starts near-uniform (std 0.05 on tiny), QK-norm on at std
1; model.qk_init = "matched" closes that gap (sweeps.core.params.qk_init_scales), and this is how
the harness checks it did (`config show`, tests/test_temperature.py).
"""

from __future__ import annotations

import numpy as np

from sweeps.core.config import RunConfig
from sweeps.core.diagnostics import attn_logit_std
from sweeps.core.errors import ConfigError, DataError
from sweeps.data import offline_tokens, val_batches
from sweeps.run.backends import TrainerFactory


def probe_batch(cfg: RunConfig) -> tuple[np.ndarray, str]:
    """The first diagnostic sequences of the config's validation data when it is available
    offline, else seeded random token ids; and a description of which."""
    data = cfg.data
    try:
        splits = offline_tokens(data)
    except DataError:
        splits = None
    if splits is not None:
        tokens = splits.val
        source = f"{data.corpus} validation batch"
    else:
        rng = np.random.default_rng(cfg.seed)
        tokens = rng.integers(0, cfg.vocab_size, 1 << 16).astype(np.uint16)
        source = "random token ids (the corpus is not prepared here)"
    x, _ = val_batches(tokens, 1, cfg.train.batch_size, cfg.model.block_size)[0]
    return x[: cfg.train.diag_sequences], source


def initial_logit_std(cfg: RunConfig, make_trainer: TrainerFactory, x: np.ndarray) -> float:
    """The attention-logit std at initialization, the mean over layers."""
    probe = make_trainer(cfg).probe(x)
    return float(np.mean([attn_logit_std(layer) for layer in probe.layers]))


def temperatures(cfg: RunConfig, make_trainer: TrainerFactory) -> dict:
    """The config's starting logit std, and what it would be with QK-norm off and on; a
    variant that is not a valid config (an intervention QK-norm would normalise away, say)
    reads as the one-line reason, never as an error about the config asked for."""
    x, source = probe_batch(cfg)
    out = {"this config": initial_logit_std(cfg, make_trainer, x), "batch": source}
    for kind in ("none", "rms"):
        try:
            other = cfg.with_overrides([f"model.qk_norm={kind}"])
        except ConfigError as e:
            out[f"with model.qk_norm={kind}"] = f"not a valid config: {e}"
            continue
        out[f"with model.qk_norm={kind}"] = initial_logit_std(other, make_trainer, x)
    return out
