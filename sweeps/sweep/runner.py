"""Run a sweep: expand the spec, skip finished runs, execute the rest, grow the grid.

The sweep's own files (plan.json, results.parquet) are sweeps.sweep.sweepdir's; everything the
runner knows about runs it reads back from the run directories (sweeps.run.rundir), so the same
command resumes an interrupted sweep, and two commands on one directory share the work:
each run is trained under its lock, and a run held by another process is waited for,
never trained twice.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from sweeps.core.config import RunConfig
from sweeps.core.errors import EnvironmentFault, environment_fault, interrupted_code
from sweeps.core.fmt import duration
from sweeps.core.ladder import step_s_by_shape, step_s_from
from sweeps.run.rundir import ERROR, RunDir, RunRecord, runs_table
from sweeps.run.tail import last_row
from sweeps.sweep import plan_text
from sweeps.sweep.executors import Executor
from sweeps.sweep.grid import check_size, grid_additions
from sweeps.sweep.spec import MAX_RUNS, SweepSpec
from sweeps.sweep.sweepdir import SweepDir

HEARTBEAT_S = 30.0  # a progress line at least this often while runs are in flight
_UNREAD = object()  # Sweep._folder_kind before plan.json was read


class Sweep:
    """One spec expanded for one backend, over `<runs_dir>/<spec.name>/`."""

    def __init__(
        self,
        spec: SweepSpec,
        backend: str,
        overrides=(),
        runs_dir="runs",
        max_runs: int = MAX_RUNS,
        record: str | None = None,
        execution: dict | None = None,
        archived: dict[str, dict] | None = None,
        grows: str | None = None,
        device_kind: str | None = None,
    ):
        """record: the text of the sweep's spec.toml to write with its plan (the command's
        spec, sweeps.sweep.record; None: keep the folder's); execution: the device choices
        plan.json records (device, compile, tf32, deterministic); archived: run_id -> summary
        of the runs a committed report holds (sweeps.sweep.archived), finished here unless a
        run directory says otherwise; grows: that report's folder, as plan.json records it;
        device_kind: the kind of device this sweep trains on (sweeps.platform.devices), which
        plan.json keeps from the sweep that created the folder."""
        self.spec, self.backend, self.overrides = spec, backend, list(overrides)
        self.record_text, self.execution = record, execution
        self.device_kind, self._folder_kind = device_kind, _UNREAD
        self.archived, self.grows = dict(archived or {}), grows
        self.files = SweepDir(Path(runs_dir) / spec.name)
        self.dir = self.files.path
        self.extra: dict[int, list[float]] = {}
        check_size(spec, max_runs)  # before expanding anything
        self.configs = self._expand()
        self._records: dict[str, RunRecord] = {}  # run_id -> what its directory held

    def _expand(self) -> dict[str, RunConfig]:
        return {c.run_id: c for c in self.spec.configs(self.backend, self.overrides, self.extra)}

    def run_dir(self, run_id: str) -> Path:
        return self.dir / run_id

    def record(self, run_id: str) -> RunRecord | None:
        """The run directory as last read (RunDir.record), None when it cannot be read. Read
        again only when its summary.json came or went: config.json never changes once
        written, and a finished run never changes."""
        run = RunDir(self.run_dir(run_id))
        known = self._records.get(run_id)
        if (
            known is not None
            and known.config is not None
            and known.problem is None
            and (known.summary is not None) == run.summary_path.exists()
        ):
            return known
        try:
            self._records[run_id] = run.record()
        except OSError:
            self._records.pop(run_id, None)
            return None
        return self._records[run_id]

    def summary(self, run_id: str) -> dict | None:
        """The run's summary once finished and sound; None for unfinished and corrupt runs.
        A run with no directory here that the report given to --from-report holds: its
        archived summary (the run directory, once there is one, decides)."""
        if run_id in self.archived and not self.run_dir(run_id).is_dir():
            return self.archived[run_id]
        record = self.record(run_id)
        return record.summary if record is not None else None

    def from_report(self) -> int:
        """How many planned runs count as finished from the archived report."""
        return sum(rid in self.archived and not self.run_dir(rid).is_dir() for rid in self.configs)

    def corrupt(self) -> list[tuple[str, str]]:
        """(run_id, problem) of planned run directories whose files disagree."""
        out = []
        for rid in self.configs:
            run = RunDir(self.run_dir(rid))
            record = self.record(rid) if run.path.is_dir() and not run.is_locked() else None
            if record is not None and record.problem:
                out.append((rid, record.problem))
        return out

    def forget(self, run_id: str) -> None:
        self._records.pop(run_id, None)

    def status(self, run_id: str) -> str | None:
        summary = self.summary(run_id)
        return summary.get("status") if summary else None

    def extend(self) -> list[str]:
        """Add the LRs the grid rules ask for (sweeps.sweep.grid); one message per rung (depth,
        or width in a width ladder) that grew."""
        added = grid_additions(
            self.spec, list(self.configs.values()), {rid: self.summary(rid) for rid in self.configs}
        )
        messages = []
        axis = self.spec.ladder
        for rung, (lrs, reason) in sorted(added.items()):
            planned = {c.train.lr for c in self.configs.values() if getattr(c.model, axis) == rung}
            lrs = [lr for lr in lrs if lr not in planned]  # only new LRs: settle() ends
            if not lrs:
                continue
            self.extra.setdefault(rung, []).extend(lrs)
            messages.append(
                f"{axis} {rung}: {reason}: adding lr {', '.join(f'{lr:g}' for lr in lrs)}"
            )
        if messages:
            self.configs = self._expand()
        return messages

    def order(self) -> list[str]:
        """Execution order: highest LR first (divergence, and so any extension, shows early);
        with the spec's order = "seed", one seed at a time over every rung, LR and arm, so
        that a machine change part way through falls on whole seeds, never on a rung."""
        arms = {a.name: i for i, a in enumerate(self.spec.arms)}

        def key(rid):
            c = self.configs[rid]
            place = (-c.train.lr, c.model.n_layer, c.model.n_embd, arms[c.arm])
            return (c.seed, *place) if self.spec.order == "seed" else (*place, c.seed)

        return sorted(self.configs, key=key)

    # -- sweep-level files -------------------------------------------------------------------
    def folder_kind(self) -> str | None:
        """The device kind plan.json keeps: the one of the sweep that created the folder
        (this one's, for a new folder); None in a folder from before it was kept."""
        if self._folder_kind is _UNREAD:
            new = not self.files.has_plan()
            self._folder_kind = self.device_kind if new else self.files.device_kind()
        return self._folder_kind

    def write_plan(self) -> None:
        kind = self.folder_kind()  # before the first plan.json of a new folder is written
        if self.record_text is not None:  # first: a plan never outlives its definition
            self.files.write_record(self.record_text)
            self.record_text = None
        self.files.write_plan(
            self.spec.to_dict(),
            self.backend,
            self.overrides,
            self.configs,
            self.execution,
            self.grows,
            kind,
        )

    def execution_note(self) -> str | None:
        """One line when the folder's last sweep ran with other device choices than this one
        (results may differ in their last digits; run ids do not say so)."""
        try:
            before = (self.files.read_plan() or {}).get("execution")
        except Exception:  # a damaged plan.json is the runner's to report
            return None
        kind = self.folder_kind()
        if kind and self.device_kind and kind != self.device_kind:
            return (
                f"  note: this folder's sweep started on {kind}; this one trains on "
                f"{self.device_kind} (numbers may differ in their last digits; each run's "
                f"summary names its device)"
            )
        if not before or not self.execution or before == self.execution:
            return None
        shown = lambda e: ", ".join(f"{k} {e.get(k)}" for k in sorted(e))  # noqa: E731
        return (
            f"  note: the last sweep here ran with {shown(before)}; this one with "
            f"{shown(self.execution)} (numbers may differ in their last digits)"
        )

    def results(self):
        """One row per planned run that has a directory with config.json (the runs table of
        sweeps.run.rundir), from the records the sweep already holds: only directories whose
        summary came or went since are read again."""
        import pandas as pd

        records = []
        for rid in self.configs:
            record = self.record(rid) if self.run_dir(rid).is_dir() else None
            if (
                record is not None
                and record.run_id in self.configs
                and (record.config is not None or (record.path / "config.json").exists())
            ):
                records.append(record)
        if not records:
            return pd.DataFrame(columns=["run_id", "status"])
        # rows in directory order, as a scan of the sweep folder finds them (column order)
        df = runs_table(sorted(records, key=lambda r: str(r.path)))
        df["run_dir"] = [str(self.run_dir(rid)) for rid in df.run_id]
        rank = {rid: i for i, rid in enumerate(self.configs)}
        return df.sort_values("run_id", key=lambda s: s.map(rank)).reset_index(drop=True)

    def write_results(self) -> None:
        self.files.write_results(self.results())

    def write_curves(self) -> None:
        """curves.parquet (sweeps.sweep.curves): at the end of a sweep, not after every run
        (it reads every metrics.jsonl)."""
        from sweeps.sweep.curves import curves_frame

        self.files.write_curves(curves_frame(self.dir, self.configs))

    # -- the plan as text ---------------------------------------------------------------------
    def describe(self, cost: bool = True) -> list[str]:
        """The plan as `sweep` and `--dry-run` print it (sweeps.sweep.plan_text); cost: False
        leaves out its cost, which --dry-run prints last."""
        return plan_text.describe(self, cost)


def settle(sweep: Sweep) -> list[str]:
    """Re-derive the extensions finished runs already call for (a rerun resumes them too)."""
    messages = []
    while added := sweep.extend():
        messages += added
    return messages


def dry_run(sweep: Sweep, echo=print, list_runs: bool = False) -> None:
    """The plan, its runs counted by state (each listed with list_runs; a corrupt one always),
    then its cost, last, so that it is still on the screen when the command ends; writes
    nothing."""
    messages = settle(sweep)
    for line in sweep.describe(cost=False) + [f"extend {m}" for m in messages]:
        echo(line)
    corrupt = dict(sweep.corrupt())
    states = {}
    for rid in sweep.order():
        states[rid] = sweep.status(rid) or RunDir(sweep.run_dir(rid)).state()
        if list_runs or rid in corrupt:
            echo(
                f"  {states[rid]:<11} {rid}"
                + (
                    f"  ({corrupt[rid]}; a sweep moves it aside and reruns it)"
                    if rid in corrupt
                    else ""
                )
            )
    if not list_runs:
        echo(
            f"  runs: {plan_text.run_counts(list(states.values()))} (each with its state: "
            "--dry-run --list-runs)"
        )
    for line in plan_text.cost_block(sweep):
        echo(line)
    echo("dry run: nothing was written")


def run_sweep(
    sweep: Sweep, make_executor, echo=print, retry_failed: bool = False, prepare_data: bool = True
) -> Counter:
    """Execute every unfinished run of the sweep; returns the count of final statuses.

    prepare_data: prepare the data here and check, before any run is written, that every
    run fits this machine (the local executor; Ray nodes check their own). A full or
    read-only disk (sweeps.core.errors.EnvironmentFault) stops the sweep: runs in flight are
    killed and resume from their checkpoints when the same command runs again."""
    began = time.time()
    retry = _prepare(sweep, echo, retry_failed)
    if retry is not None and prepare_data:
        _check_runs_fit(sweep)
    sweep.dir.mkdir(parents=True, exist_ok=True)
    sweep.write_plan()
    sweep.write_results()
    if retry is None:
        sweep.write_curves()
        echo(
            f"nothing to run: every run of {sweep.spec.name} is finished -> "
            f"{sweep.files.results_path}"
        )
        return Counter(sweep.status(rid) for rid in sweep.configs)
    executor = make_executor()
    echo(f"executor: {executor.describe()}")
    scheduler = _Scheduler(sweep, executor, retry, echo)
    stopped: BaseException | None = None
    try:
        while scheduler.step():
            pass
    except (KeyboardInterrupt, EnvironmentFault, OSError) as e:
        stopped = e
    finally:
        scheduler.progress.flush()
        executor.close(kill=stopped is not None)
    if isinstance(stopped, (EnvironmentFault, OSError)):
        _write_results_if_possible(sweep)
        raise environment_fault(stopped) or stopped
    sweep.write_results()
    sweep.write_curves()
    if stopped is not None:
        echo(
            f"interrupted after {duration(time.time() - began)}: runs in flight lose at "
            f"most the steps since their last checkpoint; run the same command again to "
            f"finish the sweep"
        )
        raise SystemExit(interrupted_code(stopped))
    counts = Counter(sweep.status(rid) for rid in sweep.configs)
    echo(
        f"done in {duration(time.time() - began)}: "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: str(kv[0])))
        + f" -> {sweep.files.results_path}"
    )
    if counts.get("failed"):
        echo(
            f"{counts['failed']} run(s) failed: see error.txt in their directories; "
            f"rerun with --retry-failed after fixing the cause"
        )
    return counts


def _check_runs_fit(sweep: Sweep) -> None:
    """Prepare the data and refuse, before any run starts, what would fail every run: a
    split shorter than a sequence, a model too large for this machine's memory."""
    from sweeps.core.params import check_fits, state_bytes
    from sweeps.data import load_tokens
    from sweeps.data.batches import check_splits
    from sweeps.run.backends import PROGRAMS

    models = list({c.model: c for c in sweep.configs.values()}.values())  # one per model
    tokens = load_tokens(models[0].data, progress=True, program=PROGRAMS[sweep.backend])
    for block_size in sorted({c.model.block_size for c in models}):
        check_splits(tokens.train, tokens.val, block_size)
    check_fits(max(models, key=state_bytes))


def _write_results_if_possible(sweep: Sweep) -> None:
    """results.parquet after a fault: best effort (the disk may be the fault)."""
    try:
        sweep.write_results()
    except OSError:
        pass


def _prepare(sweep: Sweep, echo, retry_failed: bool) -> set[str] | None:
    """Move corrupt runs aside and print the plan; the failed runs to retry, or None when
    every run is finished and none is to be retried."""
    for rid, problem in sweep.corrupt():
        where = RunDir(sweep.run_dir(rid)).move_aside()
        echo(f"corrupt   {rid}: {problem}; moved to {where} and queued to run again")
    messages = settle(sweep)
    for line in sweep.describe() + [f"extend {m}" for m in messages]:
        echo(line)
    retry = {rid for rid in sweep.configs if retry_failed and sweep.status(rid) == "failed"}
    if retry:
        echo(f"  retrying {len(retry)} failed run(s)")
    if all(sweep.status(rid) is not None for rid in sweep.configs) and not retry:
        return None
    return retry


class _Scheduler:
    """The one owner of a running sweep's scheduling state: which runs are in flight here,
    which another process holds (`elsewhere`), which worker deaths were forgiven once."""

    def __init__(self, sweep: Sweep, executor: Executor, retry: set[str], echo):
        self.sweep, self.executor, self.retry = sweep, executor, retry
        self.in_flight: dict[str, float] = {}  # run_id -> when it was submitted
        self.elsewhere: set[str] = set()
        self.deaths: Counter = Counter()
        self.progress = _Progress(sweep, self, executor.capacity, echo)

    def step(self) -> bool:
        """Grow the grid, submit what fits, handle what ended; False once all is done."""
        for message in self.sweep.extend():
            self.progress.line(f"extend {message}")
            self.sweep.write_plan()
        pending = [
            rid
            for rid in self.sweep.order()
            if (self.sweep.status(rid) is None or rid in self.retry)
            and rid not in self.in_flight
            and rid not in self.elsewhere
        ]
        for rid in pending[: max(0, self.executor.free_slots())]:
            self.executor.submit(
                rid, str(self.sweep.run_dir(rid)), self.sweep.configs[rid].to_dict()
            )
            self.in_flight[rid] = time.time()
            self.retry.discard(rid)
        self.progress.flush()  # finished lines count the runs that just started as running
        if not self.in_flight and not self.elsewhere and not pending:
            return False
        for rid, result in self.executor.wait(1.0):
            self.ended(rid, result)
        self.check_elsewhere()
        self.progress.heartbeat()
        return True

    def ended(self, rid: str, result: dict) -> None:
        started = self.in_flight.pop(rid)
        status = result.get("status")
        if status == "fault":  # the machine, not the run: stop the sweep (run_sweep)
            raise EnvironmentFault(
                result.get("error") or f"{rid} stopped by a fault of the machine"
            )
        if status == "locked":
            self.elsewhere.add(rid)
            self.progress.line(
                f"{'elsewhere':<9} {rid} (another process holds its lock; waiting for it)"
            )
        elif status == "died" and self.deaths[rid] == 0:
            self.deaths[rid] += 1
            self.progress.line(
                f"{'died':<9} {rid} (its worker exited with code "
                f"{result.get('exitcode')}); resuming it from its checkpoint"
            )
        else:
            if status == "died":
                _record_death(self.sweep, rid, result)
            self.sweep.forget(rid)
            skipped = result.get("skipped", False)
            self.progress.finished(
                rid,
                self.sweep.summary(rid) or result,
                None if skipped else time.time() - started,
                note="(finished elsewhere)" if skipped else "",
            )
            self.sweep.write_results()

    def check_elsewhere(self) -> None:
        """Runs another process holds: done when their summary appears; queued again when
        their holder stopped without finishing them."""
        for rid in sorted(self.elsewhere):
            if self.sweep.summary(rid) is not None:
                self.elsewhere.discard(rid)
                self.progress.finished(
                    rid, self.sweep.summary(rid), None, note="(finished elsewhere)"
                )
                self.sweep.write_results()
            elif not RunDir(self.sweep.run_dir(rid)).is_locked():
                self.elsewhere.discard(rid)

    def running(self) -> list[str]:
        return list(self.in_flight) + sorted(self.elsewhere)


def _record_death(sweep: Sweep, rid: str, result: dict) -> None:
    """A run whose worker died twice is recorded as failed (unless someone else took it)."""
    run = RunDir(sweep.run_dir(rid))
    lock = run.lock()
    if not lock.acquire():
        return
    try:
        if sweep.summary(rid) is None:
            run.record_failure(
                sweep.configs[rid],
                (
                    f"the worker process died twice while training this run (exit code "
                    f"{result.get('exitcode')}; out of memory?) {result.get('error', '')}"
                ),
            )
    finally:
        lock.release()


class _Progress:
    """Plain-text progress lines (they read the same in a terminal and in a log file)."""

    def __init__(self, sweep: Sweep, scheduler: _Scheduler, capacity: int, echo):
        self.sweep, self.scheduler, self.echo = sweep, scheduler, echo
        self.capacity = max(1, capacity)
        self.began = self.last = time.time()
        self.waiting: list[str] = []  # finished lines, printed once the next runs started

    def counts(self) -> tuple[int, int, int]:
        total = len(self.sweep.configs)
        done = sum(self.sweep.status(rid) is not None for rid in self.sweep.configs)
        running = len(self.scheduler.running())
        return done, running, max(0, total - done - running)

    def prefix(self) -> str:
        done, running, left = self.counts()
        total = len(self.sweep.configs)
        eta = self.eta()
        eta = "--" if eta is None else duration(eta)
        width = len(str(total))
        return (
            f"[{done:>{width}}/{total} done, {running} running, {left} left | "
            f"{duration(time.time() - self.began)} elapsed, ETA {eta}]"
        )

    def eta(self) -> float | None:
        """Seconds left: steps left x seconds per step (per model shape, the median of finished
        runs' own timings: sweeps.core.ladder.step_s_by_shape) / runs at once. Runs that will
        diverge early make it pessimistic."""
        sweep = self.sweep
        summaries = {rid: sweep.summary(rid) or {} for rid in sweep.configs}
        per_step = step_s_by_shape(
            (cfg.model, summaries[rid].get("wall_time_s"), summaries[rid].get("steps_run"))
            for rid, cfg in sweep.configs.items()
        )
        if not per_step:
            return None
        work = sum(
            (cfg.train.max_steps - (RunDir(sweep.run_dir(rid)).last_step() or 0))
            * step_s_from(per_step, cfg.model)
            for rid, cfg in sweep.configs.items()
            if sweep.status(rid) is None
        )
        return work / self.capacity

    def line(self, text: str) -> None:
        self.echo(f"{self.prefix()} {text}")
        self.last = time.time()

    def finished(self, rid, summary, seconds, note="") -> None:
        summary = summary or {}
        status = summary.get("status", "?")
        loss = summary.get("final_val_loss")
        detail = f"val {loss:.4f}" if isinstance(loss, (int, float)) else ""
        if status == "diverged":
            detail = f"at step {summary.get('diverged_at')}"
        elif status == "failed":
            detail = f"{summary.get('error', '')} (see {self.sweep.run_dir(rid) / ERROR})"
        took = f"  {duration(seconds)}" if seconds is not None else ""
        self.waiting.append(f"{status:<9} {rid}  {detail}{took} {note}".rstrip())

    def flush(self) -> None:
        for text in self.waiting:
            self.line(text)
        self.waiting = []

    def heartbeat(self) -> None:
        running = self.scheduler.running()
        if time.time() - self.last < HEARTBEAT_S or not running:
            return
        parts = []
        for rid in running:
            row = last_row(self.sweep.run_dir(rid)) or {}
            step, loss = row.get("step"), row.get("train_loss_ema")
            total = self.sweep.configs[rid].train.max_steps
            where = " elsewhere" if rid in self.scheduler.elsewhere else ""
            parts.append(
                f"{rid} step {step if step is not None else '-'}/{total}"
                + (f" loss {loss:.4f}" if isinstance(loss, (int, float)) else "")
                + where
            )
        self.line("running: " + "; ".join(parts))
