"""Which code path oneMKL takes for torch's fp32 matmuls on an x86 CPU, and an opt-in to a
faster one on CPUs not made by Intel.

torch's x86 Linux wheels compute fp32 matmuls (`mm`, half a training step of the `cpu` preset)
with the oneMKL built into libtorch_cpu. MKL chooses its kernels by vendor first: on an Intel
CPU the widest its instructions allow, on any other CPU a generic path. Measured with torch
2.13 (MKL 2024.0), one thread, `cpu` preset at depth 4 (docs/DESIGN.md, Performance):

- an AVX2-only AMD EPYC: the generic path runs the step's matmul shapes at 85.5 GFLOP/s, the
  Intel path at 93.0; a training step is 1.13x faster on the Intel path, whole runs 1.08-1.11x
  with two workers (docs/cpu-speed: benchmarks/cpu_phases.py and cpu_slice.py);
- an AMD Zen 5 with AVX-512 (reported in issue 45, not re-measured): the generic path stays on
  AVX2 (86-95 GFLOP/s against 183-210 on AVX-512).

No supported switch lifts the vendor check: MKL_ENABLE_INSTRUCTIONS only lowers the ceiling,
MKL_CBWR picks a reproducibility branch but leaves the generic dispatch on (measured: the same
bits, no faster), and no eager switch we found sends fp32 matmuls to oneDNN (which dispatches
by instruction set alone) at full precision. So the opt-in is the widely used
one: QKNORM_MKL_PATH=intel preloads a one-line library (built once with the system C compiler)
that answers MKL's "is this an Intel CPU?" with yes, and MKL then dispatches on the
instructions the CPU reports. The trade: faster, and not bit-identical to the default path
(other kernels sum in other orders); a run records which path trained it (provenance kernels
"mkl_path"), so rerun comparisons tell the two apart. MLX is not affected (its Linux CPU
matmuls run on OpenBLAS, which dispatches by instruction set).

Nothing here imports torch except `path_of`, which reads a torch the caller already loaded.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sweeps.core.errors import HarnessError, one_line
from sweeps.platform.blas import runs_one_of

OPT_IN = (
    "QKNORM_MKL_PATH"  # "intel": MKL's Intel path on any x86 CPU; unset or "default": MKL's own
)
CHOICES = ("default", "intel")
GUARD = "QKNORM_MKL_CHECKED"  # set in the re-executed process so it never loops
# The symbol MKL asks; the answer 1 sends it to the dispatch it uses on Intel CPUs.
SHIM_SOURCE = "int mkl_serv_intel_cpu_true(void) { return 1; }\n"
SHIM_NAME = "mkl_intel_path"
# MKL's code-branch numbers (its MKL_CBWR_* constants) as mkl_serv_cbwr_get_auto_branch
# answers them: 2 (auto) is the generic path it takes on other vendors' CPUs.
BRANCHES = {
    2: "generic",
    3: "SSE2 (compatible)",
    4: "SSE2",
    8: "SSE4.2",
    9: "AVX",
    10: "AVX2",
    12: "AVX-512",
    14: "AVX-512 (VNNI)",
}
# The qktorch commands whose processes run torch's CPU math.
TORCH_COMMANDS = ("train", "sweep", "crosscheck")


def requested(environ=os.environ) -> str:
    """The path asked for: "default" or "intel"; anything else is bad input."""
    value = environ.get(OPT_IN, "").strip().lower() or "default"
    if value not in CHOICES:
        raise HarnessError(
            f"{OPT_IN}={environ[OPT_IN]!r} is not a path; set it to 'intel' (MKL's Intel path "
            f"on any x86 CPU: faster, not bit-identical) or unset it for MKL's own choice"
        )
    return value


def applies(machine: str | None = None, system: str | None = None) -> bool:
    """Whether torch's matmuls run on MKL here: x86-64 Linux (torch's wheels for macOS and Arm
    use other BLAS libraries)."""
    machine = (machine or platform.machine()).lower()
    system = system or sys.platform
    return system.startswith("linux") and machine in ("x86_64", "amd64")


def cpu_vendor(cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """The CPU's vendor id ("GenuineIntel", "AuthenticAMD", ...), None where not told."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "vendor_id":
                    return value.strip()
    except OSError:
        pass
    return None


def cache_dir(environ=os.environ) -> Path:
    base = environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "qknorm-study"


def shim_path(environ=os.environ) -> Path:
    digest = hashlib.sha256(SHIM_SOURCE.encode()).hexdigest()[:12]
    return cache_dir(environ) / f"{SHIM_NAME}-{digest}.so"


def build_shim(environ=os.environ) -> Path:
    """The preload library, compiled once into the cache (atomically: a temp file renamed)."""
    target = shim_path(environ)
    if target.exists():
        return target
    compiler = environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise HarnessError(
            f"{OPT_IN}=intel needs a C compiler to build a one-line library; install one "
            f"(Debian or Ubuntu, as root: apt-get install gcc) or unset {OPT_IN}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        source = Path(work) / f"{SHIM_NAME}.c"
        source.write_text(SHIM_SOURCE)
        built = Path(work) / f"{SHIM_NAME}.so"
        done = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-o", str(built), str(source)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise HarnessError(f"{OPT_IN}=intel: {compiler} could not build its library: {why}")
        os.replace(built, target)
    return target


def preload_env(environ=os.environ) -> dict:
    """The variables a new process needs for the requested path: {} for the default path, off
    x86 Linux, or when the library is already preloaded."""
    if requested(environ) == "default" or not applies():
        return {}
    preload = environ.get("LD_PRELOAD", "")
    if SHIM_NAME in preload:
        return {}
    library = str(build_shim(environ))
    return {"LD_PRELOAD": f"{library}:{preload}" if preload else library}


def runs_torch(args: list[str]) -> bool:
    """Whether a qktorch command line (without the program) will run torch math."""
    return runs_one_of(args, TORCH_COMMANDS)


def ensure_requested_path(args: list[str] | None = None) -> None:
    """Re-execute this command once with the opt-in library preloaded, when it is asked for and
    not loaded yet (call it first, before torch is imported). Workers a sweep starts inherit
    the preload with the environment."""
    args = sys.argv[1:] if args is None else args
    if os.environ.get(GUARD) or not runs_torch(args):
        return
    os.environ[GUARD] = "1"
    try:
        env = preload_env()
    except HarnessError as e:  # before click runs: its one-line error, by hand
        message, code = one_line(e)
        print(f"Error: {message}", file=sys.stderr)
        raise SystemExit(code) from None
    if not env:
        return
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    os.execve(sys.executable, [sys.executable, *argv[1:]], {**os.environ, **env})


def path_of(torch) -> str | None:
    """The branch MKL dispatches fp32 matmuls to in this process ("AVX2", "AVX-512",
    "generic"...), read from the libtorch_cpu a caller has loaded; None without MKL."""
    if not applies():
        return None
    try:
        if not torch.backends.mkl.is_available():
            return None
        library = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        code = int(library.mkl_serv_cbwr_get_auto_branch())
    except (AttributeError, OSError):  # another build: MKL's service symbols not exported
        return None
    return BRANCHES.get(code, f"branch {code}")


def describe(environ=os.environ, cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """One line for `train` and `sweep`: which path torch's CPU matmuls take and how to choose;
    None where MKL does not compute them."""
    if not applies():
        return None
    vendor = cpu_vendor(cpuinfo)
    if requested(environ) == "intel":
        return (
            f"torch CPU matmuls: MKL's Intel path ({OPT_IN}=intel; not bit-identical to the "
            "default path)"
        )
    if vendor == "GenuineIntel":
        return "torch CPU matmuls: MKL's own path (an Intel CPU: its widest instructions)"
    return (
        f"torch CPU matmuls: MKL's generic path (CPU vendor {vendor or 'not Intel'}); "
        f"{OPT_IN}=intel is faster here, not bit-identical (docs/install.md)"
    )
