"""The `qktorch` command: the shared CLI with the torch backend fixed, plus `figures`."""

from sweeps.platform.mkl import ensure_requested_path


def main() -> None:
    ensure_requested_path()  # may re-execute this command once with QKNORM_MKL_PATH's library
    from figures.cli import figures
    from sweeps.cli import main as run

    run("torch", [figures])
