"""Interventions as hooks (issue 31, point 6): an intervention declared only in the registry
(sweeps/core/interventions.py), with its term in the objective, its action after the
optimizer step and its per-run tally, is picked up by both backends' single and fused trainers
and by the shared loop, with no trainer naming it.

The test-local intervention rides on the train.z_loss field (a new config field would need a
config change) in place of z-loss, and its hooks differ from every built-in one: the term is
v * mean (log Z(logits / 2))^2 and the action clips each head at v / 2, not v."""

import dataclasses

import numpy as np
import pytest

from sweeps.core.interventions import INTERVENTIONS, Intervention, step_metrics
from sweeps.run.backends import fused_factory, trainer_factory
from sweeps.run.fused import train_group
from sweeps.run.loop import train_run
from sweeps.run.rundir import RunDir
from tests.conftest import BACKENDS, smoke_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TAU = 0.05  # the hook's value: its term's coefficient, and twice the logit it clips heads at


def half_z_term(ops, logits):
    return ops.z_term(logits * 0.5)


def clip_at_half(ops, params, tau, cfg, attn_max):
    """Each head whose max logit m exceeds tau / 2 scaled to tau / 2 (clip_qk sees 2 m)."""
    return ops.clip_qk(params, attn_max * 2, tau, cfg.model.head_dim)


def count(tally, row):
    tally = dict(tally or {"steps": 0, "heads": 0})
    tally["steps"] += 1
    tally["heads"] += int(row["hook_heads"])
    return tally


HOOK = Intervention(
    "test-hook",
    "train.z_loss",
    "a test-local hook: a term, an action after the step and a tally",
    "hook_heads",
    (),
    step_metrics=("hook_heads", "hook_twice_max"),
    term=half_z_term,
    after_step=clip_at_half,
    attn_max=True,
    tally=count,
)


@pytest.fixture
def registry(monkeypatch):
    """The registry with the test-local intervention in place of z-loss (its field's)."""
    monkeypatch.delitem(INTERVENTIONS, "z-loss")
    monkeypatch.setitem(INTERVENTIONS, HOOK.name, HOOK)


def configs(backend, *overrides):
    """Two runs that differ in LR and seed, QK-norm off, the hook on."""
    on = ["model.qk_norm=none", f"train.z_loss={TAU}", *overrides]
    return [
        smoke_config(backend, *on, f"train.lr={lr}", f"seed={seed}")
        for lr, seed in (("1e-2", 0), ("3e-3", 1))
    ]


class Single:
    """A single trainer per run, seen as a fused one is: every value with the model first."""

    def __init__(self, backend, cfgs):
        self.trainers = [trainer_factory(backend, "cpu")(c) for c in cfgs]

    def objectives(self, x, y):
        return np.array([t.grads(x, y)[0] for t in self.trainers])

    def eval_losses(self, x, y):
        return np.array([t.eval_loss(x, y) for t in self.trainers])

    def logits(self, x):
        return np.stack([t.logits(x) for t in self.trainers])

    def head_max(self, x):
        return np.stack([head_max(t.probe(x)) for t in self.trainers])

    def step(self, tokens, starts, lr):
        """[M, 2 + k] of one step of every run on the same windows."""
        out = []
        for t in self.trainers:
            t.set_train_tokens(tokens)
            out.append(t.read([t.train_step(starts, lr)])[0])
        return np.stack(out)


class Fused:
    def __init__(self, backend, cfgs):
        self.fused = fused_factory(backend, "cpu")(cfgs)

    def objectives(self, x, y):
        return self.fused.grads(x, y)[0]

    def eval_losses(self, x, y):
        return self.fused.eval_losses(x, y)

    def logits(self, x):
        return self.fused.logits(x)

    def head_max(self, x):
        return np.stack([head_max(p) for p in self.fused.probe(x)])

    def step(self, tokens, starts, lr):
        self.fused.set_train_tokens(tokens)
        M = self.fused.M
        return self.fused.read([self.fused.train_step(np.stack([starts] * M), [lr] * M)])[0]


def head_max(probe) -> np.ndarray:
    """[n_layer, H]: each head's largest causal attention logit on the probe's batch."""
    out = []
    for layer in probe.layers:
        T = layer.scores.shape[-1]
        causal = np.tril(np.ones((T, T), dtype=bool))
        out.append(np.where(causal, layer.scores, -np.inf).max(axis=(0, 2, 3)))
    return np.stack(out)


def log_z(logits):
    m = logits.max(-1, keepdims=True)
    return (m + np.log(np.exp(logits - m).sum(-1, keepdims=True)))[..., 0]


@pytest.mark.parametrize("kind", [Single, Fused], ids=["single", "fused"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hook_declared_only_in_the_registry_reaches_the_trainer(registry, backend, kind):
    cfgs = configs(backend)
    assert step_metrics(cfgs[0]) == HOOK.step_metrics
    trainer = kind(backend, cfgs)
    tokens = np.random.default_rng(0).integers(0, 256, 4096).astype(np.int32)
    T = cfgs[0].model.block_size
    starts = np.array([0, 100, 200, 300])
    x = np.stack([tokens[s : s + T] for s in starts])
    y = np.stack([tokens[s + 1 : s + T + 1] for s in starts])
    # its term: the objective is the cross entropy plus TAU * mean log Z(logits / 2)^2
    half = log_z(trainer.logits(x).astype(np.float64) * 0.5)  # [M, B, T]
    term = (half**2).reshape(len(cfgs), -1).mean(1)
    added = trainer.objectives(x, y) - trainer.eval_losses(x, y)
    np.testing.assert_allclose(added, TAU * term, rtol=1e-4)
    # its action: at a negligible LR, each head over TAU / 2 comes out at TAU / 2, the
    # others are untouched; its step values are the heads it clipped and twice the max
    before = trainer.head_max(x)  # [M, n_layer, H]
    assert (before > TAU / 2).any() and (before < TAU / 2).any(), before
    values = trainer.step(tokens, starts, 1e-12)  # [M, 2 + 2]
    np.testing.assert_allclose(trainer.head_max(x), np.minimum(before, TAU / 2), rtol=1e-4)
    np.testing.assert_array_equal(values[:, 2], (before > TAU / 2).sum((1, 2)))
    np.testing.assert_allclose(values[:, 3], 2 * before.max((1, 2)), rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_loop_keeps_a_registry_hooks_tally_alone_and_fused(registry, backend, tmp_path):
    """Its step values reach metrics.jsonl and its tally summary.json (under its field's
    name), for a run trained alone and for the same runs trained fused."""
    short = ["train.max_steps=6", "train.warmup_steps=2", "train.log_interval=3"]
    cfgs = configs(backend, *short)
    alone = train_run(cfgs[0], tmp_path / "alone", trainer_factory(backend, "cpu"))
    dirs = [tmp_path / f"fused{i}" for i in range(len(cfgs))]
    together = train_group(cfgs, dirs, fused_factory(backend, "cpu"))
    for path, summary in ((tmp_path / "alone", alone), *zip(dirs, together)):
        rows = [r for r in RunDir(path).read_metrics() if r["step"] > 0]
        assert len(rows) == 6 and all(set(HOOK.step_metrics) <= set(r) for r in rows)
        assert summary["status"] == "ok"
        assert summary["z_loss"] == {"steps": 6, "heads": sum(r["hook_heads"] for r in rows)}
    assert together[0]["z_loss"]["heads"] > 0
    # a run with it off keeps no tally
    plain = dataclasses.replace(cfgs[0], train=dataclasses.replace(cfgs[0].train, z_loss=0.0))
    summary = train_run(plain, tmp_path / "plain", trainer_factory(backend, "cpu"))
    assert "z_loss" not in summary
