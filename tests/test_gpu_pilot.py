"""benchmarks/gpu_pilot.sh, the real-scale pilot for the first GPU at hand, run here end to end
as its stand-in (STAND_IN=1: the smoke preset on the CPU, the same script), and its summary's
arithmetic on summaries the test writes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from benchmarks import pilot_summary as summary

ROOT = Path(__file__).resolve().parents[1]


def write_run(folder: Path, run_id: str, **fields) -> None:
    (folder / run_id).mkdir(parents=True)
    (folder / run_id / "summary.json").write_text(json.dumps(fields))


def test_the_summary_pairs_fused_and_unfused_runs_and_prices_whole_runs(tmp_path, capsys):
    for name, loss in (("pilot", 2.0), ("pilot-fused", 2.003)):
        write_run(
            tmp_path / name,
            "torch-off-L6-lr0.001-s0-aaaa",
            status="ok",
            final_val_loss=loss,
            tokens_seen=1_000_000,
            wall_time_s=10.0,
            tokens_per_s=100_000.0,
        )
        write_run(
            tmp_path / name,
            "torch-on-L6-lr0.001-s0-bbbb",
            status="diverged",
            final_val_loss=None,
            tokens_seen=500_000,
            wall_time_s=4.0,
            tokens_per_s=125_000.0,
        )
    assert summary.main([str(tmp_path), "pilot", "30", "pilot-fused", "10"]) == 0
    out = capsys.readouterr().out
    assert "pilot: 2 runs, 1.5M tokens in 30 s of sweep wall time = 50,000 tokens/s" in out
    assert "the same fate in 2, largest final-loss difference 3.00e-03" in out
    assert "fused speed-up, whole sweep: x3.00" in out
    assert "median 125,000 (range 100,000-125,000" in out


@pytest.mark.slow
def test_the_pilot_runs_end_to_end_as_its_stand_in(tmp_path):
    env = {**os.environ, "STAND_IN": "1", "OUT": str(tmp_path)}
    done = subprocess.run(
        ["bash", "benchmarks/gpu_pilot.sh"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    log = (tmp_path / "gpu_pilot.log").read_text()
    assert "preset smoke, bfloat16, device cpu" in log
    assert "pilot: 12 runs" in log and "pilot-fused: 12 runs" in log
    assert "fused against unfused: 12 runs in both, the same fate in 12" in log
    assert "for the dry run: whole-run tokens/s of one run" in log
    assert (tmp_path / "pilot" / "report" / "report.md").is_file()
    config = json.loads(next((tmp_path / "pilot" / "pilot").glob("*/config.json")).read_text())
    config = config.get("config", config)
    assert config["train"]["dtype"] == "bfloat16"
