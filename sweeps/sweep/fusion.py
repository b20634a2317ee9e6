"""`sweep --fuse auto|off|N`: a sweep's runs that differ only in LR and seed trained in fused
groups (sweeps.run.fused), each group one task of the executor, each run still its own run
directory, lock and result.

The runner is unchanged: FusingExecutor stands between it and the real executor, takes every
run the runner submits, queues it by its fusion key (the config without LR and seed) and
hands the executor groups of up to N runs, full groups first and a partial one only to a
worker that would otherwise idle. The worker side is execute_group (sweeps.sweep.executors.
execute_run passes it a task whose config is a group): it takes each run's lock, skips what is
finished or held elsewhere and trains the rest as one program; the results come back per run,
so the runner's log, results.parquet, `status --watch` (the runs' locks and metrics) and
resume see runs, not groups.

auto fuses where it pays: on a CUDA GPU, groups sized to the GPU's free memory; on an Apple
GPU (MLX, unified memory), to the host's; on a CPU, which is matmul-bound and gains nothing,
it is off (benchmarks/fused.py measures both).
"""

from __future__ import annotations

import sys
import time
import traceback

from sweeps.core.config import RunConfig
from sweeps.core.errors import HarnessError, breaks_device, environment_fault
from sweeps.core.params import available_memory, check_fits, state_bytes
from sweeps.platform.devices import gpu_free_memory
from sweeps.run.backends import Execution
from sweeps.run.fused import fuse_key

GROUP = "fused_group"  # a task's config is a group when it has this key (a RunConfig has not)
MAX_AUTO = 64  # auto's largest group: HFTA's and the largest M
AUTO_MEMORY_SHARE = 0.5  # auto sizes groups to this share of the free memory (headroom)
WAITING = 1 << 20  # runs the runner may hand over at once: all of them, to group them well


def parse_fuse(text: str) -> str | int:
    """'auto', 'off' or a group size N >= 1 (1: off), else a one-line error."""
    text = str(text).strip().lower()
    if text in ("auto", "off"):
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise HarnessError(
        f"--fuse takes auto, off or a group size N >= 1 (got '{text}'); e.g. --fuse 16"
    )


def group_size(
    fuse: str | int, execution: Execution, configs: list[RunConfig], gpus: list[str]
) -> tuple[int, str]:
    """(runs per group, why): 1 means unfused. gpus: the CUDA devices the runs use
    (sweeps.sweep.workers.uses_gpus)."""
    if fuse == "off" or fuse == 1:
        return 1, "off"
    need = max(state_bytes(c) for c in configs)
    if isinstance(fuse, int):
        check_fits(max(configs, key=state_bytes), models=fuse)  # the host, before any run
        return fuse, f"--fuse {fuse}"
    if gpus:
        free, where = gpu_free_memory(gpus), "GPU memory free"
    elif execution.backend == "mlx" and execution.device in ("auto", "gpu") and _apple():
        free, where = available_memory(), "unified memory available"
    else:
        return 1, "auto: off on a CPU, where fusing does not pay (benchmarks/fused.py)"
    if free is None:
        return 8, "auto: 8 (the GPU's free memory is unknown)"
    size = max(1, min(MAX_AUTO, int(free * AUTO_MEMORY_SHARE // need)))
    return size, f"auto: up to {size} runs per group ({AUTO_MEMORY_SHARE:.0%} of the {where})"


def _apple() -> bool:
    import platform

    return sys.platform == "darwin" and platform.machine() == "arm64"


def fusing(make_executor, size: int):
    """The executor constructor, wrapped to fuse groups of up to `size` runs (size 1: as is)."""
    if size <= 1:
        return make_executor
    return lambda: FusingExecutor(make_executor(), size)


class FusingExecutor:
    """An Executor (sweeps.sweep.executors) that fuses: see the module's docstring."""

    def __init__(self, inner, size: int):
        self.inner, self.size = inner, size
        self.capacity = inner.capacity * size
        self.queued: dict[str, list[tuple[str, str, dict]]] = {}  # fusion key -> runs
        self.tasks: dict[str, list[str]] = {}  # task id -> its run ids

    def describe(self) -> str:
        return (
            f"{self.inner.describe()}; runs that differ only in LR and seed fused in groups "
            f"of up to {self.size} (--fuse)"
        )

    def free_slots(self) -> int:
        return WAITING - sum(len(q) for q in self.queued.values())

    def submit(self, run_id: str, run_dir: str, config: dict) -> None:
        key = fuse_key(RunConfig.from_dict(config))
        self.queued.setdefault(key, []).append((run_id, run_dir, config))

    def _dispatch(self) -> None:
        """Groups to free workers: full ones first, then the largest partial one."""
        while self.queued and self.inner.free_slots() > 0:
            key = max(self.queued, key=lambda k: min(len(self.queued[k]), self.size))
            runs, rest = self.queued[key][: self.size], self.queued[key][self.size :]
            if rest:
                self.queued[key] = rest
            else:
                del self.queued[key]
            task = f"{runs[0][0]}+{len(runs) - 1}" if len(runs) > 1 else runs[0][0]
            self.tasks[task] = [r[0] for r in runs]
            self.inner.submit(task, runs[0][1], {GROUP: runs})

    def wait(self, timeout: float) -> list[tuple[str, dict]]:
        self._dispatch()
        events = []
        for task, result in self.inner.wait(timeout):
            runs = self.tasks.pop(task)
            if result.get("status") == "group":
                events += [(rid, result["results"][rid]) for rid in runs]
            else:  # the whole task: a worker that died, a fault of the machine
                events += [(rid, dict(result)) for rid in runs]
        self._dispatch()
        return events

    def close(self, kill: bool = False) -> None:
        self.inner.close(kill)


# -- the worker side --------------------------------------------------------------------------
_factories: dict = {}  # Execution -> its fused trainer factory, built once per worker process


def execute_group(runs: list, execution: Execution) -> dict:
    """Train a group task's runs as one program under their locks (sweeps.sweep.executors.
    execute_run does the same for one run); {"status": "group", "results": {run_id: result}}.
    A group that raises is recorded as failed in each of its unfinished runs."""
    from sweeps.run.fused import train_group
    from sweeps.run.rundir import RunDir

    results: dict[str, dict] = {}
    locks, train = [], []
    try:
        for run_id, run_dir, config in runs:
            run = RunDir(run_dir)
            lock = run.lock()
            if not lock.acquire():
                results[run_id] = {"status": "locked"}
                continue
            locks.append(lock)
            summary = run.read_summary()
            if summary is not None and not (
                execution.retry_failed and summary.get("status") == "failed"
            ):
                results[run_id] = {**summary, "skipped": True}
                continue
            run.clear_failure()
            train.append((run_id, run, RunConfig.from_dict(config)))
        if train:
            results.update(_train(train, execution, train_group))
    except OSError as e:  # the disk, not the runs: nothing recorded, they resume later
        fault = environment_fault(e)
        if fault is None:
            raise
        return {"status": "fault", "error": str(fault)}
    finally:
        for lock in locks:
            lock.release()
    exits = any(r.get("worker_exits") for r in results.values())
    return {"status": "group", "results": results, **({"worker_exits": True} if exits else {})}


def _train(train: list, execution: Execution, train_group) -> dict:
    began = time.time()
    cfgs = [cfg for _, _, cfg in train]
    try:
        if execution not in _factories:
            _factories[execution] = execution.fused_factory()
        summaries = train_group(cfgs, [run.path for _, run, _ in train], _factories[execution])
        return {run_id: s for (run_id, _, _), s in zip(train, summaries)}
    except Exception as e:  # recorded in each unfinished run directory; the sweep goes on
        if environment_fault(e):
            raise
        out = {}
        for run_id, run, cfg in train:
            if run.is_finished:  # a run the group finished before it failed (diverged)
                out[run_id] = run.read_summary()
                continue
            summary = run.record_failure(
                cfg,
                f"{type(e).__name__}: {e} (in a fused group of {len(train)})",
                time.time() - began,
                details=traceback.format_exc(),
            )
            out[run_id] = {**summary, "worker_exits": True} if breaks_device(e) else summary
        return out


# -- the estimate -------------------------------------------------------------------------------
class _GroupProbe:
    """A fused trainer of `size` runs of one config (seeds 0..size-1), seen as one run by
    sweeps.sweep.estimate.measure: each step trains every model, so the times it measures
    are a group's."""

    def __init__(self, make_fused, cfg: RunConfig, size: int):
        self.size = size
        self.fused = make_fused([cfg.with_overrides([f"seed={s}"]) for s in range(size)])
        self.device, self.device_name = self.fused.device, self.fused.device_name

    def set_train_tokens(self, tokens) -> None:
        self.fused.set_train_tokens(tokens)

    def train_step(self, starts, lr: float):
        import numpy as np

        return self.fused.train_step(np.stack([starts] * self.size), [lr] * self.size)

    def read(self, handles: list):
        return self.fused.read(handles)[:, 0]

    def eval_loss(self, x, y) -> float:
        return float(self.fused.eval_losses(x, y)[0])


def measure_group(execution: Execution, cfg: RunConfig, size: int, seconds: float, budget_s):
    """sweeps.sweep.estimate.measure of a fused group of `size` runs of cfg, per run: its
    step, evaluation and start-up times divided by size (a plain function: a child process
    can run it)."""
    import dataclasses

    from sweeps.sweep.estimate import ACCELERATORS, measure

    make = execution.fused_factory()
    probe = measure(
        lambda c: _GroupProbe(make, c, size),
        cfg,
        seconds=seconds,
        tf32=execution.tf32,
        budget_s=budget_s,
        pilot=execution.device not in ACCELERATORS,
    )
    return dataclasses.replace(
        probe,
        step_s=probe.step_s / size,
        eval_s=probe.eval_s / size,
        startup_s=probe.startup_s / size,
    )


def estimate_fused(sweep, execution: Execution, size: int, echo=print, apart: bool = False):
    """The sweep's cost fused in groups of `size`, probed as a group of the largest config,
    beside the one-run-at-a-time estimate sweeps.sweep.estimate printed before it."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from sweeps.core.fmt import duration
    from sweeps.sweep import grid
    from sweeps.sweep.estimate import PROBE_BUDGET_S, largest, sweep_estimate

    configs = list(sweep.configs.values())
    args = (execution, largest(configs), size, 3.0, PROBE_BUDGET_S)
    if apart:  # no GPU context kept in this process for the sweep that follows
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            probe = pool.submit(measure_group, *args).result()
    else:
        probe = measure_group(*args)
    result = sweep_estimate(configs, grid.max_extra_runs(sweep.spec), probe)
    planned, worst = result["planned"]["seconds"], result["worst"]["seconds"]
    echo(
        f"  fused in groups of {size} (--fuse): {probe.tokens_per_s * size:,.0f} tokens/s per "
        f"group ({probe.tokens_per_s:,.0f} per run); planned {planned / 3600:,.2f} "
        f"device-hours ({duration(planned)}), worst case {worst / 3600:,.2f} ({duration(worst)})"
    )
    return result
