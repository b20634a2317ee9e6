"""The `crosscheck` command: qkmlx and qktorch on the same weights and batches, compared.

Exit code 0 when every check passes, 1 when any fails, 2 on bad input, 1 on a fault of the
machine (an unwritable --out), 130 or 143 when interrupted: one line on stderr for these.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from sweeps.cli import OneLinePath, folder_path, one_line_errors
from sweeps.core.errors import HarnessError

# crosscheck writes crosscheck.json once, at the end: an interrupted check keeps nothing
INTERRUPTED = "interrupted; nothing was written: run the same command again (it starts over)"


def float32_numerics(threads: int | None) -> None:
    """Exact float32 on both sides: TF32 off for MLX and torch (the CPU ignores it, a GPU
    would not), and torch's highest float32 matmul precision."""
    os.environ["MLX_ENABLE_TF32"] = "0"
    import torch

    if threads:
        torch.set_num_threads(threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


@click.command(name="crosscheck", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--preset", default=None, help="Check one preset: smoke | tiny | core | NAME-L<n>.")
@click.option(
    "--sweep",
    default=None,
    help="Check every distinct model config of sweep NAME: its record RUNS_DIR/NAME/spec.toml "
    "(a spec's or an ad-hoc grid's, with its --set), else sweeps/specs/NAME.toml, or a .toml.",
)
@click.option(
    "--runs-dir",
    default="runs",
    show_default=True,
    type=folder_path(),
    help="With --sweep: crosscheck.json goes to RUNS_DIR/<sweep>/.",
)
@click.option(
    "--steps",
    default=50,
    show_default=True,
    type=click.IntRange(min=0),
    help="Training steps compared; 0 checks forward and one step only.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="SECTION.FIELD=VALUE",
    help="Override a config value, e.g. --set model.n_embd=64 (repeatable).",
)
@click.option(
    "--qk-norm",
    "qk_norms",
    multiple=True,
    metavar="none|rms|layernorm",
    help="QK-norm settings to check (repeatable); default: off and on (none, rms), "
    "or the sweep's own.",
)
@click.option(
    "--interventions",
    is_flag=True,
    help="With --preset: also check each intervention (sweeps/core/interventions.py) "
    "at its exercise value, QK-norm off.",
)
@click.option(
    "--out",
    default=None,
    type=OneLinePath(dir_okay=False),
    help="Also write crosscheck.json here (default with --preset: none).",
)
@click.option(
    "--torch-device",
    default="cpu",
    show_default=True,
    metavar="cpu|cuda|mps",
    help="Where qktorch runs: the GPU paths are checked against qkmlx on the same weights.",
)
@click.option(
    "--mlx-device",
    default="cpu",
    show_default=True,
    metavar="cpu|gpu",
    help="Where qkmlx runs (gpu: Metal on a Mac, CUDA with mlx[cuda]).",
)
@click.option(
    "--fused",
    default=3,
    show_default=True,
    type=click.IntRange(min=0),
    help="Also check the fused program (runs differing in LR and seed trained as one, "
    "crosscheck/fused.py) with this many models; 0 skips it.",
)
@click.option(
    "--threads",
    default=None,
    type=click.IntRange(min=1),
    help="CPU threads for torch (default: torch's choice). 1 is often faster on a "
    "busy machine or for smoke-sized models.",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Print every check's row (default: each config's failing rows and a one-line result).",
)
@click.pass_context
def cli(ctx, torch_device, mlx_device, **options):
    """Prove that qkmlx and qktorch agree: identical numpy weights and batches, float32
    (on the CPU unless --torch-device / --mlx-device say otherwise), QK-norm off and on.
    Compares logits, one step's loss and every gradient, per-step losses over a short
    training run with the real optimizer, schedule and clipping, the diagnostics at its end,
    and checkpoints moved from one backend to the other."""
    with one_line_errors(ctx, INTERRUPTED):
        code = run(devices={"torch": torch_device, "mlx": mlx_device}, **options)
    ctx.exit(code)


def run(
    preset,
    sweep,
    runs_dir,
    steps,
    overrides,
    qk_norms,
    out,
    threads=None,
    interventions=False,
    devices=None,
    fused=0,
    verbose=True,
) -> int:
    from crosscheck.checks import CPU, device_factory
    from sweeps.core.files import check_writable
    from sweeps.core.params import check_fits
    from sweeps.platform.devices import DeviceUnavailable
    from sweeps.run.backends import check_device

    devices = devices or CPU
    for backend, device in devices.items():  # now: an unusable GPU is bad input, not a mismatch
        if device == "auto":
            raise HarnessError(f"--{backend}-device auto: name the device to check (cpu or a GPU)")
        try:
            check_device(backend, device)
        except DeviceUnavailable as e:  # crosscheck's option, not the trainers' --device
            raise HarnessError(e.fix(f"--{backend}-device")) from None
    spec, targets, path = _targets(preset, sweep, runs_dir, overrides, qk_norms, interventions)
    for target_path, option in ((path, "--runs-dir"), (Path(out) if out else None, "--out")):
        if target_path is not None:  # now, not after every check has run
            check_writable(target_path.parent, option)
    for target in targets:
        check_fits(target.cfg)
    from sweeps.platform.blas import take_note

    if note := take_note():  # which BLAS MLX runs on: after the input is checked
        click.echo(note, err=True)
    float32_numerics(threads)
    from crosscheck.report import document, placement, write

    began = time.perf_counter()
    from crosscheck.fused import fused_device_factory

    make_trainer, make_fused = device_factory(devices), fused_device_factory(devices)
    results = [
        _check_target(target, steps, make_trainer, fused, make_fused, verbose) for target in targets
    ]
    command = ["crosscheck", *sys.argv[1:]]
    doc = document(results, steps, command, spec.to_dict() if spec else None, devices)
    for target_path in filter(None, (path, Path(out) if out else None)):
        write(target_path, doc)
        click.echo(f"wrote {target_path}")
    total = sum(len(r["checks"]) for r in results)
    bad = sum(not c["passed"] for r in results for c in r["checks"])
    elapsed = time.perf_counter() - began
    shown = "pass" if doc["verdict"] == "pass" else "FAIL"
    click.echo(
        f"crosscheck: {shown}: {total - bad} of {total} checks passed, "
        f"{len(results)} configs, {elapsed:.1f} s ({placement(devices)})"
    )
    return 0 if doc["verdict"] == "pass" else 1


def _targets(preset, sweep, runs_dir, overrides, qk_norms, interventions=False):
    """(the sweep's spec or None, the model configs to check, where crosscheck.json goes
    or None): from --preset or from --sweep, exactly one of them. --interventions (with
    --preset) adds each intervention at its exercise value."""
    from crosscheck.configs import preset_targets, sweep_targets
    from sweeps.sweep.record import find_spec
    from sweeps.sweep.sweepdir import SweepDir

    if (preset is None) == (sweep is None):
        raise HarnessError("give exactly one of --preset NAME or --sweep NAME")
    if interventions and sweep is not None:
        raise HarnessError(
            "--interventions goes with --preset: a sweep's crosscheck covers "
            "the interventions its arms switch on"
        )
    if sweep is None:
        return None, preset_targets(preset, overrides, qk_norms, interventions), None
    spec = find_spec(sweep, runs_dir)  # the sweep's record (runs/NAME/spec.toml) first
    return (
        spec,
        sweep_targets(spec, overrides, qk_norms),
        SweepDir(Path(runs_dir) / spec.name).crosscheck_path,
    )


def _check_target(
    target, steps: int, make_trainer, fused: int = 0, make_fused=None, verbose: bool = True
) -> dict:
    """Every check of one model config (and, fused > 0, of the fused program of that many
    runs of it), each printed as it is made (verbose) or only where it failed; its entry in the
    document."""
    from crosscheck.batches import make_batches
    from crosscheck.checks import run_checks
    from crosscheck.fused import run_fused_checks
    from crosscheck.report import HEADER, heading, row

    started = time.perf_counter()
    batches = make_batches(target.cfg)
    title = heading(target.label, batches.source, steps)
    click.echo(title if verbose else title.split("\n")[0])
    shown = [verbose]  # the column header is out (quiet: before the first failing row)

    def log(c) -> None:
        if not (verbose or not c.passed):
            return
        if not shown[0]:
            click.echo(HEADER)
            shown[0] = True
        click.echo(row(c))

    checks = run_checks(target.cfg, batches, steps, make_trainer, log=log)
    if fused:
        checks += run_fused_checks(target.cfg, batches, steps, fused, make_fused, log)
    failed = [c.name for c in checks if not c.passed]
    seconds = time.perf_counter() - started
    result = "FAIL: " + ", ".join(failed) if failed else f"pass, {len(checks)} checks"
    click.echo(f"  -> {result} ({seconds:.1f} s)" + ("\n" if verbose else ""))
    return {
        "label": target.label,
        "config": target.cfg.to_dict(),
        "data": batches.source,
        "verdict": "fail" if failed else "pass",
        "seconds": round(seconds, 2),
        "checks": [c.to_dict() for c in checks],
    }


def main() -> None:
    os.environ["MLX_ENABLE_TF32"] = "0"
    from sweeps.platform.blas import ensure_fast_blas
    from sweeps.platform.mkl import ensure_requested_path

    # may re-execute this command once with OpenBLAS preloaded (every crosscheck runs MLX),
    # and once more with QKNORM_MKL_PATH's library (it runs torch too)
    ensure_fast_blas(["crosscheck", *sys.argv[1:]])
    ensure_requested_path(["crosscheck", *sys.argv[1:]])
    cli(prog_name="crosscheck")
