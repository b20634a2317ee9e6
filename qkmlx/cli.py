"""The `qkmlx` command: the shared CLI with the mlx backend fixed."""
from qkmlx.blas import ensure_fast_blas
from sweeps.cli import make_cli


def main() -> None:
    ensure_fast_blas()  # may re-execute this command once with OpenBLAS preloaded
    make_cli("mlx")(prog_name="qkmlx")
