"""`qkmlx status NAME`: a sweep's runs and their state, read from the run directories alone."""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

from sweeps.core.config import arm_label
from sweeps.core.errors import HarnessError
from sweeps.core.ladder import ladder_axis
from sweeps.run.backends import PROGRAMS
from sweeps.run.rundir import CORRUPT, STATUSES, UNFINISHED, RunDir
from sweeps.sweep.runner import Sweep, settle
from sweeps.sweep.sweepdir import RECORD, SweepDir


def planned_runs(name: str, runs_dir: str | Path, backend: str) -> tuple[Path, dict]:
    """(sweep directory, run_id -> RunConfig): plan.json when the sweep has run, else the spec."""
    from sweeps.sweep.record import find_spec

    try:
        spec = find_spec(name, runs_dir)
    except HarnessError as e:
        folder = SweepDir(Path(runs_dir) / name)
        if not folder.has_plan():
            raise
        spec = None
        if (folder.path / RECORD).is_file():  # the record is damaged: say so, show the plan
            print(
                f"warning: {e}; showing the runs of its plan.json meanwhile (`{PROGRAMS[backend]} "
                f"sweep {name}` refuses to run until then)",
                file=sys.stderr,
            )
    files = SweepDir(Path(runs_dir) / (spec.name if spec else name))
    # plan.json is the last sweep's, of its backend, whichever program asks: runs of the
    # other backend are left out, and SweepDir.left_out_note says so
    if files.has_plan():
        try:
            return files.path, files.planned_configs()
        except HarnessError as e:  # a damaged plan.json: the spec plans the same runs
            if spec is None:
                raise
            print(
                f"warning: {str(e).split(';')[0]}; showing the plan of the spec instead (the "
                f"next sweep rewrites plan.json)",
                file=sys.stderr,
            )
    sweep = Sweep(spec, backend, runs_dir=runs_dir)
    settle(sweep)
    return files.path, sweep.configs


def run_row(directory: Path, rid: str, cfg, held: dict | None = None) -> dict:
    """One planned run's line of the status table, its directory read once; held: its summary
    in the report the sweep grows (sweeps.sweep.archived), used when it has no directory."""
    run = RunDir(directory / rid)
    record = run.record() if run.is_finished else None
    in_report = record is None and held is not None and not run.path.is_dir()
    state = record.status if record is not None else held["status"] if in_report else run.state()
    summary = (record.summary if record is not None else held if in_report else None) or {}
    steps = summary.get("steps_run")
    if steps is None and state in ("running", "interrupted"):
        steps = run.last_step()
    return {
        "run_id": rid,
        "state": state,
        "arm": arm_label(cfg),
        "n_layer": cfg.model.n_layer,
        "n_embd": cfg.model.n_embd,
        "lr": cfg.train.lr,
        "seed": cfg.seed,
        "steps": steps,
        "max_steps": cfg.train.max_steps,
        "loss": summary.get("final_val_loss"),
        "diverged_at": summary.get("diverged_at"),
        "problem": record.problem if record is not None else None,
        "in_report": in_report,
    }


def status_lines(name: str, runs_dir: str | Path, backend: str) -> list[str]:
    from sweeps.sweep.archived import archived_summaries, grown_report

    directory, configs = planned_runs(name, runs_dir, backend)
    if not directory.is_dir():  # a mistyped --runs-dir must not look like a sweep to start
        from sweeps.core.errors import HarnessError

        raise HarnessError(
            f"{directory} does not exist: nothing of sweep {name} ran under --runs-dir "
            f"{runs_dir}; check the folder, or see the plan with `sweep {name} --dry-run`"
        )
    grows = grown_report(None, directory)
    held = archived_summaries(Path(grows), directory.name) if grows else {}
    rows = [run_row(directory, rid, cfg, held.get(rid)) for rid, cfg in configs.items()]
    arms = list(dict.fromkeys(arm_label(cfg) for cfg in configs.values()))  # plan order
    rows.sort(key=lambda r: (r["n_layer"], r["n_embd"], arms.index(r["arm"]), r["lr"], r["seed"]))
    # a width ladder's rows say their width (sweeps.core.ladder); a depth ladder's need not
    widths = len({r["n_embd"] for r in rows}) > 1
    counts = Counter(r["state"] for r in rows)
    lines = [
        f"sweep {directory.name} ({directory}): {len(rows)} runs: "
        + ", ".join(f"{counts[s]} {s}" for s in STATUSES + (CORRUPT,) + UNFINISHED if counts[s])
        + (
            f" ({sum(r['in_report'] for r in rows)} of them held by the report {grows}, which "
            "this sweep grows)"
            if grows
            else ""
        )
    ]
    lines.append(
        f"{'state':<11} {'arm':<10} {'L':>3}{' width' if widths else ''} {'lr':>9} {'seed':>4} "
        f"{'steps':>11} {'final_val':>9}  run_id"
    )
    for r in rows:
        steps = f"{r['steps'] if r['steps'] is not None else '-'}/{r['max_steps']}"
        loss = r["loss"]
        loss_text = (
            f"{loss:.4f}"
            if isinstance(loss, (int, float))
            else f"div@{r['diverged_at']}"
            if r["state"] == "diverged"
            else "-"
        )
        if r["state"] == CORRUPT:
            loss_text = "corrupt"
        width = f" {r['n_embd']:>5}" if widths else ""
        lines.append(
            f"{r['state']:<11} {r['arm']:<10} {r['n_layer']:>3}{width} {r['lr']:>9.3g} "
            f"{r['seed']:>4} {steps:>11} {loss_text:>9}  {r['run_id']}"
            + ("  (in the report)" if r["in_report"] else "")
        )
    damaged = [(r["run_id"], r["problem"]) for r in rows if r["state"] == CORRUPT]
    if damaged:
        lines += (
            [""]
            + [f"corrupt: {rid}: {problem}" for rid, problem in damaged]
            + [
                f"fix: run `{PROGRAMS[backend]} sweep {directory.name}` again: it moves corrupt "
                f"runs to {directory.name}/.damaged/ and trains them again"
            ]
        )
    lines += [""] + loss_table(rows)
    shown = shown_backend(directory, configs, backend)
    notes = [
        SweepDir(directory).foreign_note(shown, backend, "status"),
        SweepDir(directory).unplanned_note(configs, shown),
        SweepDir(directory).left_out_note(shown, "status"),
    ]
    lines += [x for note in notes if note for x in ("", note)]
    return lines


def shown_backend(directory: Path, configs: dict, backend: str) -> str:
    """The backend whose runs a view of these configs shows."""
    return next((cfg.backend for cfg in configs.values()), backend)


def loss_table(rows: list[dict]) -> list[str]:
    """Final val loss by lr (rows) and arm (columns), one block per rung (depth, or width in
    a width ladder: sweeps.core.ladder), over seeds."""
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    cells = defaultdict(list)
    for r in rows:
        cells[(r["n_layer"], r["n_embd"], r["lr"], r["arm"])].append(r)
    lines = [
        "final val loss by lr and arm (mean ± sd over ok seeds; unst = unstable, div = diverged)"
    ]
    rungs = sorted({(r["n_layer"], r["n_embd"]) for r in rows})
    axis = ladder_axis(rungs) if rungs else "n_layer"
    for rung in rungs:
        lrs = sorted({r["lr"] for r in rows if (r["n_layer"], r["n_embd"]) == rung})
        lines.append(f"{axis} {rung[0] if axis == 'n_layer' else rung[1]}")
        lines.append(f"  {'lr':>9} " + " ".join(f"{arm:>18}" for arm in arms))
        for lr in lrs:
            texts = [_cell(cells.get((*rung, lr, arm), [])) for arm in arms]
            lines.append(f"  {lr:>9.3g} " + " ".join(f"{t:>18}" for t in texts))
    return lines


def _cell(runs: list[dict]) -> str:
    if not runs:
        return ""
    losses = [r["loss"] for r in runs if r["state"] == "ok" and isinstance(r["loss"], (int, float))]
    states = Counter(r["state"] for r in runs)
    parts = []
    if losses:
        mean = sum(losses) / len(losses)
        text = f"{mean:.3f}"
        if len(losses) > 1:
            sd = math.sqrt(sum((x - mean) ** 2 for x in losses) / (len(losses) - 1))
            text += f"±{sd:.3f}"
        parts.append(text)
    labels = Counter()
    for state, label in (
        ("unstable", "unst"),
        ("diverged", "div"),
        ("failed", "fail"),
        ("running", "run"),
        ("interrupted", "todo"),
        ("pending", "todo"),
    ):
        labels[label] += states[state]
    for label, n in labels.items():
        if n:
            parts.append(label if n == len(runs) else f"{n}{label}")
    return " ".join(parts)
