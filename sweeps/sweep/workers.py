"""Where a local pool's workers run: the CUDA devices it spreads them over and each worker's
environment (its GPU, or its share of the CPU threads). A module of its own, below the
executors, so that the estimate's probe (sweeps.sweep.estimate) and the fused-group sizing
(sweeps.sweep.fusion) set up a worker exactly as the pool does without importing the pool.
"""

from __future__ import annotations

from sweeps.core.params import RUNS_PER_GPU
from sweeps.platform.blas import thread_env
from sweeps.platform.devices import visible_gpus


def uses_gpus(backend: str, device: str) -> list[str]:
    """The CUDA devices a local pool spreads its workers over ([] on CPU, MPS and Metal)."""
    if device == "cpu" or (backend == "mlx" and device not in ("auto", "gpu")):
        return []
    return visible_gpus()


def worker_envs(workers: int, gpus: list[str], cpus: int, environ) -> list[dict]:
    """Environment of each local worker: one GPU each, round robin; on CPU, the cores
    shared out (unless the user set the thread counts) instead of oversubscribed, and OpenMP
    threads that sleep instead of spinning while they wait: on a busy 2-core machine a
    spinning pool made smoke steps 1.2 s instead of 5 ms, even for a single worker."""
    common = {} if gpus else thread_env(workers, cpus, environ)
    if not gpus:
        return [dict(common) for _ in range(workers)]
    # Each worker's GPU, and how many workers share it (the memory check splits it).
    mine = [gpus[i % len(gpus)] for i in range(workers)]
    return [
        {**common, "CUDA_VISIBLE_DEVICES": gpu, RUNS_PER_GPU: str(mine.count(gpu))} for gpu in mine
    ]
