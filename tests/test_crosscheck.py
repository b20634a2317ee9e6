"""crosscheck passes on the real trainers and fails, at the right check, on realistic mismatches.

Each mismatch is put on one side only (a monkeypatched function or a Trainer subclass) and
must be reported at the check that can see it first: model bugs at `forward`, optimizer and
schedule bugs at `train` (with forward and gradients still passing).
"""

import json

import mlx.core as mx
import mlx.nn
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as F
from click.testing import CliRunner

import qkmlx.model
import qkmlx.optim
import qkmlx.train
import qktorch.model
import qktorch.train
from crosscheck.batches import make_batches
from crosscheck.checks import run_checks
from crosscheck.cli import cli
from crosscheck.tolerances import TOLERANCES
from sweeps.core.interventions import INTERVENTIONS, LEVELS
from sweeps.core.schedule import lr_at
from tests.conftest import SMALL_DATA, smoke_config

# At LR 1e-2 the weakest training mismatch (decayed norm gains) is 30x its tolerance by step
# 16 (4x at the preset's 3e-3); correct trainers stay near 1e-6 either way.
TRAIN = dict(steps=16, overrides=["train.lr=1e-2"])


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def factory(mlx_trainer=qkmlx.train.Trainer):
    """make_trainer for run_checks with mlx_trainer on the MLX side."""
    classes = {"mlx": mlx_trainer, "torch": qktorch.train.Trainer}

    def make(backend, cfg):
        return classes[backend](cfg.with_overrides([f"backend={backend}"]), device="cpu")

    return make


def checks_for(*overrides, steps=0, make=None):
    cfg = smoke_config("torch", "model.qk_norm=rms", *overrides)
    return run_checks(cfg, make_batches(cfg), steps, make or factory())


# -- the mismatches -------------------------------------------------------------------------


class AdamWWithoutBiasCorrection(qkmlx.optim.AdamW):
    """MLX's own AdamW default (bias_correction=False): a trap docs/DESIGN.md names."""

    def update(self, params, grads, lr):
        self.state["step"] = self.state["step"] + 1
        new = {}
        for name, p in params.items():
            g = grads[name]
            m = self.beta1 * self.state["m"][name] + (1 - self.beta1) * g
            v = self.beta2 * self.state["v"][name] + (1 - self.beta2) * g * g
            self.state["m"][name], self.state["v"][name] = m, v
            if p.ndim == 2:
                p = p * (1 - lr * self.decay_per_lr)
            new[name] = p - lr * m / (mx.sqrt(v) + self.eps)
        return new


class ScheduleOneStepAhead(qkmlx.train.Trainer):
    """A backend that takes its LR from its own 1-based step counter."""

    steps_done = 0

    def train_step(self, starts, lr):
        self.steps_done += 1
        return super().train_step(starts, lr_at(self.steps_done, self.cfg.train))


def torch_norm_with_default_eps(kind, dims, eps):
    """nn.RMSNorm(dims) without eps: torch then uses finfo(float32).eps, not 1e-5."""
    return tnn.RMSNorm(dims) if kind == "rms" else tnn.LayerNorm(dims, eps=eps, bias=False)


def torch_tanh_gelu(self, x):
    return self.proj(F.gelu(self.fc(x), approximate="tanh"))


def mlx_qk_norm_without_gain(self, x):
    B, T, C = x.shape
    q, k, v = (
        p(x).reshape(B, T, self.n_head, self.head_dim).transpose(0, 2, 1, 3)
        for p in (self.q_proj, self.k_proj, self.v_proj)
    )
    return (
        mx.fast.rms_norm(q, None, self.q_norm.eps),
        mx.fast.rms_norm(k, None, self.k_norm.eps),
        v,
    )


def torch_qk_norm_after_score_scale(self, x):
    """q pre-multiplied by 1/sqrt(d) (attention then unscaled), then normalised: the norm
    undoes the scale and the scores come out sqrt(d) too large."""
    B, T, C = x.shape
    q, k, v = (
        p(x).reshape(B, T, self.n_head, self.head_dim).transpose(1, 2)
        for p in (self.q_proj, self.k_proj, self.v_proj)
    )
    self.scale = 1.0
    return self.q_norm(q / self.head_dim**0.5), self.k_norm(k), v


FORWARD_MISMATCHES = {
    "norm eps": ([qktorch.model, "make_norm", torch_norm_with_default_eps], ["model.norm=rms"]),
    "tanh gelu": ([qktorch.model.MLP, "forward", torch_tanh_gelu], []),
    "qk-norm without gain": (
        [qkmlx.model.CausalSelfAttention, "heads", mlx_qk_norm_without_gain],
        [],
    ),
    "qk-norm after score scale": (
        [qktorch.model.CausalSelfAttention, "heads", torch_qk_norm_after_score_scale],
        [],
    ),
}


def first_failure(checks):
    failed = [c for c in checks if not c.passed]
    assert failed, "the mismatch was not detected"
    return failed[0]


@pytest.mark.parametrize("name", FORWARD_MISMATCHES)
def test_a_model_mismatch_fails_at_forward(name, monkeypatch):
    patch, overrides = FORWARD_MISMATCHES[name]
    monkeypatch.setattr(*patch)
    checks = checks_for(*overrides)
    assert first_failure(checks).name.startswith("forward/"), [c.to_dict() for c in checks]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "no bias correction",
        "schedule one step off",
        "decay on norm gains",
        "coupled decay in independent mode",
    ],
)
def test_an_optimizer_mismatch_fails_at_training_after_forward_and_grads_pass(name, monkeypatch):
    make, overrides = None, list(TRAIN["overrides"])
    if name == "no bias correction":
        monkeypatch.setattr(qkmlx.train, "AdamW", AdamWWithoutBiasCorrection)
    elif name == "schedule one step off":
        make = factory(ScheduleOneStepAhead)
    elif name == "decay on norm gains":
        monkeypatch.setattr(qkmlx.optim, "decays", lambda name, shape: True)
    else:  # MLX ignores weight_decay_mode: a literature value (1e-4) becomes AdamW's lr * 1e-4
        monkeypatch.setattr(qkmlx.optim, "decay_per_lr", lambda train: train.weight_decay)
        overrides += ["train.weight_decay_mode=independent", "train.weight_decay=1e-4"]
    checks = checks_for(*overrides, steps=TRAIN["steps"], make=make)
    assert first_failure(checks).name == "train/loss", [c.to_dict() for c in checks]
    assert all(c.passed for c in checks if c.name.split("/")[0] in ("forward", "loss", "grad"))


def test_a_summed_cross_entropy_fails_at_the_loss(monkeypatch):
    """MLX's cross_entropy sums unless told reduction="mean": logits agree, the loss does not."""

    def summed(model, x, y):
        logits = model(x)
        return mlx.nn.losses.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum"
        )

    monkeypatch.setattr(qkmlx.train, "loss_fn", summed)
    assert first_failure(checks_for()).name == "loss/init"


def test_unscaled_scores_in_the_explicit_attention_path_fail_at_the_diagnostics(monkeypatch):
    """The fused kernel (forward, training) is right; only the probe's explicit path is off."""
    explicit = qkmlx.model.CausalSelfAttention.explicit

    def unscaled(self, x):
        y, scores, probs = explicit(self, x)
        return y, scores / self.scale, probs

    monkeypatch.setattr(qkmlx.model.CausalSelfAttention, "explicit", unscaled)
    checks = checks_for(steps=2)
    assert first_failure(checks).name == "diag/max_attn_logit"
    assert all(c.passed for c in checks if not c.name.startswith("diag/"))


def test_a_checkpoint_loaded_without_its_step_count_fails_at_resume(monkeypatch):
    load_numpy = qkmlx.optim.AdamW.load_numpy

    def forgets_step(self, state):
        load_numpy(self, {**state, "step": state["step"] * 0})

    monkeypatch.setattr(qkmlx.optim.AdamW, "load_numpy", forgets_step)
    checks = checks_for(steps=2)
    assert first_failure(checks).name == "resume/torch->mlx"
    assert all(c.passed for c in checks if not c.name.startswith("resume/"))


def test_a_trainer_that_raises_is_a_failure_not_a_crash(monkeypatch):
    def broken(self, params):
        raise KeyError("wte.weight")

    monkeypatch.setattr(qkmlx.train.Trainer, "set_params", broken)
    checks = checks_for()
    assert [c.name for c in checks] == ["build"] and not checks[0].passed
    assert "KeyError" in checks[0].detail


# -- interventions: a planted bug at every level each one has ------------------------------


class ZLossOnlyInGrads(qkmlx.train.Trainer):
    """The z term in grads() (what the gradient check sees) but a stale 0 in the step."""

    def _step(self, x, y, lr):
        z, self.z_loss = self.z_loss, 0.0
        try:
            return super()._step(x, y, lr)
        finally:
            self.z_loss = z


class ValLossWithZTerm(qkmlx.train.Trainer):
    """The validation loss reported as the training objective (cross entropy + z term)."""

    def eval_loss(self, x, y):
        return self.grads(x, y)[0]


def without_softcap(trainer, method, *args):
    """trainer.method(*args) with the attention soft cap switched off in every layer."""
    caps = [block.attn.softcap for block in trainer.model.blocks]
    for block in trainer.model.blocks:
        block.attn.softcap = 0.0
    try:
        return method(trainer, *args)
    finally:
        for block, cap in zip(trainer.model.blocks, caps):
            block.attn.softcap = cap


class StepWithoutSoftcap(qkmlx.train.Trainer):
    """Forward and gradients capped, the training step on the uncapped fused kernel."""

    def _step(self, x, y, lr):
        return without_softcap(self, qkmlx.train.Trainer._step, x, y, lr)


class ValLossWithoutSoftcap(qkmlx.train.Trainer):
    """The validation loss on the fused, uncapped kernel: from near-init weights (logits
    ~0.05) it differs by < 1e-6; only the round trip of the stress weights sees it."""

    def eval_loss(self, x, y):
        return without_softcap(self, qkmlx.train.Trainer.eval_loss, x, y)


def torch_z_term_detached(logits):
    """log Z without its gradient: the objective's value is right, its gradient is not."""
    log_z = torch.logsumexp(logits.reshape(-1, logits.shape[-1]).float(), dim=-1).detach()
    return (log_z**2).mean()


def torch_explicit_attention(cap):
    """qktorch's explicit attention with `cap(self, scores)` in place of the soft cap."""

    def explicit(self, x):
        q, k, v = self.heads(x)
        T = x.shape[1]
        scores = (q @ k.transpose(-2, -1)) * self.scale
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        probs = torch.softmax(cap(self, scores).masked_fill(~causal, float("-inf")), dim=-1)
        return self.merge(probs @ v), scores, probs

    return explicit


def cap_without_inner_scale(self, scores):
    return self.softcap * torch.tanh(scores)  # c tanh(s), not c tanh(s / c)


def cap_straight_through(self, scores):
    """The capped value forward, the uncapped gradient backward."""
    capped = self.softcap * torch.tanh(scores / self.softcap)
    return scores + (capped - scores).detach()


def mlx_clip_without_square_root(params, maxima, tau, head_dim):
    """QK-clip scaling W_q and W_k by tau / max each: the logit comes out at tau^2 / max."""
    new, fired, top = qkmlx.optim.clip_qk(params, maxima, tau, head_dim)
    scales = tau / mx.maximum(maxima, tau)
    rows = mx.repeat(scales, head_dim, axis=1)
    for name in new:
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            layer = int(name.split(".")[1])
            new[name] = params[name] * rows[layer][:, None]
    return new, fired, top


# (intervention, level) -> (how to plant the bug, the check that must fail first: its name,
# or with a trailing "/" its level on either weight set)
PLANTED = {
    ("z-loss", "grad"): ([qktorch.model, "z_term", torch_z_term_detached], None, "grad/"),
    ("z-loss", "train"): (None, ZLossOnlyInGrads, "train/loss"),
    ("z-loss", "checkpoint"): (None, ValLossWithZTerm, "checkpoint/torch->mlx"),
    ("attn-softcap", "forward"): (
        [
            qktorch.model.CausalSelfAttention,
            "explicit",
            torch_explicit_attention(cap_without_inner_scale),
        ],
        None,
        "forward/",
    ),
    ("attn-softcap", "grad"): (
        [
            qktorch.model.CausalSelfAttention,
            "explicit",
            torch_explicit_attention(cap_straight_through),
        ],
        None,
        "grad/",
    ),
    # near-uniform attention at init barely moves the loss: the logits after training show it
    ("attn-softcap", "train"): (None, StepWithoutSoftcap, "diag/max_attn_logit"),
    # the loss barely moves in 16 steps; QK-clip's own counts differ from step 4
    ("attn-softcap", "checkpoint"): (None, ValLossWithoutSoftcap, "checkpoint-stress/torch->mlx"),
    ("qk-clip", "train"): (
        [qkmlx.train, "clip_qk", mlx_clip_without_square_root],
        None,
        "train/qk_clip_heads",
    ),
}


def intervention_checks(name, steps=TRAIN["steps"], make=None):
    """crosscheck of smoke with QK-norm off and the intervention at its exercise value."""
    i = INTERVENTIONS[name]
    return checks_for(
        "model.qk_norm=none",
        f"{i.field}={i.exercise!r}",
        *TRAIN["overrides"],
        steps=steps,
        make=make,
    )


def test_every_level_of_every_intervention_has_a_planted_bug():
    levels = {(i.name, level) for i in INTERVENTIONS.values() for level in i.levels}
    assert set(PLANTED) == levels
    assert all(level in LEVELS for _, level in levels)


@pytest.mark.slow
@pytest.mark.parametrize("name", [i.name for i in INTERVENTIONS.values() if i.levels])
def test_each_intervention_passes_on_the_real_trainers_and_acts(name):
    checks = intervention_checks(name)
    assert all(c.passed for c in checks), [c.to_dict() for c in checks if not c.passed]
    names = {c.name for c in checks}
    assert {
        "forward/stress",
        "grad/stress",
        "train/loss",
        "checkpoint/mlx->torch",
        "checkpoint-stress/mlx->torch",
    } <= names
    if name == "qk-clip":  # it fired, on the same steps on both sides
        heads = next(c for c in checks if c.name == "train/qk_clip_heads")
        assert "nonzero on torch 0 " not in heads.detail and heads.abs_err == 0


@pytest.mark.slow
@pytest.mark.parametrize("key", PLANTED, ids=lambda k: "-".join(k))
def test_a_planted_intervention_bug_fails_at_its_level(key, monkeypatch):
    patch, mlx_trainer, expected = PLANTED[key]
    if patch:
        monkeypatch.setattr(*patch)
    checks = intervention_checks(key[0], make=factory(mlx_trainer) if mlx_trainer else None)
    failed = first_failure(checks).name
    assert failed.startswith(expected) if expected.endswith("/") else failed == expected, [
        c.to_dict() for c in checks
    ]


def test_a_sweep_crosschecks_each_intervention_arm_and_exercises_it():
    """z-loss is a train field, yet it makes a config distinct; a sweep's mild values get a
    second target at the exercise value."""
    from crosscheck.configs import sweep_targets
    from sweeps.sweep.spec import parse_spec

    spec = parse_spec(
        {
            "preset": "smoke",
            "grid": {"lr": [1e-3, 1e-2]},
            "arms": {
                "off": {"set": {"model.qk_norm": "none"}},
                "on": {"set": {"model.qk_norm": "rms"}},
                "off-z": {"set": {"model.qk_norm": "none", "train.z_loss": 1e-4}},
                "off-clip": {"set": {"model.qk_norm": "none", "model.qk_clip": 100.0}},
                "off-warm": {"set": {"model.qk_norm": "none", "train.warmup_steps": 30}},
            },
            "study": {"delta": 0.1, "sensitivity_range": [1e-3, 1e-2], "target_loss": 3.0},
        }
    )
    labels = [t.label for t in sweep_targets(spec)]
    assert labels == [
        "smoke L2 qk_norm=none",
        "smoke L2 qk_norm=rms",
        "smoke L2 qk_norm=none z-loss=0.0001",
        "smoke L2 qk_norm=none qk-clip=100",
        "smoke L2 qk_norm=none qk-clip=100 weight_decay_mode=independent",
        "smoke L2 qk_norm=none z-loss=0.01 (exercise values)",
        "smoke L2 qk_norm=none qk-clip=0.02 (exercise values)",
    ]


def test_a_width_ladders_configs_are_labelled_by_width():
    """cpu-width's configs differ only in width: each label names it where it is not the
    preset's own, so the crosscheck's output tells them apart."""
    from crosscheck.configs import sweep_targets
    from sweeps.sweep.spec import load_spec

    labels = [t.label for t in sweep_targets(load_spec("cpu-width"))]
    assert labels == [
        "cpu L4 qk_norm=none",
        "cpu L4 qk_norm=rms",
        "cpu L4 n_embd=96 qk_norm=none",
        "cpu L4 n_embd=96 qk_norm=rms",
        "cpu L4 n_embd=128 qk_norm=none",
        "cpu L4 n_embd=128 qk_norm=rms",
        "cpu L4 n_embd=128 qk_norm=rms weight_decay_mode=coupled",
    ]


# -- the command ----------------------------------------------------------------------------


def invoke(*args):
    sets = [a for s in SMALL_DATA for a in ("--set", s)]
    return CliRunner().invoke(cli, [*args, *sets])


@pytest.mark.slow
def test_the_smoke_preset_passes_end_to_end(tmp_path):
    out = tmp_path / "cc.json"
    result = invoke("--preset", "smoke", "--steps", "20", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "FAIL" not in result.output and "qk_norm=none" in result.output
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "pass"
    assert [
        (c["config"]["model"]["qk_norm"], c["config"]["train"]["weight_decay_mode"])
        for c in doc["configs"]
    ] == [("none", "coupled"), ("rms", "coupled"), ("rms", "independent")]  # both decay modes
    names = {c["check"] for c in doc["configs"][1]["checks"]}
    assert {
        "forward/init",
        "forward/stress",
        "grad/stress",
        "train/loss",
        "diag/max_attn_logit",
        "checkpoint/mlx->torch",
        "resume/torch->mlx",
    } <= names
    assert doc["provenance"]["versions"]["torch"]
    # numbers, not prose: each tolerance's reason stays in crosscheck/tolerances.py
    assert doc["tolerances"]["forward"] == {"max_rel_err": TOLERANCES["forward"].rel}
    assert doc["numerics"] == {"dtypes": ["float32"], "tf32": False}


def test_the_interventions_option_checks_each_at_its_exercise_value(tmp_path):
    out = tmp_path / "cc.json"
    result = invoke("--preset", "smoke", "--interventions", "--steps", "0", "--out", str(out))
    assert result.exit_code == 0, result.output
    labels = [c["label"] for c in json.loads(out.read_text())["configs"]]
    assert labels == [
        "smoke L2 qk_norm=none",
        "smoke L2 qk_norm=rms",
        "smoke L2 qk_norm=none z-loss=0.01",
        "smoke L2 qk_norm=none attn-softcap=0.1",
        "smoke L2 qk_norm=none qk-clip=0.02",
        "smoke L2 qk_norm=none qk-clip=0.02 weight_decay_mode=independent",
    ]
    bad = invoke("--sweep", "smoke", "--interventions")
    assert bad.exit_code == 2 and "--interventions goes with --preset" in bad.output


def test_an_injected_failure_exits_1(monkeypatch):
    monkeypatch.setattr(qktorch.model.MLP, "forward", torch_tanh_gelu)
    result = invoke("--preset", "smoke", "--steps", "0", "--qk-norm", "none")
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output and "crosscheck: FAIL" in result.output


def test_a_sweep_writes_crosscheck_json_for_each_distinct_model_config(tmp_path):
    spec = tmp_path / "mini.toml"
    spec.write_text(
        'preset = "smoke"\n[grid]\nqk_norm = ["none", "rms"]\nlr = [1e-3, 1e-2]\n'
        "n_layer = [1, 2]\nseed = [0, 1, 2]\n[set]\ntrain.warmup_steps = 5\n"
        "[study]\ndelta = 0.1\nsensitivity_range = [1e-3, 1e-2]\ntarget_loss = 3.0\n"
    )
    result = invoke("--sweep", str(spec), "--runs-dir", str(tmp_path / "runs"), "--steps", "0")
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "runs" / "mini" / "crosscheck.json").read_text())
    assert doc["verdict"] == "pass" and doc["sweep"]["name"] == "mini"
    models = [
        (
            c["config"]["model"]["n_layer"],
            c["config"]["model"]["qk_norm"],
            c["config"]["train"]["weight_decay_mode"],
        )
        for c in doc["configs"]
    ]
    assert sorted(models) == [
        (1, "none", "coupled"),
        (1, "rms", "coupled"),
        (2, "none", "coupled"),
        (2, "rms", "coupled"),
        (2, "rms", "independent"),
    ]
    assert all(c["config"]["train"]["warmup_steps"] == 5 for c in doc["configs"])


def test_the_device_options_reach_each_trainer_and_the_document(tmp_path, monkeypatch):
    # No GPU here: accept any device, record what each backend was asked for, train on the CPU.
    import crosscheck.checks
    import crosscheck.fused
    import sweeps.run.backends

    asked, asked_fused = set(), set()
    real, real_fused = crosscheck.checks.trainer_factory, crosscheck.fused.fused_factory

    def recording(backend, device, **options):
        asked.add((backend, device))
        return real(backend, "cpu", **options)

    def recording_fused(backend, device, **options):
        asked_fused.add((backend, device))
        return real_fused(backend, "cpu", **options)

    monkeypatch.setattr(sweeps.run.backends, "check_device", lambda backend, device: None)
    monkeypatch.setattr(crosscheck.checks, "trainer_factory", recording)
    monkeypatch.setattr(crosscheck.fused, "fused_factory", recording_fused)
    out = tmp_path / "cc.json"
    args = ["--preset", "smoke", "--steps", "2", "--qk-norm", "rms", "--out", str(out)]
    result = invoke(*args, "--torch-device", "cuda", "--mlx-device", "gpu", "--verbose")
    assert result.exit_code == 0, result.output
    assert asked == asked_fused == {("torch", "cuda"), ("mlx", "gpu")}
    assert "fused/train_loss" in result.output  # the fused step is checked by default
    assert result.output.rstrip().endswith("(qktorch on cuda, qkmlx on gpu)")
    doc = json.loads(out.read_text())
    assert doc["devices"] == {"torch": "cuda", "mlx": "gpu"}
    assert doc["provenance"]["device"] == "qktorch on cuda, qkmlx on gpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_a_gpu_this_machine_lacks_is_bad_input_before_any_check():
    result = invoke("--preset", "smoke", "--torch-device", "cuda")
    assert result.exit_code == 2
    assert "--torch-device cuda: not available here; use --torch-device cpu" in result.output
    assert "forward" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["--preset", "nope"],
        [],
        ["--sweep", "no-such-spec"],
        ["--preset", "smoke", "--mlx-device", "tpu"],
        ["--preset", "smoke", "--torch-device", "auto"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(args):
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.output.strip().startswith("Error:") and len(result.output.splitlines()) == 1


def test_a_passing_crosscheck_prints_one_line_per_config_unless_verbose():
    """Issue 58: the main command printed about 95 rows; by default a config that passes is its
    heading and one result line, and --verbose prints every row."""
    args = ["--preset", "smoke", "--steps", "2", "--qk-norm", "rms", "--fused", "0"]
    quiet, loud = invoke(*args), invoke(*args, "--verbose")
    assert quiet.exit_code == 0 and loud.exit_code == 0, quiet.output + loud.output
    assert "-> pass, " in quiet.output and "train/loss" not in quiet.output
    assert "train/loss" in loud.output and "max abs err" not in quiet.output
    assert len(quiet.output.splitlines()) < len(loud.output.splitlines()) / 3


# -- bfloat16: checked in the precision a sweep trains in ------------------------------------
def test_bfloat16_is_checked_in_bfloat16_with_its_own_tolerances():
    """`--set train.dtype=bfloat16` checks bfloat16 (before v14 crosscheck forced float32 and
    passed checks that never ran bfloat16): every check judged by the bfloat16 table, the
    precision sites as declared, and the trainers agree within it."""
    from crosscheck.tolerances import BFLOAT16_TOLERANCES

    checks = checks_for("train.dtype=bfloat16", steps=8)
    assert {c.dtype for c in checks} == {"bfloat16"}
    assert all(c.tolerance == BFLOAT16_TOLERANCES[c.kind].rel for c in checks)
    assert [c.name for c in checks][0] == "precision"
    assert all(c.passed for c in checks), [(c.name, c.rel_err) for c in checks if not c.passed]
    forward = next(c for c in checks if c.name == "forward/init")
    assert 0 < forward.rel_err  # really bfloat16: float32 agrees to ~1e-7


def test_a_residual_stream_in_bfloat16_fails_the_precision_check(monkeypatch):
    """qkmlx's pre-v14 bfloat16 path (every weight cast, so the residual stream bfloat16):
    within bfloat16's rounding of torch's, so only the precision check sees it."""
    embed = qkmlx.model.GPT.embed
    monkeypatch.setattr(
        qkmlx.model.GPT, "embed", lambda self, idx: embed(self, idx).astype(self.dtype)
    )
    checks = checks_for("train.dtype=bfloat16")
    failed = [c.name for c in checks if not c.passed]
    assert failed == ["precision"], failed
    assert "mlx embedding bfloat16" in checks[0].detail


def test_a_bfloat16_sweep_is_checked_in_bfloat16_and_in_float32():
    from crosscheck.configs import sweep_targets
    from sweeps.sweep.spec import load_spec

    targets = sweep_targets(load_spec("cpu-bf16-depth2"))
    dtypes = [t.cfg.train.dtype for t in targets]
    assert "bfloat16" in dtypes and "float32" in dtypes
    assert all(("bfloat16" in t.label) == (t.cfg.train.dtype == "bfloat16") for t in targets)
    float32_only = sweep_targets(load_spec("cpu-depth-matched"))
    assert {t.cfg.train.dtype for t in float32_only} == {"float32"}
