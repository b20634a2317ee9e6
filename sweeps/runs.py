"""Run directories: runs/<sweep>/<run_id>/{config.json, metrics.jsonl, summary.json, checkpoint/}.

A run is finished exactly when summary.json exists. Every file is written atomically
(temp file + rename), so a killed process never leaves a half-written file behind.
Checkpoints hold numpy arrays under the shared parameter names, so either backend loads them.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np

from sweeps.config import RunConfig
from sweeps.errors import HarnessError

STATUSES = ("ok", "diverged", "failed")
# Per-layer diagnostics in metrics.jsonl at eval steps (lists, one value per layer).
DIAGNOSTICS = ("attn_entropy", "attn_entropy_min", "max_attn_logit", "resid_kurtosis",
               "resid_max_over_median")


def write_atomic(path: Path, data: bytes | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj) -> None:
    write_atomic(path, json.dumps(clean_json(obj), indent=2, sort_keys=True) + "\n")


def clean_json(obj):
    """NaN and Inf become null: strict JSON that every reader accepts."""
    if isinstance(obj, dict):
        return {k: clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def provenance(device: str = "") -> dict:
    """Where and with what a run was made: commit, dirty flag, versions, device, time."""
    source = Path(__file__).resolve().parent.parent
    commit, dirty = _git(source, "rev-parse", "HEAD"), None
    if commit:
        dirty = bool(_git(source, "status", "--porcelain", "--untracked-files=no"))
    versions = {}
    for package in ("qknorm-study", "numpy", "mlx", "torch", "safetensors", "tiktoken"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {
        "git_commit": commit, "git_dirty": dirty, "versions": versions,
        "python": sys.version.split()[0], "platform": platform.platform(), "device": device,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


class RunDir:
    """One run's directory. Trainers write through it; figures and sweeps read through it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.config_path = self.path / "config.json"
        self.metrics_path = self.path / "metrics.jsonl"
        self.summary_path = self.path / "summary.json"
        self.checkpoint_dir = self.path / "checkpoint"

    # -- config ---------------------------------------------------------------------------
    def write_config(self, cfg: RunConfig, device: str = "") -> None:
        write_json_atomic(self.config_path, {"run_id": cfg.run_id, "config": cfg.to_dict(),
                                             "provenance": provenance(device)})

    def read_config(self) -> RunConfig:
        return RunConfig.from_dict(self.read_config_file()["config"])

    def read_config_file(self) -> dict:
        return _read_json(self.config_path)

    # -- metrics --------------------------------------------------------------------------
    def append_metrics(self, rows: list[dict]) -> None:
        """Append rows; a resumed run first truncates to its checkpoint (truncate_metrics)."""
        if not rows:
            return
        with open(self.metrics_path, "a") as f:
            for row in rows:
                f.write(json.dumps(clean_json(row), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        rows = []
        for line in self.metrics_path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line cut by a kill mid-write: everything after it is untrusted
        return rows

    def truncate_metrics(self, last_step: int) -> None:
        """Keep rows up to last_step: the steps a resumed run will not recompute."""
        rows = [r for r in self.read_metrics() if r["step"] <= last_step]
        write_atomic(self.metrics_path, "".join(json.dumps(r, sort_keys=True) + "\n"
                                                for r in rows))

    # -- summary --------------------------------------------------------------------------
    def write_summary(self, summary: dict) -> None:
        if summary.get("status") not in STATUSES:
            raise ValueError(f"summary status must be one of {STATUSES}")
        write_json_atomic(self.summary_path, summary)

    def read_summary(self) -> dict | None:
        return _read_json(self.summary_path) if self.summary_path.exists() else None

    @property
    def is_finished(self) -> bool:
        return self.summary_path.exists()

    # -- checkpoints ----------------------------------------------------------------------
    def save_checkpoint(self, step: int, params: dict[str, np.ndarray],
                        optimizer: dict[str, np.ndarray], state: dict) -> None:
        """Write checkpoint/step_N as a temp directory renamed into place, then drop older ones."""
        from safetensors.numpy import save_file

        final = self.checkpoint_dir / f"step_{step:08d}"
        tmp = Path(tempfile.mkdtemp(dir=self._ensure_checkpoint_dir(), prefix=".tmp_"))
        try:
            save_file({k: np.ascontiguousarray(v) for k, v in params.items()},
                      str(tmp / "model.safetensors"))
            save_file({k: np.ascontiguousarray(v) for k, v in optimizer.items()},
                      str(tmp / "optimizer.safetensors"))
            (tmp / "state.json").write_text(json.dumps(clean_json({**state, "step": step}),
                                                       sort_keys=True))
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for old in self.checkpoint_dir.glob("step_*"):
            if old != final:
                shutil.rmtree(old, ignore_errors=True)

    def latest_checkpoint(self) -> Path | None:
        if not self.checkpoint_dir.exists():
            return None
        complete = sorted(p for p in self.checkpoint_dir.glob("step_*")
                          if (p / "state.json").exists())
        return complete[-1] if complete else None

    def load_checkpoint(self, path: Path | None = None):
        """(params, optimizer, state) as numpy arrays and a dict; None when there is none."""
        from safetensors.numpy import load_file

        path = path or self.latest_checkpoint()
        if path is None:
            return None
        return (load_file(str(path / "model.safetensors")),
                load_file(str(path / "optimizer.safetensors")),
                json.loads((path / "state.json").read_text()))

    def _ensure_checkpoint_dir(self) -> Path:
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.checkpoint_dir.glob(".tmp_*"):  # left by a killed writer
            shutil.rmtree(stale, ignore_errors=True)
        return self.checkpoint_dir


def _read_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise HarnessError(f"{path} does not exist: is this a run directory?") from None
    except json.JSONDecodeError as e:
        raise HarnessError(f"{path} is not valid JSON ({e}); delete the run directory to "
                           f"rerun it") from None


def find_run_dirs(root: str | Path) -> list[RunDir]:
    """Every run directory (one holding config.json) below root, sorted by path."""
    return [RunDir(p.parent) for p in sorted(Path(root).glob("**/config.json"))
            if not any(part.startswith(".") for part in p.parts[len(Path(root).parts):])]


def load_runs(root: str | Path):
    """All runs below root as one DataFrame: flattened config columns plus the summary.

    Unfinished runs appear with status 'incomplete'. Config field names are unique across
    sections, so columns carry no section prefix (lr, n_layer, qk_norm, seed, ...), except
    data.path, which becomes data_path beside the run directory's own path.
    """
    import pandas as pd

    rows = []
    for run in find_run_dirs(root):
        try:
            cfg = run.read_config()
        except HarnessError:
            continue
        row = {"run_id": cfg.run_id, "seed": cfg.seed, "backend": cfg.backend}
        for section in ("model", "train", "data"):
            row.update(cfg.to_dict()[section])
        row["data_path"] = row.pop("path")  # data.path; "path" is the run directory
        row["path"] = str(run.path)
        summary = run.read_summary() or {"status": "incomplete"}
        row.update({k: v for k, v in summary.items() if k not in row})
        rows.append(row)
    return pd.DataFrame(rows)
