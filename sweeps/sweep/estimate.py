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

import gc
import multiprocessing
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


def run_steps(trainer, cfg: RunConfig, tokens_len: int, first: int, n: int, block: int,
              lr: float, seed: int | None = None) -> np.ndarray | None:
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


def time_steps(trainer, cfg: RunConfig, tokens_len: int, first: int, n: int,
               block: int, lr: float) -> float:
    """Seconds for n train steps from step `first` (run_steps)."""
    began = time.perf_counter()
    run_steps(trainer, cfg, tokens_len, first, n, block, lr)
    return time.perf_counter() - began


def measure(make_trainer, cfg: RunConfig, seconds: float = 3.0, min_steps: int = 2,
            tf32: bool = False, lr: float = 1e-4) -> Measurement:
    """Build cfg's trainer, take one untimed step (compilation, allocation), then time steps
    for about `seconds` (at least min_steps), and two evaluation batches (the faster counts)."""
    began = time.perf_counter()
    trainer = make_trainer(cfg)
    tokens = random_tokens(cfg)
    trainer.set_train_tokens(tokens)
    time_steps(trainer, cfg, len(tokens), 0, 1, 1, lr)
    built = time.perf_counter() - began
    steps, elapsed = 1, time_steps(trainer, cfg, len(tokens), 1, 1, 1, lr)
    block = max(1, min(cfg.train.log_interval, int(0.5 / elapsed)))
    while steps < min_steps or elapsed < seconds:
        n = max(1, min(block, int((seconds - elapsed) * steps / elapsed) + 1))
        elapsed += time_steps(trainer, cfg, len(tokens), 1 + steps, n, block, lr)
        steps += n
    step_s = elapsed / steps
    x = np.stack([tokens[i: i + cfg.model.block_size] for i in range(cfg.train.batch_size)])
    evals = []
    for _ in range(2):
        t = time.perf_counter()
        trainer.eval_loss(x.astype(np.int32), x.astype(np.int32))
        evals.append(time.perf_counter() - t)
    device, name = trainer.device, getattr(trainer, "device_name", trainer.device)
    del trainer
    gc.collect()
    return Measurement(cfg, device, name, step_s, min(evals), max(0.0, built - step_s), steps,
                       tf32)


def measure_backend(execution: Execution, cfg: RunConfig, seconds: float) -> Measurement:
    """measure() of the execution's trainer (a plain function: a child process can run it)."""
    return measure(execution.trainer_factory(), cfg, seconds=seconds, tf32=execution.tf32)


# -- a run and a sweep ---------------------------------------------------------------------
def evaluations(cfg: RunConfig) -> tuple[int, int]:
    """(full evaluations, quick val-loss evaluations) of a run that goes to max_steps, as
    sweeps.run.loop schedules them: full at step 0, every eval_interval and at the end."""
    t = cfg.train
    full = {0, t.max_steps} | set(range(t.eval_interval, t.max_steps + 1, t.eval_interval))
    quick = set(range(t.loss_eval_interval, t.max_steps + 1, t.loss_eval_interval)) - full
    return len(full), len(quick)


def run_cost(cfg: RunConfig, probe: Measurement) -> dict:
    """Wall time, tokens and FLOPs of one run to max_steps, from a probe of a config with the
    same batch shape: step and evaluation times scale with FLOPs per token."""
    scale = flops_per_token(cfg.model, cfg.vocab_size) / flops_per_token(probe.cfg.model,
                                                                         probe.cfg.vocab_size)
    t = cfg.train
    full, quick = evaluations(cfg)
    eval_batches = full * (t.eval_batches + 1) + quick * t.loss_eval_batches  # +1: the probe
    train_s = t.max_steps * probe.step_s * scale
    eval_s = eval_batches * probe.eval_s * scale * t.batch_size / probe.cfg.train.batch_size
    tokens = t.max_steps * cfg.tokens_per_step
    return {"seconds": train_s + eval_s + probe.startup_s, "train_s": train_s,
            "eval_s": eval_s, "startup_s": probe.startup_s, "tokens": tokens,
            "flops": tokens * flops_per_token(cfg.model, cfg.vocab_size)}


def sweep_estimate(configs: list[RunConfig], extra_runs: int, probe: Measurement) -> dict:
    """Totals of the planned runs, and the worst case with extra_runs more runs of the
    costliest config (extension and refinement add LRs, not depths)."""
    costs = [run_cost(cfg, probe) for cfg in configs]
    total = {key: sum(c[key] for c in costs) for key in ("seconds", "tokens", "flops")}
    worst_run = max(costs, key=lambda c: c["seconds"])
    worst = {key: total[key] + extra_runs * worst_run[key] for key in total}
    return {"runs": len(configs), "per_run": run_cost(probe.cfg, probe), "planned": total,
            "extra_runs": extra_runs, "worst": worst}


def largest(configs: list[RunConfig]) -> RunConfig:
    """The config with the most FLOPs per step (the deepest model of the sweep)."""
    return max(configs, key=step_flops)


def estimate_sweep(sweep, execution: Execution, seconds: float = 3.0, echo=print,
                   apart: bool = False) -> dict:
    """Probe the sweep's largest config on the execution's device and print what the sweep
    will cost. sweep: a sweeps.sweep.runner.Sweep (its planned configs). apart: probe in a
    child process, so this one holds no GPU context (and its memory) while the sweep that
    follows runs."""
    configs = list(sweep.configs.values())
    args = (execution, largest(configs), seconds)
    if apart:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            probe = pool.submit(measure_backend, *args).result()
    else:
        probe = measure_backend(*args)
    result = sweep_estimate(configs, grid.max_extra_runs(sweep.spec), probe)
    for line in describe(result, probe, execution.backend):
        echo(line)
    return result


def describe(result: dict, probe: Measurement, backend: str) -> list[str]:
    cfg, per_run = probe.cfg, result["per_run"]
    peak, peak_name = probe.peak
    params = count_params(cfg.model, cfg.vocab_size)["total"]
    rate = f"{probe.tokens_per_s:,.0f} tokens/s, {si(probe.flops_per_s, 'FLOP/s')}"
    rate += (f", MFU {probe.mfu:.1%} of {peak_name}'s {si(peak, 'FLOP/s')}" if peak else
             " (no known peak for this device: no MFU)")
    lines = [
        (f"estimate: {backend} on {probe.device} ({probe.device_name}), {cfg.train.dtype}; "
         f"probe of the largest config (n_layer {cfg.model.n_layer}, {si(params)} params, "
         f"{si(flops_per_token(cfg.model, cfg.vocab_size), 'FLOPs')}/token): {probe.steps} "
         f"steps at {probe.step_s * 1e3:,.1f} ms/step"),
        f"  {rate}",
        (f"  per run: {cfg.train.max_steps} steps, {si(per_run['tokens'])} tokens, "
         f"{si(per_run['flops'], 'FLOPs')}, {duration(per_run['seconds'])} (training "
         f"{duration(per_run['train_s'])}, evaluation {duration(per_run['eval_s'])}, "
         f"start-up {duration(per_run['startup_s'])})"),
    ]
    for label, key, runs in (("planned", "planned", result["runs"]),
                             ("worst case", "worst", result["runs"] + result["extra_runs"])):
        total = result[key]
        note = (f" (+{result['extra_runs']} from extension and refinement)"
                if key == "worst" else "")
        lines.append(f"  {label}: {runs} runs{note}, {si(total['tokens'])} tokens, "
                     f"{si(total['flops'], 'FLOPs')}, {total['seconds'] / 3600:,.2f} "
                     f"device-hours ({duration(total['seconds'])} one run at a time)")
    lines.append("  (diverged runs stop early; several runs sharing one device: "
                 "benchmarks/throughput.py --workers)")
    return lines
