"""The machines runs train on: which devices each backend accepts and how `--device` picks
one, the host CPU's name, the NVIDIA GPUs present and visible to this process and their free
memory, when a host-to-device copy may be asynchronous, and the vendors' peak FLOP/s (MFU)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys

from sweeps.core.errors import HarnessError

# What --device accepts, per backend (each Trainer checks its own availability).
DEVICES = {"mlx": ("auto", "cpu", "gpu"), "torch": ("auto", "cpu", "cuda", "mps")}
# What --device auto takes: the first device the backend can use here, in this order.
AUTO_ORDER = {"mlx": ("gpu", "cpu"), "torch": ("cuda", "mps", "cpu")}
_warned: set = set()  # the unusable-GPU warning, once per process and backend


def check_known(backend: str, name: str) -> None:
    """Refuse a --device the backend does not know (HarnessError, exit 2)."""
    if name not in DEVICES[backend]:
        raise HarnessError(
            f"unknown device '{name}' for qk{backend}; choose one of: {', '.join(DEVICES[backend])}"
        )


def pick_device(backend: str, name: str, available: dict, gpu_hint: str) -> str:
    """The device `--device name` means for backend, given which of its devices the framework
    can use here (available, asked by the trainer). auto takes the first of AUTO_ORDER; when
    that is the CPU although nvidia-smi lists a GPU, one line on stderr says so and how to
    fix it (gpu_hint: the backend's install advice). An unknown or unusable device is a
    HarnessError (exit 2)."""
    check_known(backend, name)
    accelerator = any(available.get(d) for d in AUTO_ORDER[backend] if d != "cpu")
    if name == "auto":
        name = next(d for d in AUTO_ORDER[backend] if available.get(d))
        if not accelerator and backend not in _warned and listed_gpus():
            _warned.add(backend)
            print(
                f"qk{backend}: an NVIDIA GPU is present (nvidia-smi) but {gpu_hint}; "
                f"training on the CPU",
                file=sys.stderr,
            )
        return name
    if not available.get(name):
        gpu = name != "mps" and listed_gpus()  # MPS is Apple's: nvidia-smi says nothing of it
        why = f": a GPU is present (nvidia-smi) but {gpu_hint}" if gpu else ""
        raise DeviceUnavailable(name, why)
    return name


class DeviceUnavailable(HarnessError):
    """A device this machine does not have (exit 2). Its fix names `--device`; a command
    whose option is another (crosscheck's --torch-device) says its own with `fix(option)`."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why
        super().__init__(f"device '{name}' is not available here{why}; use --device auto or cpu")

    def fix(self, option: str, choices: str = "cpu") -> str:
        return f"{option} {self.name}: not available here{self.why}; use {option} {choices}"


DETERMINISTIC = "QKNORM_DETERMINISTIC"  # "1": --deterministic, for this process and its workers


def deterministic_mode(environ=os.environ) -> bool:
    """Whether --deterministic was asked for: GPU kernels chosen for bit-identical reruns
    (docs/DESIGN.md, Reproducibility). An environment variable, like the settings it makes
    (CUBLAS_WORKSPACE_CONFIG), so the sweep's worker processes inherit it."""
    return environ.get(DETERMINISTIC) == "1"


def async_copy(device: str) -> bool:
    """Whether a host-to-device copy may run without waiting for it: only to CUDA, and only
    from pinned memory (the caller pins). From pageable memory CUDA copies synchronously
    anyway, and on Apple MPS a non-blocking copy of a host tensor that is then dropped is
    reported to give wrong values; on the CPU there is nothing to copy."""
    return device == "cuda"


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
            return subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                check=False,
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or platform.machine()


def listed_gpus() -> list[str]:
    """The NVIDIA GPUs nvidia-smi lists, by index ([] without nvidia-smi). `nvidia-smi -L`
    prints a `GPU N: ...` line per GPU and, under a GPU split by MIG, indented `MIG ...` lines:
    only the GPU lines count, each by its own index."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "-L"], check=False, capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [m.group(1) for m in re.finditer(r"^GPU (\d+):", out.stdout, re.MULTILINE)]


def visible_gpus() -> list[str]:
    """CUDA devices this process may use: CUDA_VISIBLE_DEVICES, else what nvidia-smi lists."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    return listed_gpus()


def device_kind(backend: str, device: str) -> str:
    """The kind of device `--device` asks for here, named without importing a framework (a
    sweep folder records it, sweeps.sweep.sweepdir): cpu, cuda (an NVIDIA GPU, either
    backend), mps (torch on a Mac) or metal (mlx on a Mac). auto: a visible NVIDIA GPU, else a
    Mac's GPU, else the CPU, as the backends choose when their GPU build is installed (each
    run's summary records the device it trained on)."""
    mac = sys.platform == "darwin"
    if device in ("cpu", "cuda", "mps"):
        return device
    if device == "gpu":
        return "metal" if mac else "cuda"
    if visible_gpus():
        return "cuda"
    if mac:
        return "metal" if backend == "mlx" else "mps"
    return "cpu"


def gpu_free_memory(gpus: list[str]) -> int | None:
    """The least free memory, in bytes, of the GPUs with these nvidia-smi indices, asked of
    nvidia-smi (so this process opens no CUDA context); None when it cannot tell (no
    nvidia-smi, UUIDs or MIG names in CUDA_VISIBLE_DEVICES)."""
    if not gpus or shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.free", "--format=csv,noheader,nounits"],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    free = {}
    for line in out.stdout.splitlines():
        index, _, mib = line.partition(",")
        if index.strip().isdigit() and mib.strip().isdigit():
            free[index.strip()] = int(mib) * 2**20
    if not all(g in free for g in gpus):
        return None
    return min(free[g] for g in gpus)
