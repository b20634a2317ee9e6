"""The optimizer state inside a checkpoint, the same for every backend: `step` (float32 [1])
and, per parameter under its shared name, `m.<name>` and `v.<name>` (AdamW's moments). Either
backend loads what the other wrote (sweeps.run.rundir saves the arrays; crosscheck moves
checkpoints across backends).

TrainerState gives a trainer its get_state and set_state from its get_params, set_params and
its optimizer's state_numpy and load_numpy, which pack and unpack through here.
"""

from __future__ import annotations

import numpy as np


def pack_optimizer(
    step: float, m: dict[str, np.ndarray], v: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """{"step", "m.<name>", "v.<name>", ...}: step first, then each parameter's two moments
    in m's order."""
    out = {"step": np.array([step], dtype=np.float32)}
    for name in m:
        out["m." + name] = m[name]
        out["v." + name] = v[name]
    return out


def unpack_optimizer(state: dict, names) -> tuple[float, dict, dict]:
    """(step, m, v) of a packed state for the parameters `names` (a KeyError names a
    parameter the checkpoint lacks)."""
    return (
        float(state["step"][0]),
        {name: state["m." + name] for name in names},
        {name: state["v." + name] for name in names},
    )


class TrainerState:
    """A trainer's checkpoint state: (params, optimizer state) as numpy under the shared
    names. Needs get_params, set_params and an `optimizer` with state_numpy and load_numpy."""

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        return self.get_params(), self.optimizer.state_numpy()

    def set_state(self, params: dict[str, np.ndarray], optimizer: dict[str, np.ndarray]) -> None:
        self.set_params(params)
        self.optimizer.load_numpy(optimizer)
