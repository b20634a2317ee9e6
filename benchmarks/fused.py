"""Fused training's throughput (issue 31): M runs of a preset trained as one program
(qktorch/fused.py, qkmlx/fused.py) against the same M runs as M separate processes sharing the
device (what `sweep --fuse off --workers M` does) and against one run alone (a sweep that runs
one at a time), in aggregate tokens/s, per preset shape and M.

Every case is a worker process (benchmarks/throughput.py's protocol) that builds its trainer,
warms up (compiles) and waits; all start at once, so their compiles overlap. Per M, the cases
(one run, fused M, M processes) then train in turns, round after round, each round the same
tokens (M runs x --steps steps), so the slow spells of a shared machine fall on all alike; a
ratio is the median of its rounds' ratios. On a CPU each case gets the same threads in all
(--threads, default the cores): the one run and the fused program all of them, each of M
processes its share (at least one). Above 1, fusing pays. A CPU is matmul-bound and gains
little; on a GPU one small run leaves the device idle between kernel launches, and that is
what fusing fills (HFTA reports up to 15x).

    python benchmarks/fused.py                        # tiny and cpu, M = 1, 4, 16, eager
    python benchmarks/fused.py --presets core --models 1,4 --steps 2
    python benchmarks/fused.py --presets cpu --models 1,4,16,64 --device cuda \\
        --modes compiled --max-processes 4

Run it from the repository root (or with the repository on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.throughput import (  # noqa: E402
    Case,
    Worker,
    measure_round,
    mlx_device,
    say,
    torch_device,
)

LRS = (3e-3, 1e-3, 1e-2, 3e-4)  # the runs' LRs, in turn (stable ones: timing, not learning)
KINDS = ("one run", "fused", "processes")


def configs(preset: str, backend: str, dtype: str, m: int, overrides=()) -> list:
    """The M runs of a group: the preset, LRs in turn, seeds 0..M-1."""
    from sweeps.core.presets import get_preset

    base = get_preset(preset).with_overrides(
        [f"backend={backend}", f"train.dtype={dtype}", *overrides]
    )
    return [base.with_overrides([f"train.lr={LRS[i % len(LRS)]!r}", f"seed={i}"]) for i in range(m)]


# -- the worker: a fused program of M runs, or run `index` of them alone ----------------------
def worker(spec: dict) -> None:
    """Build the trainer, warm it up, report `ready`, then answer `run N` (N steps of every
    model, read every log_interval steps as the loop does) with its start and end, until
    `quit`."""
    import numpy as np

    from sweeps.core.schedule import lr_at
    from sweeps.data import batch_starts
    from sweeps.run.backends import fused_factory, trainer_factory

    backend, device, compile = spec["backend"], spec["device"], spec["compile"]
    if backend == "torch":
        import torch

        torch.set_num_threads(spec["threads"])
    began = time.perf_counter()
    cfgs = configs(spec["preset"], backend, spec["dtype"], spec["models"], spec["overrides"])
    if spec["fused"]:
        trainer = fused_factory(backend, device, compile)(cfgs)
    else:
        cfgs = [cfgs[spec["index"]]]
        trainer = trainer_factory(backend, device, compile)(cfgs[0])
    tokens = np.random.default_rng(0).integers(0, cfgs[0].vocab_size, 1 << 20)
    trainer.set_train_tokens(tokens.astype(np.uint16))
    B, T = cfgs[0].train.batch_size, cfgs[0].model.block_size
    block, step = cfgs[0].train.log_interval, 0

    def run(n: int) -> None:
        nonlocal step
        handles = []
        for _ in range(n):
            starts = [batch_starts(len(tokens), c.seed, step, B, T) for c in cfgs]
            lrs = [lr_at(step, c.train) for c in cfgs]
            if spec["fused"]:
                handles.append(trainer.train_step(np.stack(starts), lrs))
            else:
                handles.append(trainer.train_step(starts[0], lrs[0]))
            step += 1
            if len(handles) >= block:
                trainer.read(handles)
                handles = []
        if handles:
            trainer.read(handles)

    run(spec["warmup"])
    info = {"ready": True, "startup_s": time.perf_counter() - began, "device": trainer.device}
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        start = time.time()
        run(int(command[1]))
        print(json.dumps({"start": start, "end": time.time()}), flush=True)


# -- the cases ---------------------------------------------------------------------------------
def case_spec(args, preset: str, backend: str, compile: bool, m: int, fused: bool) -> dict:
    return {
        "preset": preset,
        "backend": backend,
        "dtype": args.dtype,
        "device": mlx_device(args.device) if backend == "mlx" else torch_device(args.device),
        "compile": compile,
        "models": m,
        "fused": fused,
        "index": 0,  # of a run alone: which of the M
        "warmup": args.warmup,
        "overrides": args.overrides,
    }


def per_process_steps(kind: str, m: int, steps: int) -> int:
    """Each case trains M x steps steps of one run per round: the one run all of them, the
    fused program and each of the M processes `steps` steps (of its M models, of its run)."""
    return m * steps if kind == "one run" else steps


def cpu_env(device: str) -> dict:
    """On a CPU, OpenMP threads that sleep while they wait, as a sweep's workers get them
    (sweeps.sweep.workers.worker_envs: a spinning pool on a busy machine made steps 200x
    slower)."""
    return {"OMP_WAIT_POLICY": "PASSIVE"} if device == "cpu" else {}


def start(cases: dict, threads: dict) -> tuple[dict, dict]:
    """Start every case's workers at once (they build and warm up side by side); wait until
    each is warm. cases and threads by key; returns (the ready groups, errors) by key."""
    groups = {
        key: [Worker(c, threads[key], Path(__file__).resolve()) for c in cs]
        for key, cs in cases.items()
    }
    failed = {}
    for key, group in groups.items():
        if not all([w.ready() for w in group]):  # noqa: C419 (wait for every one)
            failed[key] = next(w.error for w in group if w.error)
    for key in failed:
        for w in groups.pop(key):
            w.close(kill=True)
    return groups, failed


def measure_shape(args, preset: str, backend: str, mode: str, cores: int) -> list[dict]:
    """One preset, backend and mode: per M, one run alone, the fused program and (M up to
    --max-processes) M processes, interleaved round after round; one row per M."""
    compile = mode == "compiled"
    tokens_per_step = configs(preset, backend, args.dtype, 1, args.overrides)[0].tokens_per_step
    on_cpu = args.device == "cpu"
    total = (args.threads or cores) if on_cpu else 1
    env = cpu_env(args.device)
    cases = {
        ("one run", 1): [Case("one run", case_spec(args, preset, backend, compile, 1, False), env)]
    }
    threads = {("one run", 1): total}
    for m in args.models:
        spec = case_spec(args, preset, backend, compile, m, True)
        cases[("fused", m)] = [Case("fused", spec, env)]
        threads[("fused", m)] = total
        if 1 < m <= args.max_processes:
            cases[("processes", m)] = [
                Case("processes", {**spec, "fused": False, "index": i}, env) for i in range(m)
            ]
            threads[("processes", m)] = max(1, total // m) if on_cpu else 1
    groups, failed = start(cases, threads)
    rows, finished = [], False
    try:
        for (kind, m), error in failed.items():
            say(f"failed: {preset} {backend} {mode} {kind} M={m}: {error}")
        for m in args.models if ("one run", 1) not in failed else ():
            mine = {kind: g for (kind, n), g in groups.items() if n == m or kind == "one run"}
            row = measure_m(args, preset, backend, mode, m, mine, tokens_per_step)
            rows.append({**row, "threads": total})
        finished = True
    finally:  # stopped (SIGTERM, an error): at once, mid-step
        for w in (w for group in groups.values() for w in group):
            w.close(kill=not finished)
    return rows


def measure_m(args, preset, backend, mode, m, groups: dict, tokens_per_step: int) -> dict:
    """The rounds of one M: every case once per round, order rotating; aggregate tokens/s."""
    rates = {kind: [] for kind in groups}
    tokens = m * args.steps * tokens_per_step
    for r in range(args.rounds):
        order = list(groups.items())
        order = order[r % len(order) :] + order[: r % len(order)]
        for kind, group in order:
            wall = measure_round(group, per_process_steps(kind, m, args.steps))["wall"]
            rates[kind].append(tokens / wall)
            say(
                f"round {r + 1}/{args.rounds}: {preset} {backend} {mode} M={m} {kind:9s} "
                f"{rates[kind][-1]:12,.0f} tokens/s aggregate"
            )
    row = {"preset": preset, "backend": backend, "mode": mode, "models": m}
    for kind in KINDS:
        row[kind] = statistics.median(rates[kind]) if rates.get(kind) else None
    for kind in ("one run", "processes"):  # the median of the rounds' ratios
        ratio = None
        if rates.get("fused") and rates.get(kind):
            ratio = statistics.median(f / b for f, b in zip(rates["fused"], rates[kind]))
        row[f"fused/{kind}"] = ratio
    return row


def table(rows: list[dict], args) -> str:
    """One line per preset, backend, mode and M: aggregate tokens/s of one run alone, the
    fused program and M processes, and fused over each."""
    steps = f"M x {args.steps} steps of one run per case and round"
    threads = (
        f", {rows[0]['threads']} CPU thread(s) per case" if rows and args.device == "cpu" else ""
    )
    lines = [
        f"fused throughput on {args.device} ({args.dtype}), aggregate tokens/s, median of "
        f"{args.rounds} rounds ({steps}{threads})",
        f"  {'preset':7s} {'backend':7s} {'mode':9s} {'M':>3s} {'one run':>11s} {'fused':>11s} "
        f"{'processes':>11s} {'fused/one':>9s} {'fused/proc':>10s}",
    ]

    def num(v, fmt):
        return format(v, fmt) if v is not None else "-"

    for r in rows:
        lines.append(
            f"  {r['preset']:7s} {r['backend']:7s} {r['mode']:9s} {r['models']:>3d} "
            f"{num(r['one run'], '11,.0f'):>11s} {num(r['fused'], '11,.0f'):>11s} "
            f"{num(r['processes'], '11,.0f'):>11s} {num(r['fused/one run'], '9.2f'):>9s} "
            f"{num(r['fused/processes'], '10.2f'):>10s}"
        )
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--presets", "--preset", default="tiny,cpu", help="e.g. tiny,cpu,core")
    parser.add_argument("--models", default="1,4,16", help="group sizes M, e.g. 1,4,16,64")
    parser.add_argument(
        "--max-processes",
        type=int,
        default=16,
        help="M separate processes only up to this M (each holds a framework, and on a GPU "
        "a context and its own compiled step)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--backends", default="torch", help="torch, mlx or torch,mlx")
    parser.add_argument("--modes", default="eager", help="eager, compiled or eager,compiled")
    parser.add_argument(
        "--compile", action="store_true", help="also compiled: --modes eager,compiled"
    )
    parser.add_argument("--steps", type=int, default=2, help="steps per run per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps (compilation)")
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads per case in all (default: cores)"
    )
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--summary", default=None, help="append the table to this file")
    args = parser.parse_args(argv)
    if args.compile and "compiled" not in args.modes.split(","):
        args.modes += ",compiled"
    if not args.worker:
        args.models = [int(x) for x in args.models.split(",")]
        bad = [m for m in args.models if m < 1] or [
            x for x in args.modes.split(",") if x not in ("eager", "compiled")
        ]
        if bad:
            parser.error(f"--models are counts of at least 1, --modes eager or compiled: {bad}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout`: close the workers
    cores = os.cpu_count() or 1
    rows = []
    for preset in args.presets.split(","):
        for backend in args.backends.split(","):
            for mode in args.modes.split(","):
                rows += measure_shape(args, preset, backend, mode, cores)
    text = table(rows, args)
    print(text, flush=True)
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(text + "\n\n")


if __name__ == "__main__":
    main()
