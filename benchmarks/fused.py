"""Fused training's throughput (issue 31): M runs of a preset trained as one program
(qktorch/fused.py, qkmlx/fused.py) against one run alone (a single Trainer: what M runs one
after another get in aggregate) and, with --sequential, against the same M runs trained one
after another by M Trainers, in aggregate tokens/s. Eager and, with --compile, compiled.

All cases live in this one process and take turns, round after round (each round every case
trains the same tokens: the largest M's runs --steps steps each), so slow spells of a shared
machine fall on all alike; the median round counts. Above 1, fusing pays. On a CPU
(matmul-bound) it is expected near 1; on a GPU, where one small run leaves the device idle
between kernel launches, it is the point (HFTA reports up to 15x).

    python benchmarks/fused.py --preset tiny --models 4 --sequential --threads 1
    python benchmarks/fused.py --preset tiny --models 1,4,16 --device cuda --compile

Run it from the repository root (or with the repository on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sweeps.core.presets import get_preset  # noqa: E402
from sweeps.core.schedule import lr_at  # noqa: E402
from sweeps.data import batch_starts  # noqa: E402
from sweeps.run.backends import fused_factory, trainer_factory  # noqa: E402

LRS = (3e-3, 1e-3, 1e-2, 3e-4)  # the runs' LRs, in turn (stable ones: timing, not learning)


def configs(preset: str, backend: str, dtype: str, m: int, overrides=()) -> list:
    base = get_preset(preset).with_overrides(
        [f"backend={backend}", f"train.dtype={dtype}", *overrides]
    )
    return [base.with_overrides([f"train.lr={LRS[i % len(LRS)]!r}", f"seed={i}"]) for i in range(m)]


class Fused:
    """One fused program of the M runs."""

    def __init__(self, backend, device, compile, cfgs, tokens):
        self.cfgs, self.tokens = cfgs, tokens
        self.trainer = fused_factory(backend, device, compile)(cfgs)
        self.trainer.set_train_tokens(tokens)
        self.step = 0

    def run(self, n: int) -> None:
        B, T = self.cfgs[0].train.batch_size, self.cfgs[0].model.block_size
        handles = []
        for _ in range(n):
            starts = np.stack(
                [batch_starts(len(self.tokens), c.seed, self.step, B, T) for c in self.cfgs]
            )
            handles.append(
                self.trainer.train_step(starts, [lr_at(self.step, c.train) for c in self.cfgs])
            )
            self.step += 1
        self.trainer.read(handles)


class Sequential:
    """The same M runs, each its own Trainer, trained one after another."""

    def __init__(self, backend, device, compile, cfgs, tokens):
        self.cfgs, self.tokens = cfgs, tokens
        build = trainer_factory(backend, device, compile)
        self.trainers = [build(c) for c in cfgs]
        for t in self.trainers:
            t.set_train_tokens(tokens)
        self.step = 0

    def run(self, n: int) -> None:
        B, T = self.cfgs[0].train.batch_size, self.cfgs[0].model.block_size
        for t, c in zip(self.trainers, self.cfgs):
            handles = [
                t.train_step(batch_starts(len(self.tokens), c.seed, self.step + i, B, T), 1e-3)
                for i in range(n)
            ]
            t.read(handles)
        self.step += n


def measure(args) -> list[dict]:
    rows = []
    for backend in args.backends.split(","):
        if backend == "torch":
            import torch

            if args.threads:
                torch.set_num_threads(args.threads)
        for compile in (False, True) if args.compile else (False,):
            rows += measure_mode(args, backend, compile)
    return rows


def measure_mode(args, backend: str, compile: bool) -> list[dict]:
    """Every case of one backend and mode: one run alone (a single Trainer), the fused
    program for each M and, with --sequential, M single Trainers one after another."""
    cases = {}
    mode = "compiled" if compile else "eager"
    plan = [(1, "one run", Sequential)]
    for m in (int(x) for x in args.models.split(",")):
        plan.append((m, "fused", Fused))
        if args.sequential and m > 1:
            plan.append((m, "sequential", Sequential))
    for m, kind, cls in plan:
        cfgs = configs(args.preset, backend, args.dtype, m, args.overrides)
        tokens = np.random.default_rng(0).integers(0, cfgs[0].vocab_size, 1 << 20)
        began = time.perf_counter()
        case = cls(backend, args.device, compile, cfgs, tokens.astype(np.uint16))
        case.run(2)  # warm up: compile, allocate
        cases[(m, kind)] = case
        took = time.perf_counter() - began
        print(f"# {backend} {mode} {kind} M={m}: built and warmed in {took:.1f} s", flush=True)
    # Every case trains the same tokens per round (largest M x --steps steps of one run), so
    # each takes about as long and a quiet spell of a shared machine favours none.
    most = max(m for m, _ in cases)
    steps = {(m, kind): max(1, args.steps * most // m) for m, kind in cases}
    times: dict = {key: [] for key in cases}
    for _ in range(args.rounds):
        for key, case in cases.items():
            began = time.perf_counter()
            case.run(steps[key])
            times[key].append(time.perf_counter() - began)
    rows = []
    for (m, kind), seconds in times.items():
        tokens = m * steps[(m, kind)] * cases[(m, kind)].cfgs[0].tokens_per_step
        rate = tokens / float(np.median(seconds))
        rows.append(
            {"backend": backend, "mode": mode, "models": m, "kind": kind, "tokens_per_s": rate}
        )
    one = next(r for r in rows if r["kind"] == "one run")
    for row in rows:
        seq = [r for r in rows if r["models"] == row["models"] and r["kind"] == "sequential"]
        row["vs_sequential"] = row["tokens_per_s"] / seq[0]["tokens_per_s"] if seq else None
        row["vs_one_run"] = row["tokens_per_s"] / one["tokens_per_s"]
        ratios = "".join(
            f"  x{row[k]:.2f} vs {label}"
            for k, label in (("vs_sequential", "sequential"), ("vs_one_run", "one run"))
            if row[k] is not None and row["kind"] == "fused"
        )
        print(
            f"{backend:6s} {mode:8s} {row['kind']:10s} M={row['models']:<3d} "
            f"{row['tokens_per_s']:>12,.0f} tokens/s{ratios}",
            flush=True,
        )
    return rows


def table(rows: list[dict], args) -> str:
    """Per backend, mode and M: the aggregate tokens/s of one run alone, of the fused program
    and (--sequential) of M runs one after another, and fused over each."""
    nan = float("nan")
    lines = [
        f"fused throughput: {args.preset} {args.dtype} on {args.device}, {args.steps} steps "
        f"x {args.rounds} rounds (median round), aggregate tokens/s",
        f"  {'backend':7s} {'mode':9s} {'M':>3s} {'one run':>11s} {'fused':>12s} "
        f"{'sequential':>11s} {'fused/one':>9s} {'fused/seq':>9s}",
    ]
    for r in rows:
        if r["kind"] != "fused":
            continue
        same = [x for x in rows if (x["backend"], x["mode"]) == (r["backend"], r["mode"])]
        one = next(x for x in same if x["kind"] == "one run")
        seq = next(
            (x for x in same if x["kind"] == "sequential" and x["models"] == r["models"]), {}
        )
        lines.append(
            f"  {r['backend']:7s} {r['mode']:9s} {r['models']:>3d} {one['tokens_per_s']:>11,.0f} "
            f"{r['tokens_per_s']:>12,.0f} {seq.get('tokens_per_s', nan):>11,.0f} "
            f"{r['vs_one_run']:>9.2f} {r['vs_sequential'] or nan:>9.2f}"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--models", default="1,4,16", help="group sizes M, comma-separated")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--backends", default="torch", help="torch, mlx or torch,mlx")
    parser.add_argument("--compile", action="store_true", help="also the compiled step")
    parser.add_argument(
        "--sequential", action="store_true", help="also M single runs one after another"
    )
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--summary", default=None, help="append the table to this file")
    args = parser.parse_args(argv)
    rows = measure(args)
    text = table(rows, args)
    print(text)
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
