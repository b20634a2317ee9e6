"""A sweep folder holds one backend's sweep (issue 49 point 5): plan.json records its backend
and the kind of device it was created on; the other program's sweep is refused in one line
naming the fix, dry run or not, and a folder `train --out` wrote is not adopted. Folders from
before the record (no backend field) are read from their run ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.errors import HarnessError
from sweeps.core.presets import get_preset
from sweeps.platform.devices import device_kind
from sweeps.run.rundir import RunDir
from sweeps.sweep.runner import Sweep
from sweeps.sweep.spec import load_spec
from sweeps.sweep.sweepdir import SweepDir
from tests.test_faults import only_line

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "docs" / "run-dirs" / "cpu-depth"  # a torch sweep folder, read only here
TINY = {  # a run in about a second
    "data.builtin_stories": 300,
    "train.max_steps": 4,
    "train.warmup_steps": 1,
    "train.eval_interval": 2,
    "train.checkpoint_interval": 2,
}
SETS = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
GRID = ["--preset", "smoke", "--grid", "train.lr=0.01,0.1", "--seeds", "3", "--name", "grid"]


def invoke(backend, *args):
    from figures.cli import figures

    return CliRunner().invoke(make_cli(backend, [figures]), [str(a) for a in args])


def tree(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def torch_sweep(tmp_path_factory):
    """`qktorch sweep` of a 12-run ad-hoc grid, finished: the folder it created."""
    runs = tmp_path_factory.mktemp("folder") / "runs"
    result = invoke("torch", "sweep", *GRID, *SETS, "--runs-dir", runs, "--device", "cpu")
    assert result.exit_code == 0, result.output
    return runs / "grid"


def copy(folder: Path, where: Path) -> Path:
    shutil.copytree(folder, where / "runs" / folder.name)
    return where / "runs" / folder.name


@pytest.mark.slow
def test_a_new_sweep_folder_records_its_backend_and_device_kind(torch_sweep):
    plan = json.loads((torch_sweep / "plan.json").read_text())
    assert plan["backend"] == "torch" and plan["device_kind"] == "cpu"
    assert SweepDir(torch_sweep).backend() == "torch"


def test_the_other_program_is_refused_in_one_line_dry_run_or_not(torch_sweep, tmp_path):
    folder = copy(torch_sweep, tmp_path)
    before = tree(folder)
    said = (
        f"Error: {folder} is a torch sweep folder (qktorch's runs), and a sweep folder holds "
        "one backend's runs: give this qkmlx sweep a folder of its own with --runs-dir "
        "OTHER_DIR, or resume that one with `qktorch sweep grid`"
    )
    other = [*GRID[:3], "train.lr=0.01,0.3", *GRID[4:], *SETS]  # and another definition
    for args in (["grid", "--dry-run"], ["grid"], [*GRID, *SETS], ["grid", "--estimate"], other):
        assert only_line(invoke("mlx", "sweep", *args, "--runs-dir", folder.parent), 2) == said
    assert tree(folder) == before  # nothing written, no mlx run among the torch ones
    again = invoke("torch", "sweep", "grid", "--runs-dir", folder.parent, "--dry-run")
    assert again.exit_code == 0 and "state: 12 finished" in again.output  # its own program
    elsewhere = invoke("mlx", "sweep", "grid", "--runs-dir", tmp_path / "mlx-runs", "--dry-run")
    assert elsewhere.exit_code == 2  # the record is torch's folder's: the spec is not found
    named = invoke("mlx", "sweep", *GRID, *SETS, "--runs-dir", tmp_path / "mlx-runs", "--dry-run")
    assert named.exit_code == 0 and "12 to run" in named.output  # the fix the refusal names


def test_the_other_programs_status_and_report_say_whose_runs_they_show(torch_sweep, tmp_path):
    folder = copy(torch_sweep, tmp_path)
    note = f"note: {folder} is a torch sweep folder: this {{}} is of its torch runs"
    status = invoke("mlx", "status", "grid", "--runs-dir", folder.parent)
    assert status.exit_code == 0 and note.format("status") in status.output
    report = invoke("mlx", "figures", "grid", "--runs-dir", folder.parent, "--formats", "vl.json")
    assert report.exit_code == 0 and note.format("report") in report.output
    own = invoke("torch", "status", "grid", "--runs-dir", folder.parent)
    assert "sweep folder" not in own.output


def test_a_folder_from_before_the_record_is_read_from_its_run_ids(torch_sweep, tmp_path):
    folder = copy(torch_sweep, tmp_path)
    plan = json.loads((folder / "plan.json").read_text())
    del plan["backend"], plan["device_kind"]
    (folder / "plan.json").write_text(json.dumps(plan))
    assert SweepDir(folder).backend() == "torch"
    ok = invoke("torch", "sweep", "grid", "--runs-dir", folder.parent, "--dry-run")
    assert ok.exit_code == 0 and "state: 12 finished" in ok.output
    refused = only_line(invoke("mlx", "sweep", "grid", "--runs-dir", folder.parent), 2)
    assert "is a torch sweep folder" in refused
    (folder / "plan.json").write_text("{ cut")  # damaged too: the run directories say
    assert SweepDir(folder).backend() == "torch"


def test_the_committed_torch_sweep_folder_is_still_accepted():
    if not (COMMITTED / "plan.json").is_file():
        pytest.skip("docs/run-dirs/cpu-depth has left the tree (its report holds the runs)")
    folder = SweepDir(COMMITTED)
    folder.check_for_sweep("torch")  # read only: nothing is written
    with pytest.raises(HarnessError, match="is a torch sweep folder"):
        folder.check_for_sweep("mlx")


@pytest.mark.slow
def test_a_run_directory_from_train_out_is_not_adopted(tmp_path):
    runs = tmp_path / "runs"
    trained = invoke("torch", "train", *SETS, "--out", runs / "grid", "--device", "cpu")
    assert trained.exit_code == 0, trained.output
    before = tree(runs / "grid")
    line = only_line(invoke("torch", "sweep", *GRID, *SETS, "--runs-dir", runs), 2)
    assert line == (
        f"Error: {runs / 'grid'} is a run directory (as `train --out` writes), not a sweep "
        "folder: a sweep does not adopt it; give the sweep another --runs-dir, or move the run "
        "elsewhere"
    )
    assert tree(runs / "grid") == before


def test_run_directories_without_a_plan_are_not_adopted(tmp_path):
    folder = tmp_path / "runs" / "smoke"
    cfg = get_preset("smoke").with_overrides(["backend=torch"])
    RunDir(folder / "mine").write_config(cfg)  # as `train --out runs/smoke/mine` starts it
    line = only_line(invoke("torch", "sweep", "smoke", "--runs-dir", folder.parent, "--dry-run"), 2)
    assert f"{folder} holds 1 run directory but no plan.json or spec.toml" in line
    assert "give the sweep another --runs-dir" in line
    empty = tmp_path / "runs" / "tiny"
    empty.mkdir()  # an empty folder is a new sweep's
    ok = invoke("torch", "sweep", "tiny", "--runs-dir", empty.parent, "--dry-run")
    assert ok.exit_code == 0, ok.output


def test_the_device_kind_is_the_first_sweeps_and_a_resume_elsewhere_says_so(tmp_path):
    spec = load_spec("smoke")
    (tmp_path / "smoke").mkdir()
    Sweep(spec, "torch", runs_dir=tmp_path, device_kind="cpu").write_plan()
    resumed = Sweep(spec, "torch", runs_dir=tmp_path, device_kind="cuda")
    assert "started on cpu; this one trains on cuda" in resumed.execution_note()
    resumed.write_plan()
    assert json.loads((tmp_path / "smoke" / "plan.json").read_text())["device_kind"] == "cpu"


def test_device_kinds_are_named_without_a_framework(monkeypatch):
    monkeypatch.setattr("sys.platform", "linux")
    assert device_kind("torch", "cpu") == "cpu" and device_kind("mlx", "gpu") == "cuda"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert device_kind("torch", "auto") == "cuda" and device_kind("mlx", "auto") == "cuda"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert device_kind("torch", "auto") == "cpu"
    monkeypatch.setattr("sys.platform", "darwin")
    assert device_kind("torch", "auto") == "mps" and device_kind("mlx", "auto") == "metal"
