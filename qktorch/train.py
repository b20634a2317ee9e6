"""The PyTorch Trainer driven by sweeps.loop.train_run. Mirrors qkmlx/train.py line for line."""
import contextlib

import numpy as np
import torch

from qktorch.model import GPT, loss_fn
from qktorch.optim import AdamW, clip_gradients
from sweeps.config import RunConfig
from sweeps.errors import HarnessError
from sweeps.params import init_params

DEVICES = ("auto", "cpu", "cuda", "mps")


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

    def autocast(self):
        if self.compute_dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device, dtype=self.compute_dtype)

    def tensor(self, a: np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(a)).long().to(self.device)

    def train_step(self, x: np.ndarray, y: np.ndarray, lr: float):
        with self.autocast():
            loss = self.loss(self.model, self.tensor(x), self.tensor(y))
        grads = dict(zip(self.params, torch.autograd.grad(loss, list(self.params.values()))))
        grads, grad_norm = clip_gradients(grads, self.cfg.train.grad_clip)
        self.optimizer.update(self.params, grads, lr)
        return loss.item(), grad_norm.item()

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
    def probe(self, x: np.ndarray):
        """(scores, probs, residual) per layer as float32 numpy, from the explicit path."""
        with self.autocast():
            _, layers = self.model.probe(self.tensor(x))
        return [tuple(t.float().cpu().numpy() for t in layer) for layer in layers]

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
