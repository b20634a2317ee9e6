"""What the `sweep` command does once its options are parsed (sweeps/cli.py): the definition
it asks for (a sweep's record, a spec or an ad-hoc grid; command_plan), checked against its
folder, then the data check, the estimate and the dry run, or the sweep itself on an executor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path

from sweeps.core.errors import HarnessError
from sweeps.core.files import check_writable
from sweeps.platform.devices import DETERMINISTIC, device_kind
from sweeps.run.backends import PROGRAMS, Execution
from sweeps.sweep.executors import check_gpus_fit, make_executor
from sweeps.sweep.fusion import estimate_fused, fusing, group_size, parse_fuse
from sweeps.sweep.record import Planned, adhoc_plan, base_raw, plan, spec_note
from sweeps.sweep.runner import Sweep, run_sweep
from sweeps.sweep.runner import dry_run as show_plan
from sweeps.sweep.spec import ADHOC_SEEDS, known_specs
from sweeps.sweep.sweepdir import SweepDir
from sweeps.sweep.workers import uses_gpus


def sweep_command(
    backend: str,
    name: str | None,
    *,
    workers: int | None,
    executor: str,
    address: str | None,
    gpus_per_run: float | None,
    dry_run: bool,
    list_runs: bool,
    estimate: bool,
    fuse: str,
    retry_failed: bool,
    max_runs: int,
    preset: str | None,
    grid,
    seeds: int | None,
    sweep_name: str | None,
    tensorboard_dir: str | None,
    from_report: str | None,
    runs_dir: str,
    overrides,
    device: str,
    compile: bool | None,
    tf32: bool,
    echo,
) -> int:
    """`sweep` with the command's options (sweeps/cli.py names them): plans, prints the cost
    (--estimate) and the plan (--dry-run, which stops there), then runs the sweep; returns the
    exit code, 1 when a run failed. echo: click.echo (err=True: notes, the probe's progress)."""
    if workers is not None and workers < 1:  # refused before anything, dry run or not
        raise HarnessError(f"--workers must be at least 1 (got {workers})")
    if list_runs and not dry_run:
        raise HarnessError(
            "--list-runs lists the runs of a --dry-run: add --dry-run (`status NAME` lists "
            "the runs of a sweep that has started)"
        )
    fuse = parse_fuse(fuse)
    execution = Execution(backend, device, compile, tf32, retry_failed)
    asked = (name, preset, grid, seeds, sweep_name, runs_dir, max_runs, overrides)
    sweep = _planned_sweep(asked, execution, from_report, echo)
    if dry_run or estimate:
        probe_workers = workers if executor == "local" else None
        _preview(sweep, execution, fuse, echo, estimate, dry_run, probe_workers, list_runs)
        if dry_run:
            return 0
        # Said once, before the first run: --estimate alone is a preview *and* the sweep,
        # and one who meant only the preview can still stop here.
        echo(
            "the estimate is done; training the sweep now (Ctrl-C stops it; "
            "--estimate --dry-run only estimates)",
            err=True,
        )
    executors = (executor, workers, address, gpus_per_run)
    counts = _run(sweep, execution, executors, fuse, tensorboard_dir, echo)
    return 1 if counts.get("failed") else 0


def _preview(
    sweep: Sweep, execution: Execution, fuse, echo, estimate, dry_run, workers, list_runs=False
) -> None:
    """--dry-run and --estimate: whether the data is prepared, then the cost (a probe on
    --device with a worker's CPU threads, `workers` of them) and the plan, its runs counted
    (list_runs: each listed) and its cost on measured devices last; writes nothing."""
    from sweeps.sweep.datacheck import data_lines

    for line in data_lines(sweep.configs.values(), PROGRAMS[execution.backend]):
        echo(line)
    if estimate:
        from sweeps.sweep.estimate import estimate_sweep

        execution.check_device()
        # In a child process with a worker's environment (its CPU threads), so the probe
        # computes as the sweep's workers will, and this one keeps no GPU context.
        estimate_sweep(
            sweep,
            execution,
            echo=echo,
            apart=True,
            progress=lambda text: echo(text, err=True),
            workers=workers,
        )
        _estimate_fused(sweep, execution, fuse, echo, apart=not dry_run)
    if dry_run:
        show_plan(sweep, echo, list_runs)
        try:  # a plan for another machine is still a plan; a sweep here would be refused
            execution.check_device()
        except HarnessError as e:
            echo(f"note: a sweep here would be refused: {e}")


def _run(sweep: Sweep, execution: Execution, executors: tuple, fuse, tensorboard_dir, echo):
    """The sweep on its executor (executors: --executor, --workers, --address,
    --gpus-per-run), logged to TensorBoard as it trains where asked; the count of final
    statuses (sweeps.sweep.runner.run_sweep)."""
    executor, workers, address, gpus_per_run = executors
    check_writable(sweep.dir, "--runs-dir")
    if executor == "local":  # a Ray cluster's nodes have their own devices
        execution.check_device()
        check_gpus_fit(list(sweep.configs.values()), workers, execution.backend, execution.device)
    start = _fused(
        make_executor(executor, execution, workers, address, gpus_per_run),
        fuse,
        execution,
        sweep,
        echo,
    )
    live = contextlib.nullcontext()
    if tensorboard_dir:
        from sweeps.sweep.export import LiveExport

        check_writable(Path(tensorboard_dir), "--tensorboard")
        live = LiveExport(sweep, tensorboard_dir)
    with live:
        counts = run_sweep(
            sweep,
            start,
            echo,
            retry_failed=execution.retry_failed,
            prepare_data=executor == "local",
        )
    if tensorboard_dir:
        echo(f"tensorboard: tensorboard --logdir {tensorboard_dir}")
    return counts


def _planned_sweep(asked: tuple, execution: Execution, from_report, echo) -> Sweep:
    """The Sweep of command_plan(*asked) in its folder, which must hold this backend's sweep;
    a committed report it grows (--from-report) holds runs it counts as finished."""
    backend = execution.backend
    name, _, _, _, sweep_name, runs_dir, max_runs, _ = asked
    # a run directory, runs `train --out` wrote, or another backend's sweep: refused, dry run
    # or not (a sweep folder holds one backend's runs); first, where the folder is named, so
    # no refusal of its record's definition comes before it (it would name the other program)
    named = sweep_name or (name if name and not name.endswith(".toml") else None)
    if named:
        SweepDir(Path(runs_dir) / named).check_for_sweep(backend)
    planned = command_plan(*asked, backend)
    SweepDir(Path(runs_dir) / planned.spec.name).check_for_sweep(backend)
    for note in planned.notes:
        echo(note, err=True)
    # every --set is in the spec's [set] now: the record alone plans these runs
    choices = {
        "device": execution.device,
        "compile": execution.compile,
        "tf32": execution.tf32,
        "deterministic": os.environ.get(DETERMINISTIC) == "1",
    }
    from sweeps.sweep.archived import archived_summaries, grown_report

    archived = None
    from_report = grown_report(from_report, Path(runs_dir) / planned.spec.name)
    if from_report:
        archived = archived_summaries(Path(from_report), planned.spec.name)
    sweep = Sweep(
        planned.spec,
        backend,
        (),
        runs_dir,
        max_runs,
        record=planned.record,
        execution=choices,
        archived=archived,
        grows=from_report,
        device_kind=device_kind(backend, execution.device),
    )
    if archived and not sweep.from_report():
        held = {rid.split("-", 1)[0] for rid in archived}
        raise HarnessError(
            f"none of the {len(archived)} runs of {from_report} is planned by this sweep (they "
            f"are {', '.join(sorted(held))} runs, this is {backend}): grow a report with the "
            f"program that trained it ({', '.join(PROGRAMS.get(b, b) for b in sorted(held))})"
        )
    return sweep


def _fuse_size(fuse, execution: Execution, sweep: Sweep) -> tuple[int, str]:
    gpus = uses_gpus(execution.backend, execution.device)
    return group_size(fuse, execution, list(sweep.configs.values()), gpus)


def _estimate_fused(sweep: Sweep, execution: Execution, fuse, echo, apart: bool) -> None:
    """--estimate: the cost in fused groups too, when --fuse fuses (sweeps.sweep.fusion)."""
    size, why = _fuse_size(fuse, execution, sweep)
    if size > 1:
        estimate_fused(sweep, execution, size, echo, apart)
    else:
        echo(f"  not fused (--fuse {why})")


def _fused(start, fuse, execution: Execution, sweep: Sweep, echo):
    """The executor constructor, fusing runs in groups (sweeps.sweep.fusion) as --fuse says;
    prints the group size and why."""
    size, why = _fuse_size(fuse, execution, sweep)
    echo(f"fuse: {why}")
    return fusing(start, size)


def command_plan(
    name, preset, grid, seeds, sweep_name, runs_dir, max_runs, overrides, backend
) -> Planned:
    """What the command plans (sweeps.sweep.record.Planned): the record of `sweep NAME` (or
    the spec NAME), or an ad-hoc grid (--preset, --grid, --name), with every --set in its
    [set]; refused where another definition's finished runs hold the folder."""
    program = PROGRAMS[backend]
    if preset or grid:
        if seeds is not None and any(g.split("=", 1)[0].strip() == "seed" for g in grid):
            raise HarnessError("give the seeds once: --seeds N or --grid seed=S1,S2,...")
        seeds = ADHOC_SEEDS if seeds is None else seeds
        if not preset:
            raise HarnessError("--grid needs --preset: the preset the grid sweeps")
        if name and sweep_name and name != sweep_name:
            raise HarnessError(f"two names: NAME {name} and --name {sweep_name}; give one")
        target = sweep_name or name
        if not target:
            raise HarnessError("an ad-hoc grid needs --name NAME: its folder RUNS_DIR/NAME/")
        if target in known_specs() and not grid:
            raise HarnessError(
                f"{target} is a built-in spec (sweeps/specs/{target}.toml), which names its own "
                f"preset: run `sweep {target}` without --preset, or sweep an ad-hoc grid with "
                "--preset P --grid FIELD=V1,V2 --name NEWNAME"
            )
        command = " ".join(
            [
                "sweep --preset",
                preset,
                *(f"--grid {g}" for g in grid),
                f"--seeds {seeds}",
                *(f"--set {o}" for o in overrides),
                f"--name {target}",
            ]
        )
        return adhoc_plan(
            runs_dir, target, preset, grid, seeds, command, max_runs, overrides, program
        )
    if seeds is not None:
        raise HarnessError(
            "--seeds sets the seeds of an ad-hoc grid (--preset, --grid); a "
            "spec's seeds are its [grid] seed list"
        )
    if sweep_name and not name:
        name = sweep_name
    if not name:
        raise HarnessError(
            "which sweep? give NAME (a spec: "
            + ", ".join(known_specs())
            + "), or an ad-hoc grid with --preset, --grid and --name"
        )
    planned = plan(runs_dir, base_raw(name, runs_dir, max_runs), overrides, max_runs, program)
    note = spec_note(name, runs_dir, program)
    return planned if note is None else dataclasses.replace(planned, notes=(*planned.notes, note))
