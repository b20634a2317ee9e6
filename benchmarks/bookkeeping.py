"""What a sweep's bookkeeping costs when its folder holds many large finished runs.

Times the smoke sweep (`qktorch sweep smoke`, CPU) twice, each in a fresh runs folder: once
alone, once beside N finished *foreign* run directories (runs of another config, each with a
metrics.jsonl of ROWS rows, the size of a long run's) in the same sweep folder. The runner
reads those directories whenever it looks at its sweep folder, so the ratio of the two wall
times is what the bookkeeping costs; reading each run once keeps it near 1.

    python benchmarks/bookkeeping.py               # 300 foreign runs of 5000 rows
    python benchmarks/bookkeeping.py --foreign 100 --rows 2000

Run it from the repository root (or with the repository on PYTHONPATH). It writes only in a
temporary folder, which it deletes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SWEEP = "smoke"
# One metrics row of a run with diagnostics: per-layer lists, as sweeps.run.loop writes them.
LAYERS = 4


def metrics_rows(rows: int) -> list[dict]:
    per_layer = [0.5 + 0.01 * i for i in range(LAYERS)]
    out = []
    for step in range(rows):
        row = {
            "step": step,
            "lr": 1e-3,
            "train_loss": 3.0 - step * 1e-4,
            "grad_norm": 0.7,
            "tokens_seen": step * 4096,
            "time_s": step * 0.01,
        }
        if step % 50 == 0:
            row.update(
                {
                    "val_loss": 3.1 - step * 1e-4,
                    "attn_logit_max": per_layer,
                    "attn_entropy": per_layer,
                    "resid_kurtosis": per_layer,
                }
            )
        out.append(row)
    return out


def build_foreign(sweep_dir: Path, count: int, rows: int) -> None:
    """count finished runs of the tiny preset (not in the smoke plan), each sound: config,
    metrics and a summary whose recorded fingerprint matches them."""
    from sweeps.core.presets import get_preset
    from sweeps.run.rundir import RunDir

    base = get_preset("tiny").with_overrides(["backend=torch"])
    template = None
    for i in range(count):
        cfg = base.with_overrides([f"seed={1000 + i}"])
        run = RunDir(sweep_dir / cfg.run_id)
        run.path.mkdir(parents=True)
        run.write_config(cfg, device="cpu")
        if template is None:
            run.append_metrics(metrics_rows(rows))
            template = run.metrics_path
        else:
            shutil.copyfile(template, run.metrics_path)
        run.write_summary(
            {
                "run_id": cfg.run_id,
                "status": "ok",
                "final_val_loss": 2.6,
                "best_val_loss": 2.6,
                "steps_run": rows,
                "wall_time_s": 60.0,
                "metrics": run.metrics_fingerprint(),
            }
        )


def time_sweep(runs_dir: Path, env: dict) -> float:
    began = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from qktorch.cli import main; main()",
            "sweep",
            SWEEP,
            "--runs-dir",
            str(runs_dir),
            "--device",
            "cpu",
        ],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--foreign", type=int, default=300, help="foreign run directories")
    parser.add_argument("--rows", type=int, default=5000, help="metrics rows of each")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="sweeps of each kind, alternating (the best of each counts: a "
        "shared machine's slow spells fall on either)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bookkeeping-") as tmp:
        tmp = Path(tmp)
        env = {
            **os.environ,
            "QKNORM_DATA_DIR": str(tmp / "data"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        subprocess.run(
            [sys.executable, "-c", "from qktorch.cli import main; main()", "data", "prepare"],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        began = time.perf_counter()
        build_foreign(tmp / "foreign" / SWEEP, args.foreign, args.rows)
        print(
            f"built {args.foreign} foreign runs of {args.rows} rows in "
            f"{time.perf_counter() - began:.1f} s"
        )
        for i in range(args.repeat):  # copied now: no disk writeback during the timings
            shutil.copytree(tmp / "foreign", tmp / f"with{i}")
        os.sync()
        alone, crowded = [], []
        for i in range(args.repeat):
            alone.append(time_sweep(tmp / f"alone{i}", env))
            crowded.append(time_sweep(tmp / f"with{i}", env))
        print(f"smoke sweep alone:                 {_times(alone)}")
        print(f"smoke sweep with {args.foreign} foreign runs: {_times(crowded)}")
        print(f"ratio (best of each): {min(crowded) / min(alone):.2f}")


def _times(seconds: list[float]) -> str:
    return f"best {min(seconds):6.1f} s (" + ", ".join(f"{s:.1f}" for s in seconds) + ")"


if __name__ == "__main__":
    main()
