"""AdamW (bias correction on, decoupled weight decay on 2-D weights only) and global
gradient-norm clipping, spelled out (MLX). Mirrors qktorch/optim.py line for line.

Written by hand rather than taken from the framework so both backends run the same
arithmetic and share one checkpoint format (MLX's AdamW has no bias correction by default).

Multi-tensor: the update is one expression over the whole parameter tree (tree_map), traced
once into the compiled step, where mx.compile fuses each tensor's chain of elementwise ops
into one kernel. Every element goes through exactly the operations of the per-tensor formula,
in the same order and precision. qktorch keeps one flat buffer instead: eager torch pays per
op, MLX's compiled graph does not.
"""

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten, tree_map

from sweeps.core.config import TrainConfig
from sweeps.core.params import decays
from sweeps.core.schedule import decay_per_lr
from sweeps.run.checkpoint import pack_optimizer, unpack_optimizer


def clip_gradients(grads: dict, max_norm: float):
    """Scale gradients by min(1, max_norm / (norm + 1e-6)); return them and the pre-clip norm.
    grads: a tree of arrays, scaled into a new tree."""
    squares = tree_map(lambda g: (g.astype(mx.float32) ** 2).sum(), grads)
    norm = mx.sqrt(sum(s for _, s in tree_flatten(squares)))
    if max_norm <= 0:
        return grads, norm
    scale = mx.minimum(max_norm / (norm + 1e-6), 1.0)
    return tree_map(lambda g: g * scale, grads), norm


def clip_qk(params: dict, maxima, tau: float, head_dim: int):
    """QK-clip (sweeps.core.interventions): after the step, the W_q and W_k rows of each head
    whose max attention logit on the step's batch (maxima [n_layer, H]) exceeded tau are
    scaled by sqrt(tau / max), so that logit comes out at tau. Returns the new params, the
    number of heads clipped and the largest max logit. The scale is exactly 1 elsewhere."""
    scales = mx.sqrt(tau / mx.maximum(maxima, tau))
    rows = mx.repeat(scales, head_dim, axis=1)  # [n_layer, n_embd]: a head's rows, in order
    new = dict(params)
    for layer in range(maxima.shape[0]):
        for proj in ("q_proj", "k_proj"):
            name = f"blocks.{layer}.attn.{proj}.weight"  # [out, in]: rows are output features
            new[name] = params[name] * rows[layer][:, None]
    return new, (maxima > tau).sum().astype(mx.float32), maxima.max()


class AdamW:
    def __init__(self, params: dict, train: TrainConfig):
        self.beta1 = train.beta1
        self.beta2 = train.beta2
        self.eps = train.adam_eps
        self.decay_per_lr = decay_per_lr(train)  # coupled or independent decay
        # Which tensors decay (2-D weights), decided once by name and shape.
        self.decayed = {name: decays(name, p.shape) for name, p in params.items()}
        self.state = {
            "step": mx.zeros((), dtype=mx.float32),
            "m": {name: mx.zeros_like(p) for name, p in params.items()},
            "v": {name: mx.zeros_like(p) for name, p in params.items()},
        }

    def lr_tensor(self, lr: float) -> mx.array:
        """The step's LR as a float32 array: a new LR is new data, not a new graph."""
        return mx.array(lr, dtype=mx.float32)

    def update(self, params: dict, grads: dict, lr: mx.array):
        """One step on params (name -> array); returns the new params. Per element, in this
        order and in float32:
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            p = p * (1 - lr * decay_per_lr)            (2-D weights only)
            p = p - lr * (m / bias1) / (sqrt(v / bias2) + eps)
        """
        step = self.state["step"] + 1
        self.state["step"] = step
        bias1 = 1 - self.beta1**step
        bias2 = 1 - self.beta2**step
        m = tree_map(lambda m, g: self.beta1 * m + (1 - self.beta1) * g, self.state["m"], grads)
        v = tree_map(lambda v, g: self.beta2 * v + (1 - self.beta2) * g * g, self.state["v"], grads)
        self.state["m"], self.state["v"] = m, v
        decay = 1 - lr * self.decay_per_lr
        decayed = {name: p * decay if self.decayed[name] else p for name, p in params.items()}
        return tree_map(
            lambda p, m, v: p - lr * (m / bias1) / (mx.sqrt(v / bias2) + self.eps), decayed, m, v
        )

    def state_numpy(self) -> dict:
        """The checkpoint format of sweeps.run.checkpoint."""
        m, v = ({name: np.array(a) for name, a in self.state[key].items()} for key in "mv")
        return pack_optimizer(self.state["step"].item(), m, v)

    def load_numpy(self, state: dict) -> None:
        step, m, v = unpack_optimizer(state, self.state["m"])
        self.state["step"] = mx.array(step, dtype=mx.float32)
        for name in self.state["m"]:
            self.state["m"][name] = mx.array(m[name])
            self.state["v"][name] = mx.array(v[name])
