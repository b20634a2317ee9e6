"""A plain PyTorch GPT to measure qktorch against: what a user would write with nothing but
torch (pre-LN blocks, SDPA attention, exact-GELU MLP, no biases, learned positions, untied
head), trained with loss.backward(), torch.nn.utils.clip_grad_norm_ and the framework's fused
AdamW. It has the parameter shapes of a qktorch model of the same ModelConfig (QK-norm off),
so both do the same FLOPs and the comparison measures the harness, not the architecture.

fused_qkv=True makes one (3C, C) projection instead of separate q, k and v (C, C) ones, as
nanoGPT's c_attn does: the same FLOPs in fewer, larger matmuls. Written for this benchmark.
"""

import contextlib

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, fused_qkv: bool):
        super().__init__()
        self.n_head, self.fused_qkv = n_head, fused_qkv
        if fused_qkv:
            self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        else:
            self.q = nn.Linear(n_embd, n_embd, bias=False)
            self.k = nn.Linear(n_embd, n_embd, bias=False)
            self.v = nn.Linear(n_embd, n_embd, bias=False)
        self.out = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        if self.fused_qkv:
            q, k, v = self.qkv(x).split(C, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, fused_qkv: bool):
        super().__init__()
        self.norm1 = nn.LayerNorm(n_embd, bias=False)
        self.attn = Attention(n_embd, n_head, fused_qkv)
        self.norm2 = nn.LayerNorm(n_embd, bias=False)
        self.up = nn.Linear(n_embd, 4 * n_embd, bias=False)
        self.down = nn.Linear(4 * n_embd, n_embd, bias=False)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class ReferenceGPT(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        block_size: int,
        n_layer: int,
        n_head: int,
        n_embd: int,
        fused_qkv: bool = False,
    ):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, fused_qkv) for _ in range(n_layer))
        self.norm = nn.LayerNorm(n_embd, bias=False)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class ReferenceTrainer:
    """The reference's training step on the same device-side batches as a qktorch Trainer."""

    def __init__(self, cfg, device: str = "cpu", fused_qkv: bool = False):
        m = cfg.model
        self.cfg, self.device = cfg, device
        self.model = ReferenceGPT(
            cfg.vocab_size, m.block_size, m.n_layer, m.n_head, m.n_embd, fused_qkv
        ).to(device)
        decay = [p for p in self.model.parameters() if p.dim() == 2]
        other = [p for p in self.model.parameters() if p.dim() != 2]
        t = cfg.train
        self.optimizer = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": t.weight_decay},
                {"params": other, "weight_decay": 0.0},
            ],
            lr=t.lr,
            betas=(t.beta1, t.beta2),
            eps=t.adam_eps,
            fused=True,
        )
        self.window = torch.arange(m.block_size + 1, device=device)
        self.tokens = None
        self.autocast = (
            torch.autocast(device_type=device, dtype=torch.bfloat16)
            if t.dtype == "bfloat16"
            else contextlib.nullcontext()
        )

    def set_train_tokens(self, tokens) -> None:
        self.tokens = torch.from_numpy(tokens.astype("int64")).to(self.device)

    def train_step(self, starts, lr: float):
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        starts = torch.from_numpy(starts)
        if self.device == "cuda":
            starts = starts.pin_memory()
        starts = starts.to(self.device, non_blocking=True)
        batch = self.tokens[starts[:, None] + self.window]
        with self.autocast:
            logits = self.model(batch[:, :-1])
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1)
        )
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.train.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach(), norm

    def read(self, handles: list):
        return torch.stack([torch.stack(h) for h in handles]).cpu().double().numpy()
