"""The parameter names, shapes and initial values both trainers share.

Names follow the torch state_dict; the flattened MLX parameter tree uses the same keys.
Initial weights come from numpy here, so a seed gives identical weights in both backends.
"""
import numpy as np

from sweeps.config import ModelConfig
from sweeps.norms import qk_norm_params


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


def is_residual_projection(name: str) -> bool:
    """Projections that write into the residual stream get the 1/sqrt(2 n_layer) init."""
    return name.endswith("attn.o_proj.weight") or name.endswith("mlp.proj.weight")


def decays(name: str, shape: tuple[int, ...]) -> bool:
    """Weight decay applies to 2-D weights only: never to norm gains."""
    return len(shape) == 2


def init_params(model: ModelConfig, vocab_size: int, seed: int) -> dict[str, np.ndarray]:
    """float32 initial weights: N(0, std) matrices, unit norm gains."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in param_shapes(model, vocab_size).items():
        if len(shape) == 1:
            params[name] = np.ones(shape, dtype=np.float32)
            continue
        std = model.init_std
        if is_residual_projection(name):
            std = std / np.sqrt(2 * model.n_layer)
        params[name] = (rng.standard_normal(shape) * std).astype(np.float32)
    return params
