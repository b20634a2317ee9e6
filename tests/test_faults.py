"""Faults of the disk and the environment, each case of the integrity issue reproduced.

What every case must come to: the runs and results either verified or moved aside and
rerun; one line on stderr instead of a traceback, with exit code 2 for bad input, 1 for the
machine (full or read-only disk, unreachable cluster), 130/143 for SIGINT/SIGTERM; nothing
half-written; and the same command, run again once the cause is gone, finishing the work
with the numbers of an undisturbed run.

A full disk is a real tmpfs where the machine lets us mount one (root), and always also an
ENOSPC raised by a patched write; a read-only directory is a tmpfs remounted read-only
(root, where chmod does not stop writes) or a chmod (other users).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.errors import ConfigError, EnvironmentFault
from sweeps.core.params import activation_bytes, check_fits, state_bytes
from sweeps.run import loop
from sweeps.run.backends import Execution
from sweeps.run.loop import train_run
from sweeps.run.rundir import RunDir
from sweeps.sweep import runner as runner_mod
from sweeps.sweep.executors import execute_run, probe_address
from sweeps.sweep.grid import extension_points, grid_additions
from sweeps.sweep.runner import Sweep, run_sweep, settle
from sweeps.sweep.spec import MIN_EXTEND_FACTOR, Extend, load_spec
from sweeps.sweep.sweepdir import SweepDir
from tests.conftest import make_trainer, smoke_config
from tests.test_sweeps import FAST, QKTORCH, final_losses, metrics, write_spec

SETS = [f"{k}={v}" for k, v in FAST.items()]  # the toy run: 12 steps, checkpoints every 4
CLI_SETS = [a for s in SETS for a in ("--set", s)]
RESUME = "run the same command again"


def cli(*args, backend="torch", extra=()):
    return CliRunner().invoke(make_cli(backend, list(extra)), [str(a) for a in args])


def error_line(result, code: int) -> str:
    """The one `Error: ...` line a failing command ends with, after asserting the exit code
    and that no traceback was printed (tqdm's progress may come before it on stderr)."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: "), result.stderr
    return last


def only_line(result, code: int) -> str:
    """error_line, for a command that prints nothing else at all."""
    line = error_line(result, code)
    assert result.output.strip() == line, result.output
    return line


def tree(path: Path) -> dict:
    """Every file below path with its bytes: to show a command changed nothing."""
    return {
        p.relative_to(path): p.read_bytes() for p in sorted(Path(path).rglob("*")) if p.is_file()
    }


def leftovers(path: Path) -> list:
    """Temporary files a writer would leave behind if it were interrupted mid-write."""
    return [
        p for p in Path(path).rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp_")
    ]


# -- shared runs -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clean_sweep(tmp_path_factory):
    """The toy sweep (lr 0.01 ok, lr 1.0 diverges; 2 arms x 2 seeds), undisturbed."""
    tmp = tmp_path_factory.mktemp("clean")
    spec = write_spec(tmp, "faults", [1e-2, 1.0])
    result = cli("sweep", spec, "--runs-dir", tmp / "runs", "--device", "cpu")
    assert result.exit_code == 0, result.output
    return spec, tmp / "runs" / "faults"


def copy_sweep(clean_sweep, where: Path) -> Path:
    """A private copy of the clean sweep's runs, to damage; returns its runs dir."""
    _, sweep_dir = clean_sweep
    shutil.copytree(sweep_dir, where / "faults")
    return where


def run_cfg(*overrides):
    return smoke_config("torch", *SETS, *overrides)


def factory(cfg):
    return make_trainer("torch", cfg)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """One toy run, trained start to finish without interruption."""
    path = tmp_path_factory.mktemp("clean-run") / "run"
    summary = train_run(run_cfg(), path, factory)
    assert summary["status"] == "ok"
    return path, summary


def interrupted_run(path: Path) -> RunDir:
    """The toy run stopped after 10 of its 12 steps: checkpoints at steps 4 and 8."""
    train_run(run_cfg(), path, factory, stop_after=10)
    run = RunDir(path)
    assert [p.name for p in run.checkpoints()] == ["step_00000004", "step_00000008"]
    return run


def assert_same_as_clean(path: Path, clean_run) -> None:
    clean_path, clean_summary = clean_run
    run = RunDir(path)
    assert run.read_metrics() == RunDir(clean_path).read_metrics()
    summary = run.read_summary()
    assert summary["final_val_loss"] == clean_summary["final_val_loss"]
    assert summary["final_val_tokens"] == clean_summary["final_val_tokens"]
    assert summary["metrics"] == clean_summary["metrics"]  # the same rows, byte for byte
    assert run.problem() is None


# == 1. verified artifacts ====================================================================
@pytest.mark.slow
def test_garbage_config_or_cut_metrics_of_a_finished_run_are_moved_aside_and_rerun(
    clean_sweep, tmp_path
):
    spec, clean_dir = clean_sweep
    runs = copy_sweep(clean_sweep, tmp_path)
    ok = sorted(p.parent.name for p in (runs / "faults").glob("*lr0.01*/summary.json"))
    garbled, cut = ok[0], ok[1]
    (runs / "faults" / garbled / "config.json").write_text("{garbage")
    rows = (runs / "faults" / cut / "metrics.jsonl").read_text()
    (runs / "faults" / cut / "metrics.jsonl").write_text(rows[: len(rows) // 2])

    status = cli("status", spec, "--runs-dir", runs)
    assert status.exit_code == 0, status.output
    assert "2 corrupt" in status.output
    assert f"corrupt: {garbled}: " in status.output and "not valid JSON" in status.output
    assert f"corrupt: {cut}: metrics.jsonl changed after the run finished" in status.output
    assert "fix: run `qktorch sweep faults` again" in status.output

    again = cli("sweep", spec, "--runs-dir", runs, "--device", "cpu")
    assert again.exit_code == 0, again.output
    for rid in (garbled, cut):
        assert f"corrupt   {rid}: " in again.output and "queued to run again" in again.output
        assert len(list((runs / "faults" / ".damaged").glob(f"{rid}.*"))) == 1  # kept
    assert "12 runs" in again.output and "done in" in again.output
    assert final_losses(runs / "faults") == final_losses(clean_dir)  # 8 rows, same numbers
    assert metrics(runs / "faults") == metrics(clean_dir)


def test_train_into_the_directory_of_another_run_is_refused_naming_both(tmp_path):
    out = tmp_path / "D"
    first = cli("train", "--preset", "smoke", *CLI_SETS, "--device", "cpu", "--out", out)
    assert first.exit_code == 0, first.output
    before = tree(out)
    other = cli(
        "train",
        "--preset",
        "smoke",
        *CLI_SETS,
        "--set",
        "train.lr=0.01",
        "--device",
        "cpu",
        "--out",
        out,
    )
    line = only_line(other, 2)
    held, wanted = run_cfg().run_id, run_cfg("train.lr=0.01").run_id
    assert f"holds another run ({held}), not {wanted}" in line and "another --out" in line
    assert tree(out) == before


DAMAGE = {
    "random bytes in the newest model": lambda c: _scramble(c[-1] / "model.safetensors"),
    "a cut newest optimizer": lambda c: _cut(c[-1] / "optimizer.safetensors"),
    "a garbled newest state.json": lambda c: (c[-1] / "state.json").write_text("{garbage"),
    "both checkpoints damaged": lambda c: [_scramble(p / "model.safetensors") for p in c],
}


def _scramble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-64:] = np.random.default_rng(0).integers(0, 256, 64, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_checkpoint_is_passed_over_and_the_run_ends_as_a_clean_one(
    damage, tmp_path, clean_run
):
    run = interrupted_run(tmp_path / "run")
    DAMAGE[damage](run.checkpoints())
    resumed = cli("train", "--preset", "smoke", *CLI_SETS, "--device", "cpu", "--out", run.path)
    assert resumed.exit_code == 0, resumed.output
    warnings = [line for line in resumed.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, resumed.stderr
    assert "cannot resume from step_00000008: " in warnings[0]
    if damage == "both checkpoints damaged":
        assert "step_00000004: model.safetensors does not match its checksum" in warnings[0]
        assert warnings[0].endswith("restarting the run from step 0")
    else:
        assert warnings[0].endswith("resuming from step 4")
    assert_same_as_clean(run.path, clean_run)


def test_retry_failed_recovers_a_run_that_failed_on_a_garbled_checkpoint(tmp_path, clean_run):
    run = interrupted_run(tmp_path / "run")
    (run.checkpoints()[-1] / "state.json").write_text("{garbage")
    run.record_failure(run_cfg(), "JSONDecodeError: state.json")  # how it ended before
    args = (str(run.path), run_cfg().to_dict())
    execution = Execution("torch", "cpu", compile=False, tf32=False)
    assert execute_run(*args, execution)["skipped"]  # a plain rerun keeps the failure ...
    retry = dataclasses.replace(execution, retry_failed=True)
    assert execute_run(*args, retry)["status"] == "ok"  # ... --retry-failed not
    assert_same_as_clean(run.path, clean_run)


@pytest.mark.parametrize(
    "cut_row, resumes_from", [(10, "resuming from step 8"), (5, "restarting the run from step 0")]
)
def test_cut_metrics_without_a_summary_are_recomputed_never_reported_with_rows_lost(
    cut_row, resumes_from, tmp_path, clean_run, capsys
):
    clean_path, _ = clean_run
    path = tmp_path / "run"
    shutil.copytree(clean_path, path)
    lines = (path / "metrics.jsonl").read_text().splitlines(keepends=True)
    (path / "metrics.jsonl").write_text("".join(lines[:cut_row]) + lines[cut_row][:20])
    (path / "summary.json").unlink()
    capsys.readouterr()
    assert train_run(run_cfg(), path, factory)["status"] == "ok"
    warning = capsys.readouterr().err.strip()
    assert f"metrics.jsonl is intact only to step {cut_row - 1}" in warning
    assert warning.endswith(resumes_from) and "\n" not in warning
    assert_same_as_clean(path, clean_run)


def test_a_run_killed_in_its_final_evaluation_resumes_into_it_once(
    tmp_path, clean_run, monkeypatch
):
    """kill -9 after the last step and its checkpoint, during the final evaluation on the
    validation split: the same run again trains no step, evaluates once, ends as a clean run."""
    path = tmp_path / "run"
    script = (
        "import os, signal\n"
        "from sweeps.run import loop\n"
        "from tests.conftest import make_trainer, smoke_config\n"
        "loop.final_val_loss = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"cfg = smoke_config('torch', *{SETS!r})\n"
        f"loop.train_run(cfg, {str(path)!r}, lambda c: make_trainer('torch', c))\n"
    )
    killed = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).parents[1], capture_output=True
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    run = RunDir(path)
    assert not run.is_finished and run.latest_checkpoint().name == "step_00000012"
    evaluated, stepped, final_val_loss = [], [], loop.final_val_loss
    monkeypatch.setattr(
        loop, "final_val_loss", lambda *a: evaluated.append(1) or final_val_loss(*a)
    )

    def counting(cfg):
        trainer = factory(cfg)
        step = trainer.train_step
        trainer.train_step = lambda *a: stepped.append(1) or step(*a)
        return trainer

    assert train_run(run_cfg(), path, counting)["status"] == "ok"
    assert evaluated == [1] and stepped == []
    assert [p.name for p in run.checkpoints()] == ["step_00000008", "step_00000012"]
    assert_same_as_clean(path, clean_run)


# == 3. bounded ================================================================================
@contextlib.contextmanager
def within(seconds: float):
    """Fail a block that runs longer than seconds (a hang) instead of waiting for it."""

    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    "lr, extend, message",
    [
        ([1e-2, 2e-2], {"factor": 1.001, "max_extra_lrs": 2}, "factor 1.001 is below 1.02"),
        ([1e-2, 1.001e-2], {"max_extra_lrs": 2}, "the grid's top LR ratio 1.001 (the default"),
        ([1e-2, 2e-2], {"max_extra_lrs": 1000000000}, "max_extra_lrs must be an integer from 0"),
        ([1e-2, 2e-2], {"factor": 1e200, "max_extra_lrs": 2}, "is not a finite number"),
    ],
)
def test_extension_that_cannot_reach_a_new_lr_is_refused(tmp_path, lr, extend, message):
    spec = write_spec(tmp_path, "grow", lr, extend=extend)
    began = time.perf_counter()
    for args in (["--dry-run"], ["--device", "cpu"]):
        line = only_line(cli("sweep", spec, "--runs-dir", tmp_path / "runs", *args), 2)
        assert message in line
    assert time.perf_counter() - began < 5 and not (tmp_path / "runs").exists()


def test_extension_points_are_new_and_rising_at_the_smallest_factor(tmp_path):
    spec = load_spec(write_spec(tmp_path, "rise", [1e-3, 2e-3]))
    for top in np.geomspace(1e-6, 10, 3001):  # every rounding position of 3 digits
        grown = dataclasses.replace(
            spec, lr=(top / 2, top), extend=Extend(factor=MIN_EXTEND_FACTOR, max_extra_lrs=4)
        )
        points = extension_points(grown)
        assert len(points) == 4 and points[0] > top
        assert all(b > a for a, b in zip(points, points[1:])), (top, points)


def test_a_grid_that_cannot_grow_settles_instead_of_hanging(tmp_path, monkeypatch):
    """What the factor-1.001 sweep did: re-add its top LR forever. Forced past validation,
    it now adds nothing; and the runner adds only LRs not yet planned, whatever it is told."""
    spec = load_spec(write_spec(tmp_path, "stuck", [1e-2, 2e-2]))
    stuck = dataclasses.replace(spec, extend=Extend(factor=1.001, max_extra_lrs=2))
    sweep = Sweep(stuck, "torch", runs_dir=tmp_path)
    sweep._finished = {rid: {"status": "ok", "final_val_loss": 2.0} for rid in sweep.configs}
    assert grid_additions(stuck, list(sweep.configs.values()), sweep._finished) == {}
    monkeypatch.setattr(
        runner_mod, "grid_additions", lambda *a: {2: ([2e-2, 4e-2], "told to")}
    )  # one planned, one new
    with within(10):
        messages = settle(sweep)
    assert messages == ["n_layer 2: told to: adding lr 0.04"]
    assert sorted({c.train.lr for c in sweep.configs.values()}) == [1e-2, 2e-2, 4e-2]


def test_an_unreachable_ray_cluster_is_one_line_and_exit_1_in_seconds(tmp_path, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = write_spec(tmp_path, "ray", [1e-2, 1.0])
    began = time.perf_counter()
    result = cli(
        "sweep",
        spec,
        "--runs-dir",
        tmp_path / "runs",
        "--executor",
        "ray",
        "--address",
        f"127.0.0.1:{port}",
    )
    line = only_line(result, 1)
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port} (connection refused)" in line
    assert "ray start --head" in line and time.perf_counter() - began < 10
    assert not (tmp_path / "runs").exists()
    assert "is not host:port" in only_line(
        cli(
            "sweep",
            spec,
            "--runs-dir",
            tmp_path / "runs",
            "--executor",
            "ray",
            "--address",
            "nowhere",
        ),
        2,
    )

    def silent(address, timeout):  # a host that never answers
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(EnvironmentFault, match=r"\(no answer within 0\.2 s\); start it"):
        probe_address("10.0.0.9:6379", timeout=0.2)


@pytest.mark.slow
def test_a_huge_grid_is_refused_in_seconds_before_expanding(tmp_path):
    lrs = [float(f"{1e-4 * 1.001**i:.6g}") for i in range(1000)]
    spec = write_spec(tmp_path, "huge", lrs, seed=range(1000))  # 2 arms: 2,000,000 runs
    for args in (["--dry-run"], ["--device", "cpu"], []):
        began = time.perf_counter()
        result = (
            cli("sweep", spec, "--runs-dir", tmp_path / "runs", *args)
            if args
            else cli("status", spec, "--runs-dir", tmp_path / "runs")
        )
        # expanding 2,000,000 runs takes minutes; refusing takes well under a second, so 5 s
        # tells the two apart even on a busy 2-core machine
        assert time.perf_counter() - began < 5.0
        line = only_line(result, 2)
        assert (
            "plans up to 2,000,000 runs (2,000 arm-LR points x 1 depth(s) x 1,000 seed(s)" in line
            and "more than the cap of 10,000" in line
            and "--max-runs" in line
        )
    assert not (tmp_path / "runs").exists()
    # growth counts: 12 grid runs + 2 extension LRs x 2 arms x 3 seeds
    grows = write_spec(tmp_path, "grows", [1e-2, 1e-1], extend={"max_extra_lrs": 2})
    args = ["sweep", grows, "--runs-dir", tmp_path / "runs", "--dry-run", "--max-runs"]
    line = only_line(cli(*args, 23), 2)
    assert "plans up to 24 runs" in line and "12 more from extension and refinement" in line
    assert cli(*args, 24).exit_code == 0
    # the cap the refusal names is one the command then accepts, past the default as well
    past = write_spec(tmp_path, "past", [1e-2, 2e-2], seed=range(2501))  # 10,004 runs
    args = ["sweep", past, "--runs-dir", tmp_path / "runs", "--dry-run"]
    assert "(sweep --max-runs 10004)" in only_line(cli(*args), 2)
    assert cli(*args, "--max-runs", 10004).exit_code == 0


def test_a_model_too_large_for_memory_is_refused_with_its_size(tmp_path, monkeypatch):
    cfg = run_cfg()
    check_fits(cfg, available=state_bytes(cfg))
    with pytest.raises(ConfigError, match="for weights, gradients and AdamW state"):
        check_fits(cfg, available=state_bytes(cfg) - 1)
    # a long context is refused for its attention alone (8 x 2 heads x 20000^2 x 4 B x 2)
    assert activation_bytes(cfg.with_overrides(["model.block_size=20000"])) > 2 * 12.8e9
    huge = ["--set", "model.n_embd=1000000000"]
    line = only_line(cli("train", "--preset", "smoke", *huge, "--out", tmp_path / "t"), 2)
    assert "the model has 24,000,000,549,000,000,000 parameters" in line and "GiB" in line
    assert "shrink model.n_embd" in line and not (tmp_path / "t").exists()
    spec = write_spec(tmp_path, "wide", [1e-2, 1.0], settings={"model.n_embd": 4096})  # 5 GB
    monkeypatch.setattr("sweeps.core.params.available_memory", lambda: 2**30)  # a 1 GiB machine
    line = error_line(cli("sweep", spec, "--runs-dir", tmp_path / "runs", "--device", "cpu"), 2)
    assert "more than the 1.0 GiB of memory available here" in line
    assert not (tmp_path / "runs").exists()  # refused before any run was written
    show = cli("config", "show", "smoke", *huge)
    assert "the model has" in only_line(show, 2)


# == 4. one line, the right exit code, nothing half-written ====================================
def enospc_after(monkeypatch, calls: int):
    """os.fsync raises ENOSPC from its `calls`-th call on (every atomic write and metrics
    append ends in one): a disk that fills up mid-command."""
    real, count = os.fsync, [0]

    def fsync(fd):
        count[0] += 1
        if count[0] >= calls:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_train_on_a_full_disk_is_one_line_exit_1_and_resumes_once_there_is_space(
    tmp_path, monkeypatch, clean_run
):
    out = tmp_path / "run"
    args = ["train", "--preset", "smoke", *CLI_SETS, "--device", "cpu", "--out", out]
    enospc_after(monkeypatch, 8)  # config, step-0 row, rows, step 4's three files: then full
    line = error_line(cli(*args), 1)
    assert line.startswith(f"Error: no space left on the device ({out}")
    assert RESUME in line and not leftovers(out)
    assert RunDir(out).state() == "interrupted"  # not recorded as a failure
    monkeypatch.undo()
    assert cli(*args).exit_code == 0
    assert_same_as_clean(out, clean_run)


def test_data_prepare_on_a_full_disk_leaves_no_half_written_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path / "cache"))
    enospc_after(monkeypatch, 1)
    line = error_line(cli("data", "prepare", "--set", "data.builtin_stories=50"), 1)
    assert "no space left on the device" in line and "train.bin" in line
    assert not list((tmp_path / "cache").rglob("manifest.json"))  # not prepared ...
    assert not leftovers(tmp_path / "cache")  # ... and no temporary file left behind
    monkeypatch.undo()
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path / "cache"))
    assert cli("data", "prepare", "--set", "data.builtin_stories=50").exit_code == 0


def test_a_full_disk_at_write_results_keeps_the_finished_runs(clean_sweep, tmp_path, monkeypatch):
    spec, clean_dir = clean_sweep
    runs = copy_sweep(clean_sweep, tmp_path)
    victim = next(p.parent for p in (runs / "faults").glob("*off*lr0.01-s0*/summary.json"))
    shutil.rmtree(victim)  # one run left to train
    real, calls = SweepDir.write_results, []

    def write_results(self, df):
        calls.append(1)
        if len(calls) > 1:  # after the run finishes: the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.results_path))
        return real(self, df)

    monkeypatch.setattr(SweepDir, "write_results", write_results)
    line = error_line(cli("sweep", spec, "--runs-dir", runs, "--device", "cpu"), 1)
    assert "no space left on the device" in line and "results.parquet" in line
    assert RunDir(victim).problem() is None and RunDir(victim).is_finished
    monkeypatch.undo()
    again = cli("sweep", spec, "--runs-dir", runs, "--device", "cpu")
    assert again.exit_code == 0 and "nothing to run" in again.output
    assert final_losses(runs / "faults") == final_losses(clean_dir)


def test_a_worker_on_a_full_disk_records_nothing_and_stops_the_sweep(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "checkpoint/step_00000004")

    monkeypatch.setattr(RunDir, "save_checkpoint", full)
    result = execute_run(
        str(tmp_path / "run"),
        run_cfg().to_dict(),
        Execution("torch", "cpu", compile=False, tf32=False),
    )
    assert result["status"] == "fault" and "no space left" in result["error"]
    assert RunDir(tmp_path / "run").state() == "interrupted"  # no failure recorded

    class Faulty:  # an executor whose one run hits the full disk
        capacity, sent, killed = 1, [], None

        def describe(self):
            return "faulty"

        def free_slots(self):
            return 1 - len(self.sent)

        def submit(self, rid, run_dir, config):
            self.sent.append(rid)

        def wait(self, timeout):
            return [(self.sent[0], result)] if self.sent else []

        def close(self, kill=False):
            Faulty.killed = kill

    spec = load_spec(write_spec(tmp_path, "full", [1e-2, 1.0]))
    with pytest.raises(EnvironmentFault, match="no space left"):
        run_sweep(
            Sweep(spec, "torch", runs_dir=tmp_path / "runs"),
            Faulty,
            echo=lambda s: None,
            prepare_data=False,
        )
    assert Faulty.killed is True  # the runs in flight were stopped, to resume later


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    """A real small filesystem at path (root only): a disk that fills up."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root; the ENOSPC tests above cover a full disk")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.slow
def test_a_sweep_on_a_real_full_disk_stops_in_one_line_then_finishes(clean_sweep, tmp_path):
    spec, clean_dir = clean_sweep
    with tmpfs(tmp_path / "disk", "1m") as disk:
        full = cli("sweep", spec, "--runs-dir", disk, "--device", "cpu")
        line = error_line(full, 1)
        assert line.startswith("Error: no space left on the device") and RESUME in line
        states = [RunDir(d).state() for d in (disk / "faults").iterdir() if d.is_dir()]
        finished = [s for s in states if s in ("ok", "diverged")]
        assert "failed" not in states and "corrupt" not in states  # nothing blamed on runs
        assert finished and len(finished) < 8  # it stopped part way
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        again = cli("sweep", spec, "--runs-dir", disk, "--device", "cpu")
        assert again.exit_code == 0, again.output
        assert final_losses(disk / "faults") == final_losses(clean_dir)
        assert metrics(disk / "faults") == metrics(clean_dir)


def test_train_and_data_prepare_on_a_real_full_disk(tmp_path, monkeypatch):
    with tmpfs(tmp_path / "disk", "64k") as disk:
        monkeypatch.setenv("QKNORM_DATA_DIR", str(disk / "cache"))
        line = error_line(cli("data", "prepare", "--set", "data.builtin_stories=300"), 1)
        assert "no space left on the device" in line
        assert not list(disk.rglob("manifest.json")) and not leftovers(disk)
        monkeypatch.undo()
        line = error_line(
            cli("train", "--preset", "smoke", *CLI_SETS, "--device", "cpu", "--out", disk / "run"),
            1,
        )
        assert "no space left on the device" in line and not leftovers(disk)


@contextlib.contextmanager
def read_only(path: Path, fill):
    """path, filled by fill(path), then made read-only: a tmpfs remounted read-only as root
    (root writes through chmod), chmod for other users."""
    if os.geteuid() == 0:
        with tmpfs(path, "64m"):
            fill(path)
            subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
            yield path
        return
    path.mkdir(parents=True, exist_ok=True)
    fill(path)
    modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")]}
    for p in modes:
        p.chmod(p.stat().st_mode & ~0o222)
    try:
        yield path
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_a_read_only_runs_directory_is_one_line_and_exit_1(clean_sweep, tmp_path):
    from crosscheck.cli import cli as crosscheck
    from figures.cli import figures

    spec, _ = clean_sweep
    with read_only(tmp_path / "ro", lambda p: copy_sweep(clean_sweep, p)) as runs:
        before = tree(runs)
        line = only_line(cli("sweep", spec, "--runs-dir", runs, "--device", "cpu"), 1)
        assert f"cannot write ({runs / 'faults'})" in line and "--runs-dir" in line
        line = error_line(cli("figures", "faults", "--runs-dir", runs, extra=[figures]), 1)
        assert line.startswith("Error: cannot write (") and "report" in line
        line = only_line(cli("train", "--preset", "smoke", "--out", runs / "t"), 1)
        assert line.startswith(f"Error: cannot write ({runs})")
        checked = CliRunner().invoke(
            crosscheck, ["--preset", "smoke", "--steps", "0", "--out", str(runs / "cc.json")]
        )
        assert only_line(checked, 1).startswith(f"Error: cannot write ({runs})")  # no check ran
        assert tree(runs) == before


def test_read_only_and_misplaced_paths_without_root(tmp_path, monkeypatch):
    """The same refusals, by a patched probe and a patched write (any user, any machine)."""
    spec = write_spec(tmp_path, "faults", [1e-2, 1.0])
    (tmp_path / "afile").write_text("x")
    for args in (
        ["sweep", spec, "--runs-dir", tmp_path / "afile" / "sub"],
        ["train", "--preset", "smoke", "--out", tmp_path / "afile" / "run"],
    ):
        line = only_line(cli(*args, "--device", "cpu"), 2)
        assert f"{tmp_path / 'afile'} is a file, not a directory; choose another" in line
    real = tempfile.TemporaryFile

    def read_only_probe(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only_probe)
    line = only_line(cli("sweep", spec, "--runs-dir", tmp_path / "runs", "--device", "cpu"), 1)
    assert line == (
        f"Error: cannot write ({tmp_path}): read-only file system; make it writable "
        f"or choose another directory (--runs-dir, --out, QKNORM_DATA_DIR)"
    )
    monkeypatch.setattr(tempfile, "TemporaryFile", real)

    def refused(self, *args):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(self.path / "plan.json"))

    monkeypatch.setattr(SweepDir, "write_plan", refused)
    line = error_line(cli("sweep", spec, "--runs-dir", tmp_path / "runs", "--device", "cpu"), 1)
    assert "plan.json): permission denied" in line


def test_crosscheck_refuses_an_unwritable_out_before_running_any_check(tmp_path, monkeypatch):
    from crosscheck.cli import cli as crosscheck

    (tmp_path / "afile").write_text("x")
    result = CliRunner().invoke(
        crosscheck,
        ["--preset", "smoke", "--steps", "0", "--out", str(tmp_path / "afile" / "cc.json")],
    )
    assert "is a file, not a directory; choose another --out" in only_line(result, 2)

    def read_only_probe(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only_probe)
    result = CliRunner().invoke(
        crosscheck, ["--preset", "smoke", "--steps", "0", "--out", str(tmp_path / "cc.json")]
    )
    assert "read-only file system" in only_line(result, 1)  # no check ran: nothing else printed


def test_status_with_a_truncated_plan_falls_back_to_the_spec(clean_sweep, tmp_path):
    spec, _ = clean_sweep
    runs = copy_sweep(clean_sweep, tmp_path)
    plan = runs / "faults" / "plan.json"
    for damaged in (plan.read_bytes()[:300], b"", b"[1]"):
        plan.write_bytes(damaged)
        result = cli("status", spec, "--runs-dir", runs)
        assert result.exit_code == 0, result.output
        warning = result.stderr.strip()
        assert warning.startswith(f"warning: {plan}") and "\n" not in warning
        assert "12 runs: 6 ok, 6 diverged" in result.stdout
        # by name: the sweep's record (runs/faults/spec.toml) plans the same runs
        by_name = cli("status", "faults", "--runs-dir", runs)
        assert by_name.exit_code == 0 and "12 runs: 6 ok, 6 diverged" in by_name.stdout
    (runs / "faults" / "spec.toml").unlink()  # no record, no spec of that name: one line
    assert f"{plan}" in only_line(cli("status", "faults", "--runs-dir", runs), 2)


SPEC_ERRORS = {
    "binary": (None, "is not UTF-8 text"),
    "preset5": ("preset = 5", "preset must be a preset name in quotes"),
    "nopreset": ('preset = "nope"', "spec 'nopreset': unknown preset 'nope'; choose one of"),
}


@pytest.mark.parametrize("name", SPEC_ERRORS)
def test_bad_spec_files_are_one_line_and_exit_2(tmp_path, name):
    line_, message = SPEC_ERRORS[name]
    path = Path(write_spec(tmp_path, name, [1e-2, 1.0]))
    if line_ is None:
        path.write_bytes(np.random.default_rng(0).integers(128, 256, 300, np.uint8).tobytes())
    else:
        path.write_text(path.read_text().replace('preset = "smoke"', line_))
    line = only_line(cli("sweep", path, "--dry-run"), 2)
    assert message in line and "[set]" not in line


def test_bad_corpus_files_are_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path / "cache"))
    (tmp_path / "latin1.jsonl").write_bytes('{"text": "caf\xe9"}\n'.encode("latin-1"))
    pq.write_table(pa.table({"text": [1, 2, 3]}), tmp_path / "ints.parquet")
    (tmp_path / "x.txt").mkdir()
    for name, message in (
        ("latin1.jsonl", "is not UTF-8 text"),
        ("ints.parquet", "column 'text' holds int64, not strings"),
        ("x.txt", "x.txt is a directory; give data.path a"),
    ):
        line = only_line(cli("data", "prepare", "--corpus", "file", "--path", tmp_path / name), 2)
        assert message in line
    assert not list(tmp_path.rglob("manifest.json"))


def test_non_finite_values_are_named_as_such(tmp_path):
    line = only_line(cli("train", "--set", "train.lr=nan", "--out", tmp_path / "x"), 2)
    assert line == "Error: train.lr must be a finite number (got 'nan')"


def test_an_unavailable_device_is_refused_once_before_any_run_is_written(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    spec = write_spec(tmp_path, "gpu", [1e-2, 1.0])
    for args in (
        ["sweep", spec, "--runs-dir", tmp_path / "runs"],
        ["train", "--preset", "smoke", "--out", tmp_path / "runs" / "t"],
    ):
        line = only_line(cli(*args, "--device", "cuda"), 2)
        assert line == "Error: device 'cuda' is not available here; use --device auto or cpu"
        assert "unknown device 'tpu'" in only_line(cli(*args, "--device", "tpu"), 2)
    assert not (tmp_path / "runs").exists()


def test_a_corpus_shorter_than_one_sequence_is_refused_before_any_run(tmp_path):
    # 20 stories hold one validation story, about 1,400 tokens: a 3,000-token context cannot
    # fit one sequence (and fits in memory, so it is the data check that refuses it)
    tiny = {"data.builtin_stories": 20, "model.block_size": 3000}
    spec = write_spec(tmp_path, "short", [1e-2, 1.0], settings=tiny)
    line = error_line(cli("sweep", spec, "--runs-dir", tmp_path / "runs", "--device", "cpu"), 2)
    assert re.search(
        r"the validation split has \d+ tokens, fewer than one sequence "
        r"\(model.block_size \+ 1 = 3001\)",
        line,
    ), line
    assert not (tmp_path / "runs").exists()
    line = error_line(
        cli(
            "train",
            "--preset",
            "smoke",
            "--set",
            "data.builtin_stories=20",
            "--set",
            "model.block_size=3000",
            "--out",
            tmp_path / "t",
        ),
        2,
    )
    assert "fewer than one sequence" in line and not (tmp_path / "t").exists()


def _wait_for(condition, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_train_is_one_line_with_its_exit_code(tmp_path, sig, code):
    out = tmp_path / "run"
    cmd = QKTORCH + [
        "train",
        "--preset",
        "smoke",
        "--set",
        "data.builtin_stories=300",
        "--set",
        "train.max_steps=100000",
        "--set",
        "train.checkpoint_interval=5",
        "--device",
        "cpu",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: RunDir(out).checkpoints())
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr + stdout
    assert stderr.strip().splitlines()[-1] == "interrupted; run the same command again to resume"
    assert RunDir(out).state() == "interrupted" and not leftovers(out)


@pytest.mark.slow
def test_an_interrupted_crosscheck_says_it_starts_over_and_writes_nothing(tmp_path):
    """crosscheck keeps nothing to resume from: its interruption line must not promise one."""
    from crosscheck.cli import INTERRUPTED

    out, log = tmp_path / "cc.json", tmp_path / "stdout"
    cmd = [sys.executable, "-c", "from crosscheck.cli import main; main()"]
    cmd += ["--preset", "smoke", "--steps", "1000000", "--out", str(out), "--verbose"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as stdout:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)
        _wait_for(lambda: " pass " in log.read_text())  # the checks have started
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == INTERRUPTED and "starts over" in INTERRUPTED
    assert not out.exists()


@pytest.mark.slow
def test_sigterm_mid_sweep_exits_143_and_leaves_no_run_locked(tmp_path):
    # 40 runs of about 0.4 s: the signal must land mid-sweep even when the test process is slow
    # to see the first summary (12 runs once finished before it on a loaded machine)
    spec = write_spec(tmp_path, "term", [1e-2, 1.0], seed=range(10))
    sweep_dir = tmp_path / "runs" / "term"
    proc = subprocess.Popen(
        QKTORCH + ["sweep", spec, "--runs-dir", str(tmp_path / "runs"), "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: list(sweep_dir.glob("*/summary.json")))
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stdout + stderr
    assert "Traceback" not in stdout + stderr
    assert stdout.strip().splitlines()[-1].startswith("interrupted after ")
    assert f"{RESUME} to finish the sweep" in stdout
    runs = [RunDir(d) for d in sweep_dir.iterdir() if d.is_dir()]
    _wait_for(lambda: not any(r.is_locked() for r in runs), 15)
    assert all(r.problem() is None for r in runs)
