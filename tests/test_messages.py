"""Messages of issue 49 (point 7): each one line with the problem and the fix, exit 2, from
the program that was run, and nothing before it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.files import write_atomic
from sweeps.platform import blas
from sweeps.run.backends import PROGRAMS
from sweeps.sweep.command import command_plan
from sweeps.sweep.runner import Sweep
from sweeps.sweep.spec import MAX_RUNS
from tests.test_faults import error_line, only_line

ROOT = Path(__file__).resolve().parent.parent


def invoke(backend, *args):
    from figures.cli import figures

    return CliRunner().invoke(make_cli(backend, [figures]), [str(a) for a in args])


# -- 1: each program names itself in the fix ------------------------------------------------
@pytest.mark.parametrize("backend", ["mlx", "torch"])
def test_offline_data_messages_name_the_program_that_was_run(backend, tmp_path, monkeypatch):
    from sweeps.data.corpora import tinystories as corpora

    def offline(path):
        raise corpora.HubUnreachable("roneneldan/TinyStories")

    monkeypatch.setattr(corpora, "_load_tinystories", offline)
    monkeypatch.setenv("QKNORM_DATA_DIR", str(tmp_path / "cache"))
    program, other = PROGRAMS[backend], "qkmlx" if backend == "torch" else "qktorch"
    fix = f"`{program} data prepare --corpus tinystories --tokenizer bytes`"
    for command in ("prepare", "info"):  # offline, and not prepared yet
        line = only_line(invoke(backend, "data", command, "--corpus", "tinystories"), 2)
        assert fix in line and other not in line, line
    trained = invoke(
        backend, "train", "--set", "data.corpus=tinystories", "--out", tmp_path / "run"
    )
    line = error_line(trained, 2)
    assert "cannot reach the Hugging Face hub" in line and fix in line and other not in line


# -- 2: a spec list with a bad element names it ---------------------------------------------
@pytest.mark.parametrize(
    "grid, said",
    [
        (
            'lr = [1e-2, "abc", 0.1]',
            'lr: "abc" (item 2 of [0.01, "abc", 0.1]) is not a number; write every lr as a '
            "number, unquoted, e.g. 1e-3",
        ),
        (
            "lr = [1e-2, 0.1]\nseed = [0, 1.5, 2]",
            "seed: 1.5 (item 2 of [0, 1.5, 2]) is not an integer; write every seed as an "
            "integer, unquoted, e.g. 3",
        ),
        (
            'lr = [1e-2, 0.1]\nqk_norm = ["none", 1]',
            'qk_norm: 1 (item 2 of ["none", 1]) is not a string; write every qk_norm as a '
            'string, in quotes, e.g. "rms"',
        ),
    ],
)
def test_a_bad_element_of_a_spec_list_is_named_with_the_fix(tmp_path, grid, said):
    spec = tmp_path / "bad.toml"
    spec.write_text(f'name = "bad"\npreset = "smoke"\n[grid]\n{grid}\n')
    line = only_line(invoke("torch", "sweep", spec, "--dry-run", "--runs-dir", tmp_path), 2)
    assert line == f"Error: spec 'bad' [grid]: {said}"
    assert not (tmp_path / "bad").exists()


# -- 3: a file where a folder must be: one line, not click's usage block --------------------
def test_a_runs_dir_that_is_a_file_is_one_line_and_exit_2(tmp_path):
    from crosscheck.cli import cli as crosscheck

    afile = tmp_path / "afile"
    afile.write_text("keep me")
    said = f"Error: --runs-dir {afile} is a file, not a folder; give a folder (it is created"
    for result in (
        invoke("torch", "sweep", "smoke", "--runs-dir", afile, "--dry-run"),
        invoke("mlx", "status", "smoke", "--runs-dir", afile),
        invoke("torch", "figures", "smoke", "--runs-dir", afile),
        invoke("torch", "export", "tensorboard", "smoke", "--out", tmp_path, "--runs-dir", afile),
        CliRunner().invoke(crosscheck, ["--sweep", "smoke", "--runs-dir", str(afile)]),
    ):
        line = only_line(result, 2)
        assert line.startswith(said) and "Usage" not in result.output, result.output
    out = only_line(invoke("torch", "train", "--out", afile), 2)
    assert out.startswith(f"Error: --out {afile} is a file, not a folder")
    folder = only_line(CliRunner().invoke(crosscheck, ["--preset", "smoke", "--out", tmp_path]), 2)
    assert folder == f"Error: --out {tmp_path} is a folder, not a file; give a file path"
    assert afile.read_text() == "keep me"


# -- 4: crosscheck's bad input before the BLAS line -----------------------------------------
def test_the_blas_line_waits_until_crosschecks_input_is_checked(monkeypatch, capsys):
    from crosscheck.cli import cli as crosscheck

    monkeypatch.delenv(blas.GUARD, raising=False)
    monkeypatch.delenv(blas.NOTE, raising=False)
    monkeypatch.setattr(blas, "preload_env", lambda environ=None: None)  # no OpenBLAS here
    blas.ensure_fast_blas(["crosscheck", "--preset", "nosuch"])
    assert capsys.readouterr().err == ""  # kept, not said
    result = CliRunner().invoke(crosscheck, ["--preset", "nosuch"])
    line = only_line(result, 2)
    assert line.startswith("Error: unknown preset 'nosuch'") and "BLAS" not in result.output
    assert "slow reference BLAS" in os.environ[blas.NOTE]  # still kept: nothing ran


@pytest.mark.slow
def test_crosscheck_says_the_blas_line_once_its_input_is_checked(monkeypatch):
    from crosscheck.cli import cli as crosscheck

    monkeypatch.setenv(blas.NOTE, "qkmlx: the BLAS line")
    result = CliRunner().invoke(
        crosscheck, ["--preset", "smoke", "--steps", "0", "--fused", "0", "--qk-norm", "none"]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.count("qkmlx: the BLAS line") == 1 and blas.NOTE not in os.environ


def test_crosscheck_with_an_unknown_preset_prints_the_error_alone():
    """As installed: where MLX brings its reference BLAS and OpenBLAS is there, crosscheck
    re-executes itself with it preloaded; its line no longer comes before the refusal."""
    env = {k: v for k, v in os.environ.items() if k not in (blas.GUARD, blas.NOTE)}
    done = subprocess.run(
        [sys.executable, "-c", "from crosscheck.cli import main; main()", "--preset", "nosuch"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "Error: unknown preset 'nosuch'; choose one of: smoke, tiny, cpu, core (or a depth "
        "variant such as core-L12)"
    ]


# -- 5: status says the record is damaged ---------------------------------------------------
def test_status_with_a_damaged_record_says_so_and_sweep_refuses_it(tmp_path):
    runs = tmp_path / "runs"
    planned = command_plan("smoke", None, (), None, None, runs, MAX_RUNS, (), "torch")
    (runs / "smoke").mkdir(parents=True)
    Sweep(planned.spec, "torch", (), runs, record=planned.record).write_plan()
    record = runs / "smoke" / "spec.toml"
    write_atomic(record, "this is [not toml\n")
    status = invoke("torch", "status", "smoke", "--runs-dir", runs)
    assert status.exit_code == 0, status.output
    warnings = [line for line in status.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, status.stderr
    assert f"warning: {record} is not a valid spec" in warnings[0]
    assert "showing the runs of its plan.json" in warnings[0]
    assert "`qktorch sweep smoke` refuses to run until then" in warnings[0]
    assert "36 runs: 36 pending" in status.stdout
    refused = only_line(invoke("torch", "sweep", "smoke", "--runs-dir", runs, "--dry-run"), 2)
    assert f"{record} is not a valid spec" in refused and "restore it, or delete it" in refused
    assert record.read_text() == "this is [not toml\n"  # kept for the user to restore


# -- 6: --grid's help names every field it takes --------------------------------------------
def test_grid_help_names_every_field_a_grid_takes():
    from sweeps.sweep.spec import GRID_FIELDS

    text = " ".join(invoke("torch", "sweep", "--help").output.split())
    for field in {k for k in GRID_FIELDS if "." in k or k == "seed"}:
        assert field in text, field
    assert "model.n_embd (a width ladder)" in text


# -- issue 58: a first hour's inputs that were accepted silently or said the wrong thing -----
def test_a_set_that_an_arm_overrides_is_refused_and_nothing_is_written(tmp_path):
    runs = tmp_path / "runs"
    line = only_line(invoke("torch", "sweep", "smoke", "--set", "model.qk_norm=rms",
                            "--runs-dir", runs), 2)  # fmt: skip
    assert "--set model.qk_norm is set by the arms of sweep 'smoke'" in line
    assert "(off: none, on: rms)" in line and "edit the spec's arms" in line
    assert not runs.exists()


def test_status_of_a_folder_where_nothing_ran_is_refused_not_shown_as_pending(tmp_path):
    line = only_line(invoke("torch", "status", "smoke", "--runs-dir", tmp_path / "typo"), 2)
    assert "does not exist: nothing of sweep smoke ran" in line
    assert "`sweep smoke --dry-run`" in line


def test_a_built_in_spec_with_preset_says_it_has_its_own_preset(tmp_path):
    line = only_line(invoke("torch", "sweep", "smoke", "--preset", "tiny"), 2)
    assert "smoke is a built-in spec" in line and "without --preset" in line


def test_a_dry_run_on_a_device_this_machine_lacks_says_a_sweep_would_be_refused(tmp_path):
    from sweeps.run import backends

    try:
        backends.check_device("torch", "cuda")
        pytest.skip("this machine has CUDA")
    except Exception:
        pass
    out = invoke("torch", "sweep", "smoke", "--device", "cuda", "--dry-run",
                 "--runs-dir", tmp_path)  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "note: a sweep here would be refused: device 'cuda' is not available" in out.output
    assert not (tmp_path / "smoke").exists()


def test_the_blas_hint_names_no_sudo():
    assert "sudo" not in blas.INSTALL_HINT and "apt-get install libopenblas0-pthread" in (
        blas.INSTALL_HINT
    )
