"""The trainer backends: their contract (the `Trainer` protocol the shared loop drives) and the
registry that maps a backend name to its trainer factory, imported only when needed.

A backend NAME is a package `qkNAME` whose `train.py` defines `Trainer` and
`trainer_factory(device, compile, tf32) -> (RunConfig -> Trainer)`, and a console script
`qkNAME` that calls `sweeps.cli.main("NAME")`. Registering one is its name in
sweeps.config.BACKENDS and its devices in DEVICES below.
"""
from __future__ import annotations

import importlib
from typing import Callable, Protocol

import numpy as np

from sweeps.config import BACKENDS, RunConfig
from sweeps.errors import ConfigError

# What --device accepts, per backend (each Trainer checks its own availability).
DEVICES = {"mlx": ("auto", "cpu", "gpu"), "torch": ("auto", "cpu", "cuda", "mps")}

LayerProbe = tuple[np.ndarray, np.ndarray, np.ndarray]  # scores, probs [B,H,T,T]; residual [B,T,C]


class Trainer(Protocol):
    """One run's model and optimizer on one device; numpy in, Python floats out.

    Arrays cross the boundary as numpy under the shared parameter names of sweeps.params, so
    a checkpoint written by one backend loads in the other.
    """

    device: str  # where it trains, e.g. "cpu", "cuda", "gpu"

    def train_step(self, x: np.ndarray, y: np.ndarray, lr: float) -> tuple[float, float]:
        """One AdamW step on batch (x, y) [B, T] at learning rate lr: (loss, pre-clip grad
        norm)."""

    def eval_loss(self, x: np.ndarray, y: np.ndarray) -> float:
        """Mean cross entropy of a batch, no update."""

    def probe(self, x: np.ndarray) -> list[LayerProbe]:
        """The explicit attention path: (scores / sqrt(d_head), probs, residual) per layer."""

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(params, optimizer state) as numpy, for a checkpoint."""

    def set_state(self, params: dict[str, np.ndarray], optimizer: dict[str, np.ndarray]) -> None:
        """Load what get_state returned (from either backend)."""


TrainerFactory = Callable[[RunConfig], Trainer]


def trainer_factory(backend: str, device: str = "auto", compile: bool | None = None,
                    tf32: bool = False) -> TrainerFactory:
    """The backend's Trainer constructor; imports mlx or torch only now. compile None: the
    backend's default (on for mlx, off for torch)."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend '{backend}'; choose one of: {', '.join(BACKENDS)}")
    module = importlib.import_module(f"qk{backend}.train")
    options = {"device": device, "tf32": tf32}
    if compile is not None:
        options["compile"] = compile
    return module.trainer_factory(**options)
