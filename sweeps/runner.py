"""Run a sweep: expand the spec, skip finished runs, execute the rest, grow the grid.

Sweep-level files in `<runs-dir>/<name>/`, both rewritten atomically:
- plan.json: {"name", "spec", "backend", "overrides", "runs": [{"run_id", "config"}]},
  every planned run, grid extensions included;
- results.parquet: one row per planned run with a directory (config columns + summary,
  `sweeps.runs.load_runs`), rewritten as runs finish.

Everything the runner knows it reads back from the run directories, so the same command
resumes an interrupted sweep, and two commands on one directory share the work: each run
is trained under its lock (sweeps.executors), and a run held by another process is waited
for, never trained twice.
"""
from __future__ import annotations

import io
import json
import math
import time
from collections import Counter, defaultdict
from pathlib import Path

from sweeps.config import RunConfig
from sweeps.executors import ERROR, RunLock, is_locked, record_failure
from sweeps.runs import write_atomic, write_json_atomic
from sweeps.spec import SweepSpec, round_lr

HEARTBEAT_S = 30.0  # a progress line at least this often while runs are in flight
PLAN = "plan.json"
RESULTS = "results.parquet"


def grow(spec: SweepSpec, configs: list[RunConfig], status: dict[str, str | None]
         ) -> dict[int, tuple[list[float], str]]:
    """LRs to add per depth, with the reason, given the statuses of finished runs.

    Extension: while the runs at a depth's highest LR are all finished and none diverged
    (until="any"; with until="all": not all diverged), add the next LR up, at most
    max_extra_lrs per depth. Refinement (refine=true), once a depth is complete: the
    geometric midpoint between each arm's last stable and first divergent grid LR.
    Failed runs count as unknown.
    """
    ext = spec.extend
    points = [round_lr(spec.lr[-1] * spec.extend_factor ** k)
              for k in range(1, ext.max_extra_lrs + 1)]
    by_depth = defaultdict(list)
    for cfg in configs:
        by_depth[cfg.model.n_layer].append((cfg.model.qk_norm, cfg.train.lr,
                                            status.get(cfg.run_id)))
    out = {}
    for depth, runs in by_depth.items():
        planned = sorted({lr for _, lr, _ in runs})
        top = planned[-1]
        at_top = [s for _, lr, s in runs if lr == top]
        known = [s for s in at_top if s != "failed"]
        if None in at_top or not known:
            continue
        reached = (any if ext.until == "any" else all)(s == "diverged" for s in known)
        if not reached:
            extra = sum(lr in points for lr in planned)
            if extra < len(points):
                which = "no run" if ext.until == "any" else "not every run"
                out[depth] = ([points[extra]], f"{which} at lr {top:g} diverged; extension "
                                               f"{extra + 1} of {len(points)}")
            continue
        if not ext.refine or any(s is None for _, _, s in runs):
            continue
        coarse = [lr for lr in planned if lr in spec.lr or lr in points]
        mids = {}
        for arm in spec.qk_norm:
            arm_runs = [(lr, s) for q, lr, s in runs if q == arm and s not in (None, "failed")]
            diverged = sorted({lr for lr, s in arm_runs if s == "diverged" and lr in coarse})
            if not diverged:
                continue
            first = diverged[0]
            stable = [lr for lr in coarse if lr < first
                      and {s for x, s in arm_runs if x == lr} == {"ok"}]
            if not stable or any(stable[-1] < lr < first for lr in planned):
                continue
            mid = round_lr(math.sqrt(stable[-1] * first))
            if stable[-1] < mid < first:
                mids.setdefault(mid, []).append(f"qk_norm {arm}: {stable[-1]:g} ok, "
                                                f"{first:g} diverged")
        if mids:
            out[depth] = (sorted(mids), "refining between the last stable and first "
                                        "divergent lr (" + "; ".join(sum(mids.values(), [])) + ")")
    return out


class Sweep:
    """One spec expanded for one backend, over `<runs_dir>/<spec.name>/`."""

    def __init__(self, spec: SweepSpec, backend: str, overrides=(), runs_dir="runs"):
        self.spec, self.backend, self.overrides = spec, backend, list(overrides)
        self.dir = Path(runs_dir) / spec.name
        self.extra: dict[int, list[float]] = {}
        self.configs = self._expand()
        self._finished: dict[str, dict] = {}

    def _expand(self) -> dict[str, RunConfig]:
        return {c.run_id: c for c in self.spec.configs(self.backend, self.overrides, self.extra)}

    def run_dir(self, run_id: str) -> Path:
        return self.dir / run_id

    def summary(self, run_id: str) -> dict | None:
        """The run's summary once finished (cached: a finished run never changes)."""
        if run_id not in self._finished:
            path = self.run_dir(run_id) / "summary.json"
            if not path.exists():
                return None
            try:
                self._finished[run_id] = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                return None
        return self._finished[run_id]

    def forget(self, run_id: str) -> None:
        self._finished.pop(run_id, None)

    def status(self, run_id: str) -> str | None:
        summary = self.summary(run_id)
        return summary.get("status") if summary else None

    def grow(self) -> list[str]:
        """Add the LRs the extension rules ask for; one message per depth that grew."""
        added = grow(self.spec, list(self.configs.values()),
                     {rid: self.status(rid) for rid in self.configs})
        messages = []
        for depth, (lrs, reason) in sorted(added.items()):
            self.extra.setdefault(depth, []).extend(lrs)
            messages.append(f"n_layer {depth}: {reason}: adding lr "
                            f"{', '.join(f'{lr:g}' for lr in lrs)}")
        if added:
            self.configs = self._expand()
        return messages

    def order(self) -> list[str]:
        """Execution order: highest LR first (divergence, and so any extension, shows early)."""
        arms = {q: i for i, q in enumerate(self.spec.qk_norm)}
        return sorted(self.configs, key=lambda rid: (
            -self.configs[rid].train.lr, self.configs[rid].model.n_layer,
            arms[self.configs[rid].model.qk_norm], self.configs[rid].seed))

    # -- sweep-level files -------------------------------------------------------------------
    def write_plan(self) -> None:
        write_json_atomic(self.dir / PLAN, {
            "name": self.spec.name, "spec": self.spec.to_dict(), "backend": self.backend,
            "overrides": self.overrides,
            "runs": [{"run_id": rid, "config": cfg.to_dict()}
                     for rid, cfg in self.configs.items()]})

    def results(self):
        from sweeps.runs import load_runs

        df = load_runs(self.dir) if self.dir.exists() else None
        if df is None or df.empty:
            import pandas as pd
            return pd.DataFrame(columns=["run_id", "status"])
        df = df[df.run_id.isin(self.configs)].copy()
        df["run_dir"] = [str(self.run_dir(rid)) for rid in df.run_id]
        rank = {rid: i for i, rid in enumerate(self.configs)}
        return df.sort_values("run_id", key=lambda s: s.map(rank)).reset_index(drop=True)

    def write_results(self) -> None:
        buffer = io.BytesIO()
        self.results().to_parquet(buffer, index=False)
        write_atomic(self.dir / RESULTS, buffer.getvalue())

    # -- the plan as text ---------------------------------------------------------------------
    def describe(self) -> list[str]:
        from sweeps.params import count_params

        spec, cfgs = self.spec, list(self.configs.values())
        base = cfgs[0]
        by_depth = {c.model.n_layer: c for c in cfgs}
        depths = sorted(by_depth)
        n_grid = len(spec.qk_norm) * len(spec.lr) * len(depths) * len(spec.seed)
        tokens = base.train.max_steps * base.tokens_per_step
        params = ", ".join(
            f"L{d} {_si(count_params(by_depth[d].model, base.vocab_size)['total'])}"
            for d in depths)
        finished = Counter(self.status(rid) for rid in self.configs)
        done = sum(n for s, n in finished.items() if s is not None)
        lrs = ", ".join(f"{lr:g}" for lr in spec.lr)
        lines = [f"sweep {spec.name}: preset {spec.preset}, backend {self.backend} -> {self.dir}"]
        if spec.description:
            lines.append(f"  {spec.description}")
        lines += [
            f"  grid: qk_norm {', '.join(spec.qk_norm)} x lr {lrs} x n_layer "
            f"{', '.join(map(str, depths))} x seed {', '.join(map(str, spec.seed))} = "
            f"{n_grid} runs" + (f" (+{len(cfgs) - n_grid} added by extension)"
                                if len(cfgs) > n_grid else ""),
            f"  each run: {base.train.max_steps} steps x {base.tokens_per_step:,} tokens = "
            f"{tokens:,} tokens; params {params}",
            f"  total: {len(cfgs)} runs, {_si(tokens * len(cfgs))} tokens at most (diverged "
            f"runs stop early)",
            f"  extension: {self._extension_text()}",
            f"  state: {done} finished" + "".join(f", {n} {s}" for s, n in sorted(
                finished.items(), key=lambda kv: str(kv[0])) if s is not None)
            + f"; {len(cfgs) - done} to run"]
        return lines

    def _extension_text(self) -> str:
        ext = self.spec.extend
        if ext.max_extra_lrs == 0:
            text = "none"
        else:
            which = "no run" if ext.until == "any" else "not every run"
            text = (f"while {which} at a depth's top lr diverged, add lr "
                    f"x{self.spec.extend_factor:.3g} (at most {ext.max_extra_lrs} more)")
        return text + ("; then refine each arm's stable/divergent boundary once" if ext.refine
                       else "")


def settle(sweep: Sweep) -> list[str]:
    """Re-derive the extensions finished runs already call for (a rerun resumes them too)."""
    messages = []
    while added := sweep.grow():
        messages += added
    return messages


def dry_run(sweep: Sweep, echo=print) -> None:
    """The plan and every run's state; writes nothing."""
    messages = settle(sweep)
    for line in sweep.describe() + [f"extend {m}" for m in messages]:
        echo(line)
    for rid in sweep.order():
        state = sweep.status(rid) or ("running" if is_locked(sweep.run_dir(rid)) else
                                      "started" if sweep.run_dir(rid).exists() else "to run")
        echo(f"  {state:<9} {rid}")
    echo("dry run: nothing was written")


def run_sweep(sweep: Sweep, make_executor, echo=print, retry_failed: bool = False,
              prepare_data: bool = True) -> Counter:
    """Execute every unfinished run of the sweep; returns the count of final statuses."""
    began = time.time()
    messages = settle(sweep)
    for line in sweep.describe() + [f"extend {m}" for m in messages]:
        echo(line)
    retry = {rid for rid in sweep.configs if retry_failed and sweep.status(rid) == "failed"}
    if retry:
        echo(f"  retrying {len(retry)} failed run(s)")
    sweep.dir.mkdir(parents=True, exist_ok=True)
    sweep.write_plan()
    sweep.write_results()
    if all(sweep.status(rid) is not None for rid in sweep.configs) and not retry:
        echo(f"nothing to run: every run of {sweep.spec.name} is finished -> "
             f"{sweep.dir / RESULTS}")
        return Counter(sweep.status(rid) for rid in sweep.configs)
    if prepare_data:
        from sweeps.data import load_tokens

        load_tokens(next(iter(sweep.configs.values())).data, progress=True)
    executor = make_executor()
    echo(f"executor: {executor.describe()}")
    progress = _Progress(sweep, executor.capacity, echo)
    in_flight: dict[str, float] = {}
    elsewhere: set[str] = set()
    deaths: Counter = Counter()
    interrupted = False
    try:
        while True:
            for message in sweep.grow():
                progress.line(f"extend {message}", in_flight, elsewhere)
                sweep.write_plan()
            pending = [rid for rid in sweep.order()
                       if (sweep.status(rid) is None or rid in retry)
                       and rid not in in_flight and rid not in elsewhere]
            for rid in pending[:max(0, executor.free_slots())]:
                executor.submit(rid, str(sweep.run_dir(rid)), sweep.configs[rid].to_dict())
                in_flight[rid] = time.time()
                retry.discard(rid)
            if not in_flight and not elsewhere and not pending:
                break
            for rid, result in executor.wait(1.0):
                started = in_flight.pop(rid)
                status = result.get("status")
                if status == "locked":
                    elsewhere.add(rid)
                    progress.line(f"{'elsewhere':<9} {rid} (another process holds its lock; "
                                  f"waiting for it)", in_flight, elsewhere)
                elif status == "died" and deaths[rid] == 0:
                    deaths[rid] += 1
                    progress.line(f"{'died':<9} {rid} (its worker exited with code "
                                  f"{result.get('exitcode')}); resuming it from its checkpoint",
                                  in_flight, elsewhere)
                else:
                    if status == "died":
                        _record_death(sweep, rid, result)
                    sweep.forget(rid)
                    skipped = result.get("skipped", False)
                    progress.finished(rid, sweep.summary(rid) or result,
                                      None if skipped else time.time() - started, in_flight,
                                      elsewhere, note="(finished elsewhere)" if skipped else "")
                    sweep.write_results()
            for rid in sorted(elsewhere):
                if sweep.summary(rid) is not None:
                    elsewhere.discard(rid)
                    progress.finished(rid, sweep.summary(rid), None, in_flight, elsewhere,
                                      note="(finished elsewhere)")
                    sweep.write_results()
                elif not is_locked(sweep.run_dir(rid)):
                    elsewhere.discard(rid)  # its holder stopped without finishing: queue it
            progress.heartbeat(in_flight, elsewhere)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        executor.close(kill=interrupted)
    sweep.write_results()
    if interrupted:
        echo(f"interrupted after {_duration(time.time() - began)}: runs in flight lose at "
             f"most the steps since their last checkpoint; run the same command again to "
             f"finish the sweep")
        raise SystemExit(130)
    counts = Counter(sweep.status(rid) for rid in sweep.configs)
    echo(f"done in {_duration(time.time() - began)}: "
         + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: str(kv[0])))
         + f" -> {sweep.dir / RESULTS}")
    if counts.get("failed"):
        echo(f"{counts['failed']} run(s) failed: see error.txt in their directories; "
             f"rerun with --retry-failed after fixing the cause")
    return counts


def _record_death(sweep: Sweep, rid: str, result: dict) -> None:
    """A run whose worker died twice is recorded as failed (unless someone else took it)."""
    lock = RunLock(sweep.run_dir(rid))
    if not lock.acquire():
        return
    try:
        if sweep.summary(rid) is None:
            error = (f"the worker process died twice while training this run (exit code "
                     f"{result.get('exitcode')}; out of memory?) {result.get('error', '')}")
            write_atomic(sweep.run_dir(rid) / ERROR, error + "\n")
            record_failure(sweep.run_dir(rid), sweep.configs[rid], error)
    finally:
        lock.release()


class _Progress:
    """Plain-text progress lines (they read the same in a terminal and in a log file)."""

    def __init__(self, sweep: Sweep, capacity: int, echo):
        self.sweep, self.capacity, self.echo = sweep, max(1, capacity), echo
        self.began = self.last = time.time()

    def counts(self, in_flight, elsewhere) -> tuple[int, int, int]:
        total = len(self.sweep.configs)
        done = sum(self.sweep.status(rid) is not None for rid in self.sweep.configs)
        running = len(in_flight) + len(elsewhere)
        return done, running, max(0, total - done - running)

    def prefix(self, in_flight, elsewhere) -> str:
        done, running, left = self.counts(in_flight, elsewhere)
        total = len(self.sweep.configs)
        eta = self.eta()
        eta = "--" if eta is None else _duration(eta)
        width = len(str(total))
        return (f"[{done:>{width}}/{total} done, {running} running, {left} left | "
                f"{_duration(time.time() - self.began)} elapsed, ETA {eta}]")

    def eta(self) -> float | None:
        """Seconds left: steps left x seconds per step (per depth, from finished runs'
        own timings) / runs at once. Runs that will diverge early make it pessimistic."""
        sweep, timed = self.sweep, defaultdict(lambda: [0.0, 0])
        for rid, cfg in sweep.configs.items():
            summary = sweep.summary(rid) or {}
            if summary.get("wall_time_s") and summary.get("steps_run"):
                timed[cfg.model.n_layer][0] += summary["wall_time_s"]
                timed[cfg.model.n_layer][1] += summary["steps_run"]
        if not timed:
            return None

        def per_step(depth: int) -> float:
            near = min(timed, key=lambda d: abs(d - depth))
            return timed[near][0] / timed[near][1] * depth / near

        work = sum((cfg.train.max_steps - (last_step(sweep.run_dir(rid)) or 0))
                   * per_step(cfg.model.n_layer)
                   for rid, cfg in sweep.configs.items() if sweep.status(rid) is None)
        return work / self.capacity

    def line(self, text: str, in_flight, elsewhere) -> None:
        self.echo(f"{self.prefix(in_flight, elsewhere)} {text}")
        self.last = time.time()

    def finished(self, rid, summary, duration, in_flight, elsewhere, note="") -> None:
        summary = summary or {}
        status = summary.get("status", "?")
        loss = summary.get("final_val_loss")
        detail = f"val {loss:.4f}" if isinstance(loss, (int, float)) else ""
        if status == "diverged":
            detail = f"at step {summary.get('diverged_at')}"
        elif status == "failed":
            detail = f"{summary.get('error', '')} (see {self.sweep.run_dir(rid) / ERROR})"
        took = f"  {_duration(duration)}" if duration is not None else ""
        self.line(f"{status:<9} {rid}  {detail}{took} {note}".rstrip(), in_flight, elsewhere)

    def heartbeat(self, in_flight, elsewhere) -> None:
        if time.time() - self.last < HEARTBEAT_S or not (in_flight or elsewhere):
            return
        parts = []
        for rid in list(in_flight) + sorted(elsewhere):
            step = last_step(self.sweep.run_dir(rid))
            total = self.sweep.configs[rid].train.max_steps
            where = " elsewhere" if rid in elsewhere else ""
            parts.append(f"{rid} step {step if step is not None else '-'}/{total}{where}")
        self.line("running: " + "; ".join(parts), in_flight, elsewhere)


def last_step(run_dir: Path) -> int | None:
    """The step of the last metrics row, read from the end of metrics.jsonl."""
    path = Path(run_dir) / "metrics.jsonl"
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 8192))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _si(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:g}"
