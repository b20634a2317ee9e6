"""Fused training (issue 31): runs that differ only in LR and seed trained as one program
equal the same runs trained alone, stay independent when one diverges, write standard run
directories, resume after kill -9 and from checkpoints at different steps; crosscheck covers
the fused step. Tolerances are crosscheck's (a fused model and its run alone differ by float32
operation order only, as the two backends do)."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from crosscheck.checks import series_errors
from crosscheck.tolerances import TOLERANCES
from sweeps.core.diagnostics import DIAGNOSTICS
from sweeps.core.errors import ConfigError
from sweeps.core.interventions import step_metrics
from sweeps.core.schedule import lr_at
from sweeps.data import batch_starts, load_tokens
from sweeps.run.backends import fused_factory, trainer_factory
from sweeps.run.fused import check_fusable, train_group
from sweeps.run.loop import train_run
from sweeps.run.rundir import RunDir
from tests.conftest import BACKENDS, smoke_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GROUP = (("1e-2", 0), ("3e-3", 1), ("5e-3", 2))  # (LR, seed) of each fused model


def group(backend, *overrides, members=GROUP):
    return [smoke_config(backend, f"train.lr={lr}", f"seed={s}", *overrides) for lr, s in members]


def make_fused(backend):
    return fused_factory(backend, "cpu")


def rel(kind, a, b) -> float:
    """The worst per-element relative error of two series (crosscheck's scalars measure);
    asserted within crosscheck's tolerance for `kind`."""
    err, worst, _ = series_errors(a, b)
    assert worst <= TOLERANCES[kind].rel, (kind, worst)
    return worst


def column(rows, key):
    return [v for r in rows if key in r for v in np.atleast_1d(np.asarray(r[key], dtype=float))]


# -- the trainer: every intervention, QK-norm kinds, tied embeddings ---------------------------
CONFIGS = {
    "plain": [],
    "qk-norm rms": ["model.qk_norm=rms"],
    "qk-norm layernorm, rms blocks": ["model.qk_norm=layernorm", "model.norm=rms"],
    "z-loss": ["train.z_loss=1e-2"],
    "softcap": ["model.attn_softcap=0.1"],
    "qk-clip": ["model.qk_clip=0.02"],
    "tied, independent decay": ["model.tie_embeddings=true", "train.weight_decay_mode=independent"],
}


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", CONFIGS)
def test_each_fused_model_steps_as_its_run_alone(backend, name):
    """Per-step loss, pre-clip gradient norm and interventions' step values, then the
    weights and Adam moments of every model after 12 steps, against single trainers."""
    cfgs = group(backend, *CONFIGS[name])
    tokens = load_tokens(cfgs[0].data).train
    fused = make_fused(backend)(cfgs)
    solo = [trainer_factory(backend, "cpu")(c) for c in cfgs]
    for t in (fused, *solo):
        t.set_train_tokens(tokens)
    B, T = cfgs[0].train.batch_size, cfgs[0].model.block_size
    handles, alone = [], [[] for _ in cfgs]
    for step in range(12):
        starts = [batch_starts(len(tokens), c.seed, step, B, T) for c in cfgs]
        lrs = [lr_at(step, c.train) for c in cfgs]
        handles.append(fused.train_step(np.stack(starts), lrs))
        for i, t in enumerate(solo):
            alone[i].append(t.train_step(starts[i], lrs[i]))
    together = fused.read(handles)  # [steps, M, k]
    kinds = ["train_loss", "train_grad_norm", *step_metrics(cfgs[0])]
    for i, t in enumerate(solo):
        own = t.read(alone[i])
        for k, kind in enumerate(kinds):
            rel(kind, together[:, i, k], own[:, k])
        params, optimizer = fused.get_state(i)
        want_params, want_optimizer = t.get_state()
        assert list(params) == list(want_params)  # the checkpoint's order
        for name_, want in {**want_params, **want_optimizer}.items():
            got = {**params, **optimizer}[name_]
            scale = np.abs(want).max()
            assert np.abs(got - want).max() <= TOLERANCES["resume"].rel * scale, name_


@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_evaluation_grads_and_probes_are_each_models_own(backend):
    cfgs = group(backend, "model.qk_norm=rms")
    fused = make_fused(backend)(cfgs)
    solo = [trainer_factory(backend, "cpu")(c) for c in cfgs]
    x = np.arange(8 * 32).reshape(8, 32) % 256
    y = (x + 1) % 256
    losses = fused.eval_losses(x, y)
    objectives, grads = fused.grads(x, y)
    probes = fused.probe(x[:4])
    logits = fused.logits(x)
    for i, t in enumerate(solo):
        rel("loss", [losses[i]], [t.eval_loss(x, y)])
        loss, want = t.grads(x, y)
        rel("loss", [objectives[i]], [loss])
        for n, g in want.items():
            assert np.abs(grads[n][i] - g).max() <= TOLERANCES["grad"].rel * np.abs(g).max(), n
        np.testing.assert_allclose(logits[i], t.logits(x), atol=TOLERANCES["forward"].rel * 10)
        p = t.probe(x[:4])
        for got, layer in zip(probes[i].layers, p.layers):
            np.testing.assert_array_equal(got.q_gain, layer.q_gain)  # the model's own gains
            np.testing.assert_allclose(got.probs, layer.probs, atol=1e-6)


# -- whole runs through the shared loop --------------------------------------------------------
WORST: dict = {}  # per quantity, the worst relative difference seen (printed with -s)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_fused_runs_equal_runs_trained_alone(backend, tmp_path, capsys):
    """The run directories of a fused group against the same runs trained alone: every
    metrics row's step, per-step loss and gradient norm, every evaluation and diagnostic, the
    final weights and moments, outcomes; provenance says fused, with how many."""
    cfgs = group(backend, "model.qk_norm=rms")
    alone = [
        train_run(c, tmp_path / "alone" / c.run_id, trainer_factory(backend, "cpu")) for c in cfgs
    ]
    dirs = [tmp_path / "fused" / c.run_id for c in cfgs]
    together = train_group(cfgs, dirs, make_fused(backend))
    worst: dict = {}
    for c, a, b in zip(cfgs, alone, together):
        assert (a["status"], a["steps_run"]) == (b["status"], b["steps_run"]) == ("ok", 60)
        ra = RunDir(tmp_path / "alone" / c.run_id)
        rb = RunDir(tmp_path / "fused" / c.run_id)
        ma, mb = ra.read_metrics(), rb.read_metrics()
        assert [sorted(r) for r in ma] == [sorted(r) for r in mb]  # the same rows and keys
        measured = {
            "train_loss": ("train_loss", "train_loss"),
            "grad_norm": ("grad_norm", "train_grad_norm"),
            "val_loss": ("val_loss", "train_loss"),
            "quick_val_loss": ("quick_val_loss", "train_loss"),
            **{d: (d, "diagnostics") for d in DIAGNOSTICS if column(ma, d)},
        }
        for label, (key, kind) in measured.items():
            worst[label] = max(worst.get(label, 0.0), rel(kind, column(mb, key), column(ma, key)))
        worst["final_val_loss"] = max(
            worst.get("final_val_loss", 0.0),
            rel("train_loss", [b["final_val_loss"]], [a["final_val_loss"]]),
        )
        pa, oa, _ = ra.load_checkpoint()
        pb, ob, _ = rb.load_checkpoint()
        for n in [*pa, *oa]:
            want, got = {**pa, **oa}[n], {**pb, **ob}[n]
            err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
            assert err <= TOLERANCES["resume"].rel, n
            worst["final weights and moments"] = max(worst.get("final weights and moments", 0), err)
        assert rb.problem() is None and ra.problem() is None  # the integrity checks pass
        assert json.loads(rb.config_path.read_text())["provenance"]["fused"] == {"models": 3}
        assert "fused" not in json.loads(ra.config_path.read_text())["provenance"]
        assert rb.record().finished and rb.record().status == "ok"
    WORST[backend] = worst
    with capsys.disabled():
        print(f"\n{backend} fused vs alone, worst relative difference:")
        for k, v in worst.items():
            print(f"  {k:28s} {v:.2e}")


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_planted_divergent_model_is_stopped_and_the_others_are_unchanged(backend, tmp_path):
    """LR 1e4 among three: its loss goes non-finite (NaN in its own slices) and it is
    stopped as diverged; the other two runs' metrics rows equal those of a fused group without
    it, bit for bit, and their final weights too."""
    cfgs = group(backend, members=GROUP[:2])
    bad = smoke_config(backend, "train.lr=1e4", "seed=5")
    train_group(cfgs, [tmp_path / "two" / c.run_id for c in cfgs], make_fused(backend))
    three = [cfgs[0], bad, cfgs[1]]
    out = train_group(three, [tmp_path / "three" / c.run_id for c in three], make_fused(backend))
    assert [s["status"] for s in out] == ["ok", "diverged", "ok"]
    assert out[1]["diverged_at"] < 60 and out[1]["steps_run"] == out[1]["diverged_at"]
    rows = RunDir(tmp_path / "three" / bad.run_id).read_metrics()
    assert rows[-1]["train_loss"] is None  # NaN (metrics.jsonl is strict JSON)
    for c in cfgs:
        two, three_ = (RunDir(tmp_path / d / c.run_id) for d in ("two", "three"))
        assert two.read_metrics() == three_.read_metrics()
        for a, b in zip(two.load_checkpoint()[:2], three_.load_checkpoint()[:2]):
            for n in a:
                np.testing.assert_array_equal(a[n], b[n])


def test_only_lr_and_seed_may_differ_in_a_group():
    cfgs = group("torch")
    check_fusable(cfgs)
    with pytest.raises(ConfigError, match="model.n_embd .* cannot be fused"):
        check_fusable([cfgs[0], smoke_config("torch", "model.n_embd=32")])
    with pytest.raises(ConfigError, match="train.weight_decay"):
        check_fusable([cfgs[0], smoke_config("torch", "train.weight_decay=0.5")])


# -- interruptions ----------------------------------------------------------------------------
CHILD = """
import os, sys, time
sys.path.insert(0, {root!r})
import torch
torch.set_num_threads(1)
from sweeps.run.backends import fused_factory
from sweeps.run.fused import train_group
from tests.conftest import smoke_config
cfgs = [smoke_config("torch", f"train.lr={{lr}}", f"seed={{s}}") for lr, s in {members!r}]
train_group(cfgs, [os.path.join({out!r}, c.run_id) for c in cfgs], fused_factory("torch", "cpu"),
            stop_after=45)
print("stalled", flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_fused_group_killed_with_sigkill_resumes_to_the_same_results(tmp_path):
    """A group (one member diverges at step 4) stalled after 45 steps (past its step-30
    checkpoint, with rows past it written) and killed with SIGKILL; the same call then
    resumes each unfinished run from its own checkpoint and finishes it. Every run equals the
    uninterrupted group's, bit for bit (the CPU is deterministic)."""
    members = (*GROUP[:2], ("1e4", 5))
    cfgs = group("torch", members=members)
    out = tmp_path / "killed"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(root=root, members=members, out=str(out))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "stalled"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    for c in cfgs[:2]:
        run = RunDir(out / c.run_id)
        assert not run.is_finished and run.checkpoints() and run.last_step() > 30
    assert RunDir(out / cfgs[2].run_id).is_finished  # the diverged run finished before
    resumed = train_group(cfgs, [out / c.run_id for c in cfgs], make_fused("torch"))
    whole = train_group(cfgs, [tmp_path / "whole" / c.run_id for c in cfgs], make_fused("torch"))
    assert [s["status"] for s in resumed] == ["ok", "ok", "diverged"]
    for c, a, b in zip(cfgs, resumed, whole):
        ra, rb = RunDir(out / c.run_id), RunDir(tmp_path / "whole" / c.run_id)
        assert ra.read_metrics() == rb.read_metrics()
        assert a["final_val_loss"] == b["final_val_loss"] or a["status"] == "diverged"
        assert ra.problem() is None


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_runs_resumed_from_different_steps_train_as_one_group(backend, tmp_path):
    """Run A stopped after 35 steps (checkpoint at 30) and a fresh run B go on as one group:
    B trains from step 0 while A waits, frozen, until step 30, then both to the end. Each
    equals its run in an uninterrupted group (within crosscheck's tolerances: the groups
    differ in size)."""
    a, b = group(backend, members=GROUP[:2])
    staggered = [tmp_path / "staggered" / c.run_id for c in (a, b)]
    train_group([a], staggered[:1], make_fused(backend), stop_after=35)
    assert RunDir(staggered[0]).last_step() == 30  # its checkpoint's step
    out = train_group([a, b], staggered, make_fused(backend))
    whole = train_group(
        [a, b], [tmp_path / "whole" / c.run_id for c in (a, b)], make_fused(backend)
    )
    assert [s["status"] for s in out] == ["ok", "ok"]
    for c, s, w in zip((a, b), out, whole):
        got = RunDir(tmp_path / "staggered" / c.run_id).read_metrics()
        want = RunDir(tmp_path / "whole" / c.run_id).read_metrics()
        assert [r["step"] for r in got] == list(range(61))
        rel("train_loss", column(got, "train_loss"), column(want, "train_loss"))
        rel("train_grad_norm", column(got, "grad_norm"), column(want, "grad_norm"))
        rel("train_loss", [s["final_val_loss"]], [w["final_val_loss"]])
    state = RunDir(staggered[0]).load_checkpoint()[1]
    assert state["step"][0] == 60  # A's Adam step count: 30 before, 30 in the group


# -- crosscheck ---------------------------------------------------------------------------------
def test_crosscheck_covers_the_fused_step():
    from crosscheck.batches import make_batches
    from crosscheck.fused import run_fused_checks

    cfg = smoke_config("torch", "model.qk_norm=rms", "train.lr=1e-2")
    checks = run_fused_checks(cfg, make_batches(cfg), steps=8)
    names = [c.name for c in checks]
    assert names == [
        "fused/forward",
        "fused/grad",
        "fused/train_loss",
        "fused/train_grad_norm",
        "fused/val_loss",
    ]
    assert all(c.passed for c in checks), [c.to_dict() for c in checks if not c.passed]


def test_crosscheck_fails_a_fused_step_with_a_global_clip(monkeypatch):
    """A global gradient clip on one side (the trap the issue names: it couples the models)
    fails the fused train checks while forward and gradients still pass."""
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_map

    import qkmlx.fused
    from crosscheck.batches import make_batches
    from crosscheck.fused import run_fused_checks

    def global_clip(grads, max_norm):
        squares = tree_map(lambda g: (g.astype(mx.float32) ** 2).sum(), grads)
        total = mx.sqrt(sum(s for _, s in tree_flatten(squares)))
        scale = mx.minimum(max_norm / (total + 1e-6), 1.0)
        norms = mx.sqrt(
            sum(
                s
                for _, s in tree_flatten(
                    tree_map(lambda g: (g**2).reshape(g.shape[0], -1).sum(1), grads)
                )
            )
        )
        return tree_map(lambda g: g * scale, grads), norms

    monkeypatch.setattr(qkmlx.fused, "clip_gradients", global_clip)
    cfg = smoke_config("torch", "train.lr=1e-2")
    checks = {c.name: c for c in run_fused_checks(cfg, make_batches(cfg), steps=8)}
    assert checks["fused/forward"].passed and checks["fused/grad"].passed
    assert not checks["fused/train_loss"].passed


@pytest.mark.slow
def test_the_compiled_fused_torch_step_equals_the_eager_one():
    """torch.compile of the whole fused step (the CUDA default; CUDA graphs there): the same
    per-model losses and gradient norms as eager within crosscheck's tolerances, with a model
    stopped halfway (the per-model scalars are data: stopping one is no new graph)."""
    import torch

    cfgs = group("torch", "model.qk_norm=rms")
    tokens = load_tokens(cfgs[0].data).train
    out = {}
    for compiled in (False, True):
        fused = (
            make_fused("torch")(cfgs) if not compiled else fused_factory("torch", "cpu", True)(cfgs)
        )
        fused.set_train_tokens(tokens)
        handles = []
        for step in range(8):
            if step == 4:
                fused.stop(2)
            starts = np.stack([batch_starts(len(tokens), c.seed, step, 8, 32) for c in cfgs])
            handles.append(fused.train_step(starts, [lr_at(step, c.train) for c in cfgs]))
        out[compiled] = fused.read(handles)
        if compiled:
            assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 1
    for i in range(3):
        rel("train_loss", out[True][:, i, 0], out[False][:, i, 0])
        rel("train_grad_norm", out[True][:, i, 1], out[False][:, i, 1])


def test_torch_compiles_by_default_on_cuda_only():
    """--compile/--no-compile unset: the compiled step on CUDA (the field's standard there),
    eager on the CPU and MPS; an explicit choice wins."""
    from qktorch.fused import FusedTrainer
    from qktorch.train import Trainer, default_compile

    assert default_compile("cuda") and not default_compile("cpu") and not default_compile("mps")
    cfg = smoke_config("torch")
    eager = FusedTrainer(group("torch"), "cpu")
    assert eager.step.__func__ is FusedTrainer._step
    assert Trainer(cfg, "cpu").step.__func__ is Trainer._step
