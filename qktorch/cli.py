"""The `qktorch` command: the shared CLI with the torch backend fixed, plus `figures`."""


def main() -> None:
    from figures.cli import figures
    from sweeps.cli import main as run

    run("torch", [figures])
