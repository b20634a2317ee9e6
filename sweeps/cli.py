"""The command line both backends share: `qkmlx` and `qktorch` are one Click group whose
context object is the backend name (`make_cli`). Commands that live above sweeps/ (the
`figures` command of figures/cli.py) are added by the console scripts.

Heavy imports (numpy-heavy data code, mlx, torch) happen inside the commands that need
them, so `--help` is instant. Bad input is one line on stderr and exit code 2, a fault of
the machine (full or read-only disk, unreachable cluster) one line and exit code 1, Ctrl-C
or SIGTERM one line and exit code 130 or 143 (sweeps.core.errors).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import signal
import sys
import threading
from pathlib import Path

import click

from sweeps.core.config import CORPORA
from sweeps.core.errors import ONE_LINE, Terminated, interrupted_code, one_line
from sweeps.core.presets import PRESETS
from sweeps.platform.devices import DETERMINISTIC, DEVICES
from sweeps.run.backends import PROGRAMS
from sweeps.study.rules import MIN_SEEDS, STUDY_SEEDS
from sweeps.sweep.executors import EXECUTORS
from sweeps.sweep.spec import MAX_RUNS

HELP = "When does a small GPT need QK-norm? Learning-rate sweeps with QK-norm on and off."
INTERRUPTED = "interrupted; run the same command again to resume"


class HarnessGroup(click.Group):
    """Turns the errors of sweeps.core.errors raised anywhere below into one line (exit 2 for
    bad input, 1 for the machine) and SIGINT or SIGTERM into one line (exit 130 or 143)."""

    def invoke(self, ctx):
        with one_line_errors(ctx):
            return super().invoke(ctx)


@contextlib.contextmanager
def one_line_errors(ctx, interrupted: str = INTERRUPTED):
    """What HarnessGroup does, for any command (crosscheck uses it too, with its own words for
    an interruption: it keeps nothing to resume from)."""
    with sigterm_as_interrupt():
        try:
            yield
        except BrokenPipeError:
            raise  # stdout closed (| head): click's own handling
        except ONE_LINE as e:
            message, code = one_line(e)
            click.echo(f"Error: {message}", err=True)
            ctx.exit(code)
        except KeyboardInterrupt as e:
            click.echo(interrupted, err=True)
            ctx.exit(interrupted_code(e))


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While a command runs, SIGTERM raises Terminated (a KeyboardInterrupt): the cleanup and
    the resume message of Ctrl-C, instead of a silent death. SIGINT raises KeyboardInterrupt
    even in a process that started with SIGINT ignored, as a non-interactive shell starts a
    background job (`cmd &`): `kill -INT PID` and `timeout -s INT` then stop the command as
    Ctrl-C does (a sweep stops its workers; runs in flight resume from their checkpoints)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def make_cli(backend: str, extra_commands=()) -> click.Group:
    """The command group of one backend ('mlx' or 'torch'), plus any extra commands."""
    return HarnessGroup(
        name=PROGRAMS[backend],
        help=HELP,
        commands=[data, train, config, sweep, status, export, *extra_commands],
        context_settings={"help_option_names": ["-h", "--help"], "obj": backend},
    )


def own_backend(overrides, backend: str) -> None:
    """Refuse a --set backend=OTHER: the program decides the backend (qktorch trains with
    torch, qkmlx with MLX), so another would be trained under a name that says otherwise."""
    from sweeps.core.errors import HarnessError

    for item in overrides:
        key, _, value = str(item).partition("=")
        if key.strip() == "backend" and value.strip() != backend:
            other = {v: k for k, v in PROGRAMS.items()}.get(f"qk{value.strip()}")
            fix = (
                f"run the same command with {PROGRAMS[other]} instead, without this --set"
                if other
                else "leave this --set out"
            )
            raise HarnessError(
                f"--set {item}: {PROGRAMS[backend]} trains with {backend} (the backend is the "
                f"program's); {fix}"
            )


def resolve_config(preset: str, overrides: tuple[str, ...], backend: str, seed: int | None = None):
    from sweeps.core.presets import get_preset

    own_backend(overrides, backend)
    cfg = get_preset(preset).with_overrides([f"backend={backend}"] + list(overrides))
    if seed is not None:
        cfg = cfg.with_overrides([f"seed={seed}"])
    return cfg


def set_option(example: str = "train.lr=3e-3"):
    """--set, with an example the command accepts (a sweep fixes train.lr by its grid)."""
    return click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="SECTION.FIELD=VALUE",
        help=f"Override a config value, e.g. --set {example} (repeatable).",
    )


class OneLinePath(click.Path):
    """click.Path whose refusal (a file where a folder must be, or the reverse) is one line
    and exit 2, as any bad input here (sweeps.core.errors), not click's usage block."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as e:
            name = param.opts[0] if param is not None and param.opts else "the path"
            if not self.file_okay and os.path.isfile(value):
                why = "is a file, not a folder; give a folder (it is created if missing)"
            elif not self.dir_okay and os.path.isdir(value):
                why = "is a folder, not a file; give a file path"
            else:
                why = f"{e.message.rstrip('.')}; give another path"
            raise OneLineError(f"{name} {value} {why}") from None


class OneLineError(click.ClickException):
    """Bad input found while click parses the command line: `Error: ...` alone, exit 2 (a
    ClickException is shown without the usage lines a UsageError adds)."""

    exit_code = 2


def folder_path() -> OneLinePath:
    """The type of an option that names a folder (--runs-dir, --out, ...)."""
    return OneLinePath(file_okay=False)


PRESET_NAMES = " | ".join([*PRESETS, "NAME-L<n>"])  # from the registry: never stale
runs_dir_option = click.option(
    "--runs-dir",
    type=folder_path(),
    default="runs",
    show_default=True,
    help="Sweeps live in RUNS_DIR/NAME/.",
)


def _set_deterministic(ctx, param, value) -> None:
    if value:  # read by each Trainer, in this process and in the workers it starts
        os.environ[DETERMINISTIC] = "1"


def device_options(f):
    """--device, --compile/--no-compile, --tf32 and --deterministic, the same names on both
    backends."""
    devices = "; ".join(f"{PROGRAMS[b]}: {'|'.join(d)}" for b, d in DEVICES.items())
    f = click.option(
        "--deterministic",
        is_flag=True,
        expose_value=False,
        callback=_set_deterministic,
        help="Bit-identical reruns on CUDA (qktorch): deterministic kernels, "
        "slower (docs/DESIGN.md, Reproducibility).",
    )(f)
    f = click.option(
        "--tf32/--no-tf32",
        default=False,
        show_default=True,
        help="Allow TF32 matmuls on CUDA (faster, less exact).",
    )(f)
    f = click.option(
        "--compile/--no-compile",
        default=None,
        help="mx.compile the step (qkmlx, default on) / torch.compile the whole "
        "step (qktorch, default on CUDA with CUDA graphs, off elsewhere).",
    )(f)
    return click.option(
        "--device", default="auto", show_default=True, help=f"Where to train ({devices})."
    )(f)


def cpu_kernels_notes(backend: str, device: str) -> list[str]:
    """The lines on which kernels a command that trained computed with: the BLAS qkmlx runs
    on (sweeps.platform.blas, where the command kept one) and cpu_kernels_note."""
    blas = None
    if backend == "mlx":
        from sweeps.platform.blas import take_note

        blas = take_note()
    return [note for note in (blas, cpu_kernels_note(backend, device)) if note]


def cpu_kernels_note(backend: str, device: str) -> str | None:
    """Which path torch's CPU matmuls take (sweeps.platform.mkl), for a torch command that
    trains on the CPU; None otherwise."""
    if backend != "torch" or device not in ("cpu", "auto"):
        return None
    from sweeps.platform.devices import listed_gpus
    from sweeps.platform.mkl import describe

    if device == "auto" and listed_gpus():
        return None
    return describe()


def summary_line(summary: dict, out) -> str:
    loss = summary.get("final_val_loss")
    loss_text = f"{loss:.4f}" if isinstance(loss, float) else "n/a"
    rate = summary.get("tokens_per_s") or 0
    return (
        f"{summary['status']}: val loss {loss_text} after {summary['steps_run']} steps "
        f"({rate:,.0f} tokens/s) -> {out}"
    )


# -- data ------------------------------------------------------------------------------------
@click.group()
def data():
    """Prepare and inspect tokenized corpora."""


def _data_config(corpus: str, tokenizer: str, path: str, overrides):
    from sweeps.core.config import DataConfig, RunConfig

    base = RunConfig(data=DataConfig(corpus=corpus, tokenizer=tokenizer, path=path))
    return base.with_overrides(overrides).data


@data.command("prepare")
@click.option(
    "--corpus",
    default="builtin",
    show_default=True,
    help=" | ".join(CORPORA),
)
@click.option("--tokenizer", default="bytes", show_default=True, help="bytes | gpt2 | gpt2-compact")
@click.option("--path", default="", help="Data file (corpus file) or local dataset copy.")
@set_option("data.val_fraction=0.1")
@click.pass_obj
def data_prepare(backend, corpus, tokenizer, path, overrides):
    """Tokenize a corpus once and cache its train and validation splits."""
    from sweeps.data import load_tokens

    data = _data_config(corpus, tokenizer, path, overrides)
    splits = load_tokens(data, progress=True, program=PROGRAMS[backend])
    click.echo(json.dumps(splits.manifest, indent=2, sort_keys=True))


@data.command("info")
@click.option("--corpus", default="builtin", show_default=True)
@click.option("--tokenizer", default="bytes", show_default=True)
@click.option("--path", default="")
@set_option("data.val_fraction=0.1")
@click.pass_obj
def data_info(backend, corpus, tokenizer, path, overrides):
    """Show the manifest of a prepared corpus (prepare it first with `data prepare`)."""
    from sweeps.data import read_manifest

    data = _data_config(corpus, tokenizer, path, overrides)
    manifest = read_manifest(data, program=PROGRAMS[backend])
    click.echo(json.dumps(manifest, indent=2, sort_keys=True))


# -- train and config ------------------------------------------------------------------------
@click.command()
@click.option(
    "--preset",
    default="smoke",
    show_default=True,
    help=f"{PRESET_NAMES} (NAME at depth n).",
)
@set_option()
@click.option("--seed", type=int, default=None, help="Seed for weights and batch order.")
@click.option(
    "--out",
    type=folder_path(),
    default=None,
    help="Run directory (default runs/single/<run_id>).",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="CPU threads (default: the libraries' own, every core, as the worker of a "
    "one-worker sweep; OMP_NUM_THREADS also sets it). Threads wait passively either way.",
)
@device_options
@click.pass_obj
def train(backend, preset, overrides, seed, out, threads, device, compile, tf32):
    """Train one run; resumes an interrupted run directory, skips a finished one."""
    from sweeps.core.files import check_writable
    from sweeps.platform.blas import thread_env
    from sweeps.run.backends import Execution
    from sweeps.run.loop import train_run
    from sweeps.run.rundir import RunDir

    # before the backend is imported: its OpenMP and BLAS read these once, when they load
    os.environ.update(thread_env(1, os.cpu_count() or 1, os.environ, threads))
    execution = Execution(backend, device, compile, tf32)
    cfg = resolve_config(preset, overrides, backend, seed)
    out = Path(out) if out else Path("runs") / "single" / cfg.run_id
    RunDir(out).check_holds(cfg)
    if RunDir(out).is_finished:
        click.echo(f"{out} is already finished (summary.json exists); nothing to do")
        return
    check_writable(out, "--out")
    execution.check_device()
    summary = train_run(cfg, out, execution.trainer_factory(), progress=True)
    for note in cpu_kernels_notes(backend, device):  # after the run: a refusal stays one line
        click.echo(note, err=True)
    click.echo(summary_line(summary, out))


@click.group()
def config():
    """Inspect presets and resolved configs."""


@config.command("show")
@click.argument("preset")
@set_option()
@click.option(
    "--temperature/--no-temperature",
    default=True,
    show_default=True,
    help="Measure the initial attention-logit std (builds the model on a batch).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Print every field with its value, unit and meaning instead of JSON.",
)
@click.pass_obj
def config_show(backend, preset, overrides, temperature, explain):
    """Print the resolved config of PRESET as JSON with total and non-embedding parameter
    counts and the attention-logit std it starts at (and would with QK-norm off and on).
    PRESET may be a sweep spec (sweeps/specs/NAME.toml): then it is the config the sweep
    trains, the spec's preset with its [set], before each run's grid values and arm."""
    from sweeps.core.params import count_params, qk_init_scales

    cfg, spec_note = _shown_config(preset, overrides, backend)
    if explain:
        from sweeps.core.explain import explain as explained

        click.echo("\n".join(([spec_note["note"]] if spec_note else []) + explained(cfg)))
        return
    counts = count_params(cfg.model, cfg.vocab_size)
    std, gain = qk_init_scales(cfg.model)
    out = {
        "run_id": cfg.run_id,
        "config": cfg.to_dict(),
        "params": counts,
        "tokens_per_run": cfg.tokens_per_step * cfg.train.max_steps,
        "qk_init": {"w_q_w_k_std": std, "qk_norm_gain": gain},
    }
    if spec_note:
        out["spec"] = spec_note
    if temperature:
        from sweeps.core.params import check_fits
        from sweeps.run.backends import trainer_factory
        from sweeps.run.temperature import temperatures

        check_fits(cfg)  # the measurement builds the model
        out["initial_attention_logit_std"] = temperatures(cfg, trainer_factory(backend, "cpu"))
    click.echo(json.dumps(out, indent=2, sort_keys=True))


def _shown_config(name: str, overrides, backend: str):
    """(config, spec note) of `config show NAME`: for a spec (sweeps/specs/NAME.toml) the
    config its sweep trains, the spec's preset with its [set] and then --set, and a note that
    says so; for a preset, the preset with --set and no note."""
    from sweeps.sweep.spec import known_specs, load_spec

    if name not in known_specs():
        return resolve_config(name, overrides, backend), None
    own_backend(overrides, backend)
    spec = load_spec(name)
    cfg = spec.base_config(backend).with_overrides(list(overrides))
    fixed = ", ".join(f"{k}={v}" for k, v in spec.set.items())
    varied = ["lr", "seed"] + (["n_layer"] if spec.n_layer else [])
    note = (
        f"the config `sweep {name}` trains: preset {spec.preset}"
        + (f" with the spec's [set] {fixed}" if fixed else "")
        + f"; each run then sets its {', '.join(varied)} and arm ({PROGRAMS[backend]} sweep {name} "
        f"--dry-run lists them)"
        + (f"; `train --preset {spec.preset}` trains the preset without the [set]" if fixed else "")
    )
    return cfg, {"name": name, "preset": spec.preset, "set": dict(spec.set), "note": note}


# -- sweeps ----------------------------------------------------------------------------------
@click.command()
@click.argument("name", required=False)
@click.option(
    "--workers", type=int, default=None, help="Runs at once (local default: one per GPU, else 1)."
)
@click.option(
    "--executor",
    type=click.Choice(list(EXECUTORS)),
    default="local",
    show_default=True,
    help="A local process pool, or Ray tasks.",
)
@click.option("--address", default=None, help="Ray cluster address (default: a local one).")
@click.option(
    "--gpus-per-run",
    type=float,
    default=None,
    help="Ray: GPUs per run, fractions allowed (default 1 on GPU clusters).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print whether the data is prepared, the plan, its runs counted by state and, "
    "last, its cost on measured devices; write nothing.",
)
@click.option(
    "--list-runs",
    is_flag=True,
    help="With --dry-run: list every planned run with its state (by default they are "
    "counted, so the cost, printed last, stays on the screen).",
)
@click.option(
    "--estimate",
    is_flag=True,
    help="Time a short probe (under a minute) of the largest config on --device, with "
    "the CPU threads of one of --workers workers, in repeats, and print the sweep's "
    "tokens, FLOPs, device-hours and wall time first, as a range, and whether the "
    "machine looked busy; then the sweep trains, unless --dry-run is given too.",
)
@click.option(
    "--fuse",
    default="auto",
    show_default=True,
    metavar="auto|off|N",
    help="Train runs that differ only in LR and seed as one program, N per group "
    "(auto: on a GPU, groups sized to its memory; off on a CPU, where it does not pay).",
)
@click.option("--retry-failed", is_flag=True, help="Run failed runs again.")
@click.option(
    "--max-runs",
    type=click.IntRange(min=1),
    default=MAX_RUNS,
    show_default=True,
    help="Refuse a sweep whose grid, grown to its limits, has more runs.",
)
@click.option(
    "--preset",
    default=None,
    help="Ad-hoc grid: the preset to sweep (with --grid and --name; no TOML file).",
)
@click.option(
    "--grid",
    "grid",
    multiple=True,
    metavar="FIELD=V1,V2",
    help="Ad-hoc grid: values of train.lr, model.n_layer (a depth ladder), model.n_embd (a "
    "width ladder), seed or model.qk_norm (repeatable), e.g. --grid train.lr=1e-3,3e-3 "
    "--grid qk_norm=none,rms.",
)
@click.option(
    "--seeds",
    type=int,
    default=None,
    help=f"Ad-hoc grid: seeds 0..N-1, N at least {MIN_SEEDS} (default {STUDY_SEEDS}, "
    f"docs/STUDY.md); --grid seed=... names the seeds instead, at least {MIN_SEEDS} too.",
)
@click.option(
    "--name",
    "sweep_name",
    default=None,
    help="Ad-hoc grid: its folder RUNS_DIR/NAME/ (spec.toml is written there; the "
    "same command, or `sweep NAME`, resumes it).",
)
@click.option(
    "--tensorboard",
    "tensorboard_dir",
    type=folder_path(),
    default=None,
    help="Also log every run to TensorBoard in this folder while it "
    "trains (one TensorBoard run per run directory).",
)
@click.option(
    "--from-report",
    type=folder_path(),
    default=None,
    help="Grow a committed report of this sweep: its finished runs (runs.parquet) count as "
    "finished, only the runs it lacks train; then `figures NAME --from-report DIR --add-runs "
    "--in-place`.",
)
@runs_dir_option
@set_option("train.max_steps=2400")
@device_options
@click.pass_obj
def sweep(backend, name, **options):
    """Run sweep NAME (sweeps/specs/NAME.toml, a .toml path, or an ad-hoc grid's folder):
    skips finished runs, resumes interrupted ones."""
    from sweeps.sweep.command import sweep_command

    code = sweep_command(backend, name, echo=click.echo, **options)
    if code:
        sys.exit(code)


def _spec_names() -> list[str]:
    from sweeps.sweep.spec import known_specs

    return known_specs()


sweep.help = inspect.cleandoc(sweep.help or "") + "\n\nSpecs: " + ", ".join(_spec_names()) + "."


@click.command()
@click.argument("name")
@runs_dir_option
@click.option(
    "--watch",
    is_flag=True,
    help="Redraw a live table (running runs' step, smoothed loss, LR, ETA; the "
    "sweep's ETA) until the sweep ends; reads only the run directories.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.0),
    default=5.0,
    show_default=True,
    help="--watch: seconds between redraws.",
)
@click.option(
    "--frames",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="--watch: stop after this many redraws (0: when the sweep ends).",
)
@click.pass_obj
def status(backend, name, runs_dir, watch, interval, frames):
    """The runs of sweep NAME and their state, and final loss by lr and qk_norm."""
    if watch:
        from sweeps.sweep.watch import watch as watch_sweep

        watch_sweep(name, runs_dir, backend, interval, frames)
        return
    from sweeps.sweep.status import status_lines

    click.echo("\n".join(status_lines(name, runs_dir, backend)))


@click.group()
def export():
    """Export a sweep's runs to experiment trackers."""


@export.command("tensorboard")
@click.argument("name")
@click.option(
    "--out",
    type=folder_path(),
    required=True,
    help="TensorBoard log folder: one TensorBoard run per run directory.",
)
@runs_dir_option
@click.pass_obj
def export_tensorboard(backend, name, out, runs_dir):
    """Write every run of sweep NAME with metrics to TensorBoard: scalars (losses, grad norm,
    LR, diagnostics) and hyperparameters (HParams view). Works while the sweep runs."""
    from sweeps.core.files import check_writable
    from sweeps.sweep.export import export_runs, require_tensorboard
    from sweeps.sweep.status import planned_runs, shown_backend
    from sweeps.sweep.sweepdir import SweepDir

    require_tensorboard()  # the missing package first
    directory, configs = planned_runs(name, runs_dir, backend)
    check_writable(Path(out), "--out")
    done = export_runs(directory, configs, out)
    click.echo(
        f"exported {len(done)} of {len(configs)} planned runs of {directory.name} -> "
        f"{out} (view: tensorboard --logdir {out})"
    )
    note = SweepDir(directory).left_out_note(
        shown_backend(directory, configs, backend), "export tensorboard"
    )
    if note:
        click.echo(note, err=True)


def main(backend: str, extra_commands=()) -> None:
    """A console script's entry: the backend's group with the commands from above sweeps/."""
    make_cli(backend, extra_commands)(prog_name=PROGRAMS[backend])
