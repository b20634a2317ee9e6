"""One sweep directory read once: the runs table, training curves, plan, spec, crosscheck.

Everything downstream (metrics, charts, report) works on what this returns and never opens
a run directory itself, so the report depends on the run directories alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sweeps.core.config import RunConfig, arm_label
from sweeps.core.diagnostics import DIAGNOSTICS, reduce_layers
from sweeps.core.errors import HarnessError
from sweeps.run.rundir import RunDir, scan_runs
from sweeps.sweep.sweepdir import SweepDir

# n_embd: the rung of a width ladder (sweeps/core/ladder.py)
RUN_KEYS = ["arm", "qk_norm", "n_layer", "n_embd", "lr", "seed"]
SUMMARY_COLUMNS = [
    "status",
    "init_loss",
    "final_val_loss",
    "best_val_loss",
    "perplexity",
    "steps_run",
    "diverged_at",
    "wall_time_s",
    "tokens_per_s",
    "tokens_seen",
    "error",
    "unstable_reasons",
    "init_logit_std",
    "device",
]
FINISHED = ["ok", "unstable", "diverged"]


@dataclass(frozen=True)
class SweepResults:
    name: str
    runs: pd.DataFrame  # one row per run directory in the plan (all of them without a plan)
    missing: pd.DataFrame  # planned runs with no directory: run_id and RUN_KEYS
    ignored: list[str]  # run directories that plan.json does not list (an older spec's runs)
    spec: dict  # the sweep spec as planned; {} without plan.json
    has_plan: bool
    crosscheck: dict | None  # crosscheck.json, None when no crosscheck has been run
    # run_id -> RunConfig of every run in `runs` whose config reads, and of every planned run
    configs: dict[str, RunConfig] = field(default_factory=dict)

    def config(self, run_id: str) -> RunConfig | None:
        """The run's RunConfig (None for a run whose config.json cannot be read)."""
        return self.configs.get(run_id)


def load_results(path: str | Path) -> SweepResults:
    """The sweep directory read once: every run directory (RunDir.record), plan.json and
    crosscheck.json."""
    path = Path(path)
    sweep_dir = SweepDir(path)
    records = scan_runs(path) if path.is_dir() else []
    if not records:
        raise HarnessError(no_sweep_message(path))
    try:
        plan = sweep_dir.read_plan()
        planned = sweep_dir.planned_configs(plan)
    except HarnessError as e:  # a damaged plan.json: the record plans the same runs
        plan, planned = _record_plan(sweep_dir, str(e).split(";")[0])
    has_plan = plan is not None
    # a finished planned run whose directory lost its config.json is still that run, corrupt
    # as `status` calls it, not a run that never started
    scanned = {r.path.name for r in records}
    records += [
        RunDir(path / rid).record()
        for rid in planned
        if rid not in scanned and RunDir(path / rid).is_finished
    ]
    runs = _with_planned_keys(records, planned)
    ignored: list[str] = []
    missing = pd.DataFrame(columns=["run_id", *RUN_KEYS])
    if has_plan:
        ignored = sorted(set(runs.run_id) - set(planned))
        runs = runs[runs.run_id.isin(planned)]
        missing = pd.DataFrame(
            [
                {"run_id": rid, **_run_keys(cfg)}
                for rid, cfg in planned.items()
                if rid not in set(runs.run_id)
            ],
            columns=missing.columns,
        )
    runs = runs.reindex(columns=list(dict.fromkeys([*runs.columns, *SUMMARY_COLUMNS])))
    found = {r.run_id: r for r in records}
    runs = runs.assign(
        run_dir=runs.run_id.map(lambda r: str(found[r].path if r in found else path / r)),
        provenance=runs.run_id.map(lambda r: found[r].provenance if r in found else {}),
    )
    configs = {
        **planned,
        **{
            rid: found[rid].config
            for rid in runs.run_id
            if rid in found and found[rid].config is not None
        },
    }
    return SweepResults(
        name=path.name,
        runs=_sorted(runs),
        missing=_sorted(missing),
        ignored=ignored,
        spec=(plan or {}).get("spec", {}),
        has_plan=has_plan,
        crosscheck=sweep_dir.read_crosscheck(),
        configs=configs,
    )


def no_sweep_message(path: Path) -> str:
    """Why there is nothing to report under path: a misspelt name (suggest the sweep folders
    that exist) or a sweep that has not run."""
    import difflib

    parent = path.parent
    sweeps = (
        sorted(p.name for p in parent.iterdir() if (p / "plan.json").exists())
        if parent.is_dir()
        else []
    )
    close = difflib.get_close_matches(path.name, sweeps, n=3, cutoff=0.6)
    if close and not path.is_dir():
        return (
            f"no sweep '{path.name}' under {parent}: did you mean "
            f"{' or '.join(f'`figures {c}`' for c in close)}? (sweeps there: "
            f"{', '.join(sweeps)})"
        )
    from sweeps.sweep.record import record_raw
    from sweeps.sweep.spec import known_specs

    there = f" (sweeps under {parent}: {', '.join(sweeps)})" if sweeps else ""
    head = (
        f"no run directories under {path}"
        if path.is_dir()
        else f"no sweep '{path.name}' under {parent}"
    )
    if path.name in known_specs() or (path.is_dir() and record_raw(path) is not None):
        return (
            f"{head}: run the sweep first (`{_program()} sweep {path.name}`) or point "
            f"--runs-dir at its parent{there}"
        )
    # `sweep NAME` would refuse a name that is neither a spec nor a sweep folder's record
    return (
        f"{head}, and no spec of that name: point --runs-dir at its parent, or start it as an "
        f"ad-hoc grid (`{_program()} sweep --preset smoke --grid train.lr=0.01,0.1,1 --name "
        f"{path.name}`){there}"
    )


def _program() -> str:
    """The program the user ran, for the command a message suggests: the backend rides in the
    Click context (sweeps.cli.make_cli); qkmlx outside a command."""
    import click

    from sweeps.run.backends import PROGRAMS

    ctx = click.get_current_context(silent=True)
    return PROGRAMS.get(ctx.obj, "qkmlx") if ctx is not None else "qkmlx"


def load_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """metrics.jsonl of every finished run, long format, diagnostics reduced over layers."""
    frames, columns = [], ["step", "train_loss", "val_loss", "quick_val_loss", *DIAGNOSTICS]
    for row in runs[runs.status.isin(FINISHED)].itertuples():
        metrics = RunDir(row.run_dir).read_metrics()
        frame = pd.DataFrame(metrics).reindex(columns=columns)
        for name in DIAGNOSTICS:
            frame[name] = frame[name].map(lambda values, name=name: reduce_layers(name, values))
        frames.append(frame.assign(run_id=row.run_id, **{k: getattr(row, k) for k in RUN_KEYS}))
    if not frames:
        return pd.DataFrame(columns=["run_id", *RUN_KEYS, *columns])
    return pd.concat(frames, ignore_index=True).sort_values(["run_id", "step"], ignore_index=True)


def _record_plan(sweep_dir: SweepDir, problem: str) -> tuple[dict, dict[str, RunConfig]]:
    """(plan, run_id -> RunConfig) of a sweep whose plan.json is damaged, from its record
    (spec.toml), as `status` and `sweep` plan it; the damage named in one warning line.
    Without a record the damage is refused as before."""
    import sys

    from sweeps.sweep.record import load_record
    from sweeps.sweep.runner import Sweep, settle

    spec = load_record(sweep_dir.path)
    backend = sweep_dir.backend()
    if spec is None or backend is None:
        raise HarnessError(f"{problem}; delete it and rerun the sweep to rewrite it")
    sweep = Sweep(spec, backend, runs_dir=sweep_dir.path.parent)
    settle(sweep)
    print(
        f"warning: {problem}; reporting the plan of its record {sweep_dir.path / 'spec.toml'} "
        f"instead (the next `sweep {sweep_dir.name}` rewrites plan.json)",
        file=sys.stderr,
    )
    plan = {"name": sweep_dir.name, "spec": spec.to_dict(), "backend": backend, "runs": []}
    return plan, dict(sweep.configs)


def _with_planned_keys(records: list, planned: dict) -> pd.DataFrame:
    """The runs table (runs_table), where a planned run whose config.json cannot be read
    keeps the plan's arm, depth, LR and seed: its row names the run the plan meant."""
    rows = [record.row() for record in records]
    for row in rows:
        if "arm" not in row and row["run_id"] in planned:
            row.update(_run_keys(planned[row["run_id"]]))
    return pd.DataFrame(rows)


def _run_keys(cfg: RunConfig) -> dict:
    return {
        "arm": arm_label(cfg),
        "qk_norm": cfg.model.qk_norm,
        "n_layer": cfg.model.n_layer,
        "n_embd": cfg.model.n_embd,
        "lr": cfg.train.lr,
        "seed": cfg.seed,
    }


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values([*RUN_KEYS, "run_id"], ignore_index=True)
