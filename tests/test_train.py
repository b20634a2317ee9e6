"""Both backends through the shared loop: metrics, divergence, resume, determinism, CLI."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.run.loop import train_run
from sweeps.run.rundir import RunDir
from tests.conftest import BACKENDS, SMALL_DATA, make_trainer, smoke_config


def run(backend, tmp_path, *overrides, name="run", **kwargs):
    cfg = smoke_config(backend, *overrides)
    summary = train_run(cfg, tmp_path / name, lambda c: make_trainer(backend, c), **kwargs)
    return summary, RunDir(tmp_path / name)


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
    assert json.loads(run_dir.config_path.read_text())["provenance"]["device"] == "cpu"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_divergent_learning_rate_is_recorded_as_diverged(backend, tmp_path):
    summary, run_dir = run(backend, tmp_path, "train.lr=30", "train.grad_clip=0")
    assert summary["status"] == "diverged"
    assert 0 < summary["diverged_at"] < 60
    last = run_dir.read_metrics()[-1]
    assert last["step"] == summary["diverged_at"]
    loss = last["train_loss"]
    assert loss is None or loss > summary["init_loss"] + 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_after_an_interruption_is_bit_identical(backend, tmp_path):
    full, full_dir = run(backend, tmp_path, "train.lr=1e-2", name="full")
    # stop after 45 steps: the checkpoint is at 30, steps 31-45 are lost and recomputed
    partial, part_dir = run(backend, tmp_path, "train.lr=1e-2", name="part", stop_after=45)
    assert partial["status"] == "interrupted" and not part_dir.is_finished
    assert part_dir.latest_checkpoint().name == "step_00000030"
    resumed, _ = run(backend, tmp_path, "train.lr=1e-2", name="part")
    strip = lambda rows: [{k: v for k, v in r.items()} for r in rows]  # noqa: E731
    assert strip(part_dir.read_metrics()) == strip(full_dir.read_metrics())
    assert resumed["final_val_loss"] == full["final_val_loss"]


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
