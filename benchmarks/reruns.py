"""How far two trainings of the same configs drift apart: the same run ids (same config, same
seed) trained twice, on two machines or with other thread counts, compared run by run.

On one CPU with one thread count a run is bit-identical (tests/test_train.py). Another
processor kind picks other kernels, so the two trainings differ from the first step by float32
rounding (about 1e-7 of the loss), and training amplifies that: near the edge of stability a
run's final loss, and even its fate, can change. This prints, per arm and LR, how many runs
of A and B pair up, how many keep their fate (ok, unstable, diverged; and stuck: diverged or
worse than the bigram baseline, the study's failure), the median and largest |A - B| of the
effective loss min(final, L0) (docs/STUDY.md section 3), and for scale the spread the seeds
give at that cell (the sd over the paired seeds in A): a rerun difference near the seed sd says that
the seed alone does not fix a run's result there. Each pair is also classed by what the two
runs' provenance says (sweeps.platform.provenance.identity_expected: expected identical, not
expected with the first field that differs, or unknown), and the summary says per class how
many of the pairs that trained to the end are equal bit for bit: a pair expected identical
that is not names its run ids.

When both are report directories with an analysis.json and the paired runs are one rung of
each (one depth, one width), it also sets the rung's study quantities side by side: the best
LR without QK-norm, the necessity threshold and each seed's, each arm's critical LR under the
three failure definitions, the LR sensitivities and H2b: whether the verdicts reproduce.

    python benchmarks/reruns.py docs/cpu-depth docs/cpu-width --out docs/cpu-width/reruns.md

A and B: a report directory (its runs.parquet), a runs.parquet file, or a sweep's directory
of run directories (runs/NAME), read as `figures` reads it.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from figures.words import numbers  # noqa: E402
from sweeps.analysis import model as m  # noqa: E402
from sweeps.analysis.adapter import read  # noqa: E402
from sweeps.analysis.results import load_results  # noqa: E402
from sweeps.core.files import write_atomic  # noqa: E402
from sweeps.platform.provenance import identity_expected  # noqa: E402
from sweeps.study.rules import effective_loss, is_stuck, outcome_class  # noqa: E402

COLUMNS = ("run_id", "arm", "lr", "seed", "status", "init_loss", "final_val_loss", "bigram_loss")
RUNG_FIELDS = ("n_layer", "n_embd")  # what a ladder's rungs differ in (sweeps/core/ladder.py)


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, nothing written."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def load_runs(path: Path) -> pd.DataFrame:
    """A report's run table (its directory or runs.parquet), or a sweep's run directories
    read as `figures` reads them, each run's effective loss and stuck flag added."""
    table = path / "runs.parquet" if path.is_dir() else path
    if path.is_dir() and not table.exists() and (path / "plan.json").exists():
        runs = load_results(path).runs  # a sweep directory, in progress or finished
        runs["provenance_json"] = [json.dumps(p or {}) for p in runs.provenance]
    elif not table.exists():
        fail(f"no run table at {table}; give a report directory, its runs.parquet or a sweep")
    else:
        runs = pd.read_parquet(table)
    missing = [c for c in COLUMNS if c not in runs.columns]
    if missing:
        fail(f"{table} lacks {', '.join(missing)}; regenerate its report (qktorch figures)")
    extra = [c for c in ("provenance_json", *RUNG_FIELDS) if c in runs.columns]
    runs = runs[[*COLUMNS, *extra]].copy()
    runs["fate"] = [outcome_class(s) for s in runs.status]
    runs = runs[runs.fate.notna()]
    runs["effective"] = [
        effective_loss(s, i, f) for s, i, f in zip(runs.status, runs.init_loss, runs.final_val_loss)
    ]
    runs["stuck"] = [
        is_stuck(s, f, b) for s, f, b in zip(runs.status, runs.final_val_loss, runs.bigram_loss)
    ]
    return runs


def drift(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """One row per (arm, lr) of the runs both A and B finished, highest LR first."""
    paired = a.merge(b, on=["run_id", "arm", "lr", "seed"], suffixes=("_a", "_b"))
    rows = []
    # run ids differ between depths and widths, so an (arm, lr) cell of the pairs is one
    # config of one rung over the seeds both trained
    for (arm, lr), cell in paired.groupby(["arm", "lr"]):
        gap = (cell.effective_a - cell.effective_b).abs()
        seeds = cell.effective_a  # the same config but for the seed: one cell of one rung
        # both trained to the end with the same final loss, bit for bit (a pair that diverged
        # on both sides shares only its loss at initialization)
        finished = (cell.fate_a != "diverged") & (cell.fate_b != "diverged")
        equal = finished & (cell.final_val_loss_a == cell.final_val_loss_b)
        rows.append(
            {
                "arm": arm,
                "lr": lr,
                "pairs": len(cell),
                "same_fate": int((cell.fate_a == cell.fate_b).sum()),
                "same_stuck": int((cell.stuck_a == cell.stuck_b).sum()),
                "finished": int(finished.sum()),
                "identical": int(equal.sum()),
                "median_gap": float(gap.median()),
                "max_gap": float(gap.max()),
                "seed_sd": float(seeds.std(ddof=1)) if len(seeds) > 1 else float("nan"),
            }
        )
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows)
    return table.sort_values(["lr", "arm"], ascending=[False, True]).reset_index(drop=True)


def identity(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """One row per pair of runs that trained to the end on both sides (as `drift` counts
    them): run_id, equal (the final loss bit for bit), expected and reason (identity_expected
    of their provenance; unknown when a table records none) and label, the class as the
    summary names it ("expected identical", "not expected (cpu differs)", "unknown (host not
    recorded)")."""
    paired = a.merge(b, on="run_id", suffixes=("_a", "_b"))
    both = paired[(paired.fate_a != "diverged") & (paired.fate_b != "diverged")]
    rows = []
    for r in both.itertuples():
        prov = [json.loads(getattr(r, f"provenance_json_{side}", None) or "{}") for side in "ab"]
        expected, reason = identity_expected(*prov)
        label = {
            "expected": "expected identical",
            "not expected": f"not expected ({reason.split(':')[0]} differs)",
        }.get(expected, f"unknown ({reason})")
        equal = bool(r.final_val_loss_a == r.final_val_loss_b)
        rows.append((r.run_id, equal, expected, reason, label))
    return pd.DataFrame(rows, columns=["run_id", "equal", "expected", "reason", "label"])


def by_identity(pairs: pd.DataFrame) -> str:
    """'expected identical: 50 of 50 equal; not expected (cpu differs): 0 of 23.': per class
    (expected, then not expected by the field that differs, most pairs first, then unknown),
    how many of its finished pairs are equal bit for bit; then the run ids of pairs expected
    identical that are not (at most 5)."""
    if pairs.empty:
        return "no pair trained to the end on both sides."
    order = {"expected": 0, "not expected": 1, "unknown": 2}
    counts = pairs.groupby(["expected", "label"]).equal.agg(["sum", "size"]).reset_index()
    counts["rank"] = counts.expected.map(order)
    counts = counts.sort_values(["rank", "size", "label"], ascending=[True, False, True])
    text = "; ".join(f"{r.label}: {r.sum} of {r.size} equal" for r in counts.itertuples()) + "."
    surprises = pairs[(pairs.expected == "expected") & ~pairs.equal].run_id.tolist()
    if surprises:
        more = f" and {len(surprises) - 5} more" if len(surprises) > 5 else ""
        text += (
            f" Expected identical but not: {', '.join(map(str, surprises[:5]))}{more} (something "
            "the provenance does not record differs)."
        )
    return text


def hosts(runs: pd.DataFrame) -> str:
    """The hosts the runs record (provenance), or that they record none."""
    if "provenance_json" not in runs.columns:
        return "not recorded"
    found = {
        (json.loads(p or "{}").get("host") or {}).get("cpu", "not recorded")
        for p in runs.provenance_json
    }
    return ", ".join(sorted(found))


def rung_of(runs: pd.DataFrame, paired_ids, analysis: dict) -> str | None:
    """The key of the one rung of `analysis` the paired runs lie on; None when they span
    several rungs (or the table cannot say)."""
    field = (analysis.get("settings", {}).get("ladder") or {}).get("field", "n_layer")
    if field not in runs.columns:
        return None
    values = set(runs[runs.run_id.isin(paired_ids)][field].dropna().astype(int))
    key = str(values.pop()) if len(values) == 1 else None
    return key if key in analysis.get("depths", {}) else None


def rung_quantities(analysis: dict, key: str) -> dict[str, str]:
    """The study's quantities of one rung as the report words them: name -> text."""
    rung, settings = analysis["depths"][key], analysis["settings"]
    reference, primary = settings["reference"], settings["primary"]
    comparison = rung["comparisons"][f"{reference} vs {primary}"]
    out = {
        f"best LR ({reference})": numbers.lr(rung["arms"][reference]["best_lr"]),
        "necessity threshold": numbers.bracket(read(m.GridPoint, comparison["threshold"])),
        "per seed": "; ".join(
            f"{seed}: {numbers.bracket(read(m.GridPoint, v))}"
            for seed, v in sorted(comparison["seed_thresholds"].items())
        ),
    }
    for arm in (reference, primary):
        by = rung["arms"][arm]["eta_crit_by_definition"]
        stuck = rung["arms"][arm]["eta_crit"]
        out[f"critical LR, {arm} (stuck; diverged; degraded)"] = "; ".join(
            numbers.grid(read(m.GridPoint, d["median"]) if d.get("median") else None)
            for d in (stuck, by["diverged"], by["degraded"])
        )
        sensitivity = rung["arms"][arm].get("sensitivity")
        out[f"LR sensitivity, {arm}"] = numbers.num((sensitivity or {}).get("mean"))
    h2b = rung["h2b"]
    low, high = h2b.get("ci90") or (None, None)
    out["H2b: off - on sensitivity"] = (
        f"{numbers.num(h2b.get('mean'))} [{numbers.num(low)}, {numbers.num(high)}], "
        f"{h2b.get('verdict')}"
    )
    return out


def rung_table(a_path: Path, b_path: Path, a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """The rung both reports judged, its quantities side by side; [] when there is none."""
    docs = [p / "analysis.json" for p in (a_path, b_path)]
    if not all(p.is_file() for p in docs):
        return []
    analyses = [json.loads(p.read_text()) for p in docs]
    paired = set(a.run_id) & set(b.run_id)
    keys = [rung_of(runs, paired, doc) for runs, doc in zip((a, b), analyses)]
    if None in keys:
        return []
    qa, qb = (rung_quantities(doc, key) for doc, key in zip(analyses, keys))
    lines = [
        "",
        f"## The rung both judged: {keys[0]} in A, {keys[1]} in B",
        "",
        "| quantity | A | B |",
        "|---|---|---|",
    ]
    return lines + [f"| {name} | {qa[name]} | {qb.get(name, 'n/a')} |" for name in qa]


def render(
    table: pd.DataFrame,
    a_name: str,
    b_name: str,
    a: pd.DataFrame,
    b: pd.DataFrame,
    rungs=(),
    command: str = "",
) -> str:
    pairs = int(table.pairs.sum())
    lines = [
        f"# The same configs trained twice: {a_name} (A) against {b_name} (B)",
        "",
        f"{pairs} runs with the same run id (config and seed) finished in both. Hosts: A "
        f"{hosts(a)}; B {hosts(b)}.",
        f"Fate kept: {int(table.same_fate.sum())} of {pairs} (ok, unstable, diverged); "
        f"stuck or not (the study's failure) kept: {int(table.same_stuck.sum())} of {pairs}.",
        "|A - B| of the effective loss (nats): median over all pairs "
        f"{np.median(_gaps(a, b)):.3f}, largest {np.max(_gaps(a, b)):.3f}.",
        f"Final loss equal bit for bit: {int(table.identical.sum())} of the "
        f"{int(table.finished.sum())} pairs that trained to the end on both sides (a rerun on "
        "the same kind of machine, thread counts and libraries; docs/DESIGN.md)" + _others(a, b),
        "By what the two runs' provenance says (the same CPU, vector extensions, thread "
        "settings, preloaded library, torch, mlx and numpy versions, device and kernels): "
        + by_identity(identity(a, b)),
        "",
        "| arm | LR | pairs | same fate | same stuck | final equal | median abs(A - B) "
        "| largest | sd over the seeds (A) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        lines.append(
            f"| {r.arm} | {r.lr:.3g} | {r.pairs} | {r.same_fate} | {r.same_stuck} | "
            f"{r.identical} of {r.finished} | {r.median_gap:.3f} | {r.max_gap:.3f} | "
            f"{r.seed_sd:.3f} |"
        )
    return "\n".join([*lines, *rungs, "", f"Made by `{command}`.", ""])


def _others(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """'; the other 23 differ by a median 0.040 nats, at most 0.373.': the pairs that trained
    to the end on both sides but not to the same bits (another machine kind, most likely)."""
    paired = a.merge(b, on="run_id", suffixes=("_a", "_b"))
    both = paired[(paired.fate_a != "diverged") & (paired.fate_b != "diverged")]
    other = both[both.final_val_loss_a != both.final_val_loss_b]
    if other.empty:
        return "."
    gap = (other.final_val_loss_a - other.final_val_loss_b).abs()
    return (
        f"; the other {len(other)} differ by a median {gap.median():.3f} nats, at most "
        f"{gap.max():.3f}."
    )


def _gaps(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    paired = a.merge(b, on="run_id", suffixes=("_a", "_b"))
    return (paired.effective_a - paired.effective_b).abs().to_numpy()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="report directory or runs.parquet (A)")
    parser.add_argument("b", type=Path, help="report directory or runs.parquet (B)")
    parser.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    a, b = load_runs(args.a), load_runs(args.b)
    table = drift(a, b)
    if table.empty:
        fail(f"{args.a} and {args.b} share no finished run id; compare two sweeps of one config")
    rungs = rung_table(args.a, args.b, a, b)
    argv = sys.argv[1:] if argv is None else argv
    command = " ".join(["python", "benchmarks/reruns.py", *map(str, argv)])
    text = render(table, str(args.a), str(args.b), a, b, rungs, command)
    print(text)
    if args.out:
        write_atomic(args.out, text)


if __name__ == "__main__":
    main()
