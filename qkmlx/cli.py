"""The `qkmlx` command: the shared CLI with the mlx backend fixed, plus `figures`."""

from sweeps.platform.blas import ensure_fast_blas


def main() -> None:
    ensure_fast_blas()  # may re-execute this command once with OpenBLAS preloaded
    from figures.cli import figures
    from sweeps.cli import main as run

    run("mlx", [figures])
