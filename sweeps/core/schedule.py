"""The learning-rate schedule both trainers use: linear warmup, then cosine to a floor; and
the weight decay each step applies."""

import math

from sweeps.core.config import TrainConfig


def lr_at(step: int, train: TrainConfig) -> float:
    """Learning rate for optimizer step `step` (0-based): a pure function of the config."""
    if step < train.warmup_steps:
        return train.lr * (step + 1) / train.warmup_steps
    floor = train.lr * train.min_lr_ratio
    decay_steps = max(1, train.max_steps - train.warmup_steps)
    progress = min(1.0, (step - train.warmup_steps) / decay_steps)
    return floor + 0.5 * (train.lr - floor) * (1.0 + math.cos(math.pi * progress))


def decay_per_lr(train: TrainConfig) -> float:
    """Weight decay per unit of the step's learning rate: a step at lr_t multiplies each 2-D
    weight by 1 - lr_t * decay_per_lr. coupled (AdamW): weight_decay, so the decay strength
    scales with the peak LR; independent (Wortsman et al. 2023): weight_decay / lr, so each
    step decays by weight_decay * lr_t / lr, the schedule's shape without the peak LR."""
    if train.weight_decay_mode == "independent":
        return train.weight_decay / train.lr
    return train.weight_decay
