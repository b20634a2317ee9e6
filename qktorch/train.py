"""The PyTorch Trainer driven by sweeps.loop.train_run. Mirrors qkmlx/train.py line for line."""
import contextlib

import numpy as np
import torch

from qktorch.model import GPT, loss_fn
from qktorch.optim import AdamW, clip_gradients
from sweeps.backends import DEVICES as BACKEND_DEVICES
from sweeps.config import RunConfig
from sweeps.diagnostics import LayerProbe, Probe
from sweeps.errors import HarnessError
from sweeps.params import init_params

DEVICES = BACKEND_DEVICES["torch"]


def pick_device(name: str) -> str:
    if name not in DEVICES:
        raise HarnessError(f"unknown device '{name}'; choose one of: {', '.join(DEVICES)}")
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": torch.backends.mps.is_available()}
    if name == "auto":
        return next(d for d in ("cuda", "mps", "cpu") if available[d])
    if not available[name]:
        raise HarnessError(f"device '{name}' is not available here; use --device auto or cpu")
    return name


class Trainer:
    def __init__(self, cfg: RunConfig, device: str = "auto", compile: bool = False,
                 tf32: bool = False):
        self.cfg = cfg
        self.device = pick_device(device)
        # TF32 changes float32 matmul results: off unless asked for (crosscheck needs it off).
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        self.compute_dtype = torch.bfloat16 if cfg.train.dtype == "bfloat16" else torch.float32
        self.model = GPT(cfg.model, cfg.vocab_size).to(self.device)
        self.set_params(init_params(cfg.model, cfg.vocab_size, cfg.seed))
        self.params = dict(self.model.named_parameters())
        self.optimizer = AdamW(self.params, cfg.train)
        self.loss = torch.compile(loss_fn) if compile else loss_fn
        self.tokens = None  # the train split on the device (set_train_tokens)
        self.window = torch.arange(cfg.model.block_size + 1, device=self.device)

    def autocast(self):
        if self.compute_dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device, dtype=self.compute_dtype)

    def tensor(self, a: np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(a)).long().to(self.device)

    def set_train_tokens(self, tokens: np.ndarray) -> None:
        self.tokens = torch.from_numpy(np.asarray(tokens, dtype=np.int32)).to(self.device)

    def train_step(self, starts: np.ndarray, lr: float):
        """One step on the windows at starts, gathered on the device; nothing is waited for."""
        batch = self.tokens[self.tensor(starts)[:, None] + self.window].long()
        with self.autocast():
            loss = self.loss(self.model, batch[:, :-1], batch[:, 1:])
        grads = dict(zip(self.params, torch.autograd.grad(loss, list(self.params.values()))))
        grads, grad_norm = clip_gradients(grads, self.cfg.train.grad_clip)
        self.optimizer.update(self.params, grads, lr)
        return loss.detach(), grad_norm.detach()

    def read(self, handles: list) -> np.ndarray:
        """[n, 2] (loss, grad norm) of the steps behind the handles, in one sync."""
        return torch.stack([torch.stack(h) for h in handles]).double().cpu().numpy()

    def grads(self, x: np.ndarray, y: np.ndarray):
        """Loss and unclipped gradients as float32 numpy by shared name; no update (crosscheck)."""
        with self.autocast():
            loss = self.loss(self.model, self.tensor(x), self.tensor(y))
        grads = torch.autograd.grad(loss, list(self.params.values()))
        return loss.item(), {name: g.float().cpu().numpy() for name, g in zip(self.params, grads)}

    @torch.no_grad()
    def eval_loss(self, x: np.ndarray, y: np.ndarray) -> float:
        with self.autocast():
            return loss_fn(self.model, self.tensor(x), self.tensor(y)).item()

    @torch.no_grad()
    def probe(self, x: np.ndarray) -> Probe:
        """Per-layer attention logits, weights, residual and QK-norm gains, and the output
        logits, as float32 numpy from the explicit path."""
        with self.autocast():
            logits, layers = self.model.probe(self.tensor(x))
        out = []
        for block, layer in zip(self.model.blocks, layers):
            gains = [None, None]
            if block.attn.use_qk_norm:
                gains = [n.weight.cpu().numpy() for n in (block.attn.q_norm, block.attn.k_norm)]
            out.append(LayerProbe(*(t.float().cpu().numpy() for t in layer), *gains))
        return Probe(out, logits.float().cpu().numpy())

    @torch.no_grad()
    def logits(self, x: np.ndarray) -> np.ndarray:
        return self.model(self.tensor(x)).float().cpu().numpy()

    def get_params(self) -> dict:
        return {name: p.detach().cpu().numpy() for name, p in self.model.state_dict().items()}

    @torch.no_grad()
    def set_params(self, params: dict) -> None:
        self.model.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()},
                                   strict=True)

    def get_state(self):
        return self.get_params(), self.optimizer.state_numpy()

    def set_state(self, params: dict, optimizer: dict) -> None:
        self.set_params(params)
        self.optimizer.load_numpy(optimizer, self.device)


def trainer_factory(device: str = "auto", compile: bool = False, tf32: bool = False):
    return lambda cfg: Trainer(cfg, device=device, compile=compile, tf32=tf32)
