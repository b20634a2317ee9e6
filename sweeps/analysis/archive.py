"""A report's own data, so a committed report regenerates and is re-judged from the repository
alone (`figures NAME --from-report DIR`), without the run directories that trained it.

Beside report.md a report writes:
- runs.parquet: one row per run of the runs table (sweeps.analysis.results), each with its RunConfig
  as JSON and its provenance as JSON;
- curves.parquet: the training curves the charts draw (sweeps.analysis.results.load_curves), thinned
  to the evaluations and every log_interval-th train loss;
- sweep.json: the sweep's name, its spec as planned, the planned runs that have no directory,
  and its crosscheck.json.

Reports made before the archive existed carry only analysis.json's runs table. load() rebuilds
what it can from it: the runs' configs from the spec at this revision (matched by arm, rung, LR
and seed; only the fields the analysis reads matter), the data's baselines from the analysis's
settings, no curves, and the crosscheck line of the old report.md. It says what it could not
recompute (ARCHIVE_GAPS).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sweeps.analysis.previous import Previous, is_v4, previous_of
from sweeps.analysis.results import RUN_KEYS, SweepResults
from sweeps.core.config import RunConfig
from sweeps.core.errors import HarnessError
from sweeps.core.files import clean_json, write_atomic
from sweeps.sweep.archived import RUNS_FILE, SWEEP_FILE  # a sweep grown from a report reads them

CURVES_FILE = "curves.parquet"
OLD_ANALYSIS = "analysis-v3.json"  # a re-judged report keeps the analysis it had, by its name
OLD_REPORT = "report-v3.md"
# a report v4 judged (analysis.json schema 4 or 5), re-judged by the rulebook (docs/STUDY.md
# section 17), keeps what v4 said beside it under these names
V4_ANALYSIS = "analysis-v4.json"
V4_REPORT = "report-v4.md"
ARCHIVE_GAPS = (
    "the training curves and every diagnostic (the curves, attention and kurtosis charts, the "
    "diagnostics and early-warning tables, steps to target and speed-ups), the provenance of "
    "each run, and the final validation loss on the whole split (these runs measured it on "
    "train.eval_batches fixed batches)"
)


@dataclass(frozen=True)
class Source:
    """Where a re-rendered report's data came from: kind "archive" (its runs.parquet) or
    "analysis" (a pre-archive report's analysis.json runs table); gaps: what it could not
    recompute ("" for none); previous: the analysis it had under the earlier rules (None when
    its analysis.json is the current rules')."""

    kind: str
    gaps: str
    previous: Previous | None


def write(out_dir: Path, results: SweepResults, curves: pd.DataFrame, gaps: str = "") -> None:
    """runs.parquet, curves.parquet and sweep.json of a report (module docstring); gaps: what
    the data it was made from could not give (a pre-archive report's), kept for re-renders."""
    runs = results.runs.copy()
    runs["config_json"] = runs.run_id.map(
        lambda r: results.config(r).to_json() if results.config(r) else None
    )
    runs["provenance_json"] = runs.provenance.map(lambda p: json.dumps(p or {}, sort_keys=True))
    runs = runs.drop(columns=["provenance"]).map(_plain)
    _parquet(runs, out_dir / RUNS_FILE)
    _parquet(_thin(curves, results), out_dir / CURVES_FILE)
    sweep = {
        "name": results.name,
        "spec": results.spec,
        "has_plan": results.has_plan,
        "missing": results.missing.to_dict("records"),
        "ignored": results.ignored,
        "crosscheck": results.crosscheck,
        "gaps": gaps,
    }
    write_atomic(out_dir / SWEEP_FILE, json.dumps(clean_json(sweep), indent=1, sort_keys=True))


def has_archive(report_dir: Path) -> bool:
    return (Path(report_dir) / RUNS_FILE).is_file() or _old_analysis(Path(report_dir)) is not None


def load(report_dir: Path) -> tuple[SweepResults, pd.DataFrame, Source]:
    """(results, curves, source) of a committed report: its archive, or, for a report made
    before the archive existed, its analysis.json's runs table."""
    report_dir = Path(report_dir)
    if (report_dir / RUNS_FILE).is_file():
        return _from_archive(report_dir)
    old = _old_analysis(report_dir)
    if old is None:
        raise HarnessError(
            f"{report_dir} holds no report data (runs.parquet or analysis.json): give a "
            f"report directory that `figures` wrote"
        )
    return _from_analysis(report_dir, old)


# the parts of a spec that decide which configs its runs have (the name is checked apart)
SPEC_IDENTITY = ("preset", "set", "grid", "arms", "rung_lr")  # rung_lr: None unless given


def add_runs(
    results: SweepResults, curves: pd.DataFrame, sweep_dir: Path
) -> tuple[SweepResults, pd.DataFrame, int]:
    """A report's runs and curves with the finished runs of sweep_dir it lacks: the runs a
    sweep grown from it trained (`sweep NAME --from-report DIR`, sweeps.sweep.archived). The
    report's own runs win where both hold a run. Refuses another sweep's folder, or one planned
    from a spec that plans other configs than the report's, unless that spec only adds rungs
    (_grows_by_rungs: a depth or width ladder grown, its new rungs maybe on a [rung_lr] subset)
    and still plans every run of the report; the merged report then carries that spec, and the
    sweep folder's crosscheck.json where it has one (else the report's)."""
    from sweeps.analysis.results import FINISHED, load_curves, load_results

    grown = load_results(sweep_dir)
    if grown.name != results.name:
        raise HarnessError(
            f"{sweep_dir} is sweep {grown.name}, the report is sweep {results.name}'s: "
            "give the report's own sweep name"
        )
    differs = [k for k in SPEC_IDENTITY if grown.spec.get(k) != (results.spec or {}).get(k)]
    rungs = _grows_by_rungs(results.spec or {}, grown.spec) if differs else None
    if differs and rungs is None:
        raise HarnessError(
            f"{sweep_dir} was planned from a spec whose {', '.join(differs)} differ from the "
            "report's: its runs are not this report's grid; grow the report with the spec it "
            "was made from, or with one that only adds rungs (more [grid] n_layer or n_embd "
            "values, and a [rung_lr] for those new rungs alone)"
        )
    if rungs:  # a grown ladder: its plan must still hold every run of the report
        planned = set(grown.runs.run_id) | set(grown.missing.run_id)
        unplanned = sorted(set(results.runs.run_id) - planned)
        if unplanned:
            raise HarnessError(
                f"{sweep_dir} was planned from a spec that adds {rungs} but no longer plans "
                f"{len(unplanned)} of the report's runs (e.g. {unplanned[0]}): grow the sweep "
                "with `sweep NAME --from-report DIR` first, from the spec that adds the rungs"
            )
    new = grown.runs[
        ~grown.runs.run_id.isin(results.runs.run_id) & grown.runs.status.isin(FINISHED)
    ]
    runs = pd.concat([results.runs, new], ignore_index=True)
    runs = runs.sort_values([*RUN_KEYS, "run_id"], ignore_index=True)
    missing = grown.missing[~grown.missing.run_id.isin(runs.run_id)].reset_index(drop=True)
    configs = {**results.configs, **{r: grown.configs[r] for r in new.run_id if r in grown.configs}}
    merged = SweepResults(
        name=results.name,
        runs=runs,
        missing=missing,
        ignored=results.ignored,
        spec=grown.spec if rungs else results.spec,  # a grown ladder: the spec that grew it
        has_plan=results.has_plan,
        # the grown sweep's own crosscheck covers the configs it added; the report's may not
        crosscheck=grown.crosscheck or results.crosscheck,
        configs=configs,
    )
    added_curves = load_curves(new)
    frames = [f for f in (curves, added_curves) if not f.empty]
    curves = pd.concat(frames, ignore_index=True) if frames else curves
    return merged, curves, len(new)


def _grows_by_rungs(report: dict, grown: dict) -> str | None:
    """What a grown spec adds to the report's, as words ("n_layer 1, 3"), when it only adds
    rungs: its preset, [set] and arms are the report's, its grid too except for a strict
    superset of the report's (non-empty) n_layer or n_embd list, and its [rung_lr] is the
    report's plus keys of new rungs. None for any other difference."""
    if any(grown.get(k) != report.get(k) for k in ("preset", "set", "arms")):
        return None
    old, new = report.get("grid") or {}, grown.get("grid") or {}
    changed = [k for k in set(old) | set(new) if old.get(k) != new.get(k)]
    if len(changed) != 1 or changed[0] not in ("n_layer", "n_embd"):
        return None
    axis = changed[0]
    before, after = old.get(axis) or [], new.get(axis) or []
    added = sorted(set(after) - set(before))
    if not before or not set(before) < set(after) or len(set(after)) != len(after):
        return None
    old_lr, new_lr = report.get("rung_lr") or {}, grown.get("rung_lr") or {}
    kept = {k: v for k, v in new_lr.items() if int(k) not in set(added)}
    if kept != old_lr:  # an old rung's LRs changed: other runs, not a grown ladder
        return None
    return f"{axis} {', '.join(str(r) for r in added)}"


# -- reading ---------------------------------------------------------------------------------
def _from_archive(report_dir: Path):
    runs = pd.read_parquet(report_dir / RUNS_FILE)
    sweep = json.loads((report_dir / SWEEP_FILE).read_text())
    configs = {
        r.run_id: RunConfig.from_json(r.config_json)
        for r in runs.itertuples()
        if isinstance(r.config_json, str)
    }
    runs["provenance"] = runs.provenance_json.map(lambda p: json.loads(p) if p else {})
    runs = runs.drop(columns=["config_json", "provenance_json"])
    if "n_embd" not in runs:  # archived before the runs table kept the width: from the configs
        runs["n_embd"] = runs.run_id.map(
            lambda r: configs[r].model.n_embd if r in configs else None
        )
    for column in ("unstable_reasons",):
        if column in runs:
            runs[column] = runs[column].map(lambda v: list(v) if v is not None else [])
    results = SweepResults(
        name=sweep["name"],
        runs=runs,
        missing=pd.DataFrame(sweep["missing"], columns=["run_id", *RUN_KEYS]),
        ignored=sweep["ignored"],
        spec=sweep["spec"],
        has_plan=sweep["has_plan"],
        crosscheck=sweep["crosscheck"],
        configs=configs,
    )
    curves = pd.read_parquet(report_dir / CURVES_FILE)
    previous = _old_analysis(report_dir)
    source = Source("archive", sweep.get("gaps", ""), previous_of(previous) if previous else None)
    return results, curves, source


def _old_analysis(report_dir: Path) -> dict | None:
    """The analysis a report had under the rules before the current ones: v4's (analysis-v4.json
    once re-judged, else an analysis.json of schema 4 or 5), else v3's (analysis-v3.json, else
    an analysis.json without a schema)."""
    for name in (V4_ANALYSIS, "analysis.json"):
        path = report_dir / name
        if path.is_file():
            doc = json.loads(path.read_text())
            if name == V4_ANALYSIS or is_v4(doc):
                return doc
    for name in (OLD_ANALYSIS, "analysis.json"):
        path = report_dir / name
        if path.is_file():
            doc = json.loads(path.read_text())
            if name == OLD_ANALYSIS or "schema" not in doc:
                return doc
    return None


def _from_analysis(report_dir: Path, old: dict):
    """A pre-archive report: its runs table, configs rebuilt from the spec by keys."""
    from sweeps.sweep.spec import load_spec

    spec = load_spec(old["sweep"])
    runs = pd.DataFrame(old["runs"])
    # a run is matched by its rung: its depth, and its width where the table has one (a
    # report made before width ladders has none: its sweep laddered depth alone)
    # (a report written before ladders had a width records none: a depth ladder)
    rung = ((old.get("settings") or {}).get("ladder") or {}).get("field", "n_layer")
    extra = {int(d): sorted(set(part.lr) - set(spec.lr)) for d, part in runs.groupby(rung)}
    backend = str(runs.run_id.iloc[0]).split("-", 1)[0]
    shape = ["n_layer", "n_embd"] if "n_embd" in runs else ["n_layer"]

    def key(arm, model, lr, seed) -> tuple:
        return (arm, *(int(getattr(model, f)) for f in shape), round(float(lr), 12), int(seed))

    by_keys = {key(c.arm, c.model, c.train.lr, c.seed): c for c in spec.configs(backend, lrs=extra)}
    configs = {}
    for r in runs.itertuples():
        cfg = by_keys.get(key(r.arm, r, r.lr, r.seed))
        if cfg is not None:
            configs[r.run_id] = cfg
    baselines = old["settings"].get("baselines") or {}
    columns = {
        "n_embd": lambda c: c.model.n_embd,
        "max_steps": lambda c: c.train.max_steps,
        "batch_size": lambda c: c.train.batch_size,
        "block_size": lambda c: c.model.block_size,
        "corpus": lambda c: c.data.corpus,
        "tokenizer": lambda c: c.data.tokenizer,
        "backend": lambda c: c.backend,
    }
    for column, read in columns.items():
        runs[column] = runs.run_id.map(
            lambda r, read=read: read(configs[r]) if r in configs else None
        )
    runs["bigram_loss"] = baselines.get("bigram")
    runs["unigram_loss"] = baselines.get("unigram")
    runs["provenance"] = [{} for _ in range(len(runs))]
    runs["run_dir"] = ""
    results = SweepResults(
        name=old["sweep"],
        runs=runs,
        missing=pd.DataFrame(columns=["run_id", *RUN_KEYS]),
        ignored=[],
        spec=spec.to_dict(),
        has_plan=True,
        crosscheck=_old_crosscheck(report_dir),
        configs=configs,
    )
    curves = pd.DataFrame(columns=["run_id", *RUN_KEYS, "step"])
    return results, curves, Source("analysis", ARCHIVE_GAPS, previous_of(old))


CROSSCHECK_LINE = re.compile(r"\*\*pass\*\* \((\d+) checks over (\d+) model configs\)")


def _old_crosscheck(report_dir: Path) -> dict | None:
    """The crosscheck a pre-archive report recorded in its report.md (its crosscheck.json
    stayed with the run directories): the verdict and the number of checks and configs."""
    for name in (OLD_REPORT, "report.md"):
        path = report_dir / name
        found = CROSSCHECK_LINE.search(path.read_text()) if path.is_file() else None
        if found:
            checks, configs = int(found.group(1)), int(found.group(2))
            per = [{"checks": [{}] * (checks // configs)} for _ in range(configs)]
            per[0]["checks"] += [{}] * (checks - sum(len(c["checks"]) for c in per))
            return {"verdict": "pass", "configs": per}
    return None


# -- writing ---------------------------------------------------------------------------------
def _thin(curves: pd.DataFrame, results: SweepResults) -> pd.DataFrame:
    """The rows the charts draw: evaluations, and every log_interval-th train loss."""
    if curves.empty:
        return curves
    every = {
        rid: results.config(rid).train.log_interval if results.config(rid) else 1
        for rid in curves.run_id.unique()
    }
    evals = curves.drop(columns=["run_id", *RUN_KEYS, "step", "train_loss"], errors="ignore")
    keep = evals.notna().any(axis=1) | (curves.step % curves.run_id.map(every) == 0)
    return curves[keep].reset_index(drop=True)


def _plain(value):
    """Parquet needs one type a column: lists and dicts as JSON-able lists, NaN for None."""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _parquet(frame: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".tmp_{path.name}")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)
