"""A sweep in TensorBoard: one TensorBoard run per run directory, `<out>/<run_id>/`, with its
scalars (sweeps.sweep.curves.run_scalars: train loss, smoothed loss, val loss, grad norm, LR,
every diagnostic) and its hyperparameters (arm, lr, depth, seed, qk_norm, ...) in the HParams
plugin's format, so TensorBoard's HParams view and W&B's TensorBoard sync read them.

Written with the `tensorboard` package's own event-file writer and protos (pip install -e
".[tensorboard]"), so neither backend is imported (sweeps/ stays backend-neutral) and nothing
here encodes an event file by hand. Read from run directories alone, so it exports a sweep
that another terminal or a Ray cluster is training into a shared folder:

- `export tensorboard NAME --out DIR`: everything the runs have written so far, once;
- `sweep NAME --tensorboard DIR`: LiveExport, a thread that follows the runs while they
  train (new metrics rows every few seconds) and closes each one when its summary appears.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from pathlib import Path

from sweeps.core.config import arm_label
from sweeps.core.diagnostics import DIAGNOSTICS, reduce_layers
from sweeps.core.errors import HarnessError
from sweeps.run.rundir import RunDir

POLL_S = 5.0  # LiveExport: how often it looks for new metrics rows
# metrics.jsonl key -> TensorBoard tag (grouped into sections of the Scalars view)
TAGS = {
    "train_loss": "loss/train",
    "train_loss_ema": "loss/train_smoothed",
    "val_loss": "loss/val",
    "quick_val_loss": "loss/quick_val",
    "grad_norm": "optim/grad_norm",
    "lr": "optim/lr",
    **{name: f"diagnostics/{name}" for name in DIAGNOSTICS},
}
# The metrics the HParams view tabulates against the hyperparameters (their last value).
HPARAM_METRICS = ("loss/val", "loss/train_smoothed", "diagnostics/max_attn_logit")


def require_tensorboard() -> tuple:
    """The tensorboard package's Event and Summary protos and its event-file writer, or the
    one-line error naming the install."""
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        raise HarnessError(
            "TensorBoard export needs the tensorboard package: pip install "
            'tensorboard (or pip install -e ".[tensorboard]")'
        ) from None
    return Event, Summary, EventFileWriter


class EventWriter:
    """One TensorBoard run's event file: scalars and summaries appended as events."""

    def __init__(self, log_dir: Path):
        self._event, self._summary, file_writer = require_tensorboard()
        self.file = file_writer(str(log_dir))

    def add_summary(self, summary, step: int | None = None) -> None:
        event = self._event(summary=summary, wall_time=time.time())
        if step is not None:
            event.step = int(step)
        self.file.add_event(event)

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        value = self._summary.Value(tag=tag, simple_value=value)
        self.add_summary(self._summary(value=[value]), step)

    def close(self) -> None:
        self.file.close()


def hparams_summaries(hparams: dict) -> list:
    """The HParams plugin's experiment config (which hyperparameters and metrics the view
    tabulates) and this run's session start (its hyperparameter values)."""
    from tensorboard.plugins.hparams import summary_v2 as hp

    config = hp.hparams_config_pb(
        hparams=[hp.HParam(name) for name in hparams],
        metrics=[hp.Metric(tag) for tag in HPARAM_METRICS],
    )
    return [config, hp.hparams_pb(hparams)]


def hparams_of(cfg) -> dict:
    """The hyperparameters of a run, as the HParams view shows them."""
    return {
        "arm": arm_label(cfg),
        "lr": cfg.train.lr,
        "depth": cfg.model.n_layer,
        "seed": cfg.seed,
        "qk_norm": cfg.model.qk_norm,
        "qk_init": cfg.model.qk_init,
        "backend": cfg.backend,
        "max_steps": cfg.train.max_steps,
        "n_embd": cfg.model.n_embd,
    }


class RunExport:
    """One run's TensorBoard run: scalars appended as its metrics.jsonl grows."""

    def __init__(self, out: Path, run_dir: Path, cfg):
        self.run_dir, self.offset, self.closed = Path(run_dir), 0, False
        out = Path(out)
        if out.is_dir():  # a new export replaces the old one (no doubled curves)
            for old in out.glob("events.out.tfevents.*"):
                old.unlink()
        self.writer = EventWriter(out)
        for summary in hparams_summaries(hparams_of(cfg)):
            self.writer.add_summary(summary)

    def poll(self) -> int:
        """Write the complete rows added since the last poll; returns how many."""
        path = self.run_dir / "metrics.jsonl"
        try:
            with open(path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return 0
        end = data.rfind(b"\n") + 1  # a row in mid-append waits for the next poll
        if end == 0:
            return 0
        if self.offset and self._shrunk(path):
            return 0
        rows = 0
        for line in data[:end].splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("step"), int):
                self._write(row)
                rows += 1
        self.offset += end
        return rows

    def _shrunk(self, path: Path) -> bool:
        """A resumed run truncates metrics.jsonl to its checkpoint: start over from there
        (TensorBoard shows the newest value of a repeated step)."""
        if path.stat().st_size < self.offset:
            self.offset = 0
            return True
        return False

    def _write(self, row: dict) -> None:
        step = row["step"]
        for key, tag in TAGS.items():
            if key not in row:
                continue
            value = reduce_layers(key, row[key]) if key in DIAGNOSTICS else row[key]
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
            ):
                self.writer.add_scalar(tag, float(value), step)

    def close(self) -> None:
        if not self.closed:
            self.poll()
            self.writer.close()
            self.closed = True


def export_runs(directory: Path, configs: dict, out: str | Path) -> list[str]:
    """Export every planned run (run_id -> RunConfig) that has metrics; their run ids."""
    done = []
    for rid, cfg in configs.items():
        run_dir = Path(directory) / rid
        if not (run_dir / "metrics.jsonl").exists():
            continue
        export = RunExport(Path(out) / rid, run_dir, cfg)
        export.close()
        done.append(rid)
    return done


class LiveExport:
    """Follows a sweep's runs while they train (a daemon thread polling every POLL_S).
    sweep: a sweeps.sweep.runner.Sweep (its configs may grow while it runs)."""

    def __init__(self, sweep, out: str | Path, poll_s: float = POLL_S):
        require_tensorboard()  # the missing package is refused before the sweep starts
        self.sweep, self.out, self.poll_s = sweep, Path(out), poll_s
        self.runs: dict[str, RunExport] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="tensorboard", daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.poll()  # what the last steps wrote
        for run in self.runs.values():
            run.close()
        return False

    def _loop(self) -> None:
        while not self.stop.wait(self.poll_s):
            try:
                self.poll()
            except Exception as e:  # never stop the sweep for its mirror
                print(f"warning: TensorBoard export: {type(e).__name__}: {e}", file=sys.stderr)

    def poll(self) -> None:
        for rid, cfg in list(self.sweep.configs.items()):
            run_dir = self.sweep.run_dir(rid)
            if rid not in self.runs:
                if not (run_dir / "metrics.jsonl").exists():
                    continue
                self.runs[rid] = RunExport(self.out / rid, run_dir, cfg)
            run = self.runs[rid]
            if run.closed:
                continue
            run.poll()
            if RunDir(run_dir).is_finished:
                run.close()
