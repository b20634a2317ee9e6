"""The PyTorch Trainer driven by sweeps.run.loop.train_run. Mirrors qkmlx/train.py line for line."""

import os
import sys
import warnings

import numpy as np
import torch

from qktorch.model import GPT, loss_fn, objective, precision_sites
from qktorch.optim import (
    AdamW,
    clip_gradients,
    clip_qk,  # noqa: F401 (ops.clip_qk of an after-step hook: OPS)
    flatten,
    to_device,
)
from sweeps.core.config import RunConfig
from sweeps.core.diagnostics import LayerProbe, Probe
from sweeps.core.interventions import attach, step_hooks
from sweeps.core.params import check_fits_device, init_params
from sweeps.platform.devices import deterministic_mode, host_cpu_name
from sweeps.platform.devices import pick_device as choose_device
from sweeps.run.checkpoint import TrainerState


def pick_device(name: str) -> str:
    """The device --device name means here (sweeps.platform.devices.pick_device decides)."""
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available(),
        "mps": torch.backends.mps.is_available(),
    }
    build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    hint = (
        f"torch {torch.__version__} ({build}) cannot use it: install the torch wheel for "
        f"the driver's CUDA version (docs/install.md, On a CUDA machine)"
    )
    return choose_device("torch", name, available, hint)


def device_name(device: str) -> str:
    """The device's model name, for peak FLOP/s (sweeps.platform.devices.PEAK_FLOPS)."""
    return torch.cuda.get_device_name() if device == "cuda" else host_cpu_name()


def device_memory(device: str):
    """(free, total) bytes of the GPU's own memory (CUDA; free counts what this process's
    allocator holds and would reuse, e.g. a previous run's); None where runs use the host's
    memory (the CPU, MPS's unified memory)."""
    if device != "cuda":
        return None
    free, total = torch.cuda.mem_get_info()
    return free + torch.cuda.memory_reserved(), total


def default_compile(device: str) -> bool:
    """Whether the step is compiled when --compile/--no-compile is not given: on CUDA, the
    field's standard there (torch.compile with CUDA graphs: 6.4x eager for tiny on an H200,
    docs/gpu-h200); elsewhere eager (compiling costs a minute on a CPU and gains little)."""
    return device == "cuda"


class Trainer(TrainerState):
    """sweeps.run.backends.Trainer; get_state and set_state from sweeps.run.checkpoint."""

    def __init__(
        self,
        cfg: RunConfig,
        device: str = "auto",
        compile: bool | None = None,
        tf32: bool = False,
        deterministic: bool | None = None,
    ):
        self.cfg = cfg
        self.device = pick_device(device)
        compile = default_compile(self.device) if compile is None else compile
        self.device_name = device_name(self.device)
        check_fits_device(cfg, device_memory(self.device))  # before anything is allocated
        # Bit-identical reruns on a GPU when asked for (--deterministic; the CPU always is).
        if deterministic_mode() if deterministic is None else deterministic:
            make_deterministic(self.device)
        # TF32 changes float32 matmul results: off unless asked for (crosscheck needs it off).
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        self.compute_dtype = torch.bfloat16 if cfg.train.dtype == "bfloat16" else torch.float32
        self.model = GPT(cfg.model, cfg.vocab_size, self.compute_dtype).to(self.device)
        # Interventions' hooks in the step (sweeps.core.interventions); none: the plain step.
        attach(self, cfg)
        self.set_params(init_params(cfg.model, cfg.vocab_size, cfg.seed))
        self.optimizer = AdamW(dict(self.model.named_parameters()), cfg.train)
        self.params = self.optimizer.params  # views into the optimizer's flat buffer
        self.graphs = compile and self.device == "cuda"  # CUDA graphs replay the step
        self.step = compile_step(self._step, self.optimizer, self.graphs) if compile else self._step
        self.tokens = None  # the train split on the device (set_train_tokens)
        self.token_mask = None  # 0xFFFF when the tokens are uint16 stored as int16
        self.window = torch.arange(cfg.model.block_size + 1, device=self.device)

    def tensor(self, a: np.ndarray):
        """A host array as int64 on the device (on CUDA without waiting: to_device)."""
        return to_device(torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)), self.device)

    def objective_of(self, x, y):
        """(objective, cross entropy, *measured): qktorch.model.objective with the
        interventions' terms, measuring what their actions after the step read."""
        hooks = step_hooks(self)
        return objective(self.model, x, y, hooks.terms, hooks.attn_max)

    def _step(self, x, y, lr):
        """(loss, grad norm, *step metrics of sweeps.core.interventions.step_metrics)."""
        hooks = step_hooks(self)
        if self.intervened:
            total, loss, *measured = self.objective_of(x, y)
        else:
            total = loss = loss_fn(self.model, x, y)
        grads = torch.autograd.grad(total, list(self.params.values()))
        grads = flatten(grads, out=self.optimizer.grad)
        grads, grad_norm = clip_gradients(grads, self.cfg.train.grad_clip, out=self.optimizer.a)
        self.optimizer.update(self.params, grads, lr)
        attn_max = measured[0] if hooks.attn_max else None
        metrics = []
        for value, after_step in hooks.after:  # each updates the weights in place
            metrics += after_step(OPS, self.params, value, self.cfg, attn_max)
        return (loss.detach(), grad_norm, *metrics)

    def set_train_tokens(self, tokens: np.ndarray) -> None:
        tokens = np.asarray(tokens)
        if tokens.dtype == np.uint16:  # the token cache's dtype: its bits as int16, no copy
            tokens, self.token_mask = tokens.view(np.int16), 0xFFFF
        else:
            tokens, self.token_mask = tokens.astype(np.int32), None
        with warnings.catch_warnings():  # a read-only memmap is fine: it is never written
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            host = torch.from_numpy(tokens)
        self.tokens = host.to(self.device)  # on the CPU the memmap itself, shared by workers

    def batch(self, starts: np.ndarray):
        """[B, T + 1] int64: the windows tokens[s : s + T + 1], gathered on the device."""
        batch = self.tokens[self.tensor(starts)[:, None] + self.window].long()
        return batch & self.token_mask if self.token_mask is not None else batch

    def train_step(self, starts: np.ndarray, lr: float):
        """One step on the windows at starts, gathered on the device; nothing is waited for."""
        batch = self.batch(starts)
        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()
        out = self.step(batch[:, :-1], batch[:, 1:], self.optimizer.lr_tensor(lr))
        if self.graphs:  # a replay overwrites its outputs: keep this step's
            out = tuple(t.clone() for t in out)
        return out

    def read(self, handles: list) -> np.ndarray:
        """[n, 2 + k] (loss, grad norm, k step metrics) of the steps behind the handles, in
        one sync."""
        return torch.stack([torch.stack(h) for h in handles]).cpu().double().numpy()

    def grads(self, x: np.ndarray, y: np.ndarray):
        """The training objective (the loss plus interventions' terms) and its unclipped gradients
        as float32 numpy by shared name; no update (crosscheck)."""
        if self.intervened:
            loss = self.objective_of(self.tensor(x), self.tensor(y))[0]
        else:
            loss = loss_fn(self.model, self.tensor(x), self.tensor(y))
        grads = torch.autograd.grad(loss, list(self.params.values()))
        return loss.item(), {name: g.float().cpu().numpy() for name, g in zip(self.params, grads)}

    @torch.no_grad()
    def eval_loss(self, x: np.ndarray, y: np.ndarray) -> float:
        return loss_fn(self.model, self.tensor(x), self.tensor(y)).item()

    @torch.no_grad()
    def probe(self, x: np.ndarray) -> Probe:
        """Per-layer attention logits, weights, residual and QK-norm gains, and the output
        logits, as float32 numpy from the explicit path."""
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

    def precision_sites(self, x: np.ndarray) -> dict[str, str]:
        return precision_sites(self.model, self.tensor(x))

    def get_params(self) -> dict:
        return {name: p.detach().cpu().numpy() for name, p in self.model.state_dict().items()}

    @torch.no_grad()
    def set_params(self, params: dict) -> None:
        self.model.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()}, strict=True)


OPS = sys.modules[__name__]  # the `ops` an action after the step calls: clip_qk, found when called


def make_deterministic(device: str) -> None:
    """Deterministic kernels for the rest of this process: every op its deterministic
    algorithm (one without raises), cuBLAS a fixed workspace (set before its first use), and
    attention SDPA's math backend on CUDA (the flash, memory-efficient and cuDNN backwards
    accumulate in a varying order there). Slower on CUDA; on the CPU the results do not change:
    its kernels are deterministic already, and the SDPA flags are left alone (in torch 2.13 the
    flash flag also picks the CPU's attention kernel, which would change results by rounding)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    if not str(device).startswith("cuda"):
        return
    cuda = torch.backends.cuda
    for enable in (cuda.enable_flash_sdp, cuda.enable_mem_efficient_sdp, cuda.enable_cudnn_sdp):
        enable(False)


def compile_step(step, optimizer: AdamW, graphs: bool):
    """torch.compile of the whole step (forward, backward traced into the same graph,
    clipping, AdamW), with CUDA graphs (mode reduce-overhead) when graphs. The LR arrives as a
    device tensor, so a new LR is new data, not a recompile; the buffers the step updates in
    place keep their addresses, so a CUDA graph may write them."""
    for t in (*optimizer.state.values(), optimizer.grad, optimizer.a, optimizer.b):
        torch._dynamo.mark_static_address(t)
    compiled = torch.compile(step, mode="reduce-overhead" if graphs else None, dynamic=False)
    if not hasattr(torch._dynamo.config, "trace_autograd_ops"):
        return compiled  # older torch: autograd.grad splits the step into two graphs
    return torch._dynamo.config.patch(trace_autograd_ops=True)(compiled)
