"""AdamW (bias correction on, decoupled weight decay on 2-D weights only) and global
gradient-norm clipping, spelled out (PyTorch). Mirrors qkmlx/optim.py line for line.

Written by hand rather than taken from the framework so both backends run the same
arithmetic and share one checkpoint format (MLX's AdamW has no bias correction by default).
"""
import numpy as np
import torch

from sweeps.config import TrainConfig
from sweeps.params import decays
from sweeps.schedule import decay_per_lr


def clip_gradients(grads: dict, max_norm: float):
    """Scale gradients by min(1, max_norm / (norm + 1e-6)); return them and the pre-clip norm."""
    norm = torch.sqrt(sum((g.float() ** 2).sum() for g in grads.values()))
    if max_norm <= 0:
        return grads, norm
    scale = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    return {name: g * scale for name, g in grads.items()}, norm


class AdamW:
    def __init__(self, params: dict, train: TrainConfig):
        self.beta1 = train.beta1
        self.beta2 = train.beta2
        self.eps = train.adam_eps
        self.decay_per_lr = decay_per_lr(train)  # coupled or independent decay
        self.state = {
            "step": torch.zeros((), dtype=torch.float32),
            "m": {name: torch.zeros_like(p) for name, p in params.items()},
            "v": {name: torch.zeros_like(p) for name, p in params.items()},
        }

    @torch.no_grad()
    def update(self, params: dict, grads: dict, lr):
        """One step on params (name -> tensor) in place."""
        step = self.state["step"] + 1
        self.state["step"] = step
        bias1 = 1 - self.beta1 ** step
        bias2 = 1 - self.beta2 ** step
        for name, p in params.items():
            g = grads[name]
            m = self.beta1 * self.state["m"][name] + (1 - self.beta1) * g
            v = self.beta2 * self.state["v"][name] + (1 - self.beta2) * g * g
            self.state["m"][name] = m
            self.state["v"][name] = v
            if decays(name, p.shape):
                p.mul_(1 - lr * self.decay_per_lr)
            p.sub_(lr * (m / bias1) / (torch.sqrt(v / bias2) + self.eps))

    def state_numpy(self) -> dict:
        out = {"step": np.array([self.state["step"].item()], dtype=np.float32)}
        for name in self.state["m"]:
            out["m." + name] = self.state["m"][name].detach().cpu().numpy()
            out["v." + name] = self.state["v"][name].detach().cpu().numpy()
        return out

    def load_numpy(self, state: dict, device) -> None:
        self.state["step"] = torch.tensor(float(state["step"][0]), dtype=torch.float32)
        for name in self.state["m"]:
            self.state["m"][name] = torch.from_numpy(state["m." + name]).to(device)
            self.state["v"][name] = torch.from_numpy(state["v." + name]).to(device)
