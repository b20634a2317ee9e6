"""The fused step across backends: qkmlx's FusedTrainer against qktorch's (qkmlx/fused.py,
qktorch/fused.py) on the same M models, each with its own LR and seed, from identical weights
on identical batches. The same checks and tolerances as a single run's: logits and every
gradient of one batch, then per-step losses, gradient norms and interventions' step values of
every model over a short training run, and every model's val loss at its end.

That a fused model equals the same run trained alone is tests/test_fused.py's to prove, per
backend; this module proves the two fused programs compute the same thing.
"""

from __future__ import annotations

import numpy as np

from crosscheck.checks import (
    BACKENDS,
    CPU,
    Check,
    Stop,
    array_errors,
    attempter,
    named_check,
    scalar_check,
    series_errors,
)
from sweeps.core.config import RunConfig
from sweeps.core.interventions import step_metrics
from sweeps.core.schedule import lr_at
from sweeps.data import batch_starts
from sweeps.run.backends import fused_factory

MODELS = (
    3  # models per fused check: the config's LR and seed, then half the LR and the next seed...
)


def fused_configs(cfg: RunConfig, models: int) -> list[RunConfig]:
    """The group checked: model i at the config's LR / 2^i and seed + i (stable LRs: at a
    divergent one rounding differences grow chaotically)."""
    return [
        cfg.with_overrides([f"train.lr={cfg.train.lr / 2**i!r}", f"seed={cfg.seed + i}"])
        for i in range(models)
    ]


def fused_device_factory(devices: dict[str, str]):
    """make_fused(backend, cfgs): the real FusedTrainer of a backend on devices[backend]."""

    def make(backend: str, cfgs: list[RunConfig]):
        build = fused_factory(backend, devices[backend], tf32=False)
        return build([c.with_overrides([f"backend={backend}"]) for c in cfgs])

    return make


def run_fused_checks(
    cfg: RunConfig,
    batches,
    steps: int,
    models: int = MODELS,
    make_fused=None,
    log=lambda check: None,
) -> list[Check]:
    """The fused program of `models` runs on both backends, checks in order (`log` sees each
    as it is made); make_fused(backend, cfgs) builds it (default: both on the CPU)."""
    results: list[Check] = []
    try:
        fused_checks(
            cfg,
            batches,
            steps,
            models,
            make_fused or fused_device_factory(CPU),
            attempter(results, log, cfg.train.dtype),
        )
    except Stop:
        pass
    return results


def fused_checks(cfg: RunConfig, batches, steps: int, models: int, make_fused, attempt) -> None:
    cfgs = fused_configs(cfg, models)
    trainers: dict = {}
    attempt("fused/build", "weights", lambda: _build(trainers, cfgs, make_fused))
    x, y = batches.train(0)
    attempt("fused/forward", "forward", lambda: _forward(trainers, x))
    attempt("fused/grad", "grad", lambda: _grads(trainers, x, y))
    if steps <= 0:
        return
    history: dict = {}
    attempt(
        "fused/train_loss",
        "train_loss",
        lambda: _train(trainers, history, cfgs, batches, steps, make_fused),
    )
    columns = ["train_grad_norm", *step_metrics(cfg)]
    for column, kind in enumerate(columns, start=1):
        attempt(f"fused/{kind}", kind, lambda: _series(f"fused/{kind}", kind, history, column))
    attempt("fused/val_loss", "train_loss", lambda: _val(trainers, batches, steps))


def _build(trainers: dict, cfgs: list, make_fused) -> None:
    trainers.update({b: make_fused(b, cfgs) for b in BACKENDS})


def _forward(trainers: dict, x) -> Check:
    logits = {b: t.logits(x) for b, t in trainers.items()}
    err, rel = array_errors(logits["mlx"], logits["torch"])
    shape = "x".join(map(str, logits["torch"].shape))
    return Check("fused/forward", "forward", err, rel, f"logits {shape} (models first)")


def _grads(trainers: dict, x, y) -> Check:
    grads = {b: t.grads(x, y)[1] for b, t in trainers.items()}
    return named_check("fused/grad", "grad", grads["mlx"], grads["torch"])


def _train(trainers, history, cfgs, batches, steps, make_fused) -> Check:
    """Fresh fused trainers (each model from its seed's init weights), `steps` steps each on
    every model's own seed's batches at its own schedule's LR."""
    _build(trainers, cfgs, make_fused)
    n, B, T = len(batches.train_tokens), batches.batch_size, batches.block_size
    handles: dict = {b: [] for b in BACKENDS}
    for t in trainers.values():
        t.set_train_tokens(batches.train_tokens)
    for step in range(steps):
        starts = np.stack([batch_starts(n, c.seed, step, B, T) for c in cfgs])
        lrs = [lr_at(step, c.train) for c in cfgs]
        for b, t in trainers.items():
            handles[b].append(t.train_step(starts, lrs))
    history.update({b: t.read(handles[b]) for b, t in trainers.items()})  # [steps, M, k]
    return _series("fused/train_loss", "train_loss", history, 0)


def _series(name: str, kind: str, history: dict, column: int) -> Check:
    """Column `column` of every model's steps, each element relative to itself."""
    a, b = (history[k][:, :, column].T.reshape(-1) for k in ("mlx", "torch"))
    steps = history["torch"].shape[0]
    err, rel, i = series_errors(a, b)
    where = f"model {i // steps}, step {i % steps + 1}" if i >= 0 else "non-finite"
    return Check(name, kind, err, rel, where)


def _val(trainers: dict, batches, steps: int) -> Check:
    """Every trained model's val loss on the check's val batches."""
    val = {
        b: np.mean([t.eval_losses(x, y) for x, y in batches.val], axis=0)
        for b, t in trainers.items()
    }
    return scalar_check(
        "fused/val_loss", "train_loss", val["mlx"], val["torch"], f"after {steps} steps, model {{}}"
    )
