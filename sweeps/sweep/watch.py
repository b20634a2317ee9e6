"""`status NAME --watch`: a live table of a sweep, redrawn until every planned run finished.

Read from the run directories alone (plan.json, each run's lock, summary.json and the tail of
metrics.jsonl: sweeps.run.tail), so it watches a sweep running in another terminal, or on a
Ray cluster writing to a shared folder (where another machine's lock may not show: a run
whose metrics changed in the last RECENT_S seconds counts as running), and never disturbs it.
Speeds come from what the watcher sees between two frames; on the first frame, from how long
the run has been writing (config.json to the newest metrics row) or from finished runs of the
same depth.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sweeps.core.config import arm_label
from sweeps.core.fmt import duration
from sweeps.core.ladder import step_s_by_shape, step_s_from
from sweeps.run.rundir import CORRUPT, STATUSES, RunDir
from sweeps.run.tail import last_row
from sweeps.sweep.status import planned_runs
from sweeps.sweep.sweepdir import SweepDir

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen: a redraw in place on a terminal
# An unfinished run whose metrics.jsonl changed this recently counts as running even when its
# lock does not show (a lock held on another machine of a shared folder may not)
RECENT_S = 120.0


@dataclass
class Seen:
    """What the watcher saw of running runs: run_id -> (time, step) when their step last
    changed, and run_id -> the seconds per step measured then."""

    steps: dict = field(default_factory=dict)
    rates: dict = field(default_factory=dict)


@dataclass
class Running:
    run_id: str
    arm: str
    n_layer: int
    lr: float
    seed: int
    step: int | None
    max_steps: int
    loss: float | None  # smoothed train loss (train_loss_ema) of the newest row
    lr_now: float | None  # the scheduled LR of that step
    step_s: float | None  # seconds per step, None until known

    @property
    def eta(self) -> float | None:
        if self.step_s is None:
            return None
        return max(0, self.max_steps - (self.step or 0)) * self.step_s  # no row yet: step 0


def frame(
    name: str, runs_dir: str | Path, backend: str, seen: Seen, now: float | None = None
) -> tuple[list[str], bool]:
    """(the lines of one frame, whether every planned run has finished)."""
    now = time.time() if now is None else now
    directory, configs = planned_runs(name, runs_dir, backend)
    states, running, per_step = Counter(), [], _finished_step_s(directory, configs)
    for rid, cfg in configs.items():
        run = RunDir(directory / rid)
        state = run.state()
        if state == "interrupted" and _recently_written(run, now):
            state = "running"
        states[state] += 1
        if state != "running":
            seen.steps.pop(rid, None)
            seen.rates.pop(rid, None)
            continue
        row = last_row(run.path) or {}
        step = row.get("step")
        rate = _step_s(run, rid, step, seen, now)
        if rate is None:
            rate = step_s_from(per_step, cfg.model)
        running.append(
            Running(
                rid,
                arm_label(cfg),
                cfg.model.n_layer,
                cfg.train.lr,
                cfg.seed,
                step,
                cfg.train.max_steps,
                row.get("train_loss_ema"),
                row.get("lr"),
                rate,
            )
        )
    done = sum(states[s] for s in STATUSES)
    left = len(configs) - done - states["running"]
    eta = _sweep_eta(directory, configs, running, per_step)
    lines = [
        f"sweep {directory.name} ({directory}) at {time.strftime('%H:%M:%S')}: "
        f"{done}/{len(configs)} done, {states['running']} running, {left} left | "
        f"sweep ETA {duration(eta) if eta is not None else '--'}",
        "  finished: "
        + (", ".join(f"{states[s]} {s}" for s in STATUSES + (CORRUPT,) if states[s]) or "none"),
    ]
    if running:
        lines.append(
            f"  {'arm':<10} {'L':>3} {'lr':>9} {'seed':>4} {'step':>13} "
            f"{'smoothed':>9} {'lr now':>9} {'ETA':>8}  run_id"
        )
        for r in sorted(running, key=lambda r: r.run_id):
            step = f"{r.step if r.step is not None else '-'}/{r.max_steps}"
            loss = f"{r.loss:.4f}" if isinstance(r.loss, (int, float)) else "-"
            lr_now = f"{r.lr_now:.3g}" if isinstance(r.lr_now, (int, float)) else "-"
            eta_text = duration(r.eta) if r.eta is not None else "--"
            lines.append(
                f"  {r.arm:<10} {r.n_layer:>3} {r.lr:>9.3g} {r.seed:>4} {step:>13} "
                f"{loss:>9} {lr_now:>9} {eta_text:>8}  {r.run_id}"
            )
    elif left:
        lines.append(
            "  no run is training now (is the sweep stopped? run the sweep command "
            "again to resume it)"
        )
    note = SweepDir(directory).left_out_note(
        next((c.backend for c in configs.values()), backend), "status"
    )
    if note:
        lines.append(note)
    return lines, done == len(configs)


def _recently_written(run: RunDir, now: float) -> bool:
    try:
        return now - (run.path / "metrics.jsonl").stat().st_mtime < RECENT_S
    except OSError:
        return False


def _step_s(run: RunDir, rid: str, step, seen: Seen, now: float) -> float | None:
    """Seconds per step: from the previous frame, else from the run's own files."""
    if step is None:
        return None
    before = seen.steps.get(rid)
    if before is None or step != before[1]:
        seen.steps[rid] = (now, step)
    if before is not None and step > before[1]:
        seen.rates[rid] = (now - before[0]) / (step - before[1])
    if rid in seen.rates:
        return seen.rates[rid]
    try:  # config.json is written when the run starts; metrics.jsonl with every row
        began = (run.path / "config.json").stat().st_mtime
        wrote = (run.path / "metrics.jsonl").stat().st_mtime
    except OSError:
        return None
    return (wrote - began) / step if step > 0 and wrote > began else None


def _finished_step_s(directory: Path, configs: dict) -> dict[tuple[int, int], float]:
    """model shape (sweeps.core.ladder.shape) -> seconds per step of its finished runs (the
    median of their own wall times: sweeps.core.ladder.step_s_by_shape)."""
    timings = []
    for rid, cfg in configs.items():
        run = RunDir(directory / rid)
        if not run.is_finished:
            continue
        try:
            summary = run.read_summary() or {}
        except Exception:  # a damaged summary: status reports it; no timing from it
            continue
        timings.append((cfg.model, summary.get("wall_time_s"), summary.get("steps_run")))
    return step_s_by_shape(timings)


def _sweep_eta(
    directory: Path, configs: dict, running: list[Running], per_step: dict[tuple[int, int], float]
) -> float | None:
    """Seconds until every planned run finished: the work left / the runs training now."""
    rates = {r.run_id: r for r in running}
    known = [r.step_s for r in running if r.step_s is not None]
    work = 0.0
    for rid, cfg in configs.items():
        if rid in rates:
            if rates[rid].eta is None:
                return None
            work += rates[rid].eta
            continue
        run = RunDir(directory / rid)
        if run.is_finished:
            continue
        step_s = step_s_from(per_step, cfg.model)
        if step_s is None:
            step_s = sum(known) / len(known) if known else None
        if step_s is None:
            return None
        work += cfg.train.max_steps * step_s
    return work / max(1, len(running))


def watch(
    name: str,
    runs_dir: str | Path,
    backend: str,
    interval: float = 5.0,
    frames: int = 0,
    out=None,
    sleep=time.sleep,
) -> bool:
    """Redraw the table every `interval` seconds until the sweep ends (or `frames` frames,
    when > 0); True when the sweep ended. On a terminal each frame replaces the last."""
    out = out or sys.stdout
    tty = getattr(out, "isatty", lambda: False)()
    seen, shown = Seen(), 0
    while True:
        lines, ended = frame(name, runs_dir, backend, seen)
        out.write((CLEAR if tty else ("\n" if shown else "")) + "\n".join(lines) + "\n")
        if ended:
            out.write("the sweep has ended\n")
        out.flush()
        shown += 1
        if ended or (frames and shown >= frames):
            return ended
        sleep(interval)
