"""The comparisons. Every check runs the same thing through both trainers and reports the
largest absolute and relative disagreement against its tolerance (crosscheck.tolerances).

Trainers come from a factory `make_trainer(backend, cfg)`, so a test can put a deliberately
wrong trainer on one side. torch is the reference that relative errors are measured against.
A trainer that raises where the other one works is a mismatch too: it becomes a failed check.
"""

from __future__ import annotations

import math
import tempfile
import traceback
from dataclasses import dataclass

import numpy as np

from crosscheck.batches import Batches
from crosscheck.tolerances import BY_DTYPE
from crosscheck.weights import WEIGHT_SETS, make_weights
from sweeps.core.config import RunConfig
from sweeps.core.diagnostics import DIAGNOSTICS, diagnostics_row
from sweeps.core.interventions import step_metrics
from sweeps.core.precision import expected_sites
from sweeps.core.schedule import lr_at
from sweeps.run.backends import trainer_factory
from sweeps.run.rundir import RunDir

BACKENDS = ("torch", "mlx")  # the first is the reference for relative errors


@dataclass
class Check:
    name: str  # e.g. "forward/stress"
    kind: str  # its key in TOLERANCES
    abs_err: float
    rel_err: float
    detail: str = ""  # where the largest error is (parameter, step, layer) or what failed
    dtype: str = "float32"  # the compute dtype checked: picks the tolerance table

    @property
    def tolerance(self) -> float:
        return BY_DTYPE[self.dtype][self.kind].rel

    @property
    def passed(self) -> bool:
        return math.isfinite(self.rel_err) and self.rel_err <= self.tolerance

    def to_dict(self) -> dict:
        return {
            "check": self.name,
            "kind": self.kind,
            "max_abs_err": self.abs_err,
            "max_rel_err": self.rel_err,
            "tolerance": self.tolerance,
            "dtype": self.dtype,
            "passed": self.passed,
            "detail": self.detail,
        }


class Stop(Exception):
    """A check failed so badly (an exception) that the checks after it cannot run."""


CPU = {backend: "cpu" for backend in BACKENDS}


def device_factory(devices: dict[str, str]):
    """make_trainer(backend, cfg): the real Trainer of a backend, as a run builds it, on
    devices[backend] (e.g. {"torch": "cuda", "mlx": "gpu"}) with TF32 off."""

    def make(backend: str, cfg: RunConfig):
        build = trainer_factory(backend, devices[backend], tf32=False)
        return build(cfg.with_overrides([f"backend={backend}"]))

    return make


default_factory = device_factory(CPU)  # both on the CPU: what a sweep's crosscheck runs


def array_errors(a, b) -> tuple[float, float]:
    """(max |a - b|, max |a - b| / max |b|): relative to the reference's scale, so elements
    near zero do not dominate. Different shapes or non-finite values are infinitely wrong."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return math.inf, math.inf
    err = float(np.abs(a - b).max()) if a.size else 0.0
    scale = float(np.abs(b).max()) if b.size else 0.0
    return err, (err / scale if scale > 0 else (0.0 if err == 0 else math.inf))


def series_errors(a, b) -> tuple[float, float, int]:
    """Two series of scalars, each element relative to itself: (max abs, max rel, where)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return math.inf, math.inf, -1
    err = np.abs(a - b)
    rel = err / np.maximum(np.abs(b), 1e-30)
    worst = int(rel.argmax())
    return float(err.max()), float(rel[worst]), worst


def named_check(name: str, kind: str, a: dict, b: dict) -> Check:
    """The worst entry of two dicts of arrays by name (every parameter's gradient, say)."""
    if set(a) != set(b):
        odd = sorted(set(a) ^ set(b))
        return Check(name, kind, math.inf, math.inf, f"different names: {', '.join(odd[:3])}")
    errors = {key: array_errors(a[key], b[key]) for key in sorted(b)}
    worst = max(errors, key=lambda key: errors[key][1])
    detail = (
        f"{len(errors)} arrays, worst {worst}"
        if errors[worst][1] > 0
        else f"{len(errors)} arrays, all identical"
    )
    return Check(name, kind, max(e[0] for e in errors.values()), errors[worst][1], detail)


def scalar_check(name: str, kind: str, a: list, b: list, where: str, first: int = 0) -> Check:
    """`where` names the worst element: "{}" becomes its index counted from `first`."""
    err, rel, i = series_errors(a, b)
    return Check(
        name,
        kind,
        err,
        rel,
        where.format(i + first) if i >= 0 else "non-finite or different lengths",
    )


def run_checks(
    cfg: RunConfig,
    batches: Batches,
    steps: int,
    make_trainer=default_factory,
    log=lambda check: None,
) -> list[Check]:
    """All checks of one model config, in order; `log` sees each one as soon as it is made.

    Forward and one step on both weight sets, then (steps > 0) training, diagnostics and
    checkpoints moved across backends (the trained weights, then the stress weights)."""
    results: list[Check] = []
    attempt = attempter(results, log, cfg.train.dtype)
    try:
        trainers = {}
        attempt("build", "weights", lambda: build(trainers, cfg, make_trainer))
        x, y = batches.train(0)
        attempt("precision", "precision", lambda: precision_check(trainers, cfg, x))
        weights = {kind: make_weights(cfg, kind) for kind in WEIGHT_SETS}
        for kind in WEIGHT_SETS:  # forward on both sets before any gradient
            attempt(f"weights/{kind}", "weights", lambda: load_check(kind, trainers, weights[kind]))
            attempt(f"forward/{kind}", "forward", lambda: forward_check(kind, trainers, x))
        grads: dict = {}
        for kind in WEIGHT_SETS:
            attempt(
                f"loss/{kind}",
                "loss",
                lambda: loss_check(kind, trainers, weights[kind], x, y, grads),
            )
        for kind in WEIGHT_SETS:
            attempt(
                f"grad/{kind}",
                "grad",
                lambda: named_check(
                    f"grad/{kind}", "grad", grads[kind]["mlx"], grads[kind]["torch"]
                ),
            )
        if steps > 0:
            train_checks(cfg, batches, steps, make_trainer, attempt)
    except Stop:
        pass
    return results


def attempter(results: list, log, dtype: str = "float32"):
    """attempt(name, kind, fn): fn's check (None: not defined here) into results and log,
    judged by dtype's tolerances; an exception becomes a failed check named after it, and
    Stop (the checks after it cannot run)."""

    def add(check: Check) -> Check:
        check.dtype = dtype
        results.append(check)
        log(check)
        return check

    def attempt(name: str, kind: str, fn) -> None:
        try:
            check = fn()
            if check is not None:
                add(check)
        except Stop:
            raise
        except Exception as e:
            where = traceback.extract_tb(e.__traceback__)[-1]
            add(
                Check(
                    name,
                    kind,
                    math.inf,
                    math.inf,
                    f"{type(e).__name__}: {e} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})",
                )
            )
            raise Stop from e

    return attempt


def build(trainers: dict, cfg: RunConfig, make_trainer) -> None:
    trainers.update({b: make_trainer(b, cfg) for b in BACKENDS})


def precision_check(trainers: dict, cfg: RunConfig, x) -> Check:
    """Each backend's dtype at every site of sweeps.core.precision.SITES against the declared
    policy for the run's precision: the error is the number of sites that differ, on either
    side. A bfloat16 policy mismatch (a norm or the residual stream in the other dtype) moves
    losses by no more than bfloat16's own rounding, so the tolerances cannot see it; this can."""
    want = expected_sites(cfg.train.dtype)
    wrong = [
        f"{b} {site} {got}"
        for b, t in trainers.items()
        for site, got in t.precision_sites(x).items()
        if want.get(site) != got
    ]
    detail = "; ".join(wrong[:4]) if wrong else f"{len(want)} sites as declared"
    return Check("precision", "precision", float(len(wrong)), float(len(wrong)), detail)


def load_check(kind: str, trainers: dict, weights: dict) -> Check:
    """Copy the numpy weights in and read them back: both must hold exactly these arrays."""
    for t in trainers.values():
        t.set_params(weights)
    loaded = {b: t.get_params() for b, t in trainers.items()}
    checks = [named_check(f"weights/{kind}", "weights", loaded[b], weights) for b in BACKENDS]
    return max(checks, key=lambda c: c.rel_err)


def forward_check(kind: str, trainers: dict, x) -> Check:
    logits = {b: t.logits(x) for b, t in trainers.items()}
    err, rel = array_errors(logits["mlx"], logits["torch"])
    return Check(
        f"forward/{kind}",
        "forward",
        err,
        rel,
        f"logits {'x'.join(map(str, logits['torch'].shape))}",
    )


def loss_check(kind: str, trainers: dict, weights: dict, x, y, grads: dict) -> Check:
    """The loss of one step; each backend's gradients (no update) are kept for the grad check."""
    losses, grads[kind] = {}, {}
    for b, t in trainers.items():
        t.set_params(weights)
        losses[b], grads[kind][b] = t.grads(x, y)
    return scalar_check(
        f"loss/{kind}", "loss", [losses["mlx"]], [losses["torch"]], f"loss {losses['torch']:.6f}"
    )


def train_checks(cfg: RunConfig, batches: Batches, steps: int, make_trainer, attempt) -> None:
    """N steps of the real optimizer, LR schedule and clipping from the init weights on the
    run's batches, the diagnostics at the end, then checkpoints moved across backends."""
    trainers: dict = {}
    history: dict = {b: [] for b in BACKENDS}
    attempt(
        "train/loss",
        "train_loss",
        lambda: train_both(trainers, history, cfg, batches, steps, make_trainer),
    )
    attempt(
        "train/grad_norm",
        "train_grad_norm",
        lambda: scalar_check(
            "train/grad_norm",
            "train_grad_norm",
            [h[1] for h in history["mlx"]],
            [h[1] for h in history["torch"]],
            "pre-clip, worst step {}",
            first=1,
        ),
    )
    for i, name in enumerate(step_metrics(cfg), start=2):  # interventions' per-step values
        attempt(f"train/{name}", name, lambda: step_metric_check(name, history, i))
    diagnostics_checks(trainers, cfg, batches, steps, attempt, make_trainer)
    with tempfile.TemporaryDirectory(prefix="crosscheck-") as tmp:
        for src, dst in (("torch", "mlx"), ("mlx", "torch")):
            loaded: dict = {}
            attempt(
                f"checkpoint/{src}->{dst}",
                "checkpoint",
                lambda: checkpoint_check(
                    src,
                    dst,
                    RunDir(f"{tmp}/{src}"),
                    steps,
                    trainers,
                    loaded,
                    batches,
                    make_trainer,
                    cfg,
                ),
            )
            attempt(
                f"resume/{src}->{dst}",
                "resume",
                lambda: resume_check(src, dst, loaded, batches, steps, cfg),
            )
        for src, dst in (("torch", "mlx"), ("mlx", "torch")):
            attempt(
                f"checkpoint-stress/{src}->{dst}",
                "checkpoint",
                lambda: stress_checkpoint_check(
                    src, dst, RunDir(f"{tmp}/stress-{src}"), batches, make_trainer, cfg
                ),
            )


def train_both(
    trainers: dict, history: dict, cfg: RunConfig, batches: Batches, steps: int, make_trainer
) -> Check:
    """Fresh trainers from the init weights, `steps` steps each; their (loss, grad norm) per
    step into history; the train-loss check."""
    build(trainers, cfg, make_trainer)
    init = make_weights(cfg, "init")
    for t in trainers.values():
        t.set_params(init)
        t.set_train_tokens(batches.train_tokens)
    handles: dict = {b: [] for b in BACKENDS}
    for step in range(steps):  # queued on the device, read in one block as in a run
        for b, t in trainers.items():
            handles[b].append(t.train_step(batches.starts(step), lr_at(step, cfg.train)))
    for b, t in trainers.items():
        history[b] = [tuple(row) for row in t.read(handles[b])]
    return scalar_check(
        "train/loss",
        "train_loss",
        [h[0] for h in history["mlx"]],
        [h[0] for h in history["torch"]],
        f"{steps} steps, worst step {{}}",
        first=1,
    )


def diagnostics_checks(
    trainers: dict, cfg: RunConfig, batches: Batches, steps: int, attempt, make_trainer
) -> None:
    """Every diagnostic of both trained models on the diagnostic sequences, probed once.
    In float32 each backend is probed on its own trained weights (their drift is a few 1e-6);
    in bfloat16 the two trajectories part by an ulp a step and chaotic training grows that
    without bound, so both are probed on torch's trained weights: what is checked is the
    diagnostics' arithmetic, not the trajectories (train/loss checks those)."""
    diag: dict = {}
    shared = cfg.train.dtype != "float32"
    on_weights = ", on torch's weights" if shared else ""

    def probe() -> dict:
        if not diag:
            x = batches.diag(cfg.train.diag_sequences)
            probed = dict(trainers)
            if shared:
                probed["mlx"] = make_trainer("mlx", cfg)
                probed["mlx"].set_params(trainers["torch"].get_params())
            diag.update({b: diagnostics_row(t.probe(x)) for b, t in probed.items()})
        return diag

    def compare(name: str) -> Check | None:
        values = {b: probe()[b][name] for b in BACKENDS}
        if values["torch"] is None or values["torch"] == [None] * cfg.model.n_layer:
            return None  # not defined for this config (QK-norm gains without QK-norm)
        where = "worst layer {}" if DIAGNOSTICS[name].per_layer else "the model"
        as_list = {b: v if isinstance(v, list) else [v] for b, v in values.items()}
        return scalar_check(
            f"diag/{name}",
            "diagnostics",
            as_list["mlx"],
            as_list["torch"],
            f"after {steps} steps{on_weights}, {where}",
        )

    for name in DIAGNOSTICS:
        attempt(f"diag/{name}", "diagnostics", lambda: compare(name))


def step_metric_check(name: str, history: dict, column: int) -> Check:
    """An intervention's per-step value (QK-clip: heads clipped, the max logit it measured),
    each step relative to itself; the detail says how often it acted on each side."""
    values = {b: [h[column] for h in history[b]] for b in BACKENDS}
    acted = ", ".join(f"{b} {sum(v != 0 for v in values[b])}" for b in BACKENDS)
    return scalar_check(
        f"train/{name}",
        name,
        values["mlx"],
        values["torch"],
        f"worst step {{}}; nonzero on {acted} of {len(values['torch'])} steps",
        first=1,
    )


def checkpoint_check(src, dst, run, steps, trainers, loaded, batches, make_trainer, cfg) -> Check:
    """src's checkpoint (RunDir.save_checkpoint / load_checkpoint) in a fresh dst trainer
    gives src's val loss. A fresh src trainer loads it too, for resume_check."""
    run.save_checkpoint(steps, *trainers[src].get_state(), {"crosscheck": True})
    params, optimizer, _ = run.load_checkpoint()
    for b in (src, dst):
        loaded[b] = make_trainer(b, cfg)
        loaded[b].set_state(params, optimizer)
    val = [
        np.mean([t.eval_loss(x, y) for x, y in batches.val]) for t in (loaded[dst], trainers[src])
    ]
    return scalar_check(
        f"checkpoint/{src}->{dst}",
        "checkpoint",
        [val[0]],
        [val[1]],
        f"val loss {val[1]:.6f}, {len(batches.val)} batches",
    )


def stress_checkpoint_check(src, dst, run, batches, make_trainer, cfg) -> Check:
    """The same round trip from the stress weights (crosscheck.weights): trained weights are
    still near init, where an evaluation path can be wrong unseen (an attention soft cap at
    logits of 0.05); with every nonlinearity in its O(1) range it cannot."""
    fresh = {b: make_trainer(b, cfg) for b in (src, dst)}
    fresh[src].set_params(make_weights(cfg, "stress"))
    run.save_checkpoint(0, *fresh[src].get_state(), {"crosscheck": True})
    params, optimizer, _ = run.load_checkpoint()
    fresh[dst].set_state(params, optimizer)
    val = [np.mean([t.eval_loss(x, y) for x, y in batches.val]) for t in (fresh[dst], fresh[src])]
    return scalar_check(
        f"checkpoint-stress/{src}->{dst}",
        "checkpoint",
        [val[0]],
        [val[1]],
        f"val loss {val[1]:.6f} from the stress weights",
    )


def resume_check(src, dst, loaded, batches, steps, cfg) -> Check:
    """One more step from the checkpoint on both backends: the same params, Adam moments and
    step count (the optimizer state means the same thing on both sides)."""
    for t in loaded.values():
        t.set_train_tokens(batches.train_tokens)
        t.read([t.train_step(batches.starts(steps), lr_at(steps, cfg.train))])
    after = {b: {**t.get_state()[0], **t.get_state()[1]} for b, t in loaded.items()}
    return named_check(f"resume/{src}->{dst}", "resume", after[dst], after[src])
