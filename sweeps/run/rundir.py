"""Run directories, their whole life: runs/<sweep>/<run_id>/{config.json, metrics.jsonl,
summary.json, checkpoint/, error.txt, .lock}.

A run is finished exactly when summary.json exists. Every file is written atomically
(temp file + rename), so a killed process never leaves a half-written file behind.
Checkpoints hold numpy arrays under the shared parameter names, so either backend loads them.
While a run trains, its process holds an flock on `.lock`: the kernel drops it when the
process dies, however it dies, so a killed worker never leaves a run stuck.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sweeps.core.config import RunConfig, arm_label
from sweeps.core.errors import HarnessError
from sweeps.core.files import clean_json, dir_mode, read_json, write_atomic, write_json_atomic
from sweeps.platform.provenance import provenance

# What summary.json may say: the run is finished (its outcome, sweeps.run.outcomes, or failed).
STATUSES = ("ok", "unstable", "diverged", "failed")
# The state of any planned run: a finished status, or one of these three.
UNFINISHED = ("running", "interrupted", "pending")
CORRUPT = "corrupt"  # finished, but its files disagree: moved aside and rerun by a sweep
DAMAGED = ".damaged"  # where a sweep moves corrupt run directories (never deleted)
LOCK = ".lock"
ERROR = "error.txt"
# summary.json's numbers: each a number or null, else the run is corrupt (a report reads them)
SUMMARY_NUMBERS = (
    "final_val_loss",
    "init_loss",
    "bigram_loss",
    "unigram_loss",
    "steps_run",
    "max_steps",
    "diverged_at",
    "wall_time_s",
    "tokens_per_s",
    "tokens_seen",
    "init_logit_std",
)


class RunDir:
    """One run's directory. Trainers write through it; figures and sweeps read through it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.config_path = self.path / "config.json"
        self.metrics_path = self.path / "metrics.jsonl"
        self.summary_path = self.path / "summary.json"
        self.checkpoint_dir = self.path / "checkpoint"

    # -- config ---------------------------------------------------------------------------
    def write_config(self, cfg: RunConfig, device: str = "", fused: int = 0) -> None:
        """fused: the number of runs this one trained with as one program (sweeps.run.fused),
        recorded in its provenance; 0: trained alone (no key, as before fusion existed)."""
        made = provenance(device)
        if fused:
            made["fused"] = {"models": fused}
        write_json_atomic(
            self.config_path,
            {"run_id": cfg.run_id, "config": cfg.to_dict(), "provenance": made},
        )

    def note_continued(self, device: str, step: int) -> None:
        """Record in the config's provenance that another process went on with this run from
        `step` (0: restarted), with its own provenance (host, commit, time): a run resumed on
        another machine trained there from that step, and CPU results depend on the machine
        (docs/DESIGN.md, Devices and reproducibility)."""
        config = self.read_config_file()
        made = config.setdefault("provenance", {})
        made.setdefault("continued", []).append({**provenance(device), "from_step": step})
        write_json_atomic(self.config_path, config)

    def read_config(self) -> RunConfig:
        return RunConfig.from_dict(self.read_config_file()["config"])

    def check_holds(self, cfg: RunConfig) -> None:
        """Refuse a directory that holds another run (finished or not)."""
        if self.config_path.exists():
            held = self.read_config_file().get("run_id")
            if held != cfg.run_id:
                raise HarnessError(
                    f"{self.path} holds another run ({held}), not {cfg.run_id}; "
                    f"choose another --out directory"
                )

    def read_config_file(self) -> dict:
        return read_json(self.config_path)

    # -- metrics --------------------------------------------------------------------------
    def append_metrics(self, rows: list[dict]) -> None:
        """Append rows; a resumed run first truncates to its checkpoint (truncate_metrics)."""
        if not rows:
            return
        try:
            with open(self.metrics_path, "a") as f:
                for row in rows:
                    f.write(json.dumps(clean_json(row), sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # a failed write() names no file: name this one
            if e.filename is None:
                raise OSError(e.errno, e.strerror, str(self.metrics_path)) from None
            raise

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        rows = []
        for line in self.metrics_path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break  # a line cut by a kill mid-write: everything after it is untrusted
            if not isinstance(row, dict):
                break  # a cut that still parses ("12"): as untrusted
            rows.append(row)
        return rows

    def intact_steps(self) -> int:
        """The last step s with rows for every step 0..s in order (-1: none): every step
        writes one row, so a resume may continue from a checkpoint at s or before."""
        last = -1
        for row in self.read_metrics():
            if row.get("step") != last + 1:
                break
            last += 1
        return last

    def truncate_metrics(self, last_step: int) -> None:
        """Keep rows up to last_step: the steps a resumed run will not recompute."""
        rows = [r for r in self.read_metrics() if r["step"] <= last_step]
        write_atomic(self.metrics_path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))

    # -- summary --------------------------------------------------------------------------
    def write_summary(self, summary: dict) -> None:
        if summary.get("status") not in STATUSES:
            raise ValueError(f"summary status must be one of {STATUSES}")
        write_json_atomic(self.summary_path, summary)

    def read_summary(self) -> dict | None:
        return read_json(self.summary_path) if self.summary_path.exists() else None

    @property
    def is_finished(self) -> bool:
        return self.summary_path.exists()

    def state(self) -> str:
        """ok | unstable | diverged | failed (finished: summary.json says so), corrupt (its
        files disagree: RunDir.problem), running (some process holds its lock), interrupted
        (started, not finished, not held) or pending."""
        if self.is_finished:
            return self.record().status
        if self.is_locked():
            return "running"
        if self.metrics_path.exists() or self.checkpoint_dir.exists():
            return "interrupted"
        return "pending"

    def last_step(self) -> int | None:
        """The step of the last metrics row, read from the end of metrics.jsonl (cheap while
        another process is appending to it)."""
        try:
            with open(self.metrics_path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 8192))
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return None
        for line in reversed(lines):
            try:
                return int(json.loads(line)["step"])
            except (ValueError, KeyError, TypeError):
                continue
        return None

    def record_failure(
        self, cfg: RunConfig, error: str, wall: float = 0.0, details: str | None = None
    ) -> dict:
        """Finish the run as failed: error.txt (details, else the error), config.json if it
        never wrote one, and a summary with the error's first line."""
        write_atomic(self.path / ERROR, (details or error).rstrip("\n") + "\n")
        if not self.config_path.exists():
            self.write_config(cfg)
        self.write_summary(
            {
                "run_id": cfg.run_id,
                "status": "failed",
                "error": error.splitlines()[0],
                "final_val_loss": None,
                "best_val_loss": None,
                "wall_time_s": wall,
            }
        )
        return self.read_summary()

    def move_aside(self) -> Path:
        """Move this directory into its sweep's .damaged/ (evidence is never deleted);
        returns where it went."""
        target = self.path.parent / DAMAGED / f"{self.path.name}.{_stamp()}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.path, target)
        return target

    def clear_failure(self) -> None:
        """Forget a failed attempt before retrying it (its checkpoint, if any, stays)."""
        self.summary_path.unlink(missing_ok=True)
        (self.path / ERROR).unlink(missing_ok=True)

    # -- the lock -------------------------------------------------------------------------
    def lock(self) -> RunLock:
        return RunLock(self.path)

    def is_locked(self) -> bool:
        """True while some process holds the run's lock (checked without creating anything)."""
        try:
            f = open(self.path / LOCK, "rb")
        except FileNotFoundError:
            return False
        with f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    # -- checkpoints ----------------------------------------------------------------------
    def save_checkpoint(
        self,
        step: int,
        params: dict[str, np.ndarray],
        optimizer: dict[str, np.ndarray],
        state: dict,
    ) -> None:
        """Write checkpoint/step_N (a temp directory renamed into place) with the size and
        sha256 of each file in its state.json, written last; keep the one before it (a
        fallback should this one be damaged later) and drop older ones."""
        from safetensors.numpy import save

        final = self.checkpoint_dir / f"step_{step:08d}"
        tmp = Path(tempfile.mkdtemp(dir=self._ensure_checkpoint_dir(), prefix=".tmp_"))
        try:
            os.chmod(tmp, dir_mode())  # mkdtemp makes it 0700
            for name, arrays in (
                ("model.safetensors", params),
                ("optimizer.safetensors", optimizer),
            ):
                # bytes written by write_atomic, not safetensors' save_file: a full disk is
                # then an OSError naming the file, not a SafetensorError
                write_atomic(
                    tmp / name, save({k: np.ascontiguousarray(v) for k, v in arrays.items()})
                )
            files = {name: _fingerprint(tmp / name) for name in CHECKPOINT_FILES}
            write_atomic(
                tmp / "state.json",
                json.dumps(clean_json({**state, "step": step, "files": files}), sort_keys=True),
            )
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for old in self.checkpoints()[:-2]:
            shutil.rmtree(old, ignore_errors=True)

    def checkpoints(self) -> list[Path]:
        """Complete checkpoints (state.json written), oldest first."""
        if not self.checkpoint_dir.exists():
            return []
        return sorted(p for p in self.checkpoint_dir.glob("step_*") if (p / "state.json").exists())

    def latest_checkpoint(self) -> Path | None:
        complete = self.checkpoints()
        return complete[-1] if complete else None

    def load_checkpoint(
        self, path: Path | None = None, skipped: list | None = None, max_step: int | None = None
    ):
        """(params, optimizer, state) of the newest checkpoint that passes its checksums
        (or of `path`), at max_step or before; None when there is none. Each one passed over
        is described in `skipped`, so the caller can say what it fell back to."""
        from safetensors.numpy import load_file

        for candidate in [path] if path else reversed(self.checkpoints()):
            problem = _checkpoint_problem(candidate)
            if not problem and max_step is not None and _step_of(candidate) > max_step:
                problem = f"metrics.jsonl is intact only to step {max_step}"
            if problem:
                if skipped is not None:
                    skipped.append(f"{candidate.name}: {problem}")
                continue
            state = json.loads((candidate / "state.json").read_text())
            state.pop("files", None)
            return (
                load_file(str(candidate / "model.safetensors")),
                load_file(str(candidate / "optimizer.safetensors")),
                state,
            )
        return None

    def _ensure_checkpoint_dir(self) -> Path:
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.checkpoint_dir.glob(".tmp_*"):  # left by a killed writer
            shutil.rmtree(stale, ignore_errors=True)
        return self.checkpoint_dir

    # -- integrity ------------------------------------------------------------------------
    def metrics_fingerprint(self) -> dict:
        """{"rows", "bytes", "sha256"} of metrics.jsonl, recorded in the summary."""
        data = self.metrics_path.read_bytes() if self.metrics_path.exists() else b""
        return {
            "rows": data.count(b"\n"),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }

    def problem(self) -> str | None:
        """Why a finished run's files do not agree (None when they do): an unreadable
        config or summary, a summary of another run, metrics that changed since the summary.
        A directory without config.json and summary.json has nothing to disagree yet."""
        return self.record().problem

    def record(self) -> RunRecord:
        """Config, provenance, summary and integrity in one pass over the directory: each
        file read once, metrics.jsonl hashed only when a summary recorded its fingerprint."""
        has_config, has_summary = self.config_path.exists(), self.summary_path.exists()
        config_file, cfg, summary, problem = {}, None, None, None
        if has_config or has_summary:
            try:
                config_file = self.read_config_file()
                cfg = RunConfig.from_dict(config_file["config"])
                summary = self.read_summary()
            except HarnessError as e:
                problem = str(e).split(";")[0]
            except (KeyError, TypeError, AttributeError):
                problem = "config.json is not a run config"
        if cfg is not None and summary is not None:
            problem = _summary_problem(self, cfg, config_file, summary)
        return RunRecord(
            path=self.path,
            run_id=cfg.run_id if cfg else self.path.name,
            config=cfg,
            summary=summary if problem is None else None,
            problem=problem,
            provenance=_provenance_of(config_file),
        )


def _summary_problem(run: RunDir, cfg: RunConfig, config: dict, summary) -> str | None:
    """Why a readable config and summary disagree (with each other or with the metrics)."""
    if not isinstance(summary, dict) or summary.get("status") not in STATUSES:
        return "summary.json has no valid status"
    ids = {cfg.run_id, config.get("run_id"), summary.get("run_id")}
    if len(ids) != 1:
        return (
            f"config.json and summary.json name different runs ({', '.join(sorted(map(str, ids)))})"
        )
    for key in SUMMARY_NUMBERS:
        value = summary.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"summary.json's {key} is not a number ({json.dumps(value)})"
    recorded = summary.get("metrics")
    if recorded:
        now = run.metrics_fingerprint()
        if recorded != now:
            return (
                f"metrics.jsonl changed after the run finished ({recorded['rows']} rows "
                f"recorded, {now['rows']} now)"
            )
    return None


def _provenance_of(config_file) -> dict:
    provenance = config_file.get("provenance") if isinstance(config_file, dict) else None
    return provenance if isinstance(provenance, dict) else {}


@dataclass(frozen=True)
class RunRecord:
    """What one read of a run directory found (RunDir.record): a command reads each run
    directory once and works from this.

    run_id is the config's, else the directory's name; config is None when config.json is
    missing or unreadable; summary is summary.json when the run finished and its files agree,
    else None; problem says why a finished run's files disagree (the run is corrupt)."""

    path: Path
    run_id: str
    config: RunConfig | None
    summary: dict | None
    problem: str | None
    provenance: dict

    @property
    def finished(self) -> bool:
        """Finished and sound: its summary is final (a finished run never changes)."""
        return self.summary is not None

    @property
    def status(self) -> str:
        """The summary's status, 'corrupt', or 'incomplete' (not finished)."""
        if self.problem:
            return CORRUPT
        return self.summary["status"] if self.summary else "incomplete"

    def row(self) -> dict:
        """The run's row of a runs table (runs_table)."""
        if self.config is None:
            return {
                "run_id": self.run_id,
                "path": str(self.path),
                "status": CORRUPT,
                "error": self.problem,
            }
        cfg = self.config
        row = {
            "run_id": cfg.run_id,
            "seed": cfg.seed,
            "backend": cfg.backend,
            "arm": arm_label(cfg),
        }
        for section in ("model", "train", "data"):
            row.update(cfg.to_dict()[section])
        row["data_path"] = row.pop("path")  # data.path; "path" is the run directory
        row["path"] = str(self.path)
        summary = (
            {"status": CORRUPT, "error": self.problem}
            if self.problem
            else self.summary or {"status": "incomplete"}
        )
        row.update({k: v for k, v in summary.items() if k not in row})
        return row


CHECKPOINT_FILES = ("model.safetensors", "optimizer.safetensors")


def _step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.split("_")[-1])


def _stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def _fingerprint(path: Path) -> dict:
    data = Path(path).read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _checkpoint_problem(path: Path) -> str | None:
    """Why a checkpoint cannot be trusted; None when its files match their checksums."""
    try:
        files = json.loads((path / "state.json").read_text())["files"]
        for name in CHECKPOINT_FILES:
            if _fingerprint(path / name) != files[name]:
                return f"{name} does not match its checksum"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"unreadable ({type(e).__name__})"
    return None


class RunLock:
    """An exclusive, non-blocking flock on a run directory, held while the run trains."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOCK
        self._file = None

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return False
        self._file = f
        return True

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def find_run_dirs(root: str | Path) -> list[RunDir]:
    """Every run directory (one holding config.json) below root, sorted by path."""
    return [
        RunDir(p.parent)
        for p in sorted(Path(root).glob("**/config.json"))
        if not any(part.startswith(".") for part in p.parts[len(Path(root).parts) :])
    ]


def scan_runs(root: str | Path) -> list[RunRecord]:
    """Every run directory below root (find_run_dirs), each read once."""
    return [run.record() for run in find_run_dirs(root)]


def runs_table(records):
    """Runs as one DataFrame: flattened config columns plus the summary.

    Unfinished runs appear with status 'incomplete'; a run whose files do not agree
    (RunDir.problem) with status 'corrupt' and the problem as its error, named by its
    directory when its config cannot be read. Config field names are unique across
    sections, so columns carry no section prefix (lr, n_layer, qk_norm, seed, ...), except
    data.path, which becomes data_path beside the run directory's own path. `arm` falls back
    to "qk<kind>" for runs made before arms existed (arm_label).
    """
    import pandas as pd

    return pd.DataFrame([record.row() for record in records])
