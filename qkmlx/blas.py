"""Linux CPU speed: MLX's Linux CPU wheel links a reference BLAS that ran a 1024x1024 matmul
about 40x slower than OpenBLAS on a 2-core machine (a small GPT step about 13x slower).

Before mlx is imported, `ensure_fast_blas` re-executes the command once with Debian's
OpenBLAS preloaded (LD_PRELOAD) when that library is installed, and otherwise warns once with
the install command. Results are identical; only speed changes.
"""
import glob
import importlib.util
import os
import sys
from pathlib import Path

GUARD = "QKMLX_BLAS_CHECKED"  # set in the re-executed process so it never loops
OPENBLAS_GLOBS = (
    "/usr/lib/*-linux-gnu/openblas-pthread/libblas.so.3",
    "/usr/lib/*-linux-gnu/libopenblas.so.0",
    "/usr/lib64/libopenblas.so.0",
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


def ensure_fast_blas() -> None:
    if not sys.platform.startswith("linux") or os.environ.get(GUARD):
        return
    os.environ[GUARD] = "1"
    preload = os.environ.get("LD_PRELOAD", "")
    if "blas" in preload or not mlx_uses_reference_blas():
        return
    library = find_openblas()
    if library is None:
        print("qkmlx: MLX is using its slow reference BLAS (CPU training about 13x slower); "
              "install OpenBLAS: sudo apt-get install libopenblas0-pthread", file=sys.stderr)
        return
    print(f"qkmlx: using OpenBLAS ({library}) instead of MLX's reference BLAS", file=sys.stderr)
    env = {**os.environ, "LD_PRELOAD": f"{library}:{preload}" if preload else library}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)
