"""The interventions (sweeps/core/interventions.py): off is exactly today's run (same ids, same
numbers), on is the stated arithmetic in both backends, and the loop records QK-clip."""

import hashlib
import json
import math

import numpy as np
import pytest

from sweeps.core.config import RunConfig
from sweeps.core.errors import ConfigError
from sweeps.core.interventions import INTERVENTIONS, active, step_metrics
from tests.conftest import BACKENDS, make_trainer, smoke_config, train_steps

NEW = [i for i in INTERVENTIONS.values() if i.new_field]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def random_tokens(n=4096, seed=0):
    return np.random.default_rng(seed).integers(0, 256, n).astype(np.int32)


# -- off is today's run ------------------------------------------------------------------------


def test_off_fields_are_left_out_of_the_config_dict_and_so_out_of_every_run_id():
    cfg = RunConfig()
    d = cfg.to_dict()
    for i in NEW:
        section, name = i.field.split(".")
        assert name not in d[section]
        assert getattr(getattr(cfg, section), name) == 0  # off is the default
    # recorded before the interventions existed
    assert cfg.run_id == "torch-qknone-L2-lr0.003-s0-c410ce5801"
    tiny = RunConfig.from_json(RunConfig().to_json())
    assert tiny == cfg and RunConfig.from_dict(d) == cfg


@pytest.mark.parametrize("intervention", NEW, ids=lambda i: i.name)
def test_an_intervention_on_is_in_the_dict_the_hash_and_a_round_trip(intervention):
    on = RunConfig().with_overrides([f"{intervention.field}=0.5"])
    section, name = intervention.field.split(".")
    assert on.to_dict()[section][name] == 0.5
    assert on.config_hash() != RunConfig().config_hash()
    assert RunConfig.from_json(on.to_json()) == on
    assert [i.name for i in active(on)] == [intervention.name]


def test_every_spec_hashes_its_runs_as_before():
    """Without interventions, and with the evaluation fields added later at their defaults
    (sweeps.core.config.NEW_DEFAULTS), a config's hash is the sha256 of the old dict (every
    field but the new ones), for every run every spec plans. The presets that set an early
    evaluation cadence or cap the final evaluation (cpu, tiny, core) plan new runs."""
    import dataclasses

    from sweeps.core.config import NEW_DEFAULTS
    from sweeps.sweep.spec import known_specs, load_spec

    def new_value(cfg, key):
        section, name = key.split(".")
        return getattr(getattr(cfg, section), name)

    checked = changed = 0
    for name in known_specs():
        for cfg in load_spec(name).configs("torch"):
            if active(cfg):
                continue
            old = dataclasses.asdict(cfg)
            at_default = [k for k, v in NEW_DEFAULTS.items() if new_value(cfg, k) == v]
            changed += len(at_default) < len(NEW_DEFAULTS)
            for key in [i.field for i in NEW] + at_default:
                section, field = key.split(".")
                del old[section][field]
            digest = hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:10]
            assert cfg.config_hash() == digest, cfg.run_id
            checked += 1
    # every preset now sets an evaluation field (smoke and tiny cap the final evaluation, cpu,
    # tiny and core evaluate early): their runs get new ids, the same with or without the
    # interventions' fields
    assert checked and changed


def fingerprint(backend, *overrides) -> dict:
    """4 steps at LR 1e-2 on random tokens, then the params, an eval loss and the logits."""
    cfg = smoke_config(backend, *overrides)
    trainer = make_trainer(backend, cfg)
    tokens = random_tokens()
    x = tokens[: 4 * 32].reshape(4, 32)
    steps = train_steps(trainer, tokens, 1e-2, steps=4)
    params = trainer.get_params()
    h = hashlib.sha256()
    for k in sorted(params):
        h.update(k.encode())
        h.update(np.ascontiguousarray(params[k]).tobytes())
    return {
        "steps": [[float(a).hex(), float(b).hex()] for a, b in steps],
        "params": h.hexdigest()[:16],
        "eval": float(trainer.eval_loss(x, np.roll(x, -1, 1))).hex(),
        "logits": hashlib.sha256(trainer.logits(x).tobytes()).hexdigest()[:16],
    }


def digest(d: dict) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


# sha256 of fingerprint() computed with the code before the interventions existed (commit
# b1e7c83), per machine kind and versions: bit for bit what the off path gives now. CPU bits
# depend on the processor kind (docs/DESIGN.md, Devices and reproducibility), so each record
# names its CPU, torch and mlx versions and, where it was recorded, the CPU's vector extensions
# (sweeps.platform.provenance.host; None: any). The Intel record was computed twice on its
# machine, with b1e7c83's code and with today's, and they agreed; mlx's reference BLAS gave
# the AMD machine's bits there too. Both without OpenBLAS preloaded (LD_PRELOAD), as pytest
# runs: preloaded, it changes torch's bits as well as mlx's.
RECORDED = [
    (  # an AMD EPYC VM without AVX-512 (cpu family 25 model 1): torch picks other kernels
        ("AMD EPYC", "2.13.0+cpu", "0.32.4", ["avx", "avx2", "fma"]),
        {
            ("torch", "none"): "97da800eb8b577aa",
            ("torch", "rms"): "b1959464eec8fbed",
            ("mlx", "none"): "099780ff870da232",
            ("mlx", "rms"): "9ec2a1f64672803f",
        },
    ),
    (  # the AMD EPYC these were first recorded on (any other AMD EPYC falls back to it)
        ("AMD EPYC", "2.13.0+cpu", "0.32.4", None),
        {
            ("torch", "none"): "ec614d5575040716",
            ("torch", "rms"): "476a36d7e71a254d",
            ("mlx", "none"): "099780ff870da232",
            ("mlx", "rms"): "9ec2a1f64672803f",
        },
    ),
    (
        (
            "Intel(R) Xeon(R) Processor",
            "2.13.0+cpu",
            "0.32.4",
            ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile"],
        ),
        {
            ("torch", "none"): "90f8d1ead970f081",
            ("torch", "rms"): "4d1825d36bb88901",
            ("mlx", "none"): "099780ff870da232",
            ("mlx", "rms"): "9ec2a1f64672803f",
        },
    ),
]


def recorded_here() -> dict | None:
    """The record of this machine kind and these versions, or None."""
    import mlx.core as mx
    import torch

    from sweeps.platform.provenance import host

    here = host()
    if here.get("preload"):  # OpenBLAS for mlx, or QKNORM_MKL_PATH's library: other kernels
        return None
    for (cpu, torch_version, mlx_version, simd), hashes in RECORDED:
        if (here["cpu"], torch.__version__, mx.__version__) == (cpu, torch_version, mlx_version):
            if simd is None or here["simd"] == simd:
                return hashes
    return None


@pytest.mark.parametrize("backend,qk_norm", list(RECORDED[0][1]))
def test_off_is_bit_identical_to_the_code_before_interventions(backend, qk_norm):
    hashes = recorded_here()
    if hashes is None:
        pytest.skip(
            f"no fingerprint recorded for this machine kind ({[r[0] for r in RECORDED]}) "
            "without a preloaded library"
        )
    assert digest(fingerprint(backend, f"model.qk_norm={qk_norm}")) == hashes[(backend, qk_norm)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_zero_value_takes_the_plain_path(backend):
    """Explicit zeros are the defaults: the same config, the same numbers."""
    zeros = [f"{i.field}=0" for i in NEW]
    assert smoke_config(backend, *zeros) == smoke_config(backend)
    assert not make_trainer(backend, smoke_config(backend, *zeros)).intervened


# -- on is the stated arithmetic ---------------------------------------------------------------


def logsumexp(z):
    m = z.max(-1, keepdims=True)
    return (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[..., 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_z_loss_adds_its_coefficient_times_mean_log_z_squared(backend):
    cfg = smoke_config(backend, "train.z_loss=0.01")
    trainer = make_trainer(backend, cfg)
    tokens = random_tokens()
    x, y = tokens[:128].reshape(4, 32), tokens[1:129].reshape(4, 32)
    objective, _ = trainer.grads(x, y)
    cross_entropy = trainer.eval_loss(x, y)  # the val loss stays the plain cross entropy
    log_z = logsumexp(trainer.logits(x).astype(np.float64))
    assert objective - cross_entropy == pytest.approx(0.01 * (log_z**2).mean(), rel=1e-4)
    plain = make_trainer(backend, smoke_config(backend))
    assert plain.eval_loss(x, y) == pytest.approx(cross_entropy, rel=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_soft_cap_bounds_the_logits_softmax_sees(backend):
    """The probe keeps the raw logits; the weights are the softmax of c tanh(raw / c)."""
    cfg = smoke_config(backend, "model.attn_softcap=0.5")
    trainer = make_trainer(backend, cfg)
    params = trainer.get_params()
    for name in params:  # logits of several units, so the cap bites
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            params[name] = params[name] * 30
    trainer.set_params(params)
    x = random_tokens(128).reshape(4, 32)
    probe = trainer.probe(x)
    scores = probe.layers[0].scores.astype(np.float64)
    assert np.abs(np.tril(scores)).max() > 2  # raw, not capped
    capped = 0.5 * np.tanh(scores / 0.5)
    causal = np.tril(np.ones(scores.shape[-2:], dtype=bool))
    e = np.where(causal, np.exp(capped - capped.max(-1, keepdims=True)), 0)
    np.testing.assert_allclose(probe.layers[0].probs, e / e.sum(-1, keepdims=True), atol=1e-5)
    # training and evaluation use the capped path too (the fused kernel cannot cap)
    np.testing.assert_allclose(trainer.logits(x), probe.logits, atol=2e-5, rtol=1e-5)
    uncapped = make_trainer(backend, smoke_config(backend))
    uncapped.set_params(params)
    assert np.abs(uncapped.logits(x) - trainer.logits(x)).max() > 1e-3


@pytest.mark.parametrize("backend", BACKENDS)
def test_qk_clip_brings_a_head_over_tau_back_to_tau(backend):
    """After one step at a negligible LR, each layer-0 head that exceeded tau has its max
    logit on the same batch at tau (W_q and W_k each scaled by sqrt(tau / max)); the others
    are untouched. The step reports how many heads it clipped and the largest max."""
    cfg = smoke_config(backend, "model.qk_clip=0.025")
    trainer = make_trainer(backend, cfg)
    tokens = random_tokens()
    T = cfg.model.block_size
    starts = np.array([0, 100, 200, 300])
    x = np.stack([tokens[s : s + T] for s in starts])
    before = trainer.probe(x).layers[0].scores
    causal = np.tril(np.ones((T, T), dtype=bool))
    head_max = np.where(causal, before, -np.inf).max(axis=(0, 2, 3))
    assert (head_max > 0.025).any() and (head_max < 0.025).any(), head_max  # both kinds
    trainer.set_train_tokens(tokens)
    loss, grad_norm, heads, top = trainer.read([trainer.train_step(starts, 1e-12)])[0]
    after = np.where(causal, trainer.probe(x).layers[0].scores, -np.inf).max(axis=(0, 2, 3))
    expected = np.minimum(head_max, 0.025)
    np.testing.assert_allclose(after, expected, rtol=1e-4)
    assert heads >= (head_max > 0.025).sum() and top >= head_max.max() * (1 - 1e-6)


def test_qk_clip_with_qk_norm_is_refused():
    with pytest.raises(ConfigError, match="model.qk_clip .* use it with model.qk_norm=none"):
        RunConfig().with_overrides(["model.qk_norm=rms", "model.qk_clip=10"])
    with pytest.raises(ConfigError, match="model.attn_softcap must be >= 0"):
        RunConfig().with_overrides(["model.attn_softcap=-1"])


# -- the loop records it -----------------------------------------------------------------------


def test_the_loop_writes_qk_clip_per_step_and_its_tally_in_the_summary(tmp_path):
    from sweeps.run.backends import trainer_factory
    from sweeps.run.loop import train_run
    from sweeps.run.rundir import RunDir

    cfg = smoke_config(
        "torch",
        "model.qk_clip=0.05",
        "train.max_steps=20",
        "train.warmup_steps=2",
        "train.eval_interval=10",
        "train.checkpoint_interval=10",
        "train.log_interval=5",
    )
    assert step_metrics(cfg) == ("qk_clip_heads", "qk_clip_max_logit")
    run = tmp_path / cfg.run_id
    train_run(cfg, run, trainer_factory("torch", "cpu"), stop_after=10)  # resumed below
    summary = train_run(cfg, run, trainer_factory("torch", "cpu"))
    rows = [r for r in RunDir(run).read_metrics() if r["step"] > 0]
    assert len(rows) == 20 and all("qk_clip_heads" in r for r in rows)
    tally = summary["qk_clip"]
    assert tally["heads_fired"] == sum(r["qk_clip_heads"] for r in rows) > 0
    assert tally["steps_fired"] == sum(r["qk_clip_heads"] > 0 for r in rows)
    assert tally["max_logit"] == pytest.approx(max(r["qk_clip_max_logit"] for r in rows))

    plain = smoke_config("torch", "train.max_steps=10", "train.warmup_steps=2")
    summary = train_run(plain, tmp_path / plain.run_id, trainer_factory("torch", "cpu"))
    assert "qk_clip" not in summary
    assert not any("qk_clip_heads" in r for r in RunDir(tmp_path / plain.run_id).read_metrics())


def test_warmup_is_an_arm_with_its_own_run_ids():
    from sweeps.core.schedule import lr_at
    from sweeps.sweep.spec import parse_spec

    spec = parse_spec(
        {
            "preset": "smoke",
            "grid": {"lr": [1e-3, 1e-2]},
            "arms": {
                "off": {"set": {"model.qk_norm": "none"}},
                "off-long-warmup": {"set": {"model.qk_norm": "none", "train.warmup_steps": 30}},
            },
            "study": {
                "primary": "off-long-warmup",
                "delta": 0.1,
                "sensitivity_range": [1e-3, 1e-2],
                "target_loss": 3.0,
            },
        }
    )
    cfgs = spec.configs("torch")
    by_arm = {arm: [c for c in cfgs if c.arm == arm] for arm in ("off", "off-long-warmup")}
    assert {c.train.warmup_steps for c in by_arm["off-long-warmup"]} == {30}
    assert {c.train.warmup_steps for c in by_arm["off"]} == {10}
    ids = [c.run_id for c in cfgs]
    assert len(set(ids)) == len(ids)
    assert all("-off-long-warmup-" in c.run_id for c in by_arm["off-long-warmup"])
    long = by_arm["off-long-warmup"][0].train
    assert lr_at(9, long) < lr_at(9, by_arm["off"][0].train) and not math.isclose(
        lr_at(9, long), long.lr
    )


# -- the report's interventions table ----------------------------------------------------------


def intervention_outcome(arm, n_layer, lr, seed):
    """off as in the figures fixture (0.4 nats worse at 3e-2, diverged above); the
    intervention arm 0.2 nats worse than on at 3e-2 and diverged at 0.1; on flat."""
    import figures_fakes as ff

    base = ff.ON_LOSS[lr] + 0.01 * seed
    if arm == "on" or lr < 3e-2:
        return "ok", base
    if lr == 3e-2:
        return "ok", base + (0.4 + 0.02 * seed if arm == "off" else 0.2 + 0.01 * seed)
    return "diverged", None


@pytest.mark.slow
def test_the_interventions_table_compares_each_arm_with_off_and_on(tmp_path):
    import figures_fakes as ff

    from figures.report.assemble import make_report
    from figures.report.interventions import section
    from figures.words import numbers
    from figures.words.view import analyze
    from sweeps.analysis import model as m
    from sweeps.analysis.adapter import read
    from sweeps.analysis.results import load_curves, load_results

    arm = "off-softcap"  # the fixture's losses are planted by arm, not by the soft cap
    root = tmp_path / "iv"
    ff.write_study(
        root,
        depths=[2],
        arms=("off", "on", arm),
        outcome=intervention_outcome,
        study={"comparisons": [["off", arm], [arm, "on"]]},
    )
    results = load_results(root)
    result = analyze(results, load_curves(results.runs))
    text = section(ff.typed(result))
    rows = {
        line.split(" | ")[1]: line.split(" | ")
        for line in text.splitlines()
        if line.startswith("| 2 |")
    }
    assert list(rows) == ["off", "on", arm]
    d = result["depths"]["2"]
    # against off: the arm is needed from just above 1e-2 (0.2 nats better at 3e-2)
    vs_off = d["comparisons"][f"off vs {arm}"]["threshold"]
    assert vs_off["kind"] == "" and 1e-2 < vs_off["value"] <= 3e-2
    assert rows[arm][5].startswith(numbers.bracket(read(m.GridPoint, vs_off)))
    on = read(m.GridPoint, d["comparisons"]["off vs on"]["threshold"])
    assert rows["on"][5].startswith(numbers.bracket(on))
    assert rows["off"][5] == "-" and rows["on"][6].strip(" |") == "-"
    # against on: on still beats it from 3e-2 up, most at 0.1 where the arm diverged
    assert rows[arm][6].endswith("at 0.1 |") and "largest 3." in rows[arm][6]
    assert rows[arm][2] == numbers.median_range(read(m.CriticalLRs, d["arms"][arm]["eta_crit"]))
    assert rows[arm][4] == "2.010 (0.01)"  # the best seed-mean loss and its LR
    report = make_report(root, tmp_path / "report", formats=("vl.json",)).read_text()
    assert text in report
    plain = tmp_path / "plain"  # no intervention arm: no section
    ff.write_study(plain, depths=[2])
    plain_results = load_results(plain)
    assert section(ff.typed(analyze(plain_results, load_curves(plain_results.runs)))) == ""
