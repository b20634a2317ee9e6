"""Where a CPU run's time goes, and how far each phase is from the machine's own GEMM rate: a
CPU MFU per phase, for each MKL path (sweeps.platform.mkl), side by side in one session.

For each path a worker process (one thread, the path's library preloaded or not) times
- the GEMM rate at this model's shapes: every matmul of a training step (each Linear's
  forward, input-gradient and weight-gradient product, B*T tokens) timed alone with torch.mm,
  the FLOP-weighted rate of the set: the most a step's matmuls could reach on this core;
- a training step and an evaluation batch of the preset (sweeps.sweep.estimate.measure), and
  from them a whole run's phases as the loop schedules them (estimate.run_cost): training
  steps, the periodic evaluations, the final evaluation (start-up, about 2% of a run, is not
  probed here: building the model and loading the data are the same on both paths).
Achieved GFLOP/s counts the project's FLOPs (6 N + attention per trained token, a third of
that per evaluated token); MFU is that over the GEMM rate. The cases alternate in rounds, so
a slow spell of a shared machine falls on both: compare the ratios.

--attention instead times one layer's attention (forward and backward, one thread) at the
preset's shapes in four formulations: torch's SDPA (what qktorch runs), SDPA with an explicit
additive mask, one batched baddbmm with the mask + softmax + bmm, and the model's explicit path
(qktorch.model's masked_fill spelling).

    python benchmarks/cpu_phases.py --preset cpu --depth 4 --rounds 2
    python benchmarks/cpu_phases.py --preset cpu --attention
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PATHS = ("default", "intel")


def gemm_shapes(cfg) -> list[tuple[int, int, int]]:
    """(m, k, n) of every matmul in one training step's Linears (attention's own products are
    SDPA's, not GEMMs): forward x W^T, input gradient, weight gradient."""
    M, C, V = cfg.tokens_per_step, cfg.model.n_embd, cfg.vocab_size
    linears = [(C, C)] * 4 + [(C, 4 * C), (4 * C, C)]
    shapes = []
    for fan_in, fan_out in linears * cfg.model.n_layer + [(C, V)]:
        shapes += [(M, fan_in, fan_out), (M, fan_out, fan_in), (fan_in, M, fan_out)]
    return shapes


def gemm_rate(shapes, seconds: float = 0.2) -> float:
    """FLOP/s of torch.mm over the shapes, each timed for about `seconds` (best of 3)."""
    import torch

    total_flops, total_s = 0.0, 0.0
    for m, k, n in sorted(set(shapes)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        for _ in range(3):
            a @ b
        reps = max(1, int(seconds / max(_time(lambda: a @ b, 1), 1e-6) / 3))
        per = min(_time(lambda: a @ b, reps) for _ in range(3)) / reps
        count = shapes.count((m, k, n))
        total_flops += 2 * m * k * n * count
        total_s += per * count
    return total_flops / total_s


def _time(fn, reps: int) -> float:
    began = time.perf_counter()
    for _ in range(reps):
        fn()
    return time.perf_counter() - began


def attention_times(preset: str, rounds: int = 5) -> list[tuple[str, float, float]]:
    """(formulation, best forward+backward ms, its max abs output difference from SDPA)."""
    import torch
    import torch.nn.functional as F

    from sweeps.core.presets import get_preset

    torch.set_num_threads(1)
    cfg = get_preset(preset)
    B, H, T = cfg.train.batch_size, cfg.model.n_head, cfg.model.block_size
    D = cfg.model.n_embd // H
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, D, generator=gen, requires_grad=True) for _ in range(3))
    scale = D**-0.5
    additive = torch.full((T, T), float("-inf")).triu(1)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def sdpa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)

    def sdpa_mask():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=additive, scale=scale)

    def baddbmm():
        flat = [t.reshape(B * H, T, D) for t in (q, k, v)]
        scores = torch.baddbmm(
            additive.expand(B * H, T, T), flat[0], flat[1].transpose(1, 2), alpha=scale
        )
        return (torch.softmax(scores, -1) @ flat[2]).view(B, H, T, D)

    def explicit():
        scores = (q @ k.transpose(-2, -1)) * scale
        return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v

    grad = torch.randn(B, H, T, D, generator=gen)
    reference = sdpa().detach()
    out = []
    for name, fn in (
        ("SDPA (qktorch)", sdpa),
        ("SDPA, explicit mask", sdpa_mask),
        ("baddbmm + softmax + bmm", baddbmm),
        ("explicit (masked_fill)", explicit),
    ):
        for _ in range(3):
            fn().backward(grad)
        best = min(_time(lambda: fn().backward(grad), 10) for _ in range(rounds)) / 10
        out.append((name, best * 1e3, float((fn().detach() - reference).abs().max())))
    return out


def worker(preset: str, depth: int) -> None:
    import torch

    from sweeps.core.presets import get_preset
    from sweeps.platform.mkl import path_of
    from sweeps.run.backends import trainer_factory
    from sweeps.sweep.estimate import flops_per_token, measure, run_cost

    torch.set_num_threads(1)
    cfg = get_preset(preset).with_overrides([f"model.n_layer={depth}", "backend=torch"])
    probe = measure(trainer_factory("torch", "cpu"), cfg, seconds=6.0)
    cost = run_cost(cfg, probe)
    fpt = flops_per_token(cfg.model, cfg.vocab_size)
    print(
        json.dumps(
            {
                "mkl_path": path_of(torch),
                "gemm": gemm_rate(gemm_shapes(cfg)),
                "step_s": probe.step_s,
                "step_flops": fpt * cfg.tokens_per_step,
                "eval_s": probe.eval_s,
                "eval_flops": fpt / 3 * cfg.tokens_per_step,
                "cost": cost,
            }
        ),
        flush=True,
    )


def run_case(path: str, preset: str, depth: int) -> dict:
    from sweeps.platform.mkl import OPT_IN, preload_env

    env = {**os.environ, OPT_IN: path, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.update(preload_env(env))
    out = subprocess.run(
        [sys.executable, __file__, "--worker", "--preset", preset, "--depth", str(depth)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(results: dict[str, list[dict]]) -> list[str]:
    lines = [
        "| path (MKL branch) | GEMM rate at the step's shapes | phase | s per run | share | "
        "GFLOP/s | MFU |",
        "|---|---|---|---|---|---|---|",
    ]
    for path, rounds in results.items():
        pick = min(rounds, key=lambda r: r["step_s"])  # the round least disturbed
        gemm = statistics.median(r["gemm"] for r in rounds)
        cost = pick["cost"]
        total = cost["seconds"]
        train_rate = pick["step_flops"] / pick["step_s"]
        eval_rate = pick["eval_flops"] / pick["eval_s"]
        phases = [
            ("training steps", cost["train_s"], train_rate),
            ("periodic evaluations", cost["eval_s"], eval_rate),
            ("final evaluation", cost["final_eval_s"], eval_rate),
        ]
        for i, (name, seconds, rate) in enumerate(phases):
            head = f"{path} ({pick['mkl_path']})" if i == 0 else ""
            g = f"{gemm / 1e9:.1f} GFLOP/s" if i == 0 else ""
            lines.append(
                f"| {head} | {g} | {name} | {seconds:.1f} | {seconds / total:.0%} | "
                + (f"{rate / 1e9:.1f} | {rate / gemm:.0%} |" if rate else "- | - |")
            )
        lines.append(f"| | | **whole run** | **{total:.1f}** | | | |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per path")
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated MKL paths")
    parser.add_argument("--attention", action="store_true", help="time attention formulations")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.attention:
        print(f"`{args.preset}` preset: one layer's attention, forward + backward, one thread\n")
        print("| formulation | ms (best of 5) | max abs difference from SDPA |\n|---|---|---|")
        for name, ms, diff in attention_times(args.preset):
            print(f"| {name} | {ms:.2f} | {diff:.1e} |")
        return 0
    if args.worker:
        worker(args.preset, args.depth)
        return 0
    paths = [p for p in args.paths.split(",") if p]
    results: dict[str, list[dict]] = {p: [] for p in paths}
    for _ in range(args.rounds):
        for path in paths:
            results[path].append(run_case(path, args.preset, args.depth))
    print(f"`{args.preset}` preset at depth {args.depth}, one thread, {args.rounds} rounds\n")
    print("\n".join(table(results)))
    if len(paths) == 2:
        a, b = (min(r["step_s"] for r in results[p]) for p in paths)
        ca, cb = (min(r["cost"]["seconds"] for r in results[p]) for p in paths)
        print(f"\nstep {paths[1]} / {paths[0]}: {a / b:.2f}x faster; whole run {ca / cb:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
