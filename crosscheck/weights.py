"""The two weight sets both trainers load, drawn once with numpy.

- `init`: sweeps.core.params.init_params exactly, what every run starts from. Activations are
  small here (residual RMS ~0.03), so norm eps matters, but attention is nearly uniform and
  GELU nearly linear: a wrong score scale or GELU variant barely moves the logits.
- `stress`: the same draws rescaled so every nonlinearity works in its O(1) range: each
  matrix N(0, 1/n_in) (n_in its last dimension: unit-variance outputs from unit-variance
  inputs), every norm gain drawn from U(0.5, 1.5). Attention is far from uniform, GELU is
  curved, and a dropped, misplaced or extra gain changes the output.
Together they leave no cheap place for a mismatch to hide.
"""

import numpy as np

from sweeps.core.config import RunConfig
from sweeps.core.params import init_params, matrix_std

WEIGHT_SETS = ("init", "stress")


def make_weights(cfg: RunConfig, kind: str) -> dict[str, np.ndarray]:
    params = init_params(cfg.model, cfg.vocab_size, cfg.seed)
    if kind == "init":
        return params
    rng = np.random.default_rng([cfg.seed, 1])
    out = {}
    for name, p in params.items():
        if p.ndim == 1:
            out[name] = rng.uniform(0.5, 1.5, p.shape).astype(np.float32)
            continue
        scale = 1.0 / np.sqrt(p.shape[-1]) / matrix_std(name, cfg.model)
        out[name] = (p * scale).astype(np.float32)
    return out
