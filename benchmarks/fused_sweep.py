"""A whole sweep end to end, fused against unfused (issue 31): one ad-hoc grid of a preset
(default the `cpu` preset, 2 LRs x 4 seeds x QK-norm off and on: two groups of runs that
differ only in LR and seed) swept twice through the real command, `sweep --fuse N` and then
`sweep --fuse off`, each into its own folder, timed from the command's start to its end, so
process starts, compiles, data, evaluations, checkpoints and summaries are all in. Prints the
wall time and runs per hour each way, their ratio, and the two sweeps' final losses run by
run: equal up to float32 operation order (a fused model sums in another order than its run
alone, as the two backends do), which a run at a high LR can amplify over its steps.

    python benchmarks/fused_sweep.py --device cuda                  # cpu preset, 16 runs
    python benchmarks/fused_sweep.py --preset smoke --lrs 1e-2 --seeds 3 --set train.max_steps=20

The unfused sweep runs second, under --limit-s (and --total-s): stopped there (its whole
process group), its runs per hour count the runs it finished. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "e2e"  # the ad-hoc grid's folder in each runs directory


def sweep_command(args, runs_dir: Path, fuse: str) -> list[str]:
    """The ad-hoc grid's sweep command (qktorch or qkmlx, run as a module's main)."""
    cli = "qktorch.cli" if args.backend == "torch" else "qkmlx.cli"
    sets = [x for s in args.overrides for x in ("--set", s)]
    return [
        sys.executable,
        "-c",
        f"from {cli} import main; main()",
        "sweep",
        "--preset",
        args.preset,
        "--grid",
        f"train.lr={args.lrs}",
        "--seeds",
        str(args.seeds),
        "--name",
        NAME,
        "--runs-dir",
        str(runs_dir),
        "--device",
        args.device,
        "--fuse",
        fuse,
        *sets,
    ]


def timed_sweep(command: list[str], limit_s: float | None, log: Path) -> tuple[float, bool]:
    """(seconds, finished): the command run to its end or stopped at limit_s, with every
    process it started (its own session; also when this process is terminated, e.g. by
    gpu_check.sh's section limit)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    began = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": path},
            start_new_session=True,
        )

        def stop(*_):
            with contextlib.suppress(ProcessLookupError):  # the group may be gone already
                os.killpg(proc.pid, signal.SIGKILL)
            sys.exit(143)

        signal.signal(signal.SIGTERM, stop)
        try:
            rc = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return time.perf_counter() - began, False
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    took = time.perf_counter() - began
    if rc != 0:
        tail = "\n".join(log.read_text().strip().splitlines()[-5:])
        raise SystemExit(f"fused_sweep: `{' '.join(command[3:6])} ...` exited {rc}:\n{tail}")
    return took, True


def results(runs_dir: Path) -> dict:
    """run id -> (status, final_val_loss) of every finished run of the sweep."""
    out = {}
    for path in sorted((runs_dir / NAME).glob("*/summary.json")):
        summary = json.loads(path.read_text())
        out[summary["run_id"]] = (summary["status"], summary["final_val_loss"])
    return out


def report(args, fused: dict, unfused: dict, runs: int) -> str:
    """The table: each way's runs, wall time and runs per hour; the ratio; the results."""
    ways = {f"fused (--fuse {args.fuse})": fused, "unfused (--fuse off)": unfused}
    rate = {label: 3600 * len(r["results"]) / r["seconds"] for label, r in ways.items()}
    lines = [
        f"sweep end to end: preset {args.preset}, {runs} runs ({len(args.lrs.split(','))} LRs x "
        f"{args.seeds} seeds x QK-norm off and on) on {args.device}, {args.backend}",
    ]
    for label, r in ways.items():
        stopped = "" if r["finished"] else f", stopped at its limit, {r['seconds']:.0f} s"
        lines.append(
            f"  {label:22s} {len(r['results']):>3d}/{runs} runs {r['seconds']:9.1f} s "
            f"{rate[label]:9.1f} runs/h{stopped}"
        )
    fused_rate, unfused_rate = rate.values()
    ratio = f"{fused_rate / unfused_rate:.2f}x" if unfused_rate else "n/a (unfused: no run done)"
    lines.append(f"  fused / unfused: {ratio} runs per hour")
    both = sorted(set(fused["results"]) & set(unfused["results"]))
    same = all(fused["results"][r][0] == unfused["results"][r][0] for r in both)
    diffs = [
        abs(fused["results"][r][1] - unfused["results"][r][1])
        for r in both
        if math.isfinite(fused["results"][r][1]) and math.isfinite(unfused["results"][r][1])
    ]
    worst, median = (f"{f(diffs):.2e}" if diffs else "-" for f in (max, statistics.median))
    lines.append(
        f"  final val loss, fused vs unfused: worst |difference| {worst} (median {median}) over "
        f"{len(diffs)} runs, statuses {'equal' if same else 'DIFFER'} over {len(both)}"
    )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--lrs", default="1e-3,3.16e-3", help="the grid's LRs")
    parser.add_argument("--seeds", type=int, default=4, help="seeds 0..N-1 (at least 3)")
    parser.add_argument("--backend", default="torch", choices=["torch", "mlx"])
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--fuse", default=None, help="the fused sweep's --fuse (auto|N; default: an arm's runs)"
    )
    parser.add_argument("--limit-s", type=float, default=None, help="the unfused sweep's limit")
    parser.add_argument(
        "--total-s",
        type=float,
        default=None,
        help="also stop the unfused sweep so that all of this ends within this many seconds",
    )
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--work", default=None, help="keep the runs here (default: a temp dir)")
    parser.add_argument("--summary", default=None, help="append the table to this file")
    args = parser.parse_args(argv)
    per_arm = len(args.lrs.split(",")) * args.seeds  # one fusable group per arm
    runs = 2 * per_arm
    args.fuse = args.fuse or str(per_arm)
    if args.work and Path(args.work).exists() and any(Path(args.work).iterdir()):
        parser.error(f"--work {args.work} is not empty: a sweep there would skip finished runs")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        out = {}
        began = time.perf_counter()
        for key, fuse in (("fused", args.fuse), ("unfused", "off")):
            runs_dir = work / key
            limit = args.limit_s if key == "unfused" else None
            if key == "unfused" and args.total_s is not None:  # 5 s left to report
                left = max(1.0, args.total_s - (time.perf_counter() - began) - 5)
                limit = min(limit or left, left)
            print(f"# {key}: sweep --fuse {fuse} into {runs_dir}", flush=True)
            seconds, finished = timed_sweep(
                sweep_command(args, runs_dir, fuse), limit, work / f"{key}.log"
            )
            out[key] = {"seconds": seconds, "finished": finished, "results": results(runs_dir)}
            print(f"# {key}: {len(out[key]['results'])}/{runs} runs in {seconds:.1f} s", flush=True)
        text = report(args, out["fused"], out["unfused"], runs)
    print(text, flush=True)
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(text + "\n\n")


if __name__ == "__main__":
    main()
