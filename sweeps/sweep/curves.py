"""Training curves of a sweep as one long table, `curves.parquet` beside results.parquet:

    run_id, arm, lr, depth, seed, step, metric, value

one row per (run, step, metric) that metrics.jsonl recorded: train_loss, train_loss_ema (the
smoothed loss), grad_norm, lr (the scheduled LR of that step; the `lr` column is the run's
peak LR), val_loss, quick_val_loss, and every diagnostic of sweeps.core.diagnostics reduced
over layers by its own rule. Runs still training contribute the steps they have so far.
The TensorBoard export (sweeps.sweep.export) reads the same scalars.
"""

from __future__ import annotations

import math
from pathlib import Path

from sweeps.core.config import arm_label
from sweeps.core.diagnostics import DIAGNOSTICS, reduce_layers
from sweeps.run.rundir import RunDir

COLUMNS = ["run_id", "arm", "lr", "depth", "seed", "step", "metric", "value"]
# metrics.jsonl keys that are not curves: the step itself and its token count
NOT_METRICS = {"step", "tokens"}


def run_scalars(run_dir: str | Path) -> list[tuple[int, str, float]]:
    """(step, metric, value) of every finite scalar in a run's metrics.jsonl, diagnostics
    reduced over layers."""
    out = []
    try:
        rows = RunDir(run_dir).read_metrics()
    except (OSError, UnicodeDecodeError):  # a failed run's unreadable metrics: no curve
        return out
    for row in rows:
        step = row.get("step")
        if not isinstance(step, int):
            continue
        for key, raw in row.items():
            if key in NOT_METRICS:
                continue
            value = reduce_layers(key, raw) if key in DIAGNOSTICS else raw
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
            ):
                out.append((step, key, float(value)))
    return out


def curves_frame(sweep_dir: str | Path, configs: dict):
    """The long table of the planned runs (run_id -> RunConfig) that have metrics."""
    import pandas as pd

    frames = []
    for rid, cfg in configs.items():
        scalars = run_scalars(Path(sweep_dir) / rid)
        if not scalars:
            continue
        frame = pd.DataFrame(scalars, columns=["step", "metric", "value"])
        frames.append(
            frame.assign(
                run_id=rid,
                arm=arm_label(cfg),
                lr=cfg.train.lr,
                depth=cfg.model.n_layer,
                seed=cfg.seed,
            )
        )
    if not frames:
        return pd.DataFrame(
            {
                c: pd.Series(dtype=t)
                for c, t in zip(
                    COLUMNS,
                    ["object", "object", "float64", "int64", "int64", "int64", "object", "float64"],
                )
            }
        )
    return pd.concat(frames, ignore_index=True)[COLUMNS]
