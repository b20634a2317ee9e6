"""The trainer backends: their contract (the `Trainer` protocol the shared loop drives) and the
registry that maps a backend name to its trainer factory, imported only when needed.

A backend NAME is a package `qkNAME` whose `train.py` defines `Trainer(cfg, device, compile,
tf32)` and `pick_device(name)`, and a console script `qkNAME` that calls
`sweeps.cli.main("NAME")`; trainer_factory below is the one way to get a backend's trainer.
Registering one is its name in sweeps.core.config.BACKENDS and its devices in
sweeps.platform.devices.DEVICES.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from sweeps.core.config import BACKENDS, RunConfig
from sweeps.core.diagnostics import Probe
from sweeps.core.errors import ConfigError
from sweeps.platform.devices import check_known

PROGRAMS = {name: f"qk{name}" for name in BACKENDS}  # each backend's console script
# Each backend's framework module and how to install it. MLX is an extra on Linux (its wheels
# need a recent glibc, and its CPU and CUDA backends exclude each other): pyproject.toml.
FRAMEWORKS = {
    "mlx": (
        "mlx.core",
        (
            "pip install -e '.[cpu]' on a Linux CPU, -e '.[cuda]' with an NVIDIA "
            "GPU (docs/install.md); qktorch works without it"
        ),
    ),
    "torch": ("torch", "pip install torch (docs/install.md)"),
}


class Trainer(Protocol):
    """One run's model and optimizer on one device.

    Arrays cross the boundary as numpy under the shared parameter names of sweeps.core.params, so
    a checkpoint written by one backend loads in the other. Training steps do not wait for
    the device: train_step returns a handle and `read` fetches many steps' numbers at once.
    """

    device: str  # where it trains, e.g. "cpu", "cuda", "gpu"
    device_name: str  # the model, e.g. "NVIDIA H100 80GB HBM3" (peak FLOP/s: sweeps.sweep.estimate)

    def set_train_tokens(self, tokens: np.ndarray) -> None:
        """Put the train split (flat token ids) on the device once."""

    def train_step(self, starts: np.ndarray, lr: float) -> Any:
        """One AdamW step at learning rate lr on the windows tokens[s : s + T + 1] for s in
        starts [B] (sweeps.data.batch_starts), gathered on the device. Returns a handle to
        the step's (loss, pre-clip grad norm, *the values of
        sweeps.core.interventions.step_metrics(cfg)) without waiting for them."""

    def read(self, handles: list) -> np.ndarray:
        """[len(handles), 2 + k] float64 (loss, grad norm, k step metrics) of those steps,
        with one device sync."""

    def eval_loss(self, x: np.ndarray, y: np.ndarray) -> float:
        """Mean cross entropy of a batch [B, T], no update."""

    def probe(self, x: np.ndarray) -> Probe:
        """The explicit attention path on x: per-layer logits, weights, residuals and QK-norm
        gains, and the output logits (sweeps.core.diagnostics.Probe)."""

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The output logits [B, T, vocab] of a batch, float32, no update (crosscheck)."""

    def precision_sites(self, x: np.ndarray) -> dict[str, str]:
        """The dtype at each of sweeps.core.precision.SITES in a forward pass of x (crosscheck's
        precision check)."""

    def grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
        """(loss, unclipped gradients as float32 by shared name) of a batch, no update
        (crosscheck)."""

    def get_params(self) -> dict[str, np.ndarray]:
        """The parameters as numpy under their shared names."""

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        """Load parameters (every shared name, from either backend or sweeps.core.params)."""

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(params, optimizer state) as numpy, for a checkpoint (sweeps.run.checkpoint:
        TrainerState gives both backends this and set_state)."""

    def set_state(self, params: dict[str, np.ndarray], optimizer: dict[str, np.ndarray]) -> None:
        """Load what get_state returned (from either backend)."""


TrainerFactory = Callable[[RunConfig], Trainer]


def check_installed(backend: str) -> None:
    """Refuse, in one line naming what to install, a backend whose framework is missing."""
    module, install = FRAMEWORKS[backend]
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is missing too
        found = False
    if not found:
        raise ConfigError(
            f"{PROGRAMS[backend]} needs {module.split('.')[0]}, which is not "
            f"installed here: {install}"
        )


def check_device(backend: str, device: str) -> None:
    """Refuse, before any run is written, a device this backend does not know or this
    machine does not have (ConfigError, exit 2). The backend's own `pick_device` decides; its
    module (and so mlx or torch) is imported only for an accelerator: cpu and auto always
    resolve."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend '{backend}'; choose one of: {', '.join(BACKENDS)}")
    check_known(backend, device)
    check_installed(backend)
    if device not in ("auto", "cpu"):
        backend_module(backend).pick_device(device)


def backend_module(backend: str):
    """The backend's qkNAME.train module (imports mlx or torch only now)."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend '{backend}'; choose one of: {', '.join(BACKENDS)}")
    return importlib.import_module(f"qk{backend}.train")


def trainer_factory(
    backend: str, device: str = "auto", compile: bool | None = None, tf32: bool = False
) -> TrainerFactory:
    """The backend's Trainer constructor: RunConfig -> Trainer. compile None: the backend's
    default (on for mlx; for torch on CUDA only, qktorch.train.default_compile)."""
    check_installed(backend)
    trainer = backend_module(backend).Trainer
    options = {"device": device, "tf32": tf32}
    if compile is not None:
        options["compile"] = compile
    return lambda cfg: trainer(cfg, **options)


def fused_factory(
    backend: str, device: str = "auto", compile: bool | None = None, tf32: bool = False
) -> Callable[[list], Any]:
    """The backend's FusedTrainer constructor (qkNAME/fused.py: runs that differ only in LR
    and seed trained as one program, sweeps.run.fused): [RunConfig] -> FusedTrainer. compile
    None: the backend's default."""
    check_installed(backend)
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend '{backend}'; choose one of: {', '.join(BACKENDS)}")
    trainer = importlib.import_module(f"qk{backend}.fused").FusedTrainer
    options = {"device": device, "tf32": tf32}
    if compile is not None:
        options["compile"] = compile
    return lambda cfgs: trainer(cfgs, **options)


@dataclass(frozen=True)
class Execution:
    """How runs execute, decided once (by the CLI) and passed down whole: to the executors,
    their workers (execute_run) and the estimate. compile None: the backend's default."""

    backend: str
    device: str = "auto"
    compile: bool | None = None
    tf32: bool = False
    retry_failed: bool = False  # train a run that failed again (--retry-failed)

    def check_device(self) -> None:
        check_device(self.backend, self.device)

    def trainer_factory(self) -> TrainerFactory:
        return trainer_factory(self.backend, self.device, self.compile, self.tf32)

    def fused_factory(self) -> Callable[[list], Any]:
        return fused_factory(self.backend, self.device, self.compile, self.tf32)
