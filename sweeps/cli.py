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

    return cli


def run(backend: str) -> None:
    make_cli(backend)(prog_name={"mlx": "qkmlx", "torch": "qktorch"}[backend])


if __name__ == "__main__":  # pragma: no cover
    run(sys.argv[1])
