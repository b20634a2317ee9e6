"""The run directories the repo holds (docs/run-dirs/<sweep>/): a sweep that outlives one
machine resumes from them, and its report regenerates from them alone, so each must be a
finished, sound run that its sweep planned. A half-written run, one whose metrics were edited
after it finished, or one from another grid would be trusted by both, so none may be there.

Only what git tracks is judged: a sweep resuming into docs/run-dirs on this machine has
unfinished runs there too, and those are not committed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sweeps.run.rundir import RunDir
from sweeps.sweep.sweepdir import SweepDir

ROOT = Path(__file__).resolve().parents[1]
RUN_DIRS = ROOT / "docs" / "run-dirs"


def _committed_runs() -> dict[str, list[Path]]:
    """sweep name -> the run directories whose config.json git tracks."""
    listed = subprocess.run(
        ["git", "ls-files", "--", "docs/run-dirs/*/*/config.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: which run directories are committed is unknown")
    runs: dict[str, list[Path]] = {}
    for line in listed.stdout.split():
        run = (ROOT / line).parent
        runs.setdefault(run.parent.name, []).append(run)
    return runs


def test_every_committed_run_is_finished_sound_and_planned():
    committed = _committed_runs()
    if not committed:
        pytest.skip("no run directories are committed now: a finished sweep's leave the tree")
    for sweep, runs in committed.items():
        planned = SweepDir(RUN_DIRS / sweep).planned_configs()
        for path in runs:
            record = RunDir(path).record()
            assert record.finished, f"{sweep}/{path.name}: {record.problem or 'not finished'}"
            assert record.run_id == path.name
            assert planned.get(record.run_id) == record.config, f"{path.name} is not planned"
