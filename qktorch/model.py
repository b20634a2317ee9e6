"""nanoGPT-style decoder with a QK-norm switch (PyTorch). Mirrors qkmlx/model.py line for line.

Pre-norm blocks, learned positions, GELU MLP, no biases. Weights come from
sweeps.core.params.init_params (numpy), so both backends start from identical weights.
Mixed precision is explicit casts at the sites sweeps.core.precision names (dtype: the
compute dtype; float32 leaves every cast a no-op).
"""

import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from sweeps.core.config import ModelConfig
from sweeps.core.norms import unbuilt


class RMSNorm(nn.RMSNorm):
    """Every norm computes in float32, whatever its input (sweeps.core.precision)."""

    def forward(self, x):
        return super().forward(x.float())


class LayerNorm(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.float())


class Linear(nn.Linear):
    """A projection without bias, computed in dtype: its input and float32 weight cast."""

    def __init__(self, n_in: int, n_out: int, dtype):
        super().__init__(n_in, n_out, bias=False)
        self.dtype = dtype

    def forward(self, x):
        return F.linear(x.to(self.dtype), self.weight.to(self.dtype))


def attend(q, k, v, scale: float, dtype):
    """Causal attention with a fused kernel's arithmetic (sweeps.core.precision): q, k, v in
    dtype, scores and softmax in float32 inside, the output in dtype. torch's kernels (flash
    on the CPU and CUDA) do this for bfloat16 inputs as they are; qkmlx spells it out."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale).to(dtype)


def make_norm(kind: str, dims: int, eps: float) -> nn.Module:
    """A norm over the last `dims` features with a learnable gain and no bias."""
    if kind == "rms":
        return RMSNorm(dims, eps=eps)
    if kind == "layernorm":
        return LayerNorm(dims, eps=eps, bias=False)
    raise unbuilt(kind, "torch")


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig, dtype):
        super().__init__()
        self.dtype = dtype
        self.n_head = cfg.n_head
        self.head_dim = cfg.head_dim
        self.scale = 1.0 / math.sqrt(cfg.head_dim)
        self.softcap = cfg.attn_softcap  # 0: off (sweeps.core.interventions)
        self.q_proj = Linear(cfg.n_embd, cfg.n_embd, dtype)
        self.k_proj = Linear(cfg.n_embd, cfg.n_embd, dtype)
        self.v_proj = Linear(cfg.n_embd, cfg.n_embd, dtype)
        self.o_proj = Linear(cfg.n_embd, cfg.n_embd, dtype)
        self.use_qk_norm = cfg.qk_norm != "none"
        if self.use_qk_norm:
            # Per head, over head_dim, with a learnable gain: bounds |q.k| / sqrt(d) by the gains.
            self.q_norm = make_norm(cfg.qk_norm, cfg.head_dim, cfg.norm_eps)
            self.k_norm = make_norm(cfg.qk_norm, cfg.head_dim, cfg.norm_eps)

    def heads(self, x):
        # x: [B, T, C] -> q, k, v: [B, H, T, hd] in dtype, with QK-norm applied to q and k
        B, T, C = x.shape
        q = self.q_proj(x).reshape(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).reshape(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).reshape(B, T, self.n_head, self.head_dim).transpose(1, 2)
        if self.use_qk_norm:
            q = self.q_norm(q)
            k = self.k_norm(k)
        return q.to(self.dtype), k.to(self.dtype), v

    def merge(self, y):
        # y: [B, H, T, hd] -> [B, T, C]
        B, H, T, hd = y.shape
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * hd))

    def forward(self, x):
        if self.softcap:  # the fused kernel cannot cap the logits
            return self.explicit(x)[0]
        q, k, v = self.heads(x)
        return self.merge(attend(q, k, v, self.scale, self.dtype))

    def explicit(self, x):
        """The same attention, spelled out, also returning scores (before any soft cap) and
        weights [B, H, T, T]."""
        q, k, v = self.heads(x)
        T = x.shape[1]
        scores = (q @ k.transpose(-2, -1)).float() * self.scale
        logits = self.softcap * torch.tanh(scores / self.softcap) if self.softcap else scores
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        probs = torch.softmax(logits.masked_fill(~causal, float("-inf")), dim=-1)
        return self.merge(probs.to(self.dtype) @ v), scores, probs


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig, dtype):
        super().__init__()
        self.fc = Linear(cfg.n_embd, 4 * cfg.n_embd, dtype)
        self.proj = Linear(4 * cfg.n_embd, cfg.n_embd, dtype)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))  # exact (erf) GELU on both backends


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, dtype):
        super().__init__()
        self.ln_1 = make_norm(cfg.norm, cfg.n_embd, cfg.norm_eps)
        self.attn = CausalSelfAttention(cfg, dtype)
        self.ln_2 = make_norm(cfg.norm, cfg.n_embd, cfg.norm_eps)
        self.mlp = MLP(cfg, dtype)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

    def explicit(self, x):
        y, scores, probs = self.attn.explicit(self.ln_1(x))
        x = x + y
        return x + self.mlp(self.ln_2(x)), scores, probs


class GPT(nn.Module):
    """dtype: the compute dtype (torch.float32, or torch.bfloat16 for mixed precision)."""

    def __init__(self, cfg: ModelConfig, vocab_size: int, dtype=torch.float32):
        super().__init__()
        self.dtype = dtype
        self.tie_embeddings = cfg.tie_embeddings
        self.wte = nn.Embedding(vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList([Block(cfg, dtype) for _ in range(cfg.n_layer)])
        self.ln_f = make_norm(cfg.norm, cfg.n_embd, cfg.norm_eps)
        if not cfg.tie_embeddings:
            self.lm_head = Linear(cfg.n_embd, vocab_size, dtype)

    def embed(self, idx):
        # idx: [B, T] int -> [B, T, C]
        positions = torch.arange(idx.shape[1], device=idx.device)
        return self.wte(idx) + self.wpe(positions)

    def head(self, x):
        x = self.ln_f(x)
        if self.tie_embeddings:
            return x.to(self.dtype) @ self.wte.weight.to(self.dtype).T
        return self.lm_head(x)

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)  # [B, T, V]

    def probe(self, idx):
        """Logits via the explicit path, and (scores, probs, residual) of every layer."""
        x = self.embed(idx)
        layers = []
        for block in self.blocks:
            x, scores, probs = block.explicit(x)
            layers.append((scores, probs, x))
        return self.head(x), layers


def precision_sites(model: GPT, idx) -> dict[str, str]:
    """The dtype at each of sweeps.core.precision.SITES in a forward pass of idx [B, T] (the
    first block's, and the logits), by name ("float32", "bfloat16"), without gradient."""
    with torch.no_grad():
        x = model.embed(idx)
        block, attn = model.blocks[0], model.blocks[0].attn
        h = block.ln_1(x)
        q = attn.q_proj(h)
        B, T = idx.shape
        heads = q.reshape(B, T, attn.n_head, attn.head_dim)
        qk = attn.q_norm(heads) if attn.use_qk_norm else heads.float()
        seen = {
            "embedding": x,
            "norm": h,
            "projection": q,
            "qk_norm": qk,
            "attention": attend(*attn.heads(h), attn.scale, attn.dtype),
            "residual": block(x),
            "logits": model(idx),
        }
    return {site: str(t.dtype).rsplit(".", 1)[-1] for site, t in seen.items()}


def cross_entropy(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))


def loss_fn(model, x, y):
    return cross_entropy(model(x), y)


def head_max_logits(scores):
    """[H]: each head's largest causal attention logit over the batch, in float32 (QK-clip's
    arithmetic, whatever the compute dtype), without gradient."""
    T = scores.shape[-1]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=scores.device))
    top = scores.detach().masked_fill(~causal, float("-inf")).amax(dim=(0, 2, 3))
    return top.float()


def z_term(logits):
    """The z-loss term: mean over tokens of (log Z)^2, log Z a token's logsumexp."""
    log_z = torch.logsumexp(logits.reshape(-1, logits.shape[-1]).float(), dim=-1)
    return (log_z**2).mean()


def objective(model, x, y, terms=(), attn_max: bool = False):
    """The training objective with interventions' hooks (sweeps.core.interventions):
    (objective, cross entropy) and, with attn_max, the [n_layer, H] max attention logits of
    this batch for an action after the step (the explicit attention path computes them).
    terms: (value, term) pairs, each adding value * term(this module, logits)."""
    if attn_max:
        logits, layers = model.probe(x)
        maxima = (torch.stack([head_max_logits(scores) for scores, _, _ in layers]),)
    else:
        logits, maxima = model(x), ()
    loss = cross_entropy(logits, y)
    total = loss
    for value, term in terms:
        total = total + value * term(OPS, logits)
    return (total, loss, *maxima)


OPS = sys.modules[__name__]  # the `ops` an objective term calls: z_term, found when called
