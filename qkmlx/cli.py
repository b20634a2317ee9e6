"""The `qkmlx` command: the shared CLI with the mlx backend fixed."""
from sweeps.cli import make_cli


def main() -> None:
    make_cli("mlx")(prog_name="qkmlx")
