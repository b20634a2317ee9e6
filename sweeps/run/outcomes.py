"""How a run ends: diverged, unstable or ok (docs/STUDY.md, "Run outcomes").

- diverged: a non-finite train loss, or a train loss above the loss at initialization plus
  train.diverge_margin after warmup. The loop stops the run there (it can only get worse).
- unstable: the run finished, but failed: its smoothed train loss ended more than
  train.spike_margin above its running minimum after warmup (a spike it did not recover
  from), or its final validation loss is worse than the train.baseline (bigram by default)
  of its data: it learned less than counting token pairs does.
- ok: neither.
A run whose process raised is `failed` (sweeps.run.rundir.RunDir.record_failure): no outcome.
How the statistics count each class (the effective loss) is a rule of the study:
sweeps.study.rules.
"""

from __future__ import annotations

import math

from sweeps.core.config import TrainConfig

OUTCOMES = ("ok", "unstable", "diverged")
FAILED = ("unstable", "diverged")  # outcomes that count as the run failing at its LR


def is_diverged(loss: float, init_loss: float, steps_done: int, train: TrainConfig) -> bool:
    if not math.isfinite(loss):
        return True
    return steps_done > train.warmup_steps and loss > init_loss + train.diverge_margin


def ema_steps(max_steps: int) -> int:
    """Time constant of the smoothed train loss: 1% of the run, at least 10 steps."""
    return max(10, round(0.01 * max_steps))


class SmoothedLoss:
    """Bias-corrected exponential moving average of the train loss, and its running minimum
    over the steps after warmup. Its state is a dict of floats, saved with a checkpoint."""

    def __init__(self, train: TrainConfig, state: dict | None = None):
        self.beta = 1.0 - 1.0 / ema_steps(train.max_steps)
        self.warmup = train.warmup_steps
        state = state or {"ema_sum": 0.0, "ema_weight": 0.0, "ema_min": math.inf}
        self.sum, self.weight, self.min = state["ema_sum"], state["ema_weight"], state["ema_min"]

    def update(self, step: int, loss: float) -> float:
        """Add the loss of optimizer step `step` (1-based); returns the smoothed value."""
        self.sum = self.beta * self.sum + (1 - self.beta) * loss
        self.weight = self.beta * self.weight + (1 - self.beta)
        value = self.value
        if step > self.warmup and value < self.min:
            self.min = value
        return value

    @property
    def value(self) -> float:
        return self.sum / self.weight if self.weight else math.nan

    def state(self) -> dict:
        return {"ema_sum": self.sum, "ema_weight": self.weight, "ema_min": self.min}


def unstable_reasons(
    final_val_loss: float, smoothed: SmoothedLoss, baseline_loss: float | None, train: TrainConfig
) -> list[str]:
    """Why a finished run is unstable; [] when it is ok."""
    if not math.isfinite(final_val_loss):
        return ["the final val loss is not finite"]
    reasons = []
    rise = smoothed.value - smoothed.min
    if math.isfinite(smoothed.min) and rise > train.spike_margin:
        reasons.append(
            f"spike: smoothed train loss ended {rise:.3f} nats above its minimum "
            f"{smoothed.min:.3f} (margin {train.spike_margin:g})"
        )
    if baseline_loss is not None and final_val_loss > baseline_loss:
        reasons.append(
            f"final val loss {final_val_loss:.3f} is worse than the {train.baseline} "
            f"baseline {baseline_loss:.3f}"
        )
    return reasons
