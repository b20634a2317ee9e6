"""Before and after on real runs: a slice of the committed cpu-depth ladder trained on each
MKL path (sweeps.platform.mkl) in one session, two runs at a time (as `sweep --workers 2`),
the two paths' runs interleaved so a slow spell of the machine falls on both.

The slice: cpu-depth's own configs (the spec's settings, so the same run ids as its committed
runs) at depths 2, 4 and 8, LR 0.0562 (where QK-norm's threshold lies and `off` turns stuck
at depths 2 and 4: fates near the edge), both arms, seeds 0-2: 18 runs per path. It prints
per depth the mean run wall time on each path, the 256-run ladder projected from them (its
runs per depth x mean wall / 2 workers), each run's fate and final loss on both paths beside
the committed run's (docs/cpu-depth/runs.parquet), and docs/cpu-depth analysed by the report's
own pipeline (the rulebook, sweeps.analysis.analyze) with the slice's runs in place of the
committed ones, once per path: per depth the stability threshold (pooled and per seed) and
`off`'s stuck edge, H1, and H3.

    python benchmarks/cpu_slice.py --out /tmp/slice        # about an hour on 2 idle cores

Run again with the same --out, it trains nothing (every run is finished) and prints again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from sweeps.platform.mkl import OPT_IN  # noqa: E402
from sweeps.sweep.spec import load_spec  # noqa: E402

COMMITTED = ROOT / "docs" / "cpu-depth" / "runs.parquet"
DEPTHS, LR, SEEDS = (2, 4, 8), 0.0562, (0, 1, 2)
ARMS = {"off": "none", "on": "rms"}
PATHS = ("default", "intel")


def slice_jobs() -> list[dict]:
    spec = load_spec("cpu-depth")
    base = spec.base_config("torch")
    jobs = []
    for depth in DEPTHS:
        for arm, kind in ARMS.items():
            for seed in SEEDS:
                sets = [f"model.n_layer={depth}", f"arm={arm}", f"model.qk_norm={kind}"]
                sets += [f"train.lr={LR}", f"seed={seed}"]
                cfg = base.with_overrides(sets)
                jobs.append({"run_id": cfg.run_id, "depth": depth, "arm": arm, "sets": sets})
    return jobs


def train(job: dict, path: str, out: Path) -> dict:
    spec = load_spec("cpu-depth")
    fixed = [f"{k}={v}" for k, v in spec.set.items()]
    sets = [s for s in job["sets"] if not s.startswith("seed=")]
    seed = job["sets"][-1].split("=")[1]
    run_dir = out / path / job["run_id"]
    program = shutil.which("qktorch", path=str(Path(sys.executable).parent)) or "qktorch"
    command = [program, "train", "--preset", spec.preset, "--threads", "1"]
    for s in fixed + sets:
        command += ["--set", s]
    command += ["--seed", seed, "--out", str(run_dir)]
    env = {**os.environ, OPT_IN: path}
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    written = json.loads((run_dir / "config.json").read_text())
    if written["run_id"] != job["run_id"]:
        raise SystemExit(f"{run_dir}: trained {written['run_id']}, not cpu-depth's {job['run_id']}")
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        **{k: job[k] for k in ("run_id", "depth", "arm")},
        "path": path,
        "mkl_path": written["provenance"].get("kernels", {}).get("torch", {}).get("mkl_path"),
        "status": summary["status"],
        "final_val_loss": summary.get("final_val_loss"),
        "wall_s": summary.get("wall_time_s"),
        "run_dir": str(run_dir),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the slice's run directories")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    out = Path(args.out)
    jobs = [(job, path) for job in slice_jobs() for path in PATHS]  # interleaved
    began = time.time()
    with ThreadPoolExecutor(args.workers) as pool:
        rows = list(pool.map(lambda jp: train(jp[0], jp[1], out), jobs))
    table = pd.DataFrame(rows)
    table.to_csv(out / "slice.csv", index=False)
    committed = pd.read_parquet(COMMITTED).set_index("run_id")
    print(f"{len(rows)} runs in {(time.time() - began) / 60:.1f} min, {args.workers} at a time\n")
    walls = table.pivot_table(index="depth", columns="path", values="wall_s", aggfunc="mean")
    counts = committed.groupby("n_layer").size()
    print("| depth | default s/run | intel s/run | ratio | committed runs |")
    print("|---|---|---|---|---|")
    for depth, row in walls.iterrows():
        print(
            f"| {depth} | {row['default']:.0f} | {row['intel']:.0f} | "
            f"{row['default'] / row['intel']:.2f}x | {counts.get(depth, 0)} |"
        )
    for path in PATHS:
        hours = sum(counts[d] * walls.loc[d, path] for d in walls.index) / args.workers / 3600
        print(f"the 256-run ladder on the {path} path, {args.workers} workers: {hours:.2f} h")
    print("\n| run | default | intel | committed |\n|---|---|---|---|")
    moved = 0
    for run_id, group in table.groupby("run_id", sort=False):
        by = group.set_index("path")
        cells = [f"{by.loc[p, 'status']} {by.loc[p, 'final_val_loss']:.4f}" for p in PATHS]
        held = committed.loc[run_id] if run_id in committed.index else None
        then = f"{held['status']} {held['final_val_loss']:.4f}" if held is not None else "-"
        moved += by.loc["default", "status"] != by.loc["intel", "status"]
        print(f"| {run_id} | {cells[0]} | {cells[1]} | {then} |")
    print(f"\nfates that differ between the paths: {moved} of {len(table) // 2}")
    rejudged = {"committed": json.loads((COMMITTED.parent / "analysis.json").read_text())}
    for path in PATHS:
        rejudged[path] = rejudge_with(table[table.path == path], out / f"report-{path}")
    print("\n" + "\n".join(compare(rejudged)))
    return 0


def rejudge_with(runs: pd.DataFrame, folder: Path) -> dict:
    """docs/cpu-depth's analysis (analysis.json's dict) with these runs' summaries in place of
    its own, by the report's pipeline."""
    from sweeps.analysis import analyze, archive
    from sweeps.analysis.adapter import to_json

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("analysis.json", "sweep.json", archive.CURVES_FILE):
        shutil.copy(COMMITTED.parent / name, folder / name)
    committed = pd.read_parquet(COMMITTED)
    for row in runs.to_dict("records"):
        summary = json.loads((Path(row["run_dir"]) / "summary.json").read_text())
        at = committed.index[committed.run_id == row["run_id"]]
        for key, value in summary.items():
            if key in committed.columns and not isinstance(value, (dict, list)):
                committed.loc[at, key] = value
    committed.to_parquet(folder / "runs.parquet")
    results, curves, _ = archive.load(folder)
    return json.loads(json.dumps(to_json(analyze(results, curves, None, folder))))


def compare(rejudged: dict) -> list[str]:
    """Per depth and analysis: the stability threshold, per seed, off's stuck edge, H1; H3."""
    from figures.report.edges import edge_text
    from figures.words import numbers
    from sweeps.analysis import model as m
    from sweeps.analysis.adapter import read

    names = list(rejudged)
    lines = ["| depth | quantity | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]

    def primary(a: dict, depth: str) -> dict:
        return a["depths"][depth]["comparisons"]["off vs on"]

    quantities = (
        (
            "stability threshold",
            lambda a, d: numbers.bracket(read(m.GridPoint, primary(a, d)["threshold"])),
        ),
        (
            "per seed",
            lambda a, d: numbers.seed_grid(
                {k: read(m.GridPoint, v) for k, v in primary(a, d)["seed_thresholds"].items()}
            ),
        ),
        (
            "off stuck edge",
            lambda a, d: edge_text(read(m.Edge, a["depths"][d]["edges"]["off"]["stuck"])),
        ),
        ("H1", lambda a, d: a["depths"][d]["h1"]["verdict"]),
    )
    for depth in rejudged["committed"]["depths"]:
        for label, say in quantities:
            cells = [say(rejudged[k], depth) for k in names]
            lines.append(f"| {depth} | {label} | " + " | ".join(cells) + " |")
    for k in names:
        h3 = rejudged[k]["h3"]
        lo, hi = h3["at_bound"]["ci90"]
        slope = h3["at_bound"]["value"]
        lines.append(f"| all | H3 ({k}) | {h3['verdict']}: {slope:.3f} [{lo:.3f}, {hi:.3f}] |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
