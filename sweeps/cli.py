"""One Click group factory: `qkmlx` and `qktorch` are two instances with their backend fixed.

Heavy imports (numpy-heavy data code, mlx, torch) happen inside the commands that need
them, so `--help` is instant. Bad input is one line on stderr and exit code 2.
"""
from __future__ import annotations

import json
import sys

import click

from sweeps.errors import HarnessError


class HarnessGroup(click.Group):
    """Turns a HarnessError raised anywhere below into one line and exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except HarnessError as e:
            click.echo(f"Error: {e}", err=True)
            ctx.exit(2)


def resolve_config(preset: str, overrides: tuple[str, ...], backend: str, seed: int | None = None):
    from sweeps.presets import get_preset

    cfg = get_preset(preset).with_overrides([f"backend={backend}"] + list(overrides))
    if seed is not None:
        cfg = cfg.with_overrides([f"seed={seed}"])
    return cfg


set_option = click.option("--set", "overrides", multiple=True, metavar="SECTION.FIELD=VALUE",
                          help="Override a config value, e.g. --set train.lr=3e-3 (repeatable).")


def device_options(backend: str):
    """--device, --compile/--no-compile and --tf32, the same names on both backends."""
    devices = {"mlx": "auto|cpu|gpu", "torch": "auto|cpu|cuda|mps"}[backend]

    def decorate(f):
        f = click.option("--tf32/--no-tf32", default=False, show_default=True,
                         help="Allow TF32 matmuls on CUDA (faster, less exact).")(f)
        f = click.option("--compile/--no-compile", default=backend == "mlx", show_default=True,
                         help="mx.compile the step (qkmlx) / torch.compile the loss (qktorch).")(f)
        return click.option("--device", default="auto", show_default=True,
                            help=f"Where to train: {devices}.")(f)
    return decorate


def trainer_factory(backend: str, device: str, compile: bool, tf32: bool):
    """The backend's Trainer constructor; imports mlx or torch only now."""
    import importlib

    module = importlib.import_module(f"qk{backend}.train")
    return module.trainer_factory(device=device, compile=compile, tf32=tf32)


def summary_line(summary: dict, out) -> str:
    loss = summary.get("final_val_loss")
    loss_text = f"{loss:.4f}" if isinstance(loss, float) else "n/a"
    rate = summary.get("tokens_per_s") or 0
    return (f"{summary['status']}: val loss {loss_text} after {summary['steps_run']} steps "
            f"({rate:,.0f} tokens/s) -> {out}")


def make_cli(backend: str) -> click.Group:
    """The command group of one backend ('mlx' or 'torch')."""
    name = {"mlx": "qkmlx", "torch": "qktorch"}[backend]

    @click.group(name=name, cls=HarnessGroup, context_settings={"help_option_names":
                                                                ["-h", "--help"]})
    def cli():
        """When does a small GPT need QK-norm? Learning-rate sweeps with QK-norm on and off."""

    @cli.group()
    def data():
        """Prepare and inspect tokenized corpora."""

    @data.command("prepare")
    @click.option("--corpus", default="builtin", show_default=True,
                  help="builtin | tinystories | file")
    @click.option("--tokenizer", default="bytes", show_default=True,
                  help="bytes | gpt2 | gpt2-compact")
    @click.option("--path", default="", help="Data file (corpus file) or local dataset copy.")
    @set_option
    def data_prepare(corpus, tokenizer, path, overrides):
        """Tokenize a corpus once and cache its train and validation splits."""
        from sweeps.config import DataConfig, RunConfig
        from sweeps.data import load_tokens

        base = RunConfig(data=DataConfig(corpus=corpus, tokenizer=tokenizer, path=path))
        data_cfg = base.with_overrides(overrides).data
        splits = load_tokens(data_cfg, progress=True)
        click.echo(json.dumps(splits.manifest, indent=2, sort_keys=True))

    @data.command("info")
    @click.option("--corpus", default="builtin", show_default=True)
    @click.option("--tokenizer", default="bytes", show_default=True)
    @click.option("--path", default="")
    @set_option
    def data_info(corpus, tokenizer, path, overrides):
        """Show the manifest of a prepared corpus (prepare it first with `data prepare`)."""
        from sweeps.config import DataConfig, RunConfig
        from sweeps.data import read_manifest

        base = RunConfig(data=DataConfig(corpus=corpus, tokenizer=tokenizer, path=path))
        data_cfg = base.with_overrides(overrides).data
        click.echo(json.dumps(read_manifest(data_cfg), indent=2, sort_keys=True))

    @cli.command()
    @click.option("--preset", default="smoke", show_default=True, help="smoke | tiny | core | NAME-L<n>")
    @set_option
    @click.option("--seed", type=int, default=None, help="Seed for weights and batch order.")
    @click.option("--out", type=click.Path(file_okay=False), default=None,
                  help="Run directory (default runs/single/<run_id>).")
    @device_options(backend)
    def train(preset, overrides, seed, out, device, compile, tf32):
        """Train one run; resumes an interrupted run directory, skips a finished one."""
        from pathlib import Path

        from sweeps.loop import train_run
        from sweeps.runs import RunDir

        cfg = resolve_config(preset, overrides, backend, seed)
        out = Path(out) if out else Path("runs") / "single" / cfg.run_id
        if RunDir(out).is_finished:
            click.echo(f"{out} is already finished (summary.json exists); nothing to do")
            return
        summary = train_run(cfg, out, trainer_factory(backend, device, compile, tf32),
                            progress=True)
        click.echo(summary_line(summary, out))

    @cli.group()
    def config():
        """Inspect presets and resolved configs."""

    @config.command("show")
    @click.argument("preset")
    @set_option
    def config_show(preset, overrides):
        """Print the resolved config as JSON with total and non-embedding parameter counts."""
        from sweeps.params import count_params

        cfg = resolve_config(preset, overrides, backend)
        counts = count_params(cfg.model, cfg.vocab_size)
        out = {"run_id": cfg.run_id, "config": cfg.to_dict(), "params": counts,
               "tokens_per_run": cfg.tokens_per_step * cfg.train.max_steps}
        click.echo(json.dumps(out, indent=2, sort_keys=True))

    runs_dir_option = click.option("--runs-dir", type=click.Path(file_okay=False), default="runs",
                                   show_default=True, help="Sweeps live in RUNS_DIR/NAME/.")

    @cli.command()
    @click.argument("name")
    @click.option("--workers", type=int, default=None,
                  help="Runs at once (local default: one per GPU, else 1).")
    @click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
                  show_default=True, help="A local process pool, or Ray tasks.")
    @click.option("--address", default=None, help="Ray cluster address (default: a local one).")
    @click.option("--gpus-per-run", type=float, default=None,
                  help="Ray: GPUs per run, fractions allowed (default 1 on GPU clusters).")
    @click.option("--dry-run", is_flag=True, help="Print the plan and run states; write nothing.")
    @click.option("--retry-failed", is_flag=True, help="Run failed runs again.")
    @runs_dir_option
    @set_option
    @device_options(backend)
    def sweep(name, workers, executor, address, gpus_per_run, dry_run, retry_failed, runs_dir,
              overrides, device, compile, tf32):
        """Run sweep NAME (sweeps/specs/NAME.toml, or a .toml path): skips finished runs,
        resumes interrupted ones."""
        from sweeps.executors import make_executor
        from sweeps.runner import Sweep, dry_run as show_plan, run_sweep
        from sweeps.spec import load_spec

        plan = Sweep(load_spec(name), backend, overrides, runs_dir)
        if dry_run:
            return show_plan(plan, click.echo)
        start = make_executor(executor, workers, address, backend, device, compile, tf32,
                              retry_failed, gpus_per_run)
        counts = run_sweep(plan, start, click.echo, retry_failed=retry_failed,
                           prepare_data=executor == "local")
        if counts.get("failed"):
            sys.exit(1)

    @cli.command()
    @click.argument("name")
    @runs_dir_option
    def status(name, runs_dir):
        """The runs of sweep NAME and their state, and final loss by lr and qk_norm."""
        from sweeps.status import status_lines

        click.echo("\n".join(status_lines(name, runs_dir, backend)))

    @cli.command()
    @click.argument("name")
    @runs_dir_option
    @click.option("--out", type=click.Path(file_okay=False), default=None,
                  help="Where to write the figures and report.md (default RUNS_DIR/NAME/report).")
    def figures(name, runs_dir, out):
        """Figures and report.md of sweep NAME, regenerated from its run directories alone."""
        from pathlib import Path

        from figures.report import make_report

        report = make_report(Path(runs_dir) / name, Path(out) if out else None)
        click.echo(f"report: {report}")

    return cli

