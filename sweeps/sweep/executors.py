"""Where a sweep's runs execute: a local pool of worker processes, or Ray tasks.

Both call `execute_run` on the worker side, which takes the run's lock (sweeps.run.rundir), trains
it with the shared loop (resuming from its checkpoint) and records a run that raises as
`failed` with its traceback in error.txt.

The runner talks to an executor through the `Executor` protocol. A result is the run's
summary, `{"status": "locked"}` when another process holds the run, `{"status": "died",
"exitcode": n}` when the worker process itself died mid-run, or `{"status": "fault",
"error": line}` when the machine failed it (a full or read-only disk, sweeps.core.errors): not
the run's failure, so nothing is recorded and the sweep stops. A run that hit a CUDA error
which breaks its process's GPU context (sweeps.core.errors.breaks_device) is recorded as
failed and its summary carries `"worker_exits": True`: the local worker exits and the pool
starts a fresh one in its place (Ray gives each GPU task a fresh worker process by default).
EXECUTORS is the registry the CLI offers (--executor); adding one is a class with
`from_options` and an entry there.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import wait as wait_connections
from pathlib import Path
from typing import Protocol

from sweeps.core.errors import EnvironmentFault, HarnessError, breaks_device, environment_fault
from sweeps.core.params import check_fits, gpu_share, state_bytes
from sweeps.platform.blas import preload_env
from sweeps.platform.devices import DETERMINISTIC, gpu_free_memory
from sweeps.run.backends import Execution
from sweeps.sweep.fusion import GROUP, execute_group
from sweeps.sweep.workers import uses_gpus, worker_envs

RAY_CONNECT_TIMEOUT_S = 10.0  # a cluster address that does not answer within this is refused


class Executor(Protocol):
    capacity: int  # runs at once

    def describe(self) -> str:
        """One line for the sweep's log: where runs go."""

    def free_slots(self) -> int:
        """How many more runs submit() takes now."""

    def submit(self, run_id: str, run_dir: str, config: dict) -> None:
        """Start training one run (a RunConfig as a dict) in run_dir."""

    def wait(self, timeout: float) -> list[tuple[str, dict]]:
        """(run_id, result) of runs that ended within timeout seconds."""

    def close(self, kill: bool = False) -> None:
        """Stop the workers: let them finish (kill False) or kill them mid-run."""


# -- the worker side -----------------------------------------------------------------------
_factories: dict = {}  # Execution -> its trainer factory, built once per worker process


def execute_run(run_dir: str, config: dict, execution: Execution) -> dict:
    """Train one run under its lock; a run that raises is recorded as failed, not raised. A
    task that is a fused group of runs (sweeps.sweep.fusion) goes to execute_group."""
    if GROUP in config:
        return execute_group(config[GROUP], execution)
    from sweeps.core.config import RunConfig
    from sweeps.run.loop import train_run
    from sweeps.run.rundir import RunDir

    run = RunDir(run_dir)
    lock = run.lock()
    try:
        if not lock.acquire():
            return {"status": "locked"}
        summary = run.read_summary()
        if summary is not None and not (
            execution.retry_failed and summary.get("status") == "failed"
        ):
            return {**summary, "skipped": True}
        run.clear_failure()
        cfg = RunConfig.from_dict(config)
        began = time.time()
        try:
            if execution not in _factories:
                _factories[execution] = execution.trainer_factory()
            return train_run(cfg, run.path, _factories[execution])
        except Exception as e:  # recorded in the run directory; the sweep goes on
            if environment_fault(e):
                raise
            summary = run.record_failure(
                cfg, f"{type(e).__name__}: {e}", time.time() - began, details=traceback.format_exc()
            )
            # A broken CUDA context fails every later run of this process: the worker ends.
            return {**summary, "worker_exits": True} if breaks_device(e) else summary
    except OSError as e:  # the disk, not the run: nothing recorded, it resumes later
        fault = environment_fault(e)
        if fault is None:
            raise
        return {"status": "fault", "error": str(fault)}
    finally:
        lock.release()


def _watch_parent(parent_pid: int) -> None:
    """End this worker when the sweep process is gone (kill -9 included): no orphans."""

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _worker_main(conn, parent_pid: int, env: dict, execution: Execution) -> None:
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep process's to handle
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())  # not tqdm's default semaphore, which a kill would leak
    _watch_parent(parent_pid)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        run_id, run_dir, config = task
        result = execute_run(run_dir, config, execution)
        conn.send((run_id, result))
        if result.get("worker_exits"):  # the pool starts a fresh process in its place
            return


# -- local pool -----------------------------------------------------------------------------
def sharing_per_gpu(workers: int, gpus: list[str]) -> int:
    """The most workers of a local pool on one GPU (round robin)."""
    return -(-workers // len(gpus)) if gpus else 1


def check_gpus_fit(configs: list, workers: int | None, backend: str, device: str) -> None:
    """Refuse, before any run is written, a sweep whose largest model does not fit the free
    memory of the GPUs a local pool would use, split between the workers sharing each GPU
    (nvidia-smi's numbers: this process opens no CUDA context). Nothing to check on CPUs, MPS
    and Metal (the host's memory, checked by the runner) or without nvidia-smi."""
    gpus = uses_gpus(backend, device)
    free = gpu_free_memory(gpus) if gpus else None
    if free is None:
        return
    sharing = sharing_per_gpu(workers or len(gpus), gpus)
    check_fits(max(configs, key=state_bytes), *gpu_share(free, None, sharing))


class _Slot:
    def __init__(self, index: int):
        self.index = index
        self.proc = None
        self.conn = None
        self.run_id = None


class LocalExecutor:
    """N spawned worker processes on this machine; on CUDA, one GPU per worker, round robin."""

    name = "local"

    @classmethod
    def from_options(
        cls,
        execution: Execution,
        workers: int | None,
        address: str | None,
        gpus_per_run: float | None,
    ) -> Callable[[], LocalExecutor]:
        if address is not None or gpus_per_run is not None:
            raise HarnessError("--address and --gpus-per-run are for --executor ray")
        count = workers or max(1, len(uses_gpus(execution.backend, execution.device)))
        return lambda: cls(count, execution)

    def __init__(self, workers: int, execution: Execution):
        self.capacity = workers
        self.execution = execution
        self.ctx = multiprocessing.get_context("spawn")
        self.gpus = uses_gpus(execution.backend, execution.device)
        extra = (preload_env() or {}) if execution.backend == "mlx" else {}
        self.envs = [
            {**env, **extra}
            for env in worker_envs(workers, self.gpus, os.cpu_count() or 1, os.environ)
        ]
        self.slots = [_Slot(i) for i in range(workers)]
        for slot in self.slots:
            self._start(slot)

    def describe(self) -> str:
        where = (
            f"GPUs {','.join(self.gpus)} round robin"
            if self.gpus
            else f"{self.envs[0].get('OMP_NUM_THREADS', 'default')} CPU threads each"
        )
        line = f"local pool of {self.capacity} worker process(es), {where}"
        if self.execution.backend == "torch" and not self.gpus:
            from sweeps.platform.mkl import describe  # which path the workers' matmuls take

            note = describe()
            line += f"; {note}" if note else ""
        if self.execution.backend == "mlx":
            from sweeps.platform.blas import take_note  # which BLAS the workers' MLX runs on

            note = take_note()
            line += f"; {note.removeprefix('qkmlx: ')}" if note else ""
        return line

    def _start(self, slot: _Slot) -> None:
        env = self.envs[slot.index]
        parent_conn, child_conn = self.ctx.Pipe()
        slot.proc = self.ctx.Process(
            target=_worker_main, daemon=True, args=(child_conn, os.getpid(), env, self.execution)
        )
        slot.proc.start()
        child_conn.close()
        slot.conn, slot.run_id = parent_conn, None

    def free_slots(self) -> int:
        return sum(slot.run_id is None for slot in self.slots)

    def submit(self, run_id: str, run_dir: str, config: dict) -> None:
        slot = next(s for s in self.slots if s.run_id is None)
        if not slot.proc.is_alive():  # died while idle
            self._start(slot)
        slot.run_id = run_id
        slot.conn.send((run_id, run_dir, config))

    def wait(self, timeout: float) -> list[tuple[str, dict]]:
        busy = [s for s in self.slots if s.run_id is not None]
        if not busy:
            time.sleep(timeout)
            return []
        ready = set(
            wait_connections([s.conn for s in busy] + [s.proc.sentinel for s in busy], timeout)
        )
        events = []
        for slot in busy:
            if slot.conn in ready:
                try:
                    event = slot.conn.recv()
                    events.append(event)
                    slot.run_id = None
                    if event[1].get("worker_exits"):  # a broken GPU context: a new process
                        slot.proc.join(30)
                        self._start(slot)
                    continue
                except (EOFError, OSError):
                    pass
            if slot.conn in ready or slot.proc.sentinel in ready:
                slot.proc.join(5)
                if slot.proc.exitcode is not None:
                    events.append((slot.run_id, {"status": "died", "exitcode": slot.proc.exitcode}))
                    self._start(slot)
        return events

    def close(self, kill: bool = False) -> None:
        for slot in self.slots:
            if kill:
                slot.proc.kill()
            else:
                try:
                    slot.conn.send(None)
                except (OSError, BrokenPipeError):
                    pass
        for slot in self.slots:
            slot.proc.join(None if kill else 10)
            if slot.proc.is_alive():
                slot.proc.kill()
                slot.proc.join()


# -- Ray ------------------------------------------------------------------------------------
class RayExecutor:
    """Each run one Ray task (with a GPU request, fractional allowed) on a Ray cluster.

    Every node must have this project installed and see the runs directory at the same path
    (a shared file system), so all runs write the same run directories.
    """

    name = "ray"

    @classmethod
    def from_options(
        cls,
        execution: Execution,
        workers: int | None,
        address: str | None,
        gpus_per_run: float | None,
    ) -> Callable[[], RayExecutor]:
        if gpus_per_run is not None and gpus_per_run < 0:
            raise HarnessError(f"--gpus-per-run must be >= 0 (got {gpus_per_run})")
        probe_address(address)  # now, before the sweep writes anything
        return lambda: cls(execution, address, workers, gpus_per_run)

    def __init__(
        self,
        execution: Execution,
        address: str | None,
        workers: int | None,
        gpus_per_run: float | None = None,
        cpus_per_run: float = 1.0,
    ):
        try:
            import ray
        except ImportError:
            raise HarnessError(
                "the Ray executor needs ray: pip install 'qknorm-study[cluster]' "
                "(or pip install 'ray[default]')"
            ) from None
        self.ray = ray
        env = {
            k: os.environ[k]
            for k in ("QKNORM_DATA_DIR", "HF_HOME", "TIKTOKEN_CACHE_DIR", DETERMINISTIC)
            if k in os.environ
        }
        if execution.backend == "mlx":
            env.update(preload_env() or {})
        on_sigterm = signal.getsignal(signal.SIGTERM)
        try:
            ray.init(
                address=address,
                log_to_driver=False,
                configure_logging=False,
                runtime_env={"env_vars": env} if env else None,
            )
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise EnvironmentFault(
                f"cannot reach the Ray cluster at {address or 'local'}: {str(e).splitlines()[0]}"
            ) from None
        if on_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_sigterm)  # ray.init's sys.exit(15) handler: ours
        resources = ray.cluster_resources()
        if gpus_per_run is None:
            gpus_per_run = 1.0 if resources.get("GPU", 0) > 0 and execution.device != "cpu" else 0.0
        self.gpus_per_run = gpus_per_run
        self.cpus_per_run = cpus_per_run
        if workers is None:
            by_cpu = resources.get("CPU", 1) / cpus_per_run
            by_gpu = resources.get("GPU", 0) / gpus_per_run if gpus_per_run else by_cpu
            workers = max(1, int(min(by_cpu, by_gpu)))
        self.capacity = workers
        self.task = ray.remote(execute_run).options(
            num_cpus=cpus_per_run, num_gpus=gpus_per_run, max_retries=2
        )
        self.execution = execution
        self.pending: dict = {}  # ObjectRef -> run_id

    def describe(self) -> str:
        r = self.ray.cluster_resources()
        return (
            f"Ray cluster ({r.get('CPU', 0):g} CPUs, {r.get('GPU', 0):g} GPUs), up to "
            f"{self.capacity} runs at once, {self.gpus_per_run:g} GPU and "
            f"{self.cpus_per_run:g} CPU per run"
        )

    def free_slots(self) -> int:
        return self.capacity - len(self.pending)

    def submit(self, run_id: str, run_dir: str, config: dict) -> None:
        ref = self.task.remote(str(Path(run_dir).resolve()), config, self.execution)
        self.pending[ref] = run_id

    def wait(self, timeout: float) -> list[tuple[str, dict]]:
        if not self.pending:
            time.sleep(timeout)
            return []
        ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        if ready:  # and whatever else has finished by now
            ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=0)
        events = []
        for ref in ready:
            run_id = self.pending.pop(ref)
            try:
                events.append((run_id, self.ray.get(ref)))
            except Exception as e:  # the task's process died past its retries
                events.append(
                    (run_id, {"status": "died", "exitcode": None, "error": str(e).splitlines()[0]})
                )
        return events

    def close(self, kill: bool = False) -> None:
        for ref in list(self.pending):
            self.ray.cancel(ref, force=True)
        self.pending.clear()
        self.ray.shutdown()


def probe_address(address: str | None, timeout: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Refuse a cluster address (host:port, ray://host:port) where nothing answers within
    timeout seconds: ray.init would retry for minutes. None and "auto" (a local cluster, the
    one this machine runs) are left to Ray."""
    if not address or address == "auto":
        return
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise HarnessError(f"--address {address} is not host:port (e.g. 10.0.0.1:6379)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        reason = (e.strerror or "").lower() or f"no answer within {timeout:g} s"
        raise EnvironmentFault(
            f"cannot reach the Ray cluster at {address} ({reason}); start it "
            f"(ray start --head) or fix --address"
        ) from None


EXECUTORS = {"local": LocalExecutor, "ray": RayExecutor}


def make_executor(
    kind: str,
    execution: Execution,
    workers: int | None = None,
    address: str | None = None,
    gpus_per_run: float | None = None,
) -> Callable[[], Executor]:
    """A zero-argument constructor of the chosen executor (checked now, started later)."""
    if workers is not None and workers < 1:
        raise HarnessError(f"--workers must be at least 1 (got {workers})")
    if kind not in EXECUTORS:
        raise HarnessError(f"unknown executor '{kind}'; choose one of: {', '.join(EXECUTORS)}")
    return EXECUTORS[kind].from_options(execution, workers, address, gpus_per_run)
