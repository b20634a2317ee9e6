"""AdamW (bias correction on, decoupled weight decay on 2-D weights only) and global
gradient-norm clipping, spelled out (MLX). Mirrors qktorch/optim.py line for line.

Written by hand rather than taken from the framework so both backends run the same
arithmetic and share one checkpoint format (MLX's AdamW has no bias correction by default).
"""
import mlx.core as mx
import numpy as np

from sweeps.config import TrainConfig
from sweeps.params import decays
from sweeps.schedule import decay_per_lr


def clip_gradients(grads: dict, max_norm: float):
    """Scale gradients by min(1, max_norm / (norm + 1e-6)); return them and the pre-clip norm."""
    norm = mx.sqrt(sum((g.astype(mx.float32) ** 2).sum() for g in grads.values()))
    if max_norm <= 0:
        return grads, norm
    scale = mx.minimum(max_norm / (norm + 1e-6), 1.0)
    return {name: g * scale for name, g in grads.items()}, norm


class AdamW:
    def __init__(self, params: dict, train: TrainConfig):
        self.beta1 = train.beta1
        self.beta2 = train.beta2
        self.eps = train.adam_eps
        self.decay_per_lr = decay_per_lr(train)  # coupled or independent decay
        self.state = {
            "step": mx.zeros((), dtype=mx.float32),
            "m": {name: mx.zeros_like(p) for name, p in params.items()},
            "v": {name: mx.zeros_like(p) for name, p in params.items()},
        }

    def update(self, params: dict, grads: dict, lr):
        """One step on params (name -> array); returns the new params."""
        step = self.state["step"] + 1
        self.state["step"] = step
        bias1 = 1 - self.beta1 ** step
        bias2 = 1 - self.beta2 ** step
        new = {}
        for name, p in params.items():
            g = grads[name]
            m = self.beta1 * self.state["m"][name] + (1 - self.beta1) * g
            v = self.beta2 * self.state["v"][name] + (1 - self.beta2) * g * g
            self.state["m"][name] = m
            self.state["v"][name] = v
            if decays(name, p.shape):
                p = p * (1 - lr * self.decay_per_lr)
            new[name] = p - lr * (m / bias1) / (mx.sqrt(v / bias2) + self.eps)
        return new

    def state_numpy(self) -> dict:
        out = {"step": np.array([self.state["step"].item()], dtype=np.float32)}
        for name in self.state["m"]:
            out["m." + name] = np.array(self.state["m"][name])
            out["v." + name] = np.array(self.state["v"][name])
        return out

    def load_numpy(self, state: dict) -> None:
        self.state["step"] = mx.array(float(state["step"][0]), dtype=mx.float32)
        for name in self.state["m"]:
            self.state["m"][name] = mx.array(state["m." + name])
            self.state["v"][name] = mx.array(state["v." + name])
