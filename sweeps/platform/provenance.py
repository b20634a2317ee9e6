"""Where and with what a run was made: the git state of the code (read once per process),
package versions, Python, platform, the host (CPU, its vector instructions, thread counts),
device and start time.

The host matters for reproducibility: float32 training on a CPU is bit-identical only on the
same processor kind with the same thread counts. Another CPU picks other kernels (another
vector width, another summation order) and the same config and seed drift apart from the
first step (docs/DESIGN.md, Devices and reproducibility)."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from sweeps.platform.blas import THREAD_VARS
from sweeps.platform.devices import host_cpu_name

# The x86 vector extensions that decide which kernels the math libraries dispatch to (on
# other processors none is listed and the CPU's name says it).
SIMD_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile")


def provenance(device: str = "") -> dict:
    """Where and with what a run was made: commit, dirty flag, versions, host, device, time."""
    commit, dirty = _SOURCE
    versions = {}
    for package in ("qknorm-study", "numpy", "mlx", "torch", "safetensors", "tiktoken"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "versions": versions,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": host(),
        "device": device,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def checkout() -> tuple[str | None, bool | None]:
    """(git commit, dirty) of the checkout this process loaded its code from, as its runs
    record it; (None, None) outside a git checkout."""
    return _SOURCE


def host(environ=os.environ, cpuinfo: str = "/proc/cpuinfo") -> dict:
    """The CPU (name, the vector extensions of SIMD_FLAGS it has), the thread counts the
    libraries were told to use (THREAD_VARS as set; unset: the libraries' default) and a
    preloaded library (LD_PRELOAD), if any."""
    flags: set[str] = set()
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return {
        "cpu": host_cpu_name(),
        "simd": [flag for flag in SIMD_FLAGS if flag in flags],
        "cpus": os.cpu_count(),
        "threads": {var: environ[var] for var in THREAD_VARS if var in environ},
        # a BLAS preloaded into the process (OpenBLAS for MLX on Linux) computes torch's
        # matmuls too: other bits
        **({"preload": environ["LD_PRELOAD"]} if environ.get("LD_PRELOAD") else {}),
    }


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _source_state() -> tuple[str | None, bool | None]:
    """(git commit, dirty) of the checkout this code comes from."""
    source = Path(__file__).resolve().parents[2]
    commit = _git(source, "rev-parse", "HEAD")
    dirty = bool(_git(source, "status", "--porcelain", "--untracked-files=no")) if commit else None
    return commit, dirty


# Read once, when this process loads the code: a sweep's workers live for the whole sweep,
# and the checkout may move on meanwhile; the runs they train ran the code they loaded.
_SOURCE = _source_state()
