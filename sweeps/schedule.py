"""The learning-rate schedule both trainers use: linear warmup, then cosine to a floor."""
import math

from sweeps.config import TrainConfig


def lr_at(step: int, train: TrainConfig) -> float:
    """Learning rate for optimizer step `step` (0-based): a pure function of the config."""
    if step < train.warmup_steps:
        return train.lr * (step + 1) / train.warmup_steps
    floor = train.lr * train.min_lr_ratio
    decay_steps = max(1, train.max_steps - train.warmup_steps)
    progress = min(1.0, (step - train.warmup_steps) / decay_steps)
    return floor + 0.5 * (train.lr - floor) * (1.0 + math.cos(math.pi * progress))
