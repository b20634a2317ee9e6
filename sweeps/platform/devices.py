"""The machines runs train on: which devices each backend accepts, the host CPU's name, the
CUDA devices visible to this process, and the vendors' peak FLOP/s (for MFU)."""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess

# What --device accepts, per backend (each Trainer checks its own availability).
DEVICES = {"mlx": ("auto", "cpu", "gpu"), "torch": ("auto", "cpu", "cuda", "mps")}

# Peak dense (no structured sparsity) FLOP/s by compute type, from the vendors' data sheets.
# float32 is the plain FP32 rate (matmuls without TF32); tf32 applies when --tf32 is on.
# The first pattern that matches the device's name wins, so specific names come first.
PEAK_FLOPS = [
    (r"H200", "NVIDIA H200 (SXM)", {"bfloat16": 989e12, "tf32": 495e12, "float32": 67e12}),
    (r"H100.*PCIe", "NVIDIA H100 PCIe", {"bfloat16": 756e12, "tf32": 378e12, "float32": 51e12}),
    (r"H100", "NVIDIA H100 (SXM)", {"bfloat16": 989e12, "tf32": 495e12, "float32": 67e12}),
    (r"A100", "NVIDIA A100", {"bfloat16": 312e12, "tf32": 156e12, "float32": 19.5e12}),
    (r"\bL4\b", "NVIDIA L4", {"bfloat16": 121e12, "tf32": 60e12, "float32": 30.3e12}),
    # Apple publishes no FLOP/s: 20 GPU cores x 128 FP32 ALUs x 2 (FMA) x ~1.8 GHz, the
    # commonly quoted ~9.2 TFLOP/s; bfloat16 runs at the FP32 rate on these GPUs.
    (r"M4 Pro", "Apple M4 Pro GPU (20-core, approx.)", {"bfloat16": 9.2e12, "float32": 9.2e12}),
]
CPU_DEVICES = ("cpu",)  # no peak for CPUs: the FLOP/s is printed alone


def peak_flops(device: str, device_name: str, dtype: str, tf32: bool = False):
    """(peak FLOP/s, the table's name for the device) or (None, None) when unknown."""
    if device in CPU_DEVICES:
        return None, None
    kind = "tf32" if dtype == "float32" and tf32 else dtype
    for pattern, name, peaks in PEAK_FLOPS:
        if re.search(pattern, device_name or ""):
            return peaks.get(kind, peaks.get("float32")), name
    return None, None


def host_cpu_name() -> str:
    """The host processor's marketing name ("AMD EPYC ...", "Apple M4 Pro"), best effort."""
    try:
        if platform.system() == "Darwin":
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], check=False,
                                  capture_output=True, text=True, timeout=5).stdout.strip()
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or platform.machine()


def visible_gpus() -> list[str]:
    """CUDA devices this process may use: CUDA_VISIBLE_DEVICES, else what nvidia-smi lists."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(out.stdout.splitlines()) if line.startswith("GPU ")]


