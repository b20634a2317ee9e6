"""The `figures` command that `qkmlx` and `qktorch` both offer (added by their console scripts:
sweeps/ never imports figures/)."""

from __future__ import annotations

from pathlib import Path

import click

from figures.formats import DEFAULT_FORMATS, FORMATS
from sweeps.cli import folder_path


@click.command()
@click.argument("name")
@click.option(
    "--runs-dir",
    type=folder_path(),
    default="runs",
    show_default=True,
    help="Sweeps live in RUNS_DIR/NAME/.",
)
@click.option(
    "--out",
    type=folder_path(),
    default=None,
    help="Where to write the figures and report.md (default RUNS_DIR/NAME/report).",
)
@click.option(
    "--formats",
    default=",".join(DEFAULT_FORMATS),
    show_default=True,
    callback=lambda ctx, param, value: _formats(value),
    help=f"The chart files to write, comma-separated, of {', '.join(FORMATS)}.",
)
@click.option(
    "--from-report",
    type=folder_path(),
    default=None,
    help="Re-render and re-judge sweep NAME's report from its own data (runs.parquet, or a "
    "pre-v4 report's analysis.json) instead of run directories; writes to --out (default "
    "RUNS_DIR/NAME/report), or over the report itself with --in-place.",
)
@click.option(
    "--in-place",
    is_flag=True,
    help="With --from-report: rewrite the report folder itself (a committed report: then "
    "review and commit the change).",
)
@click.option(
    "--add-runs",
    is_flag=True,
    help="With --from-report: also the finished runs under RUNS_DIR/NAME the report lacks "
    "(trained by `sweep NAME --from-report DIR`); the report's runs table keeps them.",
)
def figures(name, runs_dir, out, formats, from_report, in_place, add_runs):
    """Figures, report.md and analysis.json of sweep NAME, regenerated from its run
    directories alone (or, with --from-report, from a report's own data)."""
    from collections import Counter

    from figures.report import what_ran
    from figures.report.answer import answer_lines
    from figures.report.assemble import make_report
    from figures.words.view import read_analysis, say
    from sweeps.core.errors import HarnessError
    from sweeps.sweep.sweepdir import SweepDir

    if add_runs and not from_report:
        raise HarnessError(
            "--add-runs adds runs to a committed report: give the report with --from-report DIR"
        )
    if in_place and (out or not from_report):
        raise HarnessError(
            "--in-place rewrites the report given with --from-report DIR, and takes no --out"
        )
    if from_report:
        _check_report(Path(from_report), name)
        if out and Path(out).resolve() == Path(from_report).resolve():
            raise HarnessError(
                f"--out {out} is the report given with --from-report: a report is rewritten "
                f"only with --in-place (and no --out); give another --out to write a copy"
            )
        if not (out or in_place):  # a committed report changes only when asked
            out = Path(runs_dir) / name / "report"
    report = make_report(
        Path(runs_dir) / name,
        Path(out) if out else None,
        formats,
        from_report=Path(from_report) if from_report else None,
        add_runs=add_runs,
    )
    said = say(read_analysis(report.parent))  # worded again for the terminal
    for warning in said.budget_warnings:
        click.echo(f"budget warning: {warning}", err=True)
    for warning in said.refinement_warnings:
        click.echo(f"refinement warning: {warning}", err=True)
    unfinished = what_ran.unfinished_notice(said.analysis, name)
    if unfinished:  # before the answer, so a half-trained sweep's verdicts do not read final
        click.echo(unfinished.replace("**", ""))
    for line in answer_lines(said):
        click.echo(line)
    left_out = Counter(p.status for p in said.analysis.problems)
    if left_out:  # the report names each; the terminal says they exist
        named = ", ".join(f"{n} {status}" for status, n in sorted(left_out.items()))
        click.echo(f"left out of every statistic: {named} (named in the report)", err=True)
    click.echo(f"report: {report}")
    if from_report:
        return
    files = SweepDir(Path(runs_dir) / name)
    shown = files.plan_backend()  # None for a damaged plan.json: load_results said so
    planned = files.planned_configs() if shown else {}
    program = click.get_current_context().obj  # the backend of the program that was run
    notes = [
        files.foreign_note(shown, program, "report") if program else None,
        files.unplanned_note(planned, shown),
        files.left_out_note(shown, "figures"),
    ]
    for note in filter(None, notes if shown else []):  # the report says so too
        click.echo(note, err=True)


def _check_report(folder: Path, name: str) -> None:
    """Refuse a --from-report folder that is missing, holds no report, or is another sweep's
    report (NAME would be ignored)."""
    import json

    from sweeps.analysis.archive import has_archive
    from sweeps.core.errors import HarnessError
    from sweeps.sweep.archived import SWEEP_FILE

    if not folder.is_dir():
        raise HarnessError(
            f"{folder} does not exist: give a report folder that `figures` wrote, e.g. docs/{name}"
        )
    if not has_archive(folder):
        raise HarnessError(
            f"{folder} holds no report data (runs.parquet or analysis.json): give a "
            "report directory that `figures` wrote"
        )
    try:
        held = json.loads((folder / SWEEP_FILE).read_text()).get("name")
    except (OSError, ValueError, AttributeError):
        held = None  # a report from before sweep.json: its name is not recorded
    if held and held != name:
        raise HarnessError(f"{folder} is sweep {held}'s report, not {name}'s: give NAME {held}")


def _formats(value: str) -> tuple[str, ...]:
    formats = tuple(f.strip() for f in value.split(",") if f.strip())
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise click.BadParameter(
            f"unknown format {', '.join(unknown) or '(none)'}; choose from {', '.join(FORMATS)}"
        )
    return formats
