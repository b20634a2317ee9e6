"""Where and with what a run was made: the git state of the code (read once per process),
package versions, Python, platform, the host (CPU, its vector instructions, thread counts),
device and start time; and what picks the kernels inside the process (`kernels`).

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
from sweeps.platform.mkl import path_of as mkl_path_of

# The x86 vector extensions that decide which kernels the math libraries dispatch to (on
# other processors none is listed and the CPU's name says it).
SIMD_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile")


def provenance(device: str = "") -> dict:
    """Where and with what a run was made: commit, dirty flag, versions, host, device, time,
    and `kernels()`: what the frameworks this process has imported picked."""
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
        "kernels": kernels(),
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
    preloaded library (LD_PRELOAD), if any. `cpu_id` (x86: family, model and stepping) tells
    apart processors that virtual machines name alike ("Intel(R) Xeon(R) Processor" on two
    generations that gave different bits in docs/cpu-width's reruns)."""
    flags: set[str] = set()
    ident: dict[str, str] = {}
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("cpu family", "model", "stepping") and key not in ident:
                    ident[key] = value.strip()
                if key == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    cpu_id = " ".join(f"{k} {ident[k]}" for k in ("cpu family", "model", "stepping") if k in ident)
    return {
        "cpu": host_cpu_name(),
        **({"cpu_id": cpu_id} if cpu_id else {}),
        "simd": [flag for flag in SIMD_FLAGS if flag in flags],
        "cpus": os.cpu_count(),
        "threads": {var: environ[var] for var in THREAD_VARS if var in environ},
        # a BLAS preloaded into the process (OpenBLAS for MLX on Linux) computes torch's
        # matmuls too: other bits
        **({"preload": environ["LD_PRELOAD"]} if environ.get("LD_PRELOAD") else {}),
    }


def kernels(modules=sys.modules) -> dict:
    """What picks the kernels inside this process, per framework it has imported already
    (nothing is imported here: a qkmlx run does not load torch to describe it). torch:
    - "threads": torch.get_num_threads(), the intra-op threads its CPU kernels split work into
    - "cpu_capability": the vector instruction set ATen's CPU kernels dispatch to ("AVX2",
      "AVX512", "DEFAULT"...; ATEN_CPU_CAPABILITY can lower it below what the CPU has)
    - "mkldnn", "mkl": whether this torch build has oneDNN and MKL (other kernels if not)
    - "mkl_path": the branch MKL dispatches fp32 matmuls to ("AVX2", "AVX-512", "generic" on
      a non-Intel CPU unless QKNORM_MKL_PATH=intel; sweeps.platform.mkl), x86 Linux only
    A field this torch cannot tell is left out. MLX and numpy add nothing beyond their
    versions: MLX's CPU matmuls follow the BLAS it loads (host's "preload"), and numpy does not
    compute a training step."""
    made: dict = {}
    torch = modules.get("torch")
    if torch is not None:
        made["torch"] = _torch_kernels(torch)
    return made


def _torch_kernels(torch) -> dict:
    backends = getattr(torch, "backends", None)
    reads = {
        "threads": lambda: int(torch.get_num_threads()),
        "cpu_capability": lambda: str(backends.cpu.get_cpu_capability()),
        "mkldnn": lambda: bool(backends.mkldnn.is_available()),
        "mkl": lambda: bool(backends.mkl.is_available()),
        "mkl_path": lambda: mkl_path_of(torch),
    }
    made = {}
    for key, read in reads.items():
        try:
            value = read()
        except Exception:  # an older or partly loaded torch: this field is not known
            continue
        if value is not None:
            made[key] = value
    return made


def identity_expected(prov_a: dict, prov_b: dict) -> tuple[str, str]:
    """Whether two runs of one config and seed should end bit-identical, by their provenance:
    ("expected", "") when both record the same CPU name and SIMD flags, thread variables (and,
    when any of them is unset, the CPU count the libraries then default to), preloaded library,
    torch, mlx and numpy versions, device and, where both record them, kernels() fields;
    ("not expected", "FIELD: A's vs B's") naming the first difference, e.g. "cpu: AMD X vs
    Intel Y"; ("unknown", "host not recorded") when either lacks the host. A run another
    process went on with (`continued`) holds for each of its processes: every one is compared
    with every one of the other run's. Commit, time, Python and platform are not compared."""
    records_a, records_b = _records(prov_a), _records(prov_b)
    if not all(isinstance(r.get("host"), dict) and r["host"] for r, _ in records_a + records_b):
        return "unknown", "host not recorded"
    for a, step_a in records_a:
        for b, step_b in records_b:
            found = _difference(a, b)
            if found:
                went_on = [
                    f"{side} went on from step {step} in another process"
                    for side, step in (("A", step_a), ("B", step_b))
                    if step is not None
                ]
                return "not expected", found + (f" ({'; '.join(went_on)})" if went_on else "")
    return "expected", ""


def _records(prov: dict | None) -> list[tuple[dict, int | None]]:
    """A run's own provenance and each continuing process's, with the step it went on from."""
    prov = prov if isinstance(prov, dict) else {}
    went_on = [c for c in prov.get("continued") or [] if isinstance(c, dict)]
    return [(prov, None), *((c, c.get("from_step")) for c in went_on)]


def _difference(a: dict, b: dict) -> str:
    """The first field that decides the bits and differs, as "FIELD: A's vs B's"; "" if none."""
    ha, hb = a["host"], b["host"]
    fields = [
        ("cpu", ha.get("cpu"), hb.get("cpu")),
        *(  # recorded on both sides only (runs before it have none)
            [("cpu_id", ha["cpu_id"], hb["cpu_id"])] if "cpu_id" in ha and "cpu_id" in hb else []
        ),
        ("simd", ha.get("simd") or [], hb.get("simd") or []),
        ("threads", ha.get("threads") or {}, hb.get("threads") or {}),
    ]
    if not set(THREAD_VARS) <= set(ha.get("threads") or {}):  # some library's default count
        fields.append(("cpus", ha.get("cpus"), hb.get("cpus")))
    fields.append(("preload", ha.get("preload"), hb.get("preload")))
    va, vb = a.get("versions") or {}, b.get("versions") or {}
    fields += [(f"{p} version", va.get(p), vb.get(p)) for p in ("torch", "mlx", "numpy")]
    fields.append(("device", a.get("device") or None, b.get("device") or None))
    ka, kb = a.get("kernels") or {}, b.get("kernels") or {}
    for framework in [f for f in ka if f in kb]:  # recorded on both sides only
        fa, fb = ka[framework] or {}, kb[framework] or {}
        fields += [(f"{framework} {k}", fa[k], fb[k]) for k in fa if k in fb]
    for name, x, y in fields:
        if x != y:
            return f"{name}: {_said(x)} vs {_said(y)}"
    return ""


def _said(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "default"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


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
