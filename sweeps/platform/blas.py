"""Linux CPU speed for MLX: its Linux CPU wheel links a reference BLAS that ran a 1024x1024
matmul about 40x slower than OpenBLAS on a 2-core machine (a small GPT step about 13x slower).

`preload_env` says how to fix that for a new process (LD_PRELOAD of Debian's OpenBLAS, when
installed); `ensure_fast_blas` applies it to the current command by re-executing it once,
before mlx is imported, or keeps a warning with the install command. Either line waits
(`take_note`) until the command has checked its input, so a refusal stays one line: train
says it after the run, a sweep in its executor line, crosscheck before its first check. The
executors give their qkmlx workers the same environment. Results are identical; only speed
changes.

Nothing here imports mlx: it only looks at the installed files.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys
from pathlib import Path

GUARD = "QKMLX_BLAS_CHECKED"  # set in the re-executed process so it never loops
NOTE = "QKMLX_BLAS_NOTE"  # the line ensure_fast_blas keeps for the command to say (take_note)
OPENBLAS_GLOBS = (
    "/usr/lib/*-linux-gnu/openblas-pthread/libblas.so.3",
    "/usr/lib/*-linux-gnu/libopenblas.so.0",
    "/usr/lib64/libopenblas.so.0",
)
# The thread counts of the BLAS and OpenMP libraries: a pool of CPU workers shares the cores
# out through them (sweeps.sweep.executors), the throughput benchmark pins them.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def thread_env(workers: int, cpus: int, environ=os.environ, threads: int | None = None) -> dict:
    """The variables one of `workers` CPU processes on `cpus` CPUs trains with (a sweep's
    local worker, or a single run: workers 1): OpenMP threads that sleep instead of spinning
    while they wait (on a busy 2-core machine spinning threads made smoke steps 1.2 s instead
    of 5 ms, and a 150-step cpu run 237 s instead of 37 s), and the cores shared out between
    the workers (cpus // workers each; one worker keeps the libraries' default, every core).
    threads: this many instead. What the user set in `environ` is kept, except that an
    explicit `threads` wins."""
    env = {k: v for k, v in {"OMP_WAIT_POLICY": "PASSIVE"}.items() if k not in environ}
    if threads is not None:
        env.update({k: str(threads) for k in THREAD_VARS})
    elif workers > 1:
        env.update({k: str(max(1, cpus // workers)) for k in THREAD_VARS if k not in environ})
    return env


INSTALL_HINT = (
    "MLX is using its slow reference BLAS (CPU training about 13x slower); "
    "install OpenBLAS (Debian or Ubuntu, as root: apt-get install libopenblas0-pthread), "
    "or train with qktorch, the faster backend on a Linux CPU (docs/install.md)"
)


def mlx_uses_reference_blas() -> bool:
    """True when the installed mlx ships its own reference libblas (the Linux CPU wheel)."""
    spec = importlib.util.find_spec("mlx")
    if spec is None or not spec.submodule_search_locations:
        return False
    site = Path(list(spec.submodule_search_locations)[0]).parent
    return any(site.glob("mlx*.libs/libblas*.so*"))


def find_openblas() -> str | None:
    for pattern in OPENBLAS_GLOBS:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[0]
    return None


def preload_env(environ=os.environ) -> dict | None:
    """The variables that give a new process OpenBLAS instead of MLX's reference BLAS:
    {} when nothing needs doing (not Linux, already preloaded, mlx brings no reference BLAS),
    None when it would help but OpenBLAS is not installed."""
    preload = environ.get("LD_PRELOAD", "")
    if not sys.platform.startswith("linux") or "blas" in preload or not mlx_uses_reference_blas():
        return {}
    library = find_openblas()
    if library is None:
        return None
    return {"LD_PRELOAD": f"{library}:{preload}" if preload else library, GUARD: "1"}


# The qkmlx commands that run MLX math (training, the probe of --estimate, the temperature
# of `config show`): only these check the BLAS, so `--help`, `status`, `figures` and `data`
# neither re-execute nor warn.
MLX_COMMANDS = ("train", "sweep", "config", "crosscheck")


def runs_one_of(args: list[str], commands: tuple[str, ...]) -> bool:
    """Whether a command line (without the program) runs one of `commands` (not its --help)."""
    if any(a in ("-h", "--help") for a in args):
        return False
    command = next((a for a in args if not a.startswith("-")), None)
    return command in commands


def runs_mlx(args: list[str]) -> bool:
    """Whether a qkmlx command line (without the program) will run MLX math."""
    return runs_one_of(args, MLX_COMMANDS)


def ensure_fast_blas(args: list[str] | None = None) -> None:
    """Re-execute this command once with OpenBLAS preloaded, if that helps (call it first),
    or keep the install hint; nothing for commands that run no MLX math (runs_mlx). Prints
    nothing: the line which BLAS runs waits for take_note, after the command's input is
    checked."""
    if os.environ.get(GUARD) or not runs_mlx(sys.argv[1:] if args is None else args):
        return
    os.environ[GUARD] = "1"
    env = preload_env()
    if env is None:
        os.environ[NOTE] = f"qkmlx: {INSTALL_HINT}"
        return
    if not env:
        return
    note = f"qkmlx: using OpenBLAS ({find_openblas()}) instead of MLX's reference BLAS"
    # sys.orig_argv is the interpreter's own command line (python -c CODE ... included);
    # sys.argv would lose a `python -c` program.
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    os.execve(sys.executable, [sys.executable, *argv[1:]], {**os.environ, **env, NOTE: note})


def take_note(environ=os.environ) -> str | None:
    """The line ensure_fast_blas kept (OpenBLAS preloaded, or the install hint), once: None
    after the first call, and in a command that kept none."""
    return environ.pop(NOTE, None)
