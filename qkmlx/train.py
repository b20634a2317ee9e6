"""The MLX Trainer driven by sweeps.run.loop.train_run. Mirrors qktorch/train.py line for line."""

import os
import sys

os.environ.setdefault("MLX_ENABLE_TF32", "0")  # before mlx reads it (its default is 1)
import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten, tree_unflatten

from qkmlx.model import GPT, loss_fn, objective, precision_sites
from qkmlx.optim import (
    AdamW,
    clip_gradients,
    clip_qk,  # noqa: F401 (ops.clip_qk of an after-step hook: OPS)
)
from sweeps.core.config import RunConfig
from sweeps.core.diagnostics import LayerProbe, Probe
from sweeps.core.errors import HarnessError
from sweeps.core.interventions import attach, step_hooks
from sweeps.core.params import check_fits_device, init_params
from sweeps.platform.devices import deterministic_mode, host_cpu_name
from sweeps.platform.devices import pick_device as choose_device
from sweeps.run.checkpoint import TrainerState


def pick_device(name: str) -> str:
    """The device --device name means here (sweeps.platform.devices.pick_device decides)."""
    cuda = getattr(mx, "cuda", None)  # mlx before its CUDA backend has no mx.cuda
    available = {"cpu": True, "gpu": mx.metal.is_available() or bool(cuda and cuda.is_available())}
    hint = (
        f"mlx {mx.__version__} has no CUDA backend here: install it with "
        f"pip install -e '.[cuda]' (docs/install.md, On a CUDA machine)"
    )
    name = choose_device("mlx", name, available, hint)
    mx.set_default_device(mx.gpu if name == "gpu" else mx.cpu)
    return name


def device_name(device: str) -> str:
    """The device's model name, for peak FLOP/s (sweeps.platform.devices.PEAK_FLOPS)."""
    return gpu_info().get("device_name", device) if device == "gpu" else host_cpu_name()


def device_memory(device: str):
    """(free, total) bytes of the GPU's own memory (CUDA; free: the total less what this
    process holds, all MLX reports); None where runs use the host's memory (the CPU, Metal)."""
    cuda = getattr(mx, "cuda", None)
    if device != "gpu" or not (cuda and cuda.is_available()):
        return None
    total = gpu_info().get("memory_size")
    active = getattr(mx, "get_active_memory", None) or mx.metal.get_active_memory
    return (total - active(), total) if total else None


def gpu_info() -> dict:
    """MLX's description of the GPU: mx.device_info in newer mlx, mx.metal's before."""
    return (getattr(mx, "device_info", None) or mx.metal.device_info)()


_tf32 = []  # the setting this process's first Trainer gave MLX


def set_tf32(tf32: bool) -> None:
    """MLX reads MLX_ENABLE_TF32 once per process, at its first float32 matmul on a GPU that
    has TF32: the first Trainer sets it, and a later one that asks for the other setting is
    refused rather than silently trained with the first one's."""
    if _tf32 and _tf32[0] != tf32:
        raise HarnessError(
            f"--tf32 is {'on' if _tf32[0] else 'off'} for MLX in this process "
            f"already (MLX reads MLX_ENABLE_TF32 once); use a new process"
        )
    if not _tf32:
        os.environ["MLX_ENABLE_TF32"] = "1" if tf32 else "0"
        _tf32.append(tf32)


class Trainer(TrainerState):
    """sweeps.run.backends.Trainer; get_state and set_state from sweeps.run.checkpoint."""

    def __init__(
        self,
        cfg: RunConfig,
        device: str = "auto",
        compile: bool = True,
        tf32: bool = False,
        deterministic: bool | None = None,
    ):
        self.cfg = cfg
        self.device = pick_device(device)
        self.device_name = device_name(self.device)
        check_fits_device(cfg, device_memory(self.device))  # before anything is allocated
        # Bit-identical reruns on a GPU when asked for (--deterministic; the CPU always is).
        if deterministic_mode() if deterministic is None else deterministic:
            make_deterministic(self.device)
        # TF32 changes float32 matmul results: off unless asked for (crosscheck needs it off).
        set_tf32(tf32)
        self.compute_dtype = mx.bfloat16 if cfg.train.dtype == "bfloat16" else mx.float32
        self.model = GPT(cfg.model, cfg.vocab_size, self.compute_dtype)
        # Interventions' hooks in the step (sweeps.core.interventions); none: the plain step.
        attach(self, cfg)
        self.set_params(init_params(cfg.model, cfg.vocab_size, cfg.seed))
        self.optimizer = AdamW(self.get_named_arrays(), cfg.train)
        self.step = compile_step(self._step, self.model, self.optimizer) if compile else self._step
        self.tokens = None  # the train split on the device (set_train_tokens)
        self.window = mx.arange(cfg.model.block_size + 1)

    def loss_of(self, params: dict, x, y):
        self.model.update(tree_unflatten(list(params.items())))
        return loss_fn(self.model, x, y)

    def objective_of(self, params: dict, x, y):
        """(objective, cross entropy, *measured): qkmlx.model.objective with the
        interventions' terms, measuring what their actions after the step read."""
        self.model.update(tree_unflatten(list(params.items())))
        hooks = step_hooks(self)
        return objective(self.model, x, y, hooks.terms, hooks.attn_max)

    def _step(self, x, y, lr):
        """(loss, grad norm, *step metrics of sweeps.core.interventions.step_metrics)."""
        params, hooks = self.get_named_arrays(), step_hooks(self)
        if self.intervened:
            (_, loss, *measured), grads = mx.value_and_grad(self.objective_of)(params, x, y)
        else:
            loss, grads = mx.value_and_grad(self.loss_of)(params, x, y)
        grads, grad_norm = clip_gradients(grads, self.cfg.train.grad_clip)
        new = self.optimizer.update(params, grads, lr)
        attn_max = measured[0] if hooks.attn_max else None
        metrics = []
        for value, after_step in hooks.after:  # each returns the new weights first
            new, *values = after_step(OPS, new, value, self.cfg, attn_max)
            metrics += values
        self.model.update(tree_unflatten(list(new.items())))
        return (loss, grad_norm, *metrics)

    def set_train_tokens(self, tokens: np.ndarray) -> None:
        tokens = np.asarray(tokens)
        if tokens.dtype != np.uint16:  # uint16 (the token cache's dtype) is kept as is
            tokens = tokens.astype(np.int32)
        self.tokens = mx.array(tokens)

    def batch(self, starts: np.ndarray):
        """[B, T + 1] int32: the windows tokens[s : s + T + 1], gathered on the device."""
        return self.tokens[mx.array(starts)[:, None] + self.window].astype(mx.int32)

    def train_step(self, starts: np.ndarray, lr: float):
        """One step on the windows at starts, gathered on the device; nothing is waited for."""
        batch = self.batch(starts)
        out = self.step(batch[:, :-1], batch[:, 1:], self.optimizer.lr_tensor(lr))
        mx.async_eval(*out, self.model.state, self.optimizer.state)
        return out

    def read(self, handles: list) -> np.ndarray:
        """[n, 2 + k] (loss, grad norm, k step metrics) of the steps behind the handles, in
        one sync."""
        return np.array(
            mx.stack([mx.stack(h) for h in handles]).astype(mx.float32), dtype=np.float64
        )

    def grads(self, x: np.ndarray, y: np.ndarray):
        """The training objective (the loss plus interventions' terms) and its unclipped gradients
        as float32 numpy by shared name; no update (crosscheck)."""
        params = self.get_named_arrays()
        fn = self.objective_of if self.intervened else self.loss_of
        loss, grads = mx.value_and_grad(fn)(params, mx.array(x), mx.array(y))
        loss = loss[0] if self.intervened else loss
        mx.eval(loss, grads)
        self.model.update(tree_unflatten(list(params.items())))
        return loss.item(), {name: np.array(g.astype(mx.float32)) for name, g in grads.items()}

    def eval_loss(self, x: np.ndarray, y: np.ndarray) -> float:
        params = self.get_named_arrays()
        loss = self.loss_of(params, mx.array(x), mx.array(y))
        mx.eval(loss)
        self.model.update(tree_unflatten(list(params.items())))
        return loss.item()

    def probe(self, x: np.ndarray) -> Probe:
        """Per-layer attention logits, weights, residual and QK-norm gains, and the output
        logits, as float32 numpy from the explicit path."""
        logits, layers = self.model.probe(mx.array(x))
        out = []
        for block, layer in zip(self.model.blocks, layers):
            gains = [None, None]
            if block.attn.use_qk_norm:
                gains = [np.array(n.weight) for n in (block.attn.q_norm, block.attn.k_norm)]
            out.append(LayerProbe(*(np.array(t.astype(mx.float32)) for t in layer), *gains))
        return Probe(out, np.array(logits.astype(mx.float32)))

    def logits(self, x: np.ndarray) -> np.ndarray:
        return np.array(self.model(mx.array(x)).astype(mx.float32))

    def precision_sites(self, x: np.ndarray) -> dict[str, str]:
        return precision_sites(self.model, mx.array(x))

    def get_named_arrays(self) -> dict:
        return dict(tree_flatten(self.model.parameters()))

    def get_params(self) -> dict:
        return {name: np.array(p) for name, p in self.get_named_arrays().items()}

    def set_params(self, params: dict) -> None:
        self.model.load_weights([(k, mx.array(v)) for k, v in params.items()], strict=True)
        mx.eval(self.model.parameters())


OPS = sys.modules[__name__]  # the `ops` an action after the step calls: clip_qk, found when called


def make_deterministic(device: str) -> None:
    """MLX has no switch for deterministic GPU kernels: refused on the GPU; its CPU runs are
    bit-identical already (tests/test_train.py)."""
    if device == "gpu":
        raise HarnessError(
            "--deterministic is for qktorch: MLX has no deterministic mode for "
            "its GPU kernels; use --device cpu or qktorch"
        )


def compile_step(step, model, optimizer: AdamW):
    """mx.compile of the whole step (forward, backward, clipping, AdamW), with the model's
    and the optimizer's arrays as implicit inputs and outputs. The LR arrives as an array, so
    a new LR is new data, not a retrace."""
    state = [model.state, optimizer.state]
    return mx.compile(step, inputs=state, outputs=state)
