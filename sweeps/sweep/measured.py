"""A sweep's cost on the devices this project has measured, printed by `sweep --dry-run` before
anything trains: a study sized for a rented GPU should say its GPU hours without one at hand.

Each entry below is a speed measured on a real device and written down in a report this
repository holds (`source`). The sweep's cost is an estimate built from it: a run's training
time is its tokens at the measured tokens per second, scaled by the ratio of training FLOPs per
token (sweeps.sweep.estimate.flops_per_token) between the run's model and the measured one, so
the measured MFU is assumed to hold across depths. That scaling is only trusted between models
of one width and one batch shape (tokens per step); a sweep of another shape gets no line from
an entry. Failing runs stop early, so a sweep with failures costs less than its planned figure.
`sweep --dry-run --estimate` measures the device at hand instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sweeps.core.config import RunConfig
from sweeps.run.backends import PROGRAMS


@dataclass(frozen=True)
class Measured:
    device: str
    backend: str  # "torch" | "mlx"
    mode: str  # "eager" | "compiled" | "fused"
    dtype: str
    n_layer: int
    n_embd: int
    vocab_size: int  # the measured model's (core: 4,096 compacted ids + end of text)
    tokens_per_step: int
    tokens_per_s: float
    what: str  # what the figure covers (training steps only, or a whole run with evaluations)
    source: str
    preset: str = "core"  # the preset measured (its width, heads and batch shape)


H200 = "NVIDIA H200"
# An assumed on-demand price for one such GPU, US dollars an hour (a stated assumption, not a
# quote: multiply the hours by your provider's price instead)
PRICE_PER_GPU_HOUR = 3.0
GPU_REPORT = "docs/gpu-h200/README.md"
MEASURED: tuple[Measured, ...] = (
    Measured(
        H200, "torch", "eager", "float32", 12, 384, 4097, 8192, 199_102,
        "training steps only, `sweep --estimate` at 12 layers", GPU_REPORT,
    ),
    Measured(
        H200, "torch", "compiled", "float32", 6, 384, 256, 8192, 320_473,
        "a whole 5000-step run with its evaluations and compilation", GPU_REPORT,
    ),
    Measured(
        H200, "torch", "compiled", "bfloat16", 6, 384, 4097, 8192, 2_500_836,
        "training steps only, best of 3 rounds of 20", GPU_REPORT,
    ),
    Measured(
        H200, "mlx", "compiled", "bfloat16", 6, 384, 4097, 8192, 1_243_236,
        "training steps only, best of 3 rounds of 20", GPU_REPORT,
    ),
)  # fmt: skip
# Fused groups (`--fuse`) have no GPU measurement yet: benchmarks/gpu_check.sh section 4 has
# not run on a GPU. Add an entry with mode "fused" once it has.
MEASURED_MODES = ("eager", "compiled", "fused")


def applies(m: Measured, cfg: RunConfig, backend: str) -> bool:
    """The entry can price this config: same program, dtype, width and batch shape."""
    return (
        m.backend == backend
        and m.dtype == cfg.train.dtype
        and m.n_embd == cfg.model.n_embd
        and m.tokens_per_step == cfg.tokens_per_step
    )


def run_seconds(m: Measured, cfg: RunConfig) -> float:
    """One run of cfg to max_steps at the entry's speed, scaled by FLOPs per token."""
    from sweeps.sweep.estimate import flops_per_token

    measured_model = replace(cfg.model, n_layer=m.n_layer)
    scale = flops_per_token(cfg.model, cfg.vocab_size) / flops_per_token(
        measured_model, m.vocab_size
    )
    return cfg.train.max_steps * cfg.tokens_per_step * scale / m.tokens_per_s


def cost_lines(configs: list[RunConfig], backend: str, extra_runs: int) -> list[str]:
    """The dry run's lines: per measured device and mode that can price these configs, the
    planned runs' hours one run at a time and the worst case with every extension and
    refinement run (at the costliest config); which figure is measured (steps or a whole run,
    the preset, depth and vocabulary) and which estimated; the modes with no measurement; and,
    for a float32 sweep, what the same runs would cost in bfloat16 where that is measured,
    marked as not this sweep's precision (docs/STUDY.md section 24 decides the real specs')."""
    if not configs:
        return []
    base = configs[0]
    if not any(
        (m.n_embd, m.tokens_per_step) == (base.model.n_embd, base.tokens_per_step) for m in MEASURED
    ):
        return []  # no device measured a model of this shape: nothing to scale from
    usable = [m for m in MEASURED if applies(m, base, backend)]
    lines = [_line(m, configs, backend, extra_runs) for m in usable]
    missing = [
        mode for mode in MEASURED_MODES if not any(m.mode == mode for m in usable)
    ]  # a mode with no entry is said, not silently left out
    lines.append(
        f"    not measured for this sweep ({PROGRAMS[backend]}, {base.train.dtype}, width "
        f"{base.model.n_embd}, {base.tokens_per_step:,} tokens per step): "
        + (", ".join(missing) if missing else "none")
        + "; `--estimate` measures the device at hand"
    )
    if base.train.dtype == "float32":
        in_bf16 = [replace(c, train=replace(c.train, dtype="bfloat16")) for c in configs]
        lines += [
            "    in bfloat16, not this sweep's precision (`--set train.dtype=bfloat16`; "
            "docs/STUDY.md section 24 decides the real specs'): "
            + _line(m, in_bf16, backend, extra_runs).strip()
            for m in MEASURED
            if applies(m, in_bf16[0], backend)
        ]
    head = (
        "  cost on measured devices (one run at a time; the speed is measured, the hours are "
        f"estimates scaled by FLOPs per token; {GPU_REPORT}; dollars at an assumed "
        f"${PRICE_PER_GPU_HOUR:.2f} a GPU-hour):"
    )
    return [head, *lines]


def _line(m: Measured, configs: list[RunConfig], backend: str, extra_runs: int) -> str:
    """One entry's line: what was measured (the speed, the preset, depth and vocabulary, steps
    or a whole run), and the planned and worst-case hours it prices these configs at."""
    per_run = [run_seconds(m, c) for c in configs]
    planned = sum(per_run)
    worst = planned + extra_runs * max(per_run)
    vocabulary = "the bytes" if m.vocab_size == 256 else f"a {m.vocab_size:,}-id"
    return (
        f"    {m.device}, {PROGRAMS[backend]} {m.mode} {m.dtype}: measured "
        f"{m.tokens_per_s:,.0f} tokens/s, {m.preset} at L{m.n_layer} with {vocabulary} "
        f"vocabulary ({m.what}); estimated {_hours(planned)} ({_dollars(planned)}) for the "
        f"{len(configs)} planned runs, {_hours(worst)} ({_dollars(worst)}) at most with growth"
    )


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def _dollars(seconds: float) -> str:
    return f"${seconds / 3600 * PRICE_PER_GPU_HOUR:,.0f}"
