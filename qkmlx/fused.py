"""M runs that differ only in learning rate and seed, trained as one program (MLX).
Mirrors qktorch/fused.py line for line.

Horizontal fusion (HFTA, MLSys 2021), written by hand rather than with mx.vmap (which has no
per-model learning rate): every weight is stacked on a leading model dimension, (M, *shape)
under its shared name; each linear layer is one batched matmul; attention is the single
run's fused SDPA kernel with M folded into its batch. Nothing reduces across models: norms,
softmax, cross entropy, the gradient-norm clip and AdamW all act per model, and the objective
is the sum of the models' own losses, so each model's gradient is exactly its own (d sum /
d theta_m = d loss_m / d theta_m). A model that diverges poisons only its own slices; the
loop stops it (FusedTrainer.stop), after which it is frozen and computes on zeros.

The weights and AdamW's moments are trees of (M, *shape) arrays (qkmlx/optim.py's tree ops,
each scalar per model), updated inside the compiled step; qktorch keeps (M, P) flat buffers.
"""

import math
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx.utils import tree_flatten, tree_map

from qkmlx.model import attend
from qkmlx.train import device_memory, device_name, make_deterministic, pick_device, set_tf32
from sweeps.core.config import ModelConfig, RunConfig
from sweeps.core.diagnostics import LayerProbe, Probe
from sweeps.core.interventions import attach, step_hooks
from sweeps.core.params import check_fits_device, decays, init_params, param_shapes
from sweeps.core.schedule import decay_per_lr
from sweeps.platform.devices import deterministic_mode
from sweeps.run.checkpoint import pack_optimizer, unpack_optimizer
from sweeps.run.fused import check_fusable, group_config


# -- the model: functions of the stacked weights ----------------------------------------------
def per_model(t, like):
    """t [M, *tail] shaped to broadcast against like [M, ..., *tail]: a per-model value."""
    return t.reshape(t.shape[0], *[1] * (like.ndim - t.ndim), *t.shape[1:])


def norm(kind: str, x, gain, eps: float):
    """A norm over the last dim with each model's own gain [M, C] (no bias), in float32
    whatever the compute dtype (sweeps.core.precision)."""
    x = x.astype(mx.float32)
    if kind == "rms":
        return mx.fast.rms_norm(x, None, eps) * per_model(gain, x)
    return mx.fast.layer_norm(x, None, None, eps) * per_model(gain, x)


def linear(x, w, dtype):
    """x [M, ..., in] times each model's own w [M, out, in] transposed: one batched matmul,
    computed in dtype (its input and float32 weight cast)."""
    M = x.shape[0]
    y = x.reshape(M, -1, x.shape[-1]).astype(dtype) @ w.astype(dtype).transpose(0, 2, 1)
    return y.reshape(*x.shape[:-1], w.shape[1])


class FusedGPT:
    """qkmlx.model.GPT over stacked weights: p maps each shared name to (M, *shape)."""

    def __init__(self, cfg: ModelConfig, dtype):
        self.cfg = cfg
        self.dtype = dtype  # the compute dtype (sweeps.core.precision)
        self.scale = 1.0 / math.sqrt(cfg.head_dim)
        self.softcap = cfg.attn_softcap  # 0: off (sweeps.core.interventions)

    def heads(self, p, pre, x):
        # x: [M, B, T, C] -> q, k, v: [M * B, H, T, hd] (M folded into attention's batch)
        M, B, T, C = x.shape
        cfg = self.cfg
        q, k, v = (
            linear(x, p[f"{pre}attn.{n}_proj.weight"], self.dtype).reshape(
                M, B, T, cfg.n_head, cfg.head_dim
            )
            for n in "qkv"
        )
        if cfg.qk_norm != "none":
            q = norm(cfg.qk_norm, q, p[f"{pre}attn.q_norm.weight"], cfg.norm_eps)
            k = norm(cfg.qk_norm, k, p[f"{pre}attn.k_norm.weight"], cfg.norm_eps)
        return (
            t.astype(self.dtype).reshape(M * B, T, cfg.n_head, cfg.head_dim).transpose(0, 2, 1, 3)
            for t in (q, k, v)
        )

    def merge(self, p, pre, y, M):
        # y: [M * B, H, T, hd] -> [M, B, T, C]
        MB, H, T, hd = y.shape
        y = y.transpose(0, 2, 1, 3).reshape(M, MB // M, T, H * hd)
        return linear(y, p[f"{pre}attn.o_proj.weight"], self.dtype)

    def attention(self, p, pre, x):
        if self.softcap:  # the fused kernel cannot cap the logits
            return self.explicit(p, pre, x)[0]
        q, k, v = self.heads(p, pre, x)
        return self.merge(p, pre, attend(q, k, v, self.scale, self.dtype), x.shape[0])

    def explicit(self, p, pre, x):
        """The same attention, spelled out, also returning scores (before any soft cap) and
        weights [M, B, H, T, T]."""
        q, k, v = self.heads(p, pre, x)
        M, T = x.shape[0], x.shape[2]
        scores = (q @ k.transpose(0, 1, 3, 2)).astype(mx.float32) * self.scale
        logits = self.softcap * mx.tanh(scores / self.softcap) if self.softcap else scores
        causal = mx.tril(mx.ones((T, T), dtype=mx.bool_))
        probs = mx.softmax(mx.where(causal, logits, float("-inf")), axis=-1, precise=True)
        fold = (M, -1, *scores.shape[1:])
        y = self.merge(p, pre, probs.astype(self.dtype) @ v, M)
        return y, scores.reshape(fold), probs.reshape(fold)

    def mlp(self, p, pre, x):
        h = nn.gelu(linear(x, p[pre + "mlp.fc.weight"], self.dtype))
        return linear(h, p[pre + "mlp.proj.weight"], self.dtype)

    def block(self, p, i, x, explicit=False):
        cfg, pre = self.cfg, f"blocks.{i}."
        h = norm(cfg.norm, x, p[pre + "ln_1.weight"], cfg.norm_eps)
        y, *seen = self.explicit(p, pre, h) if explicit else (self.attention(p, pre, h),)
        x = x + y
        x = x + self.mlp(p, pre, norm(cfg.norm, x, p[pre + "ln_2.weight"], cfg.norm_eps))
        return (x, *seen)

    def embed(self, p, idx):
        # idx: [M, B, T] int -> [M, B, T, C]; model m's rows of the stacked table by offset
        M, V, C = p["wte.weight"].shape
        offsets = mx.arange(M)[:, None, None] * V
        tokens = p["wte.weight"].reshape(M * V, C)[idx + offsets]
        return tokens + p["wpe.weight"][:, None, : idx.shape[2]]

    def head(self, p, x):
        x = norm(self.cfg.norm, x, p["ln_f.weight"], self.cfg.norm_eps)
        w = p["wte.weight"] if self.cfg.tie_embeddings else p["lm_head.weight"]
        return linear(x, w, self.dtype)

    def __call__(self, p, idx):
        x = self.embed(p, idx)
        for i in range(self.cfg.n_layer):
            (x,) = self.block(p, i, x)
        return self.head(p, x)  # [M, B, T, V]

    def probe(self, p, idx):
        """Logits via the explicit path, and (scores, probs, residual) of every layer."""
        x = self.embed(p, idx)
        layers = []
        for i in range(self.cfg.n_layer):
            x, scores, probs = self.block(p, i, x, explicit=True)
            layers.append((scores, probs, x))
        return self.head(p, x), layers


def cross_entropy(logits, y):
    """[M]: each model's mean cross entropy over its B * T tokens."""
    M, V = logits.shape[0], logits.shape[-1]
    flat = nn.losses.cross_entropy(
        logits.reshape(-1, V).astype(mx.float32), y.reshape(-1), reduction="none"
    )
    return flat.reshape(M, -1).mean(1)


def head_max_logits(scores):
    """[M, H]: each model's and head's largest causal attention logit over the batch, in
    float32, without gradient."""
    T = scores.shape[-1]
    causal = mx.tril(mx.ones((T, T), dtype=mx.bool_))
    top = mx.where(causal, scores, float("-inf")).max(axis=(1, 3, 4))
    return mx.stop_gradient(top).astype(mx.float32)


def z_term(logits):
    """[M]: each model's z-loss term, the mean over its tokens of (log Z)^2."""
    M, V = logits.shape[0], logits.shape[-1]
    log_z = mx.logsumexp(logits.reshape(M, -1, V).astype(mx.float32), axis=-1)
    return (log_z**2).mean(1)


def objective(model, p, x, y, terms=(), attn_max: bool = False):
    """([M] objective, [M] cross entropy) and, with attn_max, the [M, n_layer, H] max
    attention logits; terms: (value, term) pairs, each adding value * term(this module,
    logits) ([M]): qkmlx.model.objective per model."""
    if attn_max:
        logits, layers = model.probe(p, x)
        maxima = (mx.stack([head_max_logits(scores) for scores, _, _ in layers], axis=1),)
    else:
        logits, maxima = model(p, x), ()
    loss = cross_entropy(logits, y)
    total = loss
    for value, term in terms:
        total = total + value * term(OPS, logits)
    return (total, loss, *maxima)


# -- the optimizer: qkmlx.optim per model -----------------------------------------------------
def clip_gradients(grads: dict, max_norm: float):
    """qkmlx.optim.clip_gradients per model: each model's gradients scaled by min(1, max_norm
    / (its norm + 1e-6)); returns them and the [M] pre-clip norms. A global clip would couple
    the models."""
    squares = tree_map(lambda g: (g.astype(mx.float32) ** 2).reshape(g.shape[0], -1).sum(1), grads)
    norm = mx.sqrt(sum(s for _, s in tree_flatten(squares)))
    if max_norm <= 0:
        return grads, norm
    scale = mx.minimum(max_norm / (norm + 1e-6), 1.0)
    return tree_map(lambda g: g * per_model(scale, g), grads), norm


def clip_qk(params: dict, maxima, tau: float, head_dim: int):
    """qkmlx.optim.clip_qk per model: maxima [M, n_layer, H]; returns the new params, the [M]
    heads clipped and the [M] largest max logits."""
    scales = mx.sqrt(tau / mx.maximum(maxima, tau))
    rows = mx.repeat(scales, head_dim, axis=2)  # [M, n_layer, n_embd]
    new = dict(params)
    for layer in range(maxima.shape[1]):
        for proj in ("q_proj", "k_proj"):
            name = f"blocks.{layer}.attn.{proj}.weight"  # [M, out, in]: rows are outputs
            new[name] = params[name] * rows[:, layer, :, None]
    return new, (maxima > tau).sum((1, 2)).astype(mx.float32), maxima.max((1, 2))


SCALARS = ("lr", "decay", "beta1", "1-beta1", "beta2", "1-beta2", "active")


class FusedAdamW:
    """qkmlx.optim.AdamW on trees of (M, *shape) arrays, every scalar of the step per model:
    the LR and its decay from the model's own schedule; a stopped model (active 0) keeps its
    weights, moments and step count (beta 1, LR 0)."""

    def __init__(self, shapes: dict, cfgs: list[RunConfig]):
        train = cfgs[0].train  # the same for all but the LR (check_fusable)
        self.beta1, self.beta2, self.eps = train.beta1, train.beta2, train.adam_eps
        self.decay_per_lr = [decay_per_lr(c.train) for c in cfgs]
        self.shapes = shapes
        self.decayed = {name: decays(name, s) for name, s in shapes.items()}
        M = len(cfgs)
        self.params = {name: mx.zeros((M, *s)) for name, s in shapes.items()}
        self.state = {
            "step": mx.zeros((M,), dtype=mx.float32),
            "m": {name: mx.zeros((M, *s)) for name, s in shapes.items()},
            "v": {name: mx.zeros((M, *s)) for name, s in shapes.items()},
        }

    def scalars(self, lrs: list, active: list) -> mx.array:
        """[7, M] float32 (SCALARS), from the host's double precision as a Python scalar
        would be rounded: a new LR is new data, not a new graph."""
        b1, b2 = self.beta1, self.beta2
        rows = [
            [lr * on for lr, on in zip(lrs, active)],
            [1 - lr * d * on for lr, d, on in zip(lrs, self.decay_per_lr, active)],
            [b1 if on else 1.0 for on in active],
            [1 - b1 if on else 0.0 for on in active],
            [b2 if on else 1.0 for on in active],
            [1 - b2 if on else 0.0 for on in active],
            [float(on) for on in active],
        ]
        return mx.array(np.array(rows, dtype=np.float32))

    def update(self, params: dict, grads: dict, s):
        """One step; returns the new params. Per element, in this order and in float32
        (qkmlx.optim.AdamW.update, each model its own scalars):
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            p = p * (1 - lr * decay_per_lr)            (2-D weights only)
            p = p - lr * (m / bias1) / (sqrt(v / bias2) + eps)
        """
        step = self.state["step"] + s[6]
        self.state["step"] = step
        seen = mx.maximum(step, 1)  # a model stopped before its first step
        bias1 = 1 - self.beta1**seen
        bias2 = 1 - self.beta2**seen
        col = lambda k, like: per_model(s[k], like)  # noqa: E731 (scalar k per model)
        m = tree_map(lambda m, g: col(2, m) * m + col(3, g) * g, self.state["m"], grads)
        v = tree_map(lambda v, g: col(4, v) * v + col(5, g) * g * g, self.state["v"], grads)
        self.state["m"], self.state["v"] = m, v
        decayed = {n: p * col(1, p) if self.decayed[n] else p for n, p in params.items()}
        return tree_map(
            lambda p, m, v: (
                p
                - col(0, p)
                * (m / per_model(bias1, m))
                / (mx.sqrt(v / per_model(bias2, v)) + self.eps)
            ),
            decayed,
            m,
            v,
        )

    def state_numpy(self, i: int) -> dict:
        """Model i's optimizer state in the checkpoint format of sweeps.run.checkpoint."""
        m, v = ({n: np.array(a[i]) for n, a in self.state[k].items()} for k in "mv")
        return pack_optimizer(self.state["step"][i].item(), m, v)

    def load_numpy(self, i: int, state: dict) -> None:
        step, m, v = unpack_optimizer(state, self.shapes)
        self.state["step"][i] = step
        for key, moments in (("m", m), ("v", v)):
            for name, a in self.state[key].items():
                a[i] = mx.array(moments[name])


# -- the trainer ------------------------------------------------------------------------------
class FusedTrainer:
    """M runs on one device (sweeps.run.fused drives it, a sweeps.run.backends.Trainer per
    model through sweeps.run.fused.ModelView). Arrays cross the boundary as numpy with the
    model first: losses [M], parameters per model under the shared names."""

    def __init__(
        self,
        cfgs: list,
        device: str = "auto",
        compile: bool = True,
        tf32: bool = False,
        deterministic: bool | None = None,
    ):
        check_fusable(cfgs)
        self.cfgs, self.cfg, self.M = cfgs, group_config(cfgs), len(cfgs)
        self.device = pick_device(device)
        self.device_name = device_name(self.device)
        check_fits_device(self.cfg, device_memory(self.device), models=self.M)
        if deterministic_mode() if deterministic is None else deterministic:
            make_deterministic(self.device)
        set_tf32(tf32)
        self.compute_dtype = mx.bfloat16 if self.cfg.train.dtype == "bfloat16" else mx.float32
        self.model = FusedGPT(self.cfg.model, self.compute_dtype)
        attach(self, self.cfg)  # interventions' hooks (sweeps.core.interventions), as one run's
        shapes = param_shapes(self.cfg.model, self.cfg.vocab_size)
        self.optimizer = FusedAdamW(shapes, cfgs)
        self.version = 0  # bumped whenever the weights change (sweeps.run.fused caches by it)
        for i, c in enumerate(cfgs):
            self.set_params(i, init_params(c.model, c.vocab_size, c.seed))
        self.active = [True] * self.M  # False: stopped (diverged) or not started yet
        self.step = compile_step(self._step, self.optimizer) if compile else self._step
        self.tokens = None
        self.window = mx.arange(self.cfg.model.block_size + 1)

    def objective_of(self, params: dict, x, y):
        hooks = step_hooks(self)
        total, *rest = objective(self.model, params, x, y, hooks.terms, hooks.attn_max)
        # the sum of the models' objectives: each model's gradient is its own
        return (total.sum(), *rest)

    def _step(self, x, y, s):
        """([M] loss, [M] grad norm, *[M] step metrics)."""
        params, hooks = self.optimizer.params, step_hooks(self)
        (_, loss, *measured), grads = mx.value_and_grad(self.objective_of)(params, x, y)
        grads, grad_norm = clip_gradients(grads, self.cfg.train.grad_clip)
        new = self.optimizer.update(params, grads, s)
        attn_max = measured[0] if hooks.attn_max else None
        metrics = []
        for value, after_step in hooks.after:  # each returns the new weights first
            new, *values = after_step(OPS, new, value, self.cfg, attn_max)
            metrics += values
        self.optimizer.params.update(new)
        return (loss, grad_norm, *metrics)

    def set_train_tokens(self, tokens: np.ndarray) -> None:
        from qkmlx.train import Trainer

        Trainer.set_train_tokens(self, tokens)  # the same split for every model

    def batch(self, starts: np.ndarray):
        """[M, B, T + 1] int32: each model's windows, gathered on the device."""
        return self.tokens[mx.array(starts)[..., None] + self.window].astype(mx.int32)

    def train_step(self, starts: np.ndarray, lrs: list):
        """One step of every model: starts [M, B] (each model's own seed's batch), lrs [M];
        a model not active is frozen. Nothing is waited for."""
        batch = self.batch(starts)
        s = self.optimizer.scalars(lrs, self.active)
        out = self.step(batch[..., :-1], batch[..., 1:], s)
        mx.async_eval(*out, self.optimizer.params, self.optimizer.state)
        self.version += 1
        return out

    def read(self, handles: list) -> np.ndarray:
        """[n, M, 2 + k] (loss, grad norm, k step metrics) per step and model, in one sync."""
        stacked = mx.stack([mx.stack(h, axis=1) for h in handles]).astype(mx.float32)
        return np.array(stacked, dtype=np.float64)

    def stop(self, i: int) -> None:
        """Stop model i for good: frozen from now on, its weights and moments zeroed, so a
        diverged model computes on finite numbers (its slices never reach the others')."""
        self.active[i] = False
        for tree in (self.optimizer.params, self.optimizer.state["m"], self.optimizer.state["v"]):
            for a in tree.values():
                a[i] = 0.0
        self.version += 1

    def grads(self, x: np.ndarray, y: np.ndarray):
        """([M] objectives, {name: [M, ...] unclipped gradients}) of one batch [B, T] that every
        model sees; no update (crosscheck)."""
        xs, ys = (mx.array(np.broadcast_to(a, (self.M, *a.shape))) for a in (x, y))
        params, hooks = self.optimizer.params, step_hooks(self)
        fn = lambda p: objective(self.model, p, xs, ys, hooks.terms, hooks.attn_max)  # noqa: E731
        total = fn(params)[0]
        grads = mx.grad(lambda p: fn(p)[0].sum())(params)
        mx.eval(total, grads)
        out = {n: np.array(g.astype(mx.float32)) for n, g in grads.items()}
        return np.array(total), out

    def eval_losses(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """[M]: every model's mean cross entropy of one batch [B, T]."""
        xs, ys = (mx.array(np.broadcast_to(a, (self.M, *a.shape))) for a in (x, y))
        logits = self.model(self.optimizer.params, xs)
        return np.array(cross_entropy(logits, ys), dtype=np.float64)

    def probe(self, x: np.ndarray) -> list:
        """[M] Probes (qkmlx.train.Trainer.probe per model) of one batch every model sees."""
        p = self.optimizer.params
        logits, layers = self.model.probe(p, mx.array(np.broadcast_to(x, (self.M, *x.shape))))
        qk = self.cfg.model.qk_norm != "none"
        out = []
        for i in range(self.M):
            probes = []
            for n, layer in enumerate(layers):
                pre = f"blocks.{n}.attn."
                gains = [None, None]
                if qk:
                    gains = [np.array(p[pre + k][i]) for k in ("q_norm.weight", "k_norm.weight")]
                probes.append(
                    LayerProbe(*(np.array(t[i].astype(mx.float32)) for t in layer), *gains)
                )
            out.append(Probe(probes, np.array(logits[i].astype(mx.float32))))
        return out

    def logits(self, x: np.ndarray) -> np.ndarray:
        """[M, B, T, V] of one batch every model sees."""
        xs = mx.array(np.broadcast_to(x, (self.M, *x.shape)))
        return np.array(self.model(self.optimizer.params, xs).astype(mx.float32))

    def get_params(self, i: int) -> dict:
        params = self.optimizer.params
        return {name: np.array(params[name][i]) for name in param_order(self.cfg)}

    def set_params(self, i: int, params: dict) -> None:
        views = self.optimizer.params
        if set(params) != set(views):
            odd = sorted(set(params) ^ set(views))
            raise KeyError(f"parameters do not match the model: {', '.join(odd[:3])}")
        for name, a in views.items():
            a[i] = mx.array(np.asarray(params[name]))
        mx.eval(views)
        self.version += 1

    def get_state(self, i: int) -> tuple:
        return self.get_params(i), self.optimizer.state_numpy(i)

    def set_state(self, i: int, params: dict, optimizer: dict) -> None:
        self.set_params(i, params)
        self.optimizer.load_numpy(i, optimizer)


OPS = sys.modules[__name__]  # the `ops` of every hook in a fused step: z_term, clip_qk


def param_order(cfg: RunConfig) -> list:
    """The shared names in a single run's state_dict order (checkpoints list them so)."""
    return list(param_shapes(cfg.model, cfg.vocab_size))


def compile_step(step, optimizer: FusedAdamW):
    """qkmlx.train.compile_step for the fused step: mx.compile of the whole step with the
    weights and the optimizer's arrays as implicit inputs and outputs; the per-model scalars
    arrive as an array, so a new LR is new data, not a retrace."""
    state = [optimizer.params, optimizer.state]
    return mx.compile(step, inputs=state, outputs=state)
