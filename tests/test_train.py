"""Both backends through the shared loop: metrics, divergence, resume, determinism, CLI."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.data import load_tokens
from sweeps.run.loop import train_run
from sweeps.run.rundir import RunDir
from tests.conftest import BACKENDS, SMALL_DATA, make_trainer, smoke_config


def run(backend, tmp_path, *overrides, name="run", **kwargs):
    cfg = smoke_config(backend, *overrides)
    summary = train_run(cfg, tmp_path / name, lambda c: make_trainer(backend, c), **kwargs)
    return summary, RunDir(tmp_path / name)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_learns_and_writes_the_run_directory(backend, tmp_path):
    summary, run_dir = run(backend, tmp_path, "train.lr=1e-2")
    assert summary["status"] == "ok"
    assert summary["final_val_loss"] < summary["init_loss"] - 1.0  # bytes: ln 256 = 5.5 at init
    rows = run_dir.read_metrics()
    assert [r["step"] for r in rows] == list(range(0, 61))
    evals = [r for r in rows if "val_loss" in r]
    assert [r["step"] for r in evals] == [0, 20, 40, 60]
    n_layer = run_dir.read_config().model.n_layer
    for name in (
        "attn_entropy",
        "attn_entropy_min",
        "max_attn_logit",
        "resid_kurtosis",
        "resid_max_over_median",
    ):
        assert len(evals[-1][name]) == n_layer
    assert all(e["attn_entropy_min"][0] <= e["attn_entropy"][0] for e in evals)
    assert summary["tokens_seen"] == 60 * 8 * 32 and summary["tokens_per_s"] > 0
    # the periodic val loss on the fixed batches; the final one is on the validation split
    assert summary["last_val_loss"] == evals[-1]["val_loss"]
    assert summary["final_val_tokens"] > 2 * 8 * 32  # more than the 2 fixed batches
    assert 0 < summary["final_eval_s"] < summary["wall_time_s"]
    made = json.loads(run_dir.config_path.read_text())["provenance"]
    assert made["device"] == "cpu" and made["host"]["cpu"] and made["host"]["cpus"] >= 1


SHORT = ("train.lr=1e-2", "train.max_steps=12", "train.warmup_steps=2", "train.eval_interval=6")


def hand_loss(backend, run_dir, starts) -> float:
    """The mean cross entropy per token of the run's final weights over the windows at
    starts (block_size inputs, the next tokens as targets), one window at a time in float64."""
    cfg = run_dir.read_config()
    trainer = make_trainer(backend, cfg)
    trainer.set_params(run_dir.load_checkpoint()[0])
    val, T = load_tokens(cfg.data).val.astype(np.int64), cfg.model.block_size
    losses = []
    for s in starts:
        logits = trainer.logits(val[None, s : s + T]).astype(np.float64)[0]
        top = logits.max(-1, keepdims=True)
        log_z = np.log(np.exp(logits - top).sum(-1)) + top[:, 0]
        losses += list(log_z - logits[np.arange(T), val[s + 1 : s + T + 1]])
    return float(np.mean(losses))


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_final_val_loss_is_the_mean_over_the_whole_validation_split(backend, tmp_path):
    # batch 5: the split's windows do not fill the last batch, which weighs its tokens only
    summary, run_dir = run(
        backend,
        tmp_path,
        *SHORT,
        "train.batch_size=5",
        "train.diag_sequences=4",
        "train.final_eval_tokens=0",
    )
    val = load_tokens(run_dir.read_config().data).val
    windows = (len(val) - 1) // 32  # every token but the first predicted once, in 32s
    assert windows % 5 and summary["final_val_tokens"] == windows * 32
    assert summary["final_val_loss"] == pytest.approx(
        hand_loss(backend, run_dir, range(0, windows * 32, 32)), rel=1e-5
    )
    assert summary["last_val_loss"] == run_dir.read_metrics()[-1]["val_loss"]
    assert summary["final_val_loss"] != summary["last_val_loss"]


def test_final_eval_tokens_caps_the_final_evaluation_at_whole_windows(tmp_path):
    summary, run_dir = run("torch", tmp_path, *SHORT, "train.final_eval_tokens=100")
    assert summary["final_val_tokens"] == 96  # 3 windows of 32 within the first 100 tokens
    assert summary["final_val_loss"] == pytest.approx(
        hand_loss("torch", run_dir, [0, 32, 64]), rel=1e-5
    )
    # a cap below one window still evaluates one (a preset's cap under a larger block_size)
    from sweeps.run.loop import eval_window_starts

    assert eval_window_starts(10_000, 32, 20).tolist() == [0]
    assert len(eval_window_starts(10_000, 32, 0)) == 9999 // 32


def test_early_evaluations_write_rows_and_leave_training_unchanged(tmp_path):
    early = ("train.early_eval_interval=2", "train.early_eval_until=0.25")
    settings = ("train.max_steps=24", "train.warmup_steps=2", "train.eval_interval=12")
    _, dense = run("torch", tmp_path, *settings, *early, name="dense")
    _, plain = run("torch", tmp_path, *settings, name="plain")
    evals = [r for r in dense.read_metrics() if "val_loss" in r]
    assert [r["step"] for r in evals] == [0, 2, 4, 6, 12, 24]
    assert all(len(r["max_attn_logit"]) == 2 and "attn_entropy" in r for r in evals)
    assert [r["step"] for r in plain.read_metrics() if "val_loss" in r] == [0, 12, 24]

    def train_losses(run_dir):
        return [(r["train_loss"], r["grad_norm"]) for r in run_dir.read_metrics()[1:]]

    assert train_losses(dense) == train_losses(plain)  # bit for bit
    assert dense.read_summary()["final_val_loss"] == plain.read_summary()["final_val_loss"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_divergent_learning_rate_is_recorded_as_diverged(backend, tmp_path):
    summary, run_dir = run(backend, tmp_path, "train.lr=30", "train.grad_clip=0")
    assert summary["status"] == "diverged"
    assert 0 < summary["diverged_at"] < 60
    assert summary["final_val_loss"] is None and summary["final_val_tokens"] is None  # NaN: null
    last = run_dir.read_metrics()[-1]
    assert last["step"] == summary["diverged_at"]
    loss = last["train_loss"]
    assert loss is None or loss > summary["init_loss"] + 1.0


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_after_an_interruption_is_bit_identical(backend, tmp_path):
    full, full_dir = run(backend, tmp_path, "train.lr=1e-2", name="full")
    # stop after 45 steps: the checkpoint is at 30, steps 31-45 are lost and recomputed
    partial, part_dir = run(backend, tmp_path, "train.lr=1e-2", name="part", stop_after=45)
    assert partial["status"] == "interrupted" and not part_dir.is_finished
    assert part_dir.latest_checkpoint().name == "step_00000030"
    # the rows past the checkpoint reached disk as they were read (a live `status --watch`),
    # and the resume drops them before it recomputes those steps
    assert part_dir.read_metrics()[-1]["step"] > 30
    resumed, _ = run(backend, tmp_path, "train.lr=1e-2", name="part")
    strip = lambda rows: [{k: v for k, v in r.items()} for r in rows]  # noqa: E731
    assert strip(part_dir.read_metrics()) == strip(full_dir.read_metrics())
    assert resumed["final_val_loss"] == full["final_val_loss"]
    # the config says a second process went on from the checkpoint, with its own host
    made = json.loads(part_dir.config_path.read_text())["provenance"]
    (went_on,) = made["continued"]
    assert went_on["from_step"] == 30 and went_on["host"]["cpu"] and went_on["device"] == "cpu"
    assert "continued" not in json.loads(full_dir.config_path.read_text())["provenance"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_same_seed_same_losses_other_seed_other_losses(backend, tmp_path):
    losses = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        _, run_dir = run(
            backend,
            tmp_path,
            f"seed={seed}",
            "train.max_steps=15",
            "train.warmup_steps=5",
            name=name,
        )
        losses[name] = [r["train_loss"] for r in run_dir.read_metrics() if "train_loss" in r]
    assert losses["a"] == losses["b"]
    assert not np.allclose(losses["a"], losses["c"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_command_runs_then_skips_a_finished_run(backend, tmp_path):
    cli = make_cli(backend)
    out = tmp_path / "cli-run"
    args = [
        "train",
        "--preset",
        "smoke",
        "--set",
        SMALL_DATA[0],
        "--set",
        "train.max_steps=12",
        "--set",
        "train.warmup_steps=2",
        "--device",
        "cpu",
        "--out",
        str(out),
    ]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert RunDir(out).read_summary()["status"] == "ok"
    assert math.isfinite(RunDir(out).read_summary()["final_val_loss"])
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0 and "already finished" in again.output


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "override,message",
    [
        ("model.n_head=5", "model.n_embd must be divisible by model.n_head (got 16 and 5)"),
        ("train.lr=abc", "train.lr must be float (got 'abc')"),
        ("train.learning_rate=1", "unknown setting 'train.learning_rate'"),
        ("train.final_eval_tokens=-8", "train.final_eval_tokens must be >= 0 (got -8)"),
        ("train.early_eval_until=2", "train.early_eval_until must be in [0, 1]"),
    ],
)
def test_bad_overrides_exit_2_with_one_line(backend, tmp_path, override, message):
    result = CliRunner().invoke(
        make_cli(backend), ["train", "--set", override, "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and message in result.output
    assert not (tmp_path / "x").exists()


def test_a_run_directory_of_another_config_is_refused(tmp_path):
    run("torch", tmp_path, "train.max_steps=12", "train.warmup_steps=2", stop_after=3)
    result = CliRunner().invoke(
        make_cli("torch"),
        ["train", "--set", SMALL_DATA[0], "--set", "train.lr=1e-2", "--out", str(tmp_path / "run")],
    )
    assert result.exit_code == 2 and "holds another run" in result.output


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("heads", [1, 2])
def test_the_logit_ceiling_bounds_every_attention_logit_and_follows_the_gains(backend, heads):
    """qk_logit_ceiling = sqrt(d_head) max|g_q g_k| (docs/STUDY.md section 20): no logit of
    the real model exceeds it, and with one gain coordinate grown it tracks that product."""
    from sweeps.core.diagnostics import diagnostics_row

    cfg = smoke_config(backend, "model.qk_norm=rms", f"model.n_head={heads}")
    trainer = make_trainer(backend, cfg)
    params = trainer.get_params()
    rng = np.random.default_rng(0)
    gains = sorted(k for k in params if k.endswith(("q_norm.weight", "k_norm.weight")))
    assert len(gains) == 2 * cfg.model.n_layer
    for k in gains:  # gains away from 1, one coordinate far out
        g = rng.uniform(0.5, 1.5, np.shape(params[k])).astype(np.float32)
        g[0] = 3.0
        params[k] = g
    trainer.set_params(params)
    x = rng.integers(0, 256, size=(2, cfg.model.block_size))
    row = diagnostics_row(trainer.probe(x))
    d = cfg.model.head_dim
    for layer, (logit, ceiling) in enumerate(zip(row["max_attn_logit"], row["qk_logit_ceiling"])):
        gq = params[f"blocks.{layer}.attn.q_norm.weight"]
        gk = params[f"blocks.{layer}.attn.k_norm.weight"]
        assert ceiling == pytest.approx(math.sqrt(d) * np.abs(gq * gk).max(), rel=1e-6)
        assert ceiling == pytest.approx(9.0 * math.sqrt(d), rel=1e-6)
        assert 0 < logit <= ceiling * (1 + 1e-5)
        assert row["qk_ceiling_use"][layer] == pytest.approx(logit / ceiling, rel=1e-6)
    off = diagnostics_row(make_trainer(backend, smoke_config(backend)).probe(x))
    assert off["qk_logit_ceiling"] == off["qk_ceiling_use"] == [None] * cfg.model.n_layer
