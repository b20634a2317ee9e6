"""What training costs: FLOPs per token, the peak FLOP/s of known devices, a short measured
probe of a config on a device, and from those the wall time, tokens, FLOPs and device-hours
of a sweep before it runs (`qkmlx sweep NAME --dry-run --estimate`).

FLOPs per token (flops_per_token) follow PaLM (Chowdhery et al. 2022, appendix B), the
convention MFU is usually quoted in: 6 N + 12 n_layer n_ctx d_model, where 6 N counts the
forward and backward matmuls of the weights and the second term the attention scores and
their weighted sum (full, not halved for the causal mask). N here is the weights that take
part in a matmul: the non-embedding parameters plus the output head (vocab x d_model, tied or
not). The input token and position embeddings are lookups with no matmul, so 6 x total
parameters would credit them with work that never happens (for core: 6 x 13.9M = 83M vs
6 x 12.2M = 73M per token, before attention).

Backend-neutral: the probe builds its trainer through sweeps.run.backends.trainer_factory and
trains it on random tokens (the cost of a step does not depend on the data), so an estimate
needs neither the corpus nor an import of mlx or torch here.
"""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from sweeps.core.config import ModelConfig, RunConfig
from sweeps.core.fmt import duration, si
from sweeps.core.params import count_params
from sweeps.data import batch_starts
from sweeps.platform.devices import peak_flops
from sweeps.run.backends import Execution
from sweeps.sweep import grid


def flops_per_token(model: ModelConfig, vocab_size: int) -> int:
    """Training FLOPs per token, forward and backward (PaLM's 6 N + 12 L T C; see above)."""
    matmul_params = count_params(model, vocab_size)["non_embedding"] + vocab_size * model.n_embd
    return 6 * matmul_params + 12 * model.n_layer * model.block_size * model.n_embd


def step_flops(cfg: RunConfig) -> int:
    return flops_per_token(cfg.model, cfg.vocab_size) * cfg.tokens_per_step


def random_tokens(cfg: RunConfig, n: int = 1 << 20, seed: int = 0) -> np.ndarray:
    """uint16 tokens for a probe (the token cache's dtype), at least a few windows long."""
    n = max(n, 4 * (cfg.model.block_size + 1))
    return np.random.default_rng(seed).integers(0, cfg.vocab_size, n).astype(np.uint16)


# -- measuring --------------------------------------------------------------------------------
REPEATS = 5  # timed blocks of steps: the fastest and the slowest make the estimate's range
EVAL_REPEATS = 3  # timed evaluation batches, after an untimed one
UNSTEADY = 1.25  # repeats further apart than this (max / min) mean a machine that is not steady


def _threads(threads: str | None, cpus: int) -> int:
    """The threads a probe computes with: OMP_NUM_THREADS, else every CPU (the default)."""
    try:
        return max(1, int(threads)) if threads else cpus
    except ValueError:
        return cpus


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or taskset's share)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


@dataclass
class Measurement:
    """A probe of one config on one device."""

    cfg: RunConfig
    device: str  # the trainer's device ("cpu", "cuda", "gpu", "mps")
    device_name: str
    step_s: float  # steady-state seconds per train step
    eval_s: float  # seconds per evaluation batch (forward only, synchronous)
    startup_s: float  # building the trainer and the first step beyond a steady step (compiling)
    steps: int  # steps timed
    tf32: bool = False
    batch: int | None = None  # the batch the probe timed (scaled to cfg's); None: cfg's
    # seconds per step of the fastest and the slowest of the timed repeats (None: step_s)
    spread: tuple[float, float] | None = None
    repeats: int = 1  # timed blocks of steps
    load: float | None = None  # the 1-minute load average when the probe started
    cpus: int | None = None  # the CPUs the probe's process may run on
    threads: str | None = None  # OMP_NUM_THREADS of the probe's process (None: the default)
    data_s: float = 0.0  # loading (and verifying) the run's prepared data, once per run

    @property
    def step_range(self) -> tuple[float, float]:
        return self.spread or (self.step_s, self.step_s)

    def at(self, step_s: float) -> Measurement:
        """This probe as if its steps took step_s (evaluations scaled alike: whatever slowed
        the steps, a busy machine, slows the evaluations too)."""
        factor = step_s / self.step_s
        return dataclasses.replace(self, step_s=step_s, eval_s=self.eval_s * factor, spread=None)

    @property
    def busy(self) -> bool:
        """The machine looked busy: before the probe, the load average left fewer idle CPUs
        than the probe's threads (on the CPU only; a GPU's speed does not follow it)."""
        if self.device != "cpu" or self.load is None or not self.cpus:
            return False
        return self.load + _threads(self.threads, self.cpus) > self.cpus + 0.5

    @property
    def unsteady(self) -> bool:
        """The repeats disagree by more than UNSTEADY (max / min seconds per step)."""
        low, high = self.step_range
        return high > UNSTEADY * low

    @property
    def tokens_per_s(self) -> float:
        return self.cfg.tokens_per_step / self.step_s

    @property
    def flops_per_s(self) -> float:
        return step_flops(self.cfg) / self.step_s

    @property
    def peak(self):
        return peak_flops(self.device, self.device_name, self.cfg.train.dtype, self.tf32)

    @property
    def mfu(self) -> float | None:
        peak, _ = self.peak
        return self.flops_per_s / peak if peak else None


def run_steps(
    trainer,
    cfg: RunConfig,
    tokens_len: int,
    first: int,
    n: int,
    block: int,
    lr: float,
    seed: int | None = None,
) -> np.ndarray | None:
    """n train steps from step `first` on the windows a run draws (with cfg.seed, or seed),
    read every `block` steps as the loop does; the last read's [k, 2] (loss, grad norm)."""
    B, T = cfg.train.batch_size, cfg.model.block_size
    seed = cfg.seed if seed is None else seed
    handles, last = [], None
    for i in range(first, first + n):
        handles.append(trainer.train_step(batch_starts(tokens_len, seed, i, B, T), lr))
        if len(handles) >= block:
            last = trainer.read(handles)
            handles = []
    if handles:
        last = trainer.read(handles)
    return last


def time_steps(
    trainer, cfg: RunConfig, tokens_len: int, first: int, n: int, block: int, lr: float
) -> float:
    """Seconds for n train steps from step `first` (run_steps)."""
    began = time.perf_counter()
    run_steps(trainer, cfg, tokens_len, first, n, block, lr)
    return time.perf_counter() - began


PROBE_BUDGET_S = 45.0  # a probe stays about this long, whatever the device (plus one step)
ACCELERATORS = ("cuda", "gpu", "mps")  # --device values that never need the pilot


def measure(
    make_trainer,
    cfg: RunConfig,
    seconds: float = 3.0,
    min_steps: int = 2,
    tf32: bool = False,
    lr: float = 1e-4,
    budget_s: float = PROBE_BUDGET_S,
    progress=None,
    pilot: bool = True,
) -> Measurement:
    """Build cfg's trainer, take one untimed step (compilation, allocation), then time steps
    for about `seconds` (at least min_steps) in REPEATS blocks (their fastest and slowest
    seconds per step are the estimate's range, their median its central value), and an
    evaluation batch. Also notes the load average before it began (Measurement.busy).

    Bounded in time: a pilot of one sequence per step comes first, and when a full batch
    would not fit min_steps + 2 steps in what is left of budget_s, the probe times a smaller
    batch (halving) and scales step and evaluation times by batch_size / its batch (a step's
    cost grows with the sequences in it; pessimistic where small batches use the device
    less). pilot=False skips the pilot (an accelerator: a step takes milliseconds, and a
    second build would compile twice). progress(text) hears what the probe is doing."""
    say = progress or (lambda text: None)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None  # before the probe's own
    began = time.perf_counter()
    B = cfg.train.batch_size
    batch, probe = B, None
    if B > 1 and pilot:
        say(f"probe: a pilot step of 1 sequence (n_layer {cfg.model.n_layer}) ...")
        pilot = _Probe(make_trainer, _with_batch(cfg, 1), lr)
        per_sequence = pilot.step_s()
        left = budget_s - (time.perf_counter() - began)
        while batch > 1 and per_sequence * batch * (min_steps + 3) > left:
            batch //= 2
        say(
            f"probe: {per_sequence * 1e3:,.1f} ms per sequence; timing batch {batch}"
            + (
                f" of {B} (scaled up: a full batch would not fit the probe's time)"
                if batch < B
                else ""
            )
            + " ..."
        )
        if batch == 1:
            probe = pilot  # already built and stepped
        else:
            del pilot
            gc.collect()
    probe = probe or _Probe(make_trainer, _with_batch(cfg, batch), lr)
    built = probe.built
    left = max(0.0, budget_s - (time.perf_counter() - began))
    first = probe.time(1, 1)  # sizes the repeats
    # kept for the evaluation batches (a forward pass: about a third of a step, or less)
    eval_reserve = (EVAL_REPEATS + 1) * first / 2
    want = min(seconds, max(left - 2 * first - eval_reserve, 0.0))
    affordable = max(min_steps, int(want / max(first, 1e-9)))
    repeats = max(2, min(REPEATS, affordable))
    n = max(1, affordable // repeats)
    block = max(1, min(cfg.train.log_interval, n))
    per_step, step = [], 2
    for _ in range(repeats):
        per_step.append(probe.time(step, n, block) / n)
        step += n
    scale = B / batch
    per_step = sorted(t * scale for t in per_step)
    step_s = statistics.median(per_step)
    eval_s = probe.eval_s(budget_s - (time.perf_counter() - began)) * scale
    say(f"probe: done in {time.perf_counter() - began:.1f} s")
    device, name = probe.trainer.device, getattr(probe.trainer, "device_name", probe.trainer.device)
    del probe
    gc.collect()
    return Measurement(
        cfg,
        device,
        name,
        step_s,
        eval_s,
        max(0.0, built - step_s),
        1 + repeats * n,
        tf32,
        batch,
        spread=(per_step[0], per_step[-1]),
        repeats=repeats,
        load=load,
        cpus=usable_cpus(),
        threads=os.environ.get("OMP_NUM_THREADS"),
    )


def _with_batch(cfg: RunConfig, batch: int) -> RunConfig:
    if batch == cfg.train.batch_size:
        return cfg
    return cfg.with_overrides(
        [
            f"train.batch_size={batch}",
            f"train.diag_sequences={min(batch, cfg.train.diag_sequences)}",
        ]
    )


class _Probe:
    """A trainer on random tokens, built and stepped once (untimed: compiling, allocating)."""

    def __init__(self, make_trainer, cfg: RunConfig, lr: float):
        began = time.perf_counter()
        self.cfg, self.lr = cfg, lr
        self.trainer = make_trainer(cfg)
        self.tokens = random_tokens(cfg)
        self.trainer.set_train_tokens(self.tokens)
        self.time(0, 1)
        self.built = time.perf_counter() - began

    def time(self, first: int, n: int, block: int = 1) -> float:
        return time_steps(self.trainer, self.cfg, len(self.tokens), first, n, block, self.lr)

    def step_s(self) -> float:
        return self.time(1, 1)

    def eval_s(self, left: float = float("inf")) -> float:
        """Seconds for one evaluation batch: the median of up to EVAL_REPEATS timings (as
        many as `left` seconds allow, at least one) after an untimed one (the first call may
        build the evaluation's buffers, and a single timing on a busy machine varied 36-75 ms
        for the cpu preset, whose final evaluation is 688 batches)."""
        T = self.cfg.model.block_size
        x = np.stack([self.tokens[i : i + T] for i in range(self.cfg.train.batch_size)])
        x = x.astype(np.int32)
        times = []
        while len(times) < EVAL_REPEATS + 1:
            t = time.perf_counter()
            self.trainer.eval_loss(x, x)
            times.append(time.perf_counter() - t)
            left -= times[-1]
            if len(times) >= 2 and left < times[-1]:  # at least one timed, within `left` s
                break
        return statistics.median(times[1:])


def measure_backend(
    execution: Execution,
    cfg: RunConfig,
    seconds: float,
    budget_s: float = PROBE_BUDGET_S,
    progress=None,
    env: dict | None = None,
) -> Measurement:
    """measure() of the execution's trainer (a plain function: a child process can run it).
    env: variables set before the backend is imported (a sweep worker's thread counts)."""
    os.environ.update(env or {})
    probe = measure(
        execution.trainer_factory(),
        cfg,
        seconds=seconds,
        tf32=execution.tf32,
        budget_s=budget_s,
        progress=progress,
        pilot=execution.device not in ACCELERATORS,
    )
    return dataclasses.replace(probe, data_s=data_load_s(cfg))


def data_load_s(cfg: RunConfig) -> float:
    """Seconds a run spends loading its data (the cache read and its checksums,
    sweeps.data.load_tokens), 0 when the data is not prepared yet (the sweep prepares it
    once, before its runs)."""
    from sweeps.data import load_tokens

    if val_tokens(cfg.data) is None:
        return 0.0
    began = time.perf_counter()
    load_tokens(cfg.data)
    return time.perf_counter() - began


def _to_stderr(text: str) -> None:
    """Progress from a probe in a child process (a plain function: it can be sent there)."""
    print(text, file=sys.stderr, flush=True)


# -- a run and a sweep ---------------------------------------------------------------------
def evaluations(cfg: RunConfig) -> tuple[int, int]:
    """(full evaluations, quick val-loss evaluations) of a run that goes to max_steps, as
    sweeps.run.loop schedules them: full at step 0 and wherever TrainConfig.evaluates_at
    (every eval_interval, the early evaluations, the end), quick every loss_eval_interval
    where no full one falls."""
    t = cfg.train
    full = {s for s in range(t.max_steps + 1) if t.evaluates_at(s)}
    quick = set(range(t.loss_eval_interval, t.max_steps + 1, t.loss_eval_interval)) - full
    return len(full), len(quick)


def val_tokens(data) -> int | None:
    """Tokens in the validation split of a prepared corpus (its manifest), None when the
    data is not prepared yet."""
    import json

    from sweeps.data.cache import MANIFEST, cache_path, is_prepared

    try:
        if not is_prepared(data):
            return None
        return int(json.loads((cache_path(data) / MANIFEST).read_text())["tokens"]["val"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def final_eval_batches(cfg: RunConfig) -> int | None:
    """Batches of the final evaluation (sweeps.run.loop.final_val_loss: non-overlapping
    block_size windows of the validation split, train.final_eval_tokens caps it), batch_size
    windows each; None when it covers the whole split of data not prepared yet."""
    T, cap = cfg.model.block_size, cfg.train.final_eval_tokens
    n = val_tokens(cfg.data)
    if n is None and cap <= 0:
        return None
    predicted = (n - 1) if n is not None else cap
    if cap > 0:
        predicted = min(predicted, max(cap, T))
    windows = max(predicted, 0) // T
    return -(-windows // cfg.train.batch_size)


def run_cost(cfg: RunConfig, probe: Measurement) -> dict:
    """Wall time, tokens and FLOPs of one run to max_steps, from a probe of a config with the
    same batch shape: step and evaluation times scale with FLOPs per token. Evaluation: every
    full evaluation (its batches and the diagnostics' probe, counted as one more), every quick
    one and the final evaluation over the validation split (final_eval_s; not counted, and
    final_known False, when that split is not prepared yet). Start-up: building the model
    and its first step beyond a steady one, and loading the data."""
    scale = flops_per_token(cfg.model, cfg.vocab_size) / flops_per_token(
        probe.cfg.model, probe.cfg.vocab_size
    )
    t = cfg.train
    full, quick = evaluations(cfg)
    final = final_eval_batches(cfg)
    eval_batches = full * (t.eval_batches + 1) + quick * t.loss_eval_batches  # +1: the probe
    per_batch = probe.eval_s * scale * t.batch_size / probe.cfg.train.batch_size
    train_s = t.max_steps * probe.step_s * scale
    eval_s = eval_batches * per_batch
    final_s = (final or 0) * per_batch
    tokens = t.max_steps * cfg.tokens_per_step
    startup_s = probe.startup_s + probe.data_s
    return {
        "seconds": train_s + eval_s + final_s + startup_s,
        "train_s": train_s,
        "eval_s": eval_s,
        "final_eval_s": final_s,
        "final_known": final is not None,
        "startup_s": startup_s,
        "tokens": tokens,
        "flops": tokens * flops_per_token(cfg.model, cfg.vocab_size),
    }


def sweep_estimate(configs: list[RunConfig], extra_runs: int, probe: Measurement) -> dict:
    """Totals of the planned runs, and the worst case with extra_runs more runs of the
    costliest config (extension and refinement add LRs, not depths); "range" holds the
    seconds of each (and of the probed config's run) at the probe's fastest and slowest
    repeat."""

    def totals(p: Measurement) -> dict:
        costs = [run_cost(cfg, p) for cfg in configs]
        total = {key: sum(c[key] for c in costs) for key in ("seconds", "tokens", "flops")}
        worst_run = max(costs, key=lambda c: c["seconds"])
        worst = {key: total[key] + extra_runs * worst_run[key] for key in total}
        return {
            "runs": len(configs),
            "per_run": run_cost(p.cfg, p),
            "planned": total,
            "extra_runs": extra_runs,
            "worst": worst,
            "final_known": all(c["final_known"] for c in costs),
        }

    result = totals(probe)
    low, high = (totals(probe.at(s)) for s in probe.step_range)
    result["range"] = {
        key: (low[key]["seconds"], high[key]["seconds"]) for key in ("per_run", "planned", "worst")
    }
    return result


def largest(configs: list[RunConfig]) -> RunConfig:
    """The config with the most FLOPs per step (the deepest model of the sweep)."""
    return max(configs, key=step_flops)


def estimate_sweep(
    sweep,
    execution: Execution,
    seconds: float = 8.0,
    echo=print,
    apart: bool = False,
    progress=None,
    budget_s: float = PROBE_BUDGET_S,
    workers: int | None = None,
) -> dict:
    """Probe the sweep's largest config on the execution's device (about budget_s at most)
    and print what the sweep will cost. sweep: a sweeps.sweep.runner.Sweep (its planned
    configs); progress(text): what the probe is doing while it runs. apart: probe in a child
    process with the environment of one of the sweep's `workers` local workers (its CPU
    threads: sweeps.sweep.workers.worker_envs), so the probe computes as a worker will
    and this process holds no GPU context (and its memory) while the sweep that follows
    runs (its progress then goes to stderr)."""
    from sweeps.sweep.workers import uses_gpus, worker_envs

    configs = list(sweep.configs.values())
    gpus = uses_gpus(execution.backend, execution.device)
    workers = workers or max(1, len(gpus))
    if apart:
        env = worker_envs(workers, gpus, usable_cpus(), os.environ)[0]
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            probe = pool.submit(
                measure_backend,
                execution,
                largest(configs),
                seconds,
                budget_s,
                progress and _to_stderr,
                env,
            ).result()
    else:
        probe = measure_backend(execution, largest(configs), seconds, budget_s, progress)
    result = sweep_estimate(configs, grid.max_extra_runs(sweep.spec), probe)
    result["workers"] = workers
    result["parallel"] = min(workers, len(gpus)) if gpus else workers
    result.update(threads=probe.threads, busy=probe.busy, unsteady=probe.unsteady)
    for line in describe(result, probe, execution.backend):
        echo(line)
    return result


def _span(low: float, high: float, unit=duration) -> str:
    """'3.1 min-4.2 min', or one value when both ends show the same."""
    a, b = unit(low), unit(high)
    return a if a == b else f"{a}-{b}"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.2f}"


def describe(result: dict, probe: Measurement, backend: str) -> list[str]:
    cfg, per_run = probe.cfg, result["per_run"]
    peak, peak_name = probe.peak
    params = count_params(cfg.model, cfg.vocab_size)["total"]
    fast, slow = probe.step_range
    rate = (
        f"{probe.tokens_per_s:,.0f} tokens/s ({cfg.tokens_per_step / slow:,.0f}-"
        f"{cfg.tokens_per_step / fast:,.0f}), {si(probe.flops_per_s, 'FLOP/s')}"
    )
    rate += (
        f", MFU {probe.mfu:.1%} of {peak_name}'s {si(peak, 'FLOP/s')}"
        if peak
        else " (no known peak for this device: no MFU)"
    )
    threads = (
        f"; {probe.threads or 'the default (every core)'} CPU thread(s), as each of "
        f"{result.get('workers', 1)} worker(s)"
        if probe.device == "cpu"
        else ""
    )
    lines = [
        (
            f"estimate: {backend} on {probe.device} ({probe.device_name}), {cfg.train.dtype}; "
            f"probe of the largest config (n_layer {cfg.model.n_layer}, {si(params)} params, "
            f"{si(flops_per_token(cfg.model, cfg.vocab_size), 'FLOPs')}/token): {probe.steps} "
            f"steps in {probe.repeats} repeats at {fast * 1e3:,.1f}-{slow * 1e3:,.1f} ms/step "
            f"(median {probe.step_s * 1e3:,.1f})"
            + (
                f" (timed at batch {probe.batch} of {cfg.train.batch_size}, scaled)"
                if probe.batch and probe.batch != cfg.train.batch_size
                else ""
            )
            + threads
        ),
        f"  {rate}",
    ]
    machine = _machine_line(probe)
    if machine:
        lines.append(machine)
    slow_blas = _blas_line(backend, probe.device)
    if slow_blas:
        lines.append(slow_blas)
    low, high = result["range"]["per_run"]
    lines.append(
        f"  per run: {cfg.train.max_steps} steps, {si(per_run['tokens'])} tokens, "
        f"{si(per_run['flops'], 'FLOPs')}, {_span(low, high)} (training "
        f"{duration(per_run['train_s'])}, evaluation {duration(per_run['eval_s'])}, "
        + (
            f"final evaluation {duration(per_run['final_eval_s'])}, "
            if per_run["final_known"]
            else "final evaluation not counted (its data is not prepared), "
        )
        + f"start-up and data {duration(per_run['startup_s'])} at the median)"
    )
    parallel = result.get("parallel", 1)
    for label, key, runs in (
        ("planned", "planned", result["runs"]),
        ("worst case", "worst", result["runs"] + result["extra_runs"]),
    ):
        total = result[key]
        low, high = result["range"][key]
        note = f" (+{result['extra_runs']} from extension and refinement)" if key == "worst" else ""
        lines.append(
            f"  {label}: {runs} runs{note}, {si(total['tokens'])} tokens, "
            f"{si(total['flops'], 'FLOPs')}: {_span(low, high, _hours)} device-hours of "
            f"{probe.device}; {_span(low / parallel, high / parallel)} wall with "
            f"{parallel} at once"
        )
    if not result.get("final_known", True):
        lines.append(
            "  (the final evaluations over the whole validation split are not counted: "
            "prepare the data first, as the data line above says)"
        )
    lines.append(
        "  (diverged runs stop early; several runs sharing one device: "
        "benchmarks/throughput.py --workers)"
    )
    planned = result["planned"]["seconds"]
    if planned > MONTH_S:
        lines.append(
            f"warning: the planned runs need {duration(planned)} of {probe.device} "
            f"({probe.device_name}) one run at a time, more than a month: use a GPU "
            f"(--device cuda or gpu) or a smaller spec (tiny), or split the runs "
            f"over machines (--executor ray)"
        )
    return lines


def _blas_line(backend: str, device: str) -> str | None:
    """qkmlx on a Linux CPU without OpenBLAS: the times above are the slow reference BLAS's,
    and the fix (sweeps.platform.blas)."""
    from sweeps.platform.blas import INSTALL_HINT, preload_env

    if backend != "mlx" or device != "cpu" or preload_env() is not None:
        return None
    return f"  blas: these times are slow because {INSTALL_HINT}"


def _machine_line(probe: Measurement) -> str | None:
    """Why the range may not hold: a busy machine, repeats that disagree; on the CPU, the load
    it was timed under, busy or not."""
    fast, slow = probe.step_range
    parts = []
    if probe.busy:
        parts.append(
            f"busy: load average {probe.load:.2f} on {probe.cpus} CPU(s) before the probe, so "
            f"its threads shared the cores; on an idle machine the sweep may run faster, and "
            f"slower if the load grows"
        )
    elif probe.device == "cpu" and probe.load is not None and probe.cpus:
        # a CPU estimate holds only for the load it was timed under: said even when it looked
        # idle (issue 72: a sweep timed on free cores ran 1.6-2x slower once other work took
        # them)
        parts.append(
            f"load average {probe.load:.2f} on {probe.cpus} CPU(s) before the probe: the range "
            f"holds while the cores stay this free; other work on them during the sweep "
            f"makes it slower"
        )
    if probe.unsteady:
        parts.append(
            f"unsteady: the repeats spread x{slow / fast:.2f} (slowest / fastest; the range "
            f"above spans them)"
        )
    if not parts:
        return None
    return "  machine " + "; ".join(parts)


MONTH_S = 30 * 86400
