"""M runs that differ only in learning rate and seed, trained as one program (PyTorch).
Mirrors qkmlx/fused.py line for line.

Horizontal fusion (HFTA, MLSys 2021), written by hand rather than with torch.func.vmap (which
has no per-model learning rate and loses the fused attention kernel in some paths): every
weight is stacked on a leading model dimension, (M, *shape) under its shared name; each
linear layer is one batched matmul; attention is the single run's fused SDPA kernel with M
folded into its batch. Nothing reduces across models: norms, softmax, cross entropy, the
gradient-norm clip and AdamW all act per model, and the objective is the sum of the models'
own losses, so each model's gradient is exactly its own (d sum / d theta_m = d loss_m /
d theta_m). A model that diverges poisons only its own slices; the loop stops it
(FusedTrainer.stop), after which it is frozen and computes on zeros.

The weights, the gradient and AdamW's moments each live in one (M, P) buffer, a model per
row, the decayed 2-D weights first (qktorch/optim.py's layout, per row). The step slices the
weights out of the buffer itself and differentiates with respect to the buffer, so the
gradient arrives flat and the compiled step has one weight input, never a buffer and its views.
"""

import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

from qktorch.model import attend
from qktorch.optim import to_device
from qktorch.train import (
    default_compile,
    device_memory,
    device_name,
    make_deterministic,
    pick_device,
)
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
    return t.reshape(t.shape[0], *[1] * (like.dim() - t.dim()), *t.shape[1:])


def norm(kind: str, x, gain, eps: float):
    """A norm over the last dim with each model's own gain [M, C] (no bias), in float32
    whatever the compute dtype (sweeps.core.precision)."""
    x = x.float()
    if kind == "rms":
        return F.rms_norm(x, x.shape[-1:], eps=eps) * per_model(gain, x)
    return F.layer_norm(x, x.shape[-1:], eps=eps) * per_model(gain, x)


def linear(x, w, dtype):
    """x [M, ..., in] times each model's own w [M, out, in] transposed: one batched matmul,
    computed in dtype (its input and float32 weight cast)."""
    M = x.shape[0]
    y = torch.bmm(x.reshape(M, -1, x.shape[-1]).to(dtype), w.to(dtype).transpose(1, 2))
    return y.reshape(*x.shape[:-1], w.shape[1])


class FusedGPT:
    """qktorch.model.GPT over stacked weights: p maps each shared name to (M, *shape)."""

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
            t.to(self.dtype).reshape(M * B, T, cfg.n_head, cfg.head_dim).transpose(1, 2)
            for t in (q, k, v)
        )

    def merge(self, p, pre, y, M):
        # y: [M * B, H, T, hd] -> [M, B, T, C]
        MB, H, T, hd = y.shape
        y = y.transpose(1, 2).reshape(M, MB // M, T, H * hd)
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
        scores = (q @ k.transpose(-2, -1)).float() * self.scale
        logits = self.softcap * torch.tanh(scores / self.softcap) if self.softcap else scores
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        probs = torch.softmax(logits.masked_fill(~causal, float("-inf")), dim=-1)
        fold = (M, -1, *scores.shape[1:])
        y = self.merge(p, pre, probs.to(self.dtype) @ v, M)
        return y, scores.reshape(fold), probs.reshape(fold)

    def mlp(self, p, pre, x):
        h = F.gelu(linear(x, p[pre + "mlp.fc.weight"], self.dtype))
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
        offsets = torch.arange(M, device=idx.device)[:, None, None] * V
        tokens = F.embedding(idx + offsets, p["wte.weight"].reshape(M * V, C))
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
    flat = F.cross_entropy(logits.reshape(-1, V).float(), y.reshape(-1), reduction="none")
    return flat.reshape(M, -1).mean(1)


def head_max_logits(scores):
    """[M, H]: each model's and head's largest causal attention logit over the batch, in
    float32, without gradient."""
    T = scores.shape[-1]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=scores.device))
    top = scores.detach().masked_fill(~causal, float("-inf")).amax(dim=(1, 3, 4))
    return top.float()


def z_term(logits):
    """[M]: each model's z-loss term, the mean over its tokens of (log Z)^2."""
    M, V = logits.shape[0], logits.shape[-1]
    log_z = torch.logsumexp(logits.reshape(M, -1, V).float(), dim=-1)
    return (log_z**2).mean(1)


def objective(model, p, x, y, terms=(), attn_max: bool = False):
    """([M] objective, [M] cross entropy) and, with attn_max, the [M, n_layer, H] max
    attention logits; terms: (value, term) pairs, each adding value * term(this module,
    logits) ([M]): qktorch.model.objective per model."""
    if attn_max:
        logits, layers = model.probe(p, x)
        maxima = (torch.stack([head_max_logits(scores) for scores, _, _ in layers], dim=1),)
    else:
        logits, maxima = model(p, x), ()
    loss = cross_entropy(logits, y)
    total = loss
    for value, term in terms:
        total = total + value * term(OPS, logits)
    return (total, loss, *maxima)


# -- the optimizer: qktorch.optim per row -----------------------------------------------------
def clip_gradients(grads, max_norm: float, out=None):
    """qktorch.optim.clip_gradients per model: grads (M, P) flat float32, each row scaled in
    place by min(1, max_norm / (its norm + 1e-6)); returns them and the [M] pre-clip norms. A
    global clip would couple the models."""
    norm = torch.sqrt(torch.pow(grads, 2, out=out).sum(1))
    if max_norm <= 0:
        return grads, norm
    scale = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    return grads.mul_(scale[:, None]), norm


@torch.no_grad()
def clip_qk(params: dict, maxima, tau: float, head_dim: int):
    """qktorch.optim.clip_qk per model: maxima [M, n_layer, H]; returns the [M] heads clipped
    and the [M] largest max logits."""
    scales = torch.sqrt(tau / torch.clamp(maxima, min=tau))
    rows = torch.repeat_interleave(scales, head_dim, dim=2)  # [M, n_layer, n_embd]
    for layer in range(maxima.shape[1]):
        for proj in ("q_proj", "k_proj"):
            name = f"blocks.{layer}.attn.{proj}.weight"  # [M, out, in]: rows are outputs
            params[name].mul_(rows[:, layer, :, None])
    return (maxima > tau).sum((1, 2)).float(), maxima.amax((1, 2))


SCALARS = ("lr", "decay", "beta1", "1-beta1", "beta2", "1-beta2", "active")


class FusedAdamW:
    """qktorch.optim.AdamW on (M, P) buffers, every scalar of the step per model: the LR and
    its decay from the model's own schedule; a stopped model (active 0) keeps its weights,
    moments and step count (beta 1, LR 0)."""

    def __init__(self, shapes: dict, cfgs: list[RunConfig], device):
        train = cfgs[0].train  # the same for all but the LR (check_fusable)
        self.beta1, self.beta2, self.eps = train.beta1, train.beta2, train.adam_eps
        self.decay_per_lr = [decay_per_lr(c.train) for c in cfgs]
        order = sorted(shapes, key=lambda name: not decays(name, shapes[name]))
        self.shapes = {name: shapes[name] for name in order}
        self.sizes = [math.prod(s) for s in self.shapes.values()]
        self.n_decayed = sum(n for n, s in zip(self.sizes, self.shapes.values()) if len(s) == 2)
        M, P = len(cfgs), sum(self.sizes)
        self.flat = torch.zeros(M, P, device=device).requires_grad_(True)
        self.state = {
            "step": torch.zeros(M, dtype=torch.float32, device=device),
            "m": torch.zeros(M, P, device=device),
            "v": torch.zeros(M, P, device=device),
        }
        self.a, self.b = (torch.zeros(M, P, device=device) for _ in range(2))  # scratch

    def views(self, flat) -> dict:
        """flat (M, P) split into the parameters by name, (M, *shape) each."""
        pieces = flat.split(self.sizes, dim=1)
        return {n: t.view(t.shape[0], *s) for (n, s), t in zip(self.shapes.items(), pieces)}

    def scalars(self, lrs: list, active: list) -> torch.Tensor:
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
        return to_device(torch.tensor(rows, dtype=torch.float32), self.flat.device)

    @torch.no_grad()
    def update(self, grads, s):
        """One step on self.flat in place; grads (M, P), s from scalars. Per element, in
        this order and in float32 (qktorch.optim.AdamW.update, each model its own scalars):
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            p = p * (1 - lr * decay_per_lr)            (2-D weights only)
            p = p - lr * (m / bias1) / (sqrt(v / bias2) + eps)
        """
        step = self.state["step"].add_(s[6])
        seen = torch.clamp(step, min=1)[:, None]  # a model stopped before its first step
        bias1 = 1 - self.beta1**seen
        bias2 = 1 - self.beta2**seen
        g, m, v, a, b = grads, self.state["m"], self.state["v"], self.a, self.b
        col = s[:, :, None]  # [7, M, 1]: each scalar per row
        m.mul_(col[2]).add_(torch.mul(g, col[3], out=a))
        v.mul_(col[4]).add_(torch.mul(g, col[5], out=a).mul_(g))
        self.flat[:, : self.n_decayed].mul_(col[1])
        torch.div(m, bias1, out=a).mul_(col[0])
        torch.div(v, bias2, out=b).sqrt_().add_(self.eps)
        self.flat.sub_(a.div_(b))

    def state_numpy(self, i: int) -> dict:
        """Model i's optimizer state in the checkpoint format of sweeps.run.checkpoint."""
        m, v = (
            {n: t[i].cpu().numpy().copy() for n, t in self.views(self.state[k].detach()).items()}
            for k in "mv"
        )
        return pack_optimizer(self.state["step"][i].item(), m, v)

    @torch.no_grad()
    def load_numpy(self, i: int, state: dict) -> None:
        step, m, v = unpack_optimizer(state, self.shapes)
        self.state["step"][i] = step
        for key, moments in (("m", m), ("v", v)):
            for name, t in self.views(self.state[key]).items():
                t[i].copy_(torch.from_numpy(moments[name]))


# -- the trainer ------------------------------------------------------------------------------
class FusedTrainer:
    """M runs on one device (sweeps.run.fused drives it, a sweeps.run.backends.Trainer per
    model through sweeps.run.fused.ModelView). Arrays cross the boundary as numpy with the
    model first: losses [M], parameters per model under the shared names."""

    def __init__(
        self,
        cfgs: list,
        device: str = "auto",
        compile: bool | None = None,
        tf32: bool = False,
        deterministic: bool | None = None,
    ):
        check_fusable(cfgs)
        self.cfgs, self.cfg, self.M = cfgs, group_config(cfgs), len(cfgs)
        self.device = pick_device(device)
        compile = default_compile(self.device) if compile is None else compile
        self.device_name = device_name(self.device)
        check_fits_device(self.cfg, device_memory(self.device), models=self.M)
        if deterministic_mode() if deterministic is None else deterministic:
            make_deterministic(self.device)
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        self.compute_dtype = torch.bfloat16 if self.cfg.train.dtype == "bfloat16" else torch.float32
        self.model = FusedGPT(self.cfg.model, self.compute_dtype)
        attach(self, self.cfg)  # interventions' hooks (sweeps.core.interventions), as one run's
        shapes = param_shapes(self.cfg.model, self.cfg.vocab_size)
        self.optimizer = FusedAdamW(shapes, cfgs, self.device)
        self.version = 0  # bumped whenever the weights change (sweeps.run.fused caches by it)
        for i, c in enumerate(cfgs):
            self.set_params(i, init_params(c.model, c.vocab_size, c.seed))
        self.active = [True] * self.M  # False: stopped (diverged) or not started yet
        self.graphs = compile and self.device == "cuda"
        self.step = compile_step(self._step, self.optimizer, self.graphs) if compile else self._step
        self.tokens = None
        self.token_mask = None
        self.window = torch.arange(self.cfg.model.block_size + 1, device=self.device)

    def tensor(self, a: np.ndarray):
        return to_device(torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)), self.device)

    def objective_of(self, p, x, y):
        hooks = step_hooks(self)
        return objective(self.model, p, x, y, hooks.terms, hooks.attn_max)

    def _step(self, x, y, s):
        """([M] loss, [M] grad norm, *[M] step metrics)."""
        flat, hooks = self.optimizer.flat, step_hooks(self)
        total, loss, *measured = self.objective_of(self.optimizer.views(flat), x, y)
        # the sum of the models' objectives: each model's gradient is its own
        (grads,) = torch.autograd.grad(total.sum(), flat)
        grads, grad_norm = clip_gradients(grads, self.cfg.train.grad_clip, out=self.optimizer.a)
        self.optimizer.update(grads, s)
        attn_max = measured[0] if hooks.attn_max else None
        metrics, params = [], self.optimizer.views(flat.detach())
        for value, after_step in hooks.after:  # each updates the weights in place
            metrics += after_step(OPS, params, value, self.cfg, attn_max)
        return (loss.detach(), grad_norm, *metrics)

    def set_train_tokens(self, tokens: np.ndarray) -> None:
        from qktorch.train import Trainer

        Trainer.set_train_tokens(self, tokens)  # the same split for every model

    def batch(self, starts: np.ndarray):
        """[M, B, T + 1] int64: each model's windows, gathered on the device."""
        batch = self.tokens[self.tensor(starts)[..., None] + self.window].long()
        return batch & self.token_mask if self.token_mask is not None else batch

    def train_step(self, starts: np.ndarray, lrs: list):
        """One step of every model: starts [M, B] (each model's own seed's batch), lrs [M];
        a model not active is frozen. Nothing is waited for."""
        batch = self.batch(starts)
        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()
        s = self.optimizer.scalars(lrs, self.active)
        out = self.step(batch[..., :-1], batch[..., 1:], s)
        if self.graphs:
            out = tuple(t.clone() for t in out)
        self.version += 1
        return out

    def read(self, handles: list) -> np.ndarray:
        """[n, M, 2 + k] (loss, grad norm, k step metrics) per step and model, in one sync."""
        return torch.stack([torch.stack(h, dim=1) for h in handles]).cpu().double().numpy()

    @torch.no_grad()
    def stop(self, i: int) -> None:
        """Stop model i for good: frozen from now on, its weights and moments zeroed, so a
        diverged model computes on finite numbers (its slices never reach the others')."""
        self.active[i] = False
        for t in (self.optimizer.flat, self.optimizer.state["m"], self.optimizer.state["v"]):
            t[i] = 0.0
        self.version += 1

    def grads(self, x: np.ndarray, y: np.ndarray):
        """([M] objectives, {name: [M, ...] unclipped gradients}) of one batch [B, T] that every
        model sees; no update (crosscheck)."""
        flat = self.optimizer.flat
        xs, ys = (self.tensor(np.broadcast_to(a, (self.M, *a.shape))) for a in (x, y))
        total = self.objective_of(self.optimizer.views(flat), xs, ys)[0]
        (grads,) = torch.autograd.grad(total.sum(), flat)
        out = {n: g.float().cpu().numpy() for n, g in self.optimizer.views(grads).items()}
        return total.detach().cpu().numpy(), out

    @torch.no_grad()
    def eval_losses(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """[M]: every model's mean cross entropy of one batch [B, T]."""
        xs, ys = (self.tensor(np.broadcast_to(a, (self.M, *a.shape))) for a in (x, y))
        logits = self.model(self.optimizer.views(self.optimizer.flat), xs)
        return cross_entropy(logits, ys).cpu().double().numpy()

    @torch.no_grad()
    def probe(self, x: np.ndarray) -> list:
        """[M] Probes (qktorch.train.Trainer.probe per model) of one batch every model sees."""
        p = self.optimizer.views(self.optimizer.flat)
        logits, layers = self.model.probe(p, self.tensor(np.broadcast_to(x, (self.M, *x.shape))))
        qk = self.cfg.model.qk_norm != "none"
        out = []
        for i in range(self.M):
            probes = []
            for n, layer in enumerate(layers):
                pre = f"blocks.{n}.attn."
                gains = [None, None]
                if qk:
                    gains = [
                        p[pre + k][i].cpu().numpy() for k in ("q_norm.weight", "k_norm.weight")
                    ]
                probes.append(LayerProbe(*(t[i].float().cpu().numpy() for t in layer), *gains))
            out.append(Probe(probes, logits[i].float().cpu().numpy()))
        return out

    @torch.no_grad()
    def logits(self, x: np.ndarray) -> np.ndarray:
        """[M, B, T, V] of one batch every model sees."""
        xs = self.tensor(np.broadcast_to(x, (self.M, *x.shape)))
        return self.model(self.optimizer.views(self.optimizer.flat), xs).float().cpu().numpy()

    def get_params(self, i: int) -> dict:
        views = self.optimizer.views(self.optimizer.flat.detach())
        return {name: views[name][i].cpu().numpy().copy() for name in param_order(self.cfg)}

    @torch.no_grad()
    def set_params(self, i: int, params: dict) -> None:
        views = self.optimizer.views(self.optimizer.flat)
        if set(params) != set(views):
            odd = sorted(set(params) ^ set(views))
            raise KeyError(f"parameters do not match the model: {', '.join(odd[:3])}")
        for name, t in views.items():
            t[i].copy_(torch.from_numpy(np.asarray(params[name])))
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


def compile_step(step, optimizer: FusedAdamW, graphs: bool):
    """qktorch.train.compile_step for the fused step: the whole step in one graph (CUDA
    graphs on CUDA), the per-model scalars as device data; the buffers it updates in place
    keep their addresses."""
    for t in (optimizer.flat, *optimizer.state.values(), optimizer.a, optimizer.b):
        torch._dynamo.mark_static_address(t)
    compiled = torch.compile(step, mode="reduce-overhead" if graphs else None, dynamic=False)
    if not hasattr(torch._dynamo.config, "trace_autograd_ops"):
        return compiled
    return torch._dynamo.config.patch(trace_autograd_ops=True)(compiled)
