"""Named presets. `NAME-L<n>` is NAME at depth n (the depth study's variants, e.g. core-L12)."""

import re

from sweeps.core.config import DataConfig, ModelConfig, RunConfig, TrainConfig
from sweeps.core.errors import ConfigError

PRESETS = {
    # A few thousand parameters, seconds per run on 2 CPU cores: tests and the quickstart. Too
    # small to beat a bigram model of the corpus, so only spikes make its runs unstable. Its
    # final evaluation covers the first 2^14 validation bytes (32x its 512-byte periodic
    # evaluation): the whole split of the default corpus (1.41M bytes) took about 5.6 s on one
    # thread, more than its training, and the quick start runs 36 of them.
    "smoke": RunConfig(
        model=ModelConfig(n_layer=2, n_head=2, n_embd=16, block_size=32),
        train=TrainConfig(
            max_steps=60,
            batch_size=8,
            warmup_steps=10,
            eval_interval=20,
            eval_batches=2,
            checkpoint_interval=30,
            log_interval=10,
            loss_eval_fraction=0.1,
            final_eval_tokens=2**14,
            baseline="none",
        ),
        data=DataConfig(corpus="builtin", tokenizer="bytes"),
    ),
    # About 0.9M parameters, about a minute per run on 2 CPU cores: a real CPU-scale study.
    # Its final evaluation covers the first 2^18 validation bytes (16x its periodic 16,384): the
    # whole split (1.41M bytes, 1.7x the 0.82M tokens a run trains on) took about 50 s on one
    # thread against about 80 s of training; 2^18 is about a fifth of that.
    "tiny": RunConfig(
        model=ModelConfig(n_layer=4, n_head=4, n_embd=128, block_size=128),
        train=TrainConfig(
            max_steps=400,
            batch_size=16,
            warmup_steps=40,
            eval_interval=100,
            eval_batches=8,
            early_eval_interval=4,  # every 1% of the run in its first 10%
            final_eval_tokens=2**18,
            diag_sequences=8,
            checkpoint_interval=100,
            log_interval=20,
        ),
        data=DataConfig(corpus="builtin", tokenizer="bytes"),
    ),
    # The CPU showcase: 0.24M parameters (4 layers x 64), 1200 steps x 2048 tokens = 2.5M
    # tokens, about 10 tokens per parameter, so runs leave the first phase of learning: at LR
    # 3e-3 (seed 0, independent decay 1e-4) QK-norm on ends at 1.014 and off at 1.200
    # nats/byte, against the corpus's bigram baseline of 2.340 (the old 400-step tiny: 1.77 and
    # 2.14 at 1e-3). Width 64 trains about 28k tokens/s per thread: about 100 s per run, of
    # which the final evaluation over the whole validation split (1.41M bytes) is 12-17 s
    # (13.5-14% of a run's wall time, measured on one thread).
    "cpu": RunConfig(
        model=ModelConfig(n_layer=4, n_head=4, n_embd=64, block_size=128),
        train=TrainConfig(
            max_steps=1200,
            batch_size=16,
            warmup_steps=120,
            eval_interval=200,
            eval_batches=8,
            early_eval_interval=12,  # every 1% of the run in its first 10%
            diag_sequences=8,
            checkpoint_interval=400,
            log_interval=20,
        ),
        data=DataConfig(corpus="builtin", tokenizer="bytes"),
    ),
    # The study's model: 13.8M parameters (10.6M non-embedding) on TinyStories with a compacted
    # gpt2 vocabulary of 4096 ids so embeddings do not dominate. 5000 steps x 8192 tokens =
    # 41M tokens: about 20 minutes per run on a recent laptop GPU, a sweep overnight.
    "core": RunConfig(
        model=ModelConfig(n_layer=6, n_head=6, n_embd=384, block_size=256),
        train=TrainConfig(
            max_steps=5000,
            batch_size=32,
            warmup_steps=250,
            eval_interval=250,
            eval_batches=20,
            early_eval_interval=50,  # every 1% of the run in its first 10%
            # The final val loss covers the first 2^21 validation tokens (256 batches of 32 x
            # 256), 12.8x the 163,840 tokens of the 20 fixed batches it used to be, not the
            # whole TinyStories validation split (~22k stories, several million tokens).
            # Measured with eager qktorch on the CPU (batch 8): an eval batch takes 0.29x a
            # training step, so the final evaluation costs 5% of the run's training tokens x
            # 0.29 = 1.5% of its time; against a compiled training step on a GPU (about 3x
            # faster than eager, docs/gpu-h200) about 5%.
            final_eval_tokens=2**21,
            diag_sequences=8,
            checkpoint_interval=500,
            log_interval=50,
        ),
        data=DataConfig(corpus="tinystories", tokenizer="gpt2-compact", compact_vocab=4096),
    ),
}

_DEPTH_VARIANT = re.compile(r"^(?P<base>[a-z]+)-L(?P<depth>[0-9]+)$")


def get_preset(name: str) -> RunConfig:
    if name in PRESETS:
        return PRESETS[name]
    match = _DEPTH_VARIANT.match(name)
    if match and match["base"] in PRESETS:
        return PRESETS[match["base"]].with_overrides([f"model.n_layer={match['depth']}"])
    raise ConfigError(
        f"unknown preset '{name}'; choose one of: {', '.join(PRESETS)} "
        f"(or a depth variant such as core-L12)"
    )
