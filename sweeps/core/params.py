"""The parameter names, shapes and initial values both trainers share.

Names follow the torch state_dict; the flattened MLX parameter tree uses the same keys.
Initial weights come from numpy here, so a seed gives identical weights in both backends.
"""

import math
import os

import numpy as np

from sweeps.core.config import ModelConfig, RunConfig
from sweeps.core.errors import ConfigError
from sweeps.core.norms import qk_norm_params

# Per parameter, in float32: the weight, its gradient, AdamW's two moments, and the flat
# gradient and two scratch buffers of qktorch's multi-tensor AdamW (qktorch/optim.py).
STATE_BYTES_PER_PARAM = 7 * 4


def param_shapes(model: ModelConfig, vocab_size: int) -> dict[str, tuple[int, ...]]:
    C, hd = model.n_embd, model.head_dim
    shapes = {"wte.weight": (vocab_size, C), "wpe.weight": (model.block_size, C)}
    for i in range(model.n_layer):
        p = f"blocks.{i}."
        shapes[p + "ln_1.weight"] = (C,)
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[p + f"attn.{proj}.weight"] = (C, C)
        for name, shape in qk_norm_params(model.qk_norm, hd).items():
            shapes[p + name] = shape
        shapes[p + "ln_2.weight"] = (C,)
        shapes[p + "mlp.fc.weight"] = (4 * C, C)
        shapes[p + "mlp.proj.weight"] = (C, 4 * C)
    shapes["ln_f.weight"] = (C,)
    if not model.tie_embeddings:
        shapes["lm_head.weight"] = (vocab_size, C)
    return shapes


def count_params(model: ModelConfig, vocab_size: int) -> dict[str, int]:
    """Total and non-embedding counts (non-embedding leaves out wte, wpe and lm_head)."""
    shapes = param_shapes(model, vocab_size)
    embedding = {"wte.weight", "wpe.weight", "lm_head.weight"}
    total = sum(int(np.prod(s)) for s in shapes.values())
    non_embedding = sum(int(np.prod(s)) for n, s in shapes.items() if n not in embedding)
    return {"total": total, "non_embedding": non_embedding}


def qk_init_scales(model: ModelConfig) -> tuple[float, float]:
    """(init std of W_q and W_k, initial gain of q_norm and k_norm) for this config.

    At init every attention layer's input is normalised by ln_1 (|x|^2 = n_embd), so with
    QK-norm off and W_q, W_k ~ N(0, s^2) each q and k component is ~N(0, s^2 n_embd) and the
    attention logit q.k / sqrt(d_head) has std s^2 n_embd; with QK-norm on q and k have RMS g
    per component and the logit has std g^2. qk_init=matched equates the two starts: QK-norm
    off takes s = 1/sqrt(n_embd) (logit std 1: QK-norm on's start at unit gains), QK-norm on
    takes g = init_std * sqrt(n_embd) (logit std init_std^2 n_embd: QK-norm off's default
    start). `config show` measures the result.
    """
    std = model.qk_proj_std or model.init_std
    gain = model.qk_gain_init
    if model.qk_init == "matched":
        if model.qk_norm == "none":
            std = 1.0 / float(np.sqrt(model.n_embd))
        else:
            gain = model.init_std * float(np.sqrt(model.n_embd))
    return std, gain


def is_residual_projection(name: str) -> bool:
    """Projections that write into the residual stream get the 1/sqrt(2 n_layer) init."""
    return name.endswith("attn.o_proj.weight") or name.endswith("mlp.proj.weight")


def decays(name: str, shape: tuple[int, ...]) -> bool:
    """Weight decay applies to 2-D weights only: never to norm gains."""
    return len(shape) == 2


def init_params(model: ModelConfig, vocab_size: int, seed: int) -> dict[str, np.ndarray]:
    """float32 initial weights: N(0, std) matrices, unit norm gains, and the QK scales of
    qk_init_scales. The draws depend on the seed and shapes only, so arms that differ in a
    scale start from the same directions."""
    rng = np.random.default_rng(seed)
    gain = qk_init_scales(model)[1]
    params = {}
    for name, shape in param_shapes(model, vocab_size).items():
        if len(shape) == 1:
            value = gain if name.endswith(("q_norm.weight", "k_norm.weight")) else 1.0
            params[name] = np.full(shape, value, dtype=np.float32)
        else:
            draw = rng.standard_normal(shape) * matrix_std(name, model)
            params[name] = draw.astype(np.float32)
    return params


def matrix_std(name: str, model: ModelConfig) -> float:
    """The std a matrix is drawn with: init_std, / sqrt(2 n_layer) for residual projections,
    the QK scale of qk_init_scales for W_q and W_k."""
    if is_residual_projection(name):
        return model.init_std / float(np.sqrt(2 * model.n_layer))
    if name.endswith(("q_proj.weight", "k_proj.weight")):
        return qk_init_scales(model)[0]
    return model.init_std


def n_params(cfg: RunConfig) -> int:
    """The parameter count in exact integers (no int64 overflow for absurd widths)."""
    return sum(math.prod(s) for s in param_shapes(cfg.model, cfg.vocab_size).values())


def activation_bytes(cfg: RunConfig) -> int:
    """What one training step keeps for backward, float32, roughly: per layer the attention
    logits and weights (batch x heads x T^2, twice) and about 16 values per token and width
    (q, k, v, the MLP's 4x-wide hidden twice, norms, residual), plus the output logits."""
    m, t = cfg.model, cfg.train
    tokens = t.batch_size * m.block_size
    per_layer = 2 * t.batch_size * m.n_head * m.block_size**2 + 16 * tokens * m.n_embd
    return 4 * (m.n_layer * per_layer + 2 * tokens * cfg.vocab_size)


def state_bytes(cfg: RunConfig) -> int:
    """Memory a run needs to train: STATE_BYTES_PER_PARAM per parameter and its activations."""
    return STATE_BYTES_PER_PARAM * n_params(cfg) + activation_bytes(cfg)


def available_memory() -> int | None:
    """Bytes of memory this machine can still give (Linux MemAvailable, else physical
    memory); None when it cannot tell."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(
    cfg: RunConfig,
    available: int | None = None,
    memory: str = "memory available here",
    models: int = 1,
) -> None:
    """Refuse, before anything is allocated, a run whose parameters, gradients, AdamW state
    and activations (state_bytes) exceed the memory available to it (the host's, by default;
    memory: what `available` is, for the message); models > 1: that many such runs trained
    fused in one program (sweeps.run.fused), each needing the same."""
    need = state_bytes(cfg) * models
    available = available_memory() if available is None else available
    if available is not None and need > available:
        params = n_params(cfg)
        fused = f"{models} fused runs of " if models > 1 else ""
        raise ConfigError(
            f"{fused}the model has {params:,} parameters and needs about {_gib(need)} to train "
            f"({_gib(STATE_BYTES_PER_PARAM * params)} for weights, gradients and AdamW state, "
            f"{_gib(activation_bytes(cfg))} for the activations of a batch), more than the "
            f"{_gib(available)} of {memory}; shrink model.n_embd, model.n_layer, "
            f"model.block_size, train.batch_size or the vocabulary"
        )


def gpu_share(free: int, total: int | None, sharing: int) -> tuple[int, str]:
    """(bytes, description) of the GPU memory one of `sharing` runs on a GPU may use: its
    share of the total and no more than is free now (total None: a share of the free)."""
    if sharing <= 1:
        return free, "GPU memory free"
    share = min(free, total // sharing) if total else free // sharing
    return share, (
        f"GPU memory one of {sharing} runs sharing the GPU may use "
        f"(fewer workers per GPU leave each more)"
    )


def check_fits_device(cfg: RunConfig, memory: tuple[int, int] | None, models: int = 1) -> None:
    """check_fits against the GPU's own memory, in the process about to train on it: memory
    is (free, total) bytes from the backend's query (None: the device shares the host's
    memory, which check_fits already counted), split between the runs_per_gpu() runs (a
    fused group of `models` runs counts as one process holding them all)."""
    if memory is not None:
        check_fits(cfg, *gpu_share(*memory, runs_per_gpu()), models=models)


RUNS_PER_GPU = "QKNORM_RUNS_PER_GPU"  # set by the local executor for its GPU workers


def runs_per_gpu(environ=os.environ) -> int:
    """How many runs this process shares its GPU with, itself included (1 unless the local
    executor put several workers on one GPU)."""
    value = environ.get(RUNS_PER_GPU, "1")
    return max(1, int(value)) if value.isdigit() else 1


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"
