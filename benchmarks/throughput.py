"""Training throughput of a preset: qktorch, qkmlx (on Linux CPUs with MLX's bundled BLAS and
with OpenBLAS preloaded), optionally compiled and a plain-torch reference, and how many runs
one device takes (1, 2, 4, 8 worker processes sharing it, aggregate tokens/s).

Every case is a worker process that builds its trainer once, warms up (compiles), then waits;
the cases run their timed steps in turns, round after round, so slow spells of a shared
machine fall on all of them alike (compare ratios, and the best round). Tokens/s, achieved
FLOP/s (sweeps.sweep.estimate.flops_per_token) and MFU where the device's peak is known.

    python benchmarks/throughput.py --preset tiny --threads 1 --reference --compile
    python benchmarks/throughput.py --preset core --device cuda --dtype bfloat16 --compile \\
        --workers 1,4,8

Run it from the repository root (or with the repository on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# -- the worker: one trainer in its own process --------------------------------------------
def worker(spec: dict) -> None:
    """Build the case's trainer, warm it up, report `ready`, then answer `run N` with the
    time N steps took (read every log_interval steps, as the loop does) until `quit`."""
    import numpy as np

    if spec.get("root"):  # another checkout's trainers (--baseline)
        sys.path.insert(0, spec["root"])
    from sweeps.core.presets import get_preset
    from sweeps.sweep.estimate import run_steps

    backend = "torch" if spec["kind"] in ("torch", "reference") else "mlx"
    cfg = get_preset(spec["preset"]).with_overrides(
        [f"backend={backend}", f"train.dtype={spec['dtype']}"]
    )
    if backend == "torch":
        import torch

        torch.set_num_threads(spec["threads"])
    began = time.perf_counter()
    trainer = make_trainer(spec, cfg)
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, 1 << 20).astype(np.uint16)
    trainer.set_train_tokens(tokens)
    block, step = cfg.train.log_interval, 0

    def run(n: int) -> float:
        nonlocal step
        last = run_steps(trainer, cfg, len(tokens), step, n, block, 1e-4, seed=0)
        step += n
        return float(last[-1, 0])

    run(spec["warmup"])
    info = {
        "ready": True,
        "startup_s": time.perf_counter() - began,
        "device": trainer.device,
        "device_name": getattr(trainer, "device_name", trainer.device),
        "memory_bytes": peak_memory(backend, trainer.device),
    }
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        start = time.time()
        loss = run(int(command[1]))
        end = time.time()
        print(json.dumps({"start": start, "end": end, "loss": loss}), flush=True)


def make_trainer(spec: dict, cfg):
    if spec["kind"] == "reference":
        from benchmarks.reference import ReferenceTrainer

        return ReferenceTrainer(cfg, device=spec["device"], fused_qkv=spec["fused_qkv"])
    from sweeps.run.backends import trainer_factory

    backend = "torch" if spec["kind"] == "torch" else "mlx"
    return trainer_factory(backend, spec["device"], spec["compile"], spec["tf32"])(cfg)


def peak_memory(backend: str, device: str) -> int | None:
    """Bytes the process's device allocator peaked at (GPU only)."""
    if backend == "torch" and device == "cuda":
        import torch

        return torch.cuda.max_memory_reserved()
    if backend == "mlx" and device == "gpu":
        import mlx.core as mx

        return mx.get_peak_memory()
    return None


# -- the cases and their processes -----------------------------------------------------------
@dataclass
class Case:
    label: str
    spec: dict
    env: dict = field(default_factory=dict)


class Worker:
    """A case's process: `script --worker SPEC` (this file's worker, or another benchmark's
    with the same protocol: a `ready` line, then `run N` -> {start, end} until `quit`)."""

    def __init__(self, case: Case, threads: int, script: Path | None = None):
        from sweeps.platform.blas import THREAD_VARS

        spec = {**case.spec, "threads": threads}
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env.update({k: str(threads) for k in THREAD_VARS})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env.update(case.env)
        self.case = case
        self.proc = subprocess.Popen(
            [sys.executable, str(script or Path(__file__).resolve()), "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
            cwd=ROOT,
        )
        self.info: dict | None = None
        self.error: str | None = None

    def ready(self) -> bool:
        """Wait for the warm-up; False (with self.error) when the worker failed."""
        if self.info is None and self.error is None:
            line = self.proc.stdout.readline()
            if line:
                self.info = json.loads(line)
            else:
                self.error = f"exit code {self.proc.wait()}"
        return self.info is not None

    def send(self, steps: int) -> None:
        self.proc.stdin.write(f"run {steps}\n")
        self.proc.stdin.flush()

    def result(self) -> dict:
        return json.loads(self.proc.stdout.readline())

    def close(self, kill: bool = False) -> None:
        if kill and self.proc.poll() is None:
            self.proc.kill()
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def cases(args, openblas: str | None) -> list[Case]:
    """The single-run cases: qktorch first (the ratios' base), then the others asked for."""
    base = {
        "preset": args.preset,
        "dtype": args.dtype,
        "tf32": args.tf32,
        "warmup": args.warmup,
        "fused_qkv": False,
    }
    out = []
    compiles = [False, True] if args.compile else [False]
    if "torch" in args.backends:
        for c in compiles:
            out.append(
                Case(
                    "qktorch" + (" --compile" if c else ""),
                    {**base, "kind": "torch", "compile": c, "device": torch_device(args.device)},
                )
            )
    if "mlx" in args.backends:
        blas = [("", {})]
        if args.device == "cpu" and sys.platform.startswith("linux"):
            blas = ([(", bundled BLAS", {})] if args.blas != "openblas" else []) + (
                [(", OpenBLAS", {"LD_PRELOAD": openblas})] if openblas else []
            )
        for c in [True, False] if args.compile else [True]:
            for suffix, env in blas:
                label = "qkmlx" + ("" if c else " --no-compile") + suffix
                out.append(
                    Case(
                        label,
                        {**base, "kind": "mlx", "compile": c, "device": mlx_device(args.device)},
                        env,
                    )
                )
    if args.baseline:
        root, name = str(Path(args.baseline).resolve()), Path(args.baseline).name
        if "torch" in args.backends:
            out.append(
                Case(
                    f"qktorch ({name})",
                    {
                        **base,
                        "kind": "torch",
                        "compile": False,
                        "device": torch_device(args.device),
                        "root": root,
                    },
                )
            )
        if "mlx" in args.backends:
            fast = {"LD_PRELOAD": openblas} if openblas and args.device == "cpu" else {}
            out.append(
                Case(
                    f"qkmlx ({name}){', OpenBLAS' if fast else ''}",
                    {
                        **base,
                        "kind": "mlx",
                        "compile": True,
                        "device": mlx_device(args.device),
                        "root": root,
                    },
                    fast,
                )
            )
    if args.reference:
        for fused in (False, True):
            out.append(
                Case(
                    "reference" + (", fused qkv" if fused else ""),
                    {
                        **base,
                        "kind": "reference",
                        "compile": False,
                        "device": torch_device(args.device),
                        "fused_qkv": fused,
                    },
                )
            )
    return out


def torch_device(device: str) -> str:
    if device == "gpu":
        import torch

        return "cuda" if torch.cuda.is_available() else "mps"
    return device


def mlx_device(device: str) -> str:
    return "gpu" if device in ("cuda", "mps") else device


def say(line: str) -> None:
    """A progress line, on stdout at once: a run stopped by its time limit keeps what it had."""
    print(line, flush=True)


# -- measuring -----------------------------------------------------------------------------
def measure_round(group: list[Worker], steps: int) -> dict:
    """All workers of a group run `steps` steps at once: the group's aggregate rate."""
    for w in group:
        w.send(steps)
    results = [w.result() for w in group]
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    per_worker = [r["end"] - r["start"] for r in results]
    return {"wall": wall, "per_worker": per_worker}


def report_line(label: str, rates: list[float], fpt: int, peak, base: list[float]) -> str:
    """Best and median round; the ratio to the first case is the median of the rounds' ratios
    (each round runs the cases back to back, so a slow spell cancels)."""
    import statistics

    best, median = max(rates), statistics.median(rates)
    flops = best * fpt
    mfu = f"{flops / peak:6.1%}" if peak else "     -"
    ratio = statistics.median(r / b for r, b in zip(rates, base))
    return f"{label:34s} {best:12,.0f} {median:12,.0f}   {flops:9.3g}  {mfu}   {ratio:5.3f}x"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument(
        "--device",
        default="cpu",
        help="cpu | gpu (cuda or mps for torch, gpu for mlx) | cuda | mps | auto",
    )
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument(
        "--compile",
        action="store_true",
        help="also the compiled step (qktorch) and the uncompiled one (qkmlx)",
    )
    parser.add_argument("--tf32", action="store_true", help="allow TF32 matmuls (CUDA)")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also a plain torch GPT with fused AdamW (benchmarks/reference.py)",
    )
    parser.add_argument("--backends", default="torch,mlx")
    parser.add_argument(
        "--blas",
        default="both",
        choices=["both", "openblas"],
        help="qkmlx on Linux CPUs: MLX's bundled BLAS and OpenBLAS, or only "
        "OpenBLAS (the bundled one is ~13x slower: long on core)",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="also the trainers of another checkout of this repository (e.g. "
        "the code before a change, one with "
        "sweeps.sweep.estimate.run_steps), run the same way",
    )
    parser.add_argument(
        "--workers",
        default="",
        help="runs sharing the device, e.g. 1,2,4,8: aggregate tokens/s of each "
        "trainer case (not the reference)",
    )
    parser.add_argument("--steps", type=int, default=10, help="timed steps per case per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps (compilation)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads per process (default: the cores, shared out between "
        "the workers of a group)",
    )
    parser.add_argument(
        "--summary",
        metavar="FILE",
        help="also append the final table to FILE (benchmarks/gpu_check.sh)",
    )
    args = parser.parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    args.backends = args.backends.split(",")
    counts = [int(n) for n in args.workers.split(",") if n]

    from sweeps.core.params import count_params
    from sweeps.core.presets import get_preset
    from sweeps.platform.blas import find_openblas
    from sweeps.platform.devices import peak_flops
    from sweeps.sweep.estimate import flops_per_token

    cfg = get_preset(args.preset)
    fpt = flops_per_token(cfg.model, cfg.vocab_size)
    cores = os.cpu_count() or 1
    on_cpu = args.device == "cpu"

    def threads(n: int) -> int:
        return args.threads or (max(1, cores // n) if on_cpu else 1)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout`: clean up workers
    singles = cases(args, find_openblas())
    say(
        f"throughput: preset {args.preset}, {args.dtype} on {args.device}: "
        f"{len(singles)} case(s), {counts or [1]} worker(s), {args.rounds} rounds of "
        f"{args.steps} steps; each row as it is measured, the table at the end"
    )
    workers = {case.label: Worker(case, threads(1)) for case in singles}
    groups = {}
    finished = False
    try:
        failed = {label: w.error for label, w in workers.items() if not w.ready()}
        # Groups start once the single runs are warm: compiled code is in the caches by then.
        groups = {
            (case.label, n): [Worker(case, threads(n)) for _ in range(n)]
            for case in singles
            if case.label not in failed and case.spec["kind"] != "reference"
            for n in counts
            if n > 1
        }
        for key, group in groups.items():
            if not all([w.ready() for w in group]):  # noqa: C419 (wait for every one)
                failed[f"{key[0]} x{key[1]}"] = next(w.error for w in group if w.error)
        alive = {label: w for label, w in workers.items() if w.info}
        groups = {k: g for k, g in groups.items() if all(w.info for w in g)}
        rates = {label: [] for label in alive}
        scaled = {key: [] for key in groups}
        for label, w in alive.items():
            say(f"ready: {label} ({w.info['startup_s']:.1f} s to build and warm up)")
        for label, error in failed.items():
            say(f"failed: {label}: {error}")
        for r in range(args.rounds):  # interleaved: every case once per round, order rotating
            order = list(alive.items())
            order = order[r % len(order) :] + order[: r % len(order)] if order else order
            for label, w in order:
                res = measure_round([w], args.steps)
                rates[label].append(args.steps * cfg.tokens_per_step / res["wall"])
                say(f"round {r + 1}/{args.rounds}: {label:34s} {rates[label][-1]:12,.0f} tokens/s")
            for key, group in groups.items():
                res = measure_round(group, args.steps)
                scaled[key].append(len(group) * args.steps * cfg.tokens_per_step / res["wall"])
                say(
                    f"round {r + 1}/{args.rounds}: {key[0] + f' x{key[1]}':34s} "
                    f"{scaled[key][-1]:12,.0f} tokens/s aggregate"
                )
        finished = True
    finally:
        for w in [*workers.values(), *(w for g in groups.values() for w in g)]:
            w.close(kill=not finished)

    lines = []

    def table(line: str = "") -> None:  # the final table, on stdout and into --summary
        lines.extend(line.split("\n"))
        print(line, flush=True)

    first = next(iter(alive.values()), None)
    device, name = (first.info["device"], first.info["device_name"]) if first else ("?", "?")
    peak, peak_name = peak_flops(device, name, args.dtype, args.tf32)
    params = count_params(cfg.model, cfg.vocab_size)
    table(
        f"preset {args.preset}: {params['total'] / 1e6:.2f}M params "
        f"({params['non_embedding'] / 1e6:.2f}M non-embedding), {fpt / 1e6:.2f} MFLOPs/token, "
        f"{cfg.tokens_per_step:,} tokens/step"
    )
    table(
        f"device {args.device} ({name}), {args.dtype}{', tf32' if args.tf32 else ''}, "
        f"{threads(1)} thread(s) per single run; {args.steps} steps x {args.rounds} rounds "
        f"after {args.warmup} warm-up steps, interleaved"
        + (
            f"; peak {peak / 1e12:.1f} TFLOP/s ({peak_name})"
            if peak
            else "; no known peak FLOP/s for this device (no MFU)"
        )
    )
    table(
        f"{'case':34s} {'tokens/s best':>12s} {'median':>12s}   {'FLOP/s':>9s}  {'MFU':>6s}"
        f"   vs first (median of rounds)"
    )
    base = rates[next(iter(rates))] if rates else []
    for label, values in rates.items():
        table(report_line(label, values, fpt, peak, base))
    for label, error in failed.items():
        table(f"{label:34s} failed: {error}")
    if counts:
        table(
            f"\nruns sharing the device: aggregate tokens/s (best round), "
            f"{'per-worker threads: cores / workers' if on_cpu else 'one process per run'}"
        )
        for case in singles:
            if case.label not in alive or case.spec["kind"] == "reference":
                continue
            one = max(rates[case.label])
            memory = workers[case.label].info.get("memory_bytes")
            mem = f", {memory / 2**30:.2f} GiB device memory per run" if memory else ""
            table(f"  {case.label}{mem}")
            for n in counts:
                agg = one if n == 1 else max(scaled.get((case.label, n), [0]))
                if n > 1 and (case.label, n) not in scaled:
                    continue
                table(
                    f"    {n} worker(s): {agg:12,.0f} tokens/s aggregate, "
                    f"{agg / n:12,.0f} per run, {agg / one:5.2f}x one run"
                    + (f", MFU {agg * fpt / peak:.1%}" if peak else "")
                )
    if args.summary:
        with open(args.summary, "a") as f:
            f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
