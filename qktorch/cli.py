"""The `qktorch` command: the shared CLI with the torch backend fixed."""
from sweeps.cli import make_cli


def main() -> None:
    make_cli("torch")(prog_name="qktorch")
