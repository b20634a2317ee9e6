"""The `figures` command that `qkmlx` and `qktorch` both offer (added by their console scripts:
sweeps/ never imports figures/)."""
from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("name")
@click.option("--runs-dir", type=click.Path(file_okay=False), default="runs", show_default=True,
              help="Sweeps live in RUNS_DIR/NAME/.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Where to write the figures and report.md (default RUNS_DIR/NAME/report).")
def figures(name, runs_dir, out):
    """Figures and report.md of sweep NAME, regenerated from its run directories alone."""
    from figures.report import make_report

    report = make_report(Path(runs_dir) / name, Path(out) if out else None)
    click.echo(f"report: {report}")
