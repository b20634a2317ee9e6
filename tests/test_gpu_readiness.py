"""What the first GPU or Mac run needs, checked on a CPU (issue 22): compiled steps CUDA graphs
can capture, no asynchronous copies from pageable memory, the device pick and its warning,
the GPU memory check, sticky CUDA errors, the deterministic mode, the GPU check script."""

import os
from pathlib import Path

import numpy as np
import pytest

from crosscheck.tolerances import TOLERANCES
from sweeps.core.schedule import lr_at
from sweeps.data import batch_starts
from sweeps.run.backends import Execution
from tests.conftest import smoke_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the compiled step: static parameter inputs, as CUDA graphs need -------------------------
def torch_steps(trainer, steps: int = 6) -> np.ndarray:
    cfg = trainer.cfg
    tokens = np.random.default_rng(3).integers(0, cfg.vocab_size, 20000).astype(np.uint16)
    trainer.set_train_tokens(tokens)
    B, T = cfg.train.batch_size, cfg.model.block_size
    return trainer.read(
        [
            trainer.train_step(batch_starts(len(tokens), 0, i, B, T), lr_at(i, cfg.train))
            for i in range(steps)
        ]
    )


@pytest.mark.slow
def test_the_compiled_torch_step_mutates_only_static_inputs(monkeypatch):
    """Inductor records a CUDA graph only when every input the graph mutates is static (a
    parameter or a marked buffer, cudagraph_utils.check_for_mutation_ignore_cuda_graph_managed_
    tensor). With the parameters aliasing the optimizer's flat buffer, AOTAutograd merged them
    into one synthetic input and no input was static (issue 22: static_input_idxs=[]). The
    same check, on the CPU, through a backend that records what inductor is given."""
    import torch
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    from qktorch.train import Trainer

    seen = []

    def inner(gm, example_inputs, **kwargs):
        meta = torch._guards.TracingContext.try_get().fw_metadata
        mutated = {i for i, info in enumerate(meta.input_info) if info.mutates_data}
        seen.append((set(kwargs.get("static_input_idxs", ())), mutated))
        return compile_fx_inner(gm, example_inputs, **kwargs)

    real_compile = torch.compile
    monkeypatch.setattr(
        torch,
        "compile",
        lambda step, mode=None, dynamic=None: real_compile(
            step,
            dynamic=dynamic,
            backend=lambda gm, inputs: compile_fx(gm, inputs, inner_compile=inner),
        ),
    )
    cfg = smoke_config("torch", "model.qk_norm=rms", "train.lr=1e-2")
    # A cached graph would skip inductor, and with it the recording. The configs' own patch()
    # (monkeypatch's undo left torch's config modules without the attribute for later tests).
    with (
        torch._inductor.config.patch(fx_graph_cache=False),
        torch._functorch.config.patch(enable_autograd_cache=False),
    ):
        compiled_trainer = Trainer(cfg, device="cpu", compile=True)
        compiled = torch_steps(compiled_trainer)
    eager_trainer = Trainer(cfg, device="cpu")
    eager = torch_steps(eager_trainer)
    ((static, mutated),) = seen  # one graph
    n_params = len(compiled_trainer.params)
    assert len(mutated) >= n_params + 2  # the parameters, m and v at least
    assert mutated <= static
    # Inductor fuses the forward and backward, which moves float32 roundings (it did so before
    # this change too): crosscheck's tolerance, not bit equality, between compiled and eager.
    rel = np.abs(compiled - eager) / np.abs(eager)
    assert rel[:, 0].max() <= TOLERANCES["train_loss"].rel
    assert rel[:, 1].max() <= TOLERANCES["train_grad_norm"].rel
    eager_params = eager_trainer.get_params()  # 6 steps at LR ~1e-2: each moved ~1e-2
    for name, p in compiled_trainer.get_params().items():
        np.testing.assert_allclose(p, eager_params[name], rtol=0, atol=1e-4, err_msg=name)


# -- copies from the host: asynchronous only where it is safe --------------------------------
@pytest.mark.parametrize("device, asynchronous", [("cuda", True), ("cpu", False), ("mps", False)])
def test_only_cuda_copies_without_waiting_and_only_from_pinned_memory(device, asynchronous):
    from qktorch.optim import to_device
    from sweeps.platform.devices import async_copy

    assert async_copy(device) is asynchronous

    class Host:  # records what to_device asks of a host tensor
        def __init__(self, pinned=False):
            self.pinned, self.calls = pinned, []

        def pin_memory(self):
            return Host(pinned=True)

        def to(self, where, non_blocking=False):
            self.calls.append((where, non_blocking, self.pinned))
            return self

    copied = to_device(Host(), device)
    assert copied.calls == [(device, asynchronous, asynchronous)]  # async only when pinned


def test_the_trainers_copies_on_the_cpu_are_plain_and_exact():
    import torch

    from qktorch.optim import to_device
    from qktorch.train import Trainer

    host = torch.arange(5, dtype=torch.float32)
    assert torch.equal(to_device(host, "cpu"), host)
    trainer = Trainer(smoke_config("torch"), device="cpu")
    assert trainer.tensor(np.array([3, 1, 2])).tolist() == [3, 1, 2]
    lr = trainer.optimizer.lr_tensor(1e-3)
    assert lr.dtype == torch.float32 and lr[0].item() == np.float32(1e-3)


# -- the device pick both trainers share -------------------------------------------------------
NVIDIA_SMI_L = """GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-aaaa)
  MIG 3g.40gb     Device  0: (UUID: MIG-bbbb)
  MIG 3g.40gb     Device  1: (UUID: MIG-cccc)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-dddd)
  MIG 7g.80gb     Device  0: (UUID: MIG-eeee)
"""


def fake_nvidia_smi(monkeypatch, listing: str = NVIDIA_SMI_L, query: str = ""):
    """nvidia-smi on PATH, answering -L with listing and --query-gpu with query."""
    import subprocess

    from sweeps.platform import devices

    def run(args, **kwargs):
        out = listing if args[1] == "-L" else query
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr="")

    monkeypatch.setattr(devices.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(devices.subprocess, "run", run)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_visible_gpus_numbers_gpu_lines_by_their_own_index_not_mig_lines(monkeypatch):
    from sweeps.platform.devices import listed_gpus, visible_gpus

    fake_nvidia_smi(monkeypatch)
    assert listed_gpus() == ["0", "1"] and visible_gpus() == ["0", "1"]
    fake_nvidia_smi(monkeypatch, "GPU 0: A (UUID: x)\nGPU 3: B (UUID: y)\n")
    assert visible_gpus() == ["0", "3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert visible_gpus() == ["1"]


def test_pick_device_refuses_unknown_and_absent_devices_and_orders_auto(monkeypatch):
    from sweeps.core.errors import HarnessError
    from sweeps.platform import devices

    monkeypatch.setattr(devices, "listed_gpus", list)
    everything = {"cpu": True, "cuda": True, "mps": True}
    assert devices.pick_device("torch", "auto", everything, "") == "cuda"
    assert devices.pick_device("torch", "auto", {"cpu": True, "mps": True}, "") == "mps"
    assert devices.pick_device("mlx", "auto", {"cpu": True, "gpu": True}, "") == "gpu"
    assert devices.pick_device("torch", "cpu", everything, "") == "cpu"
    with pytest.raises(
        HarnessError, match="unknown device 'gpu' for qktorch; choose one of: auto, cpu, cuda, mps"
    ):
        devices.pick_device("torch", "gpu", everything, "")
    with pytest.raises(HarnessError, match="^device 'cuda' is not available here; use"):
        devices.pick_device("torch", "cuda", {"cpu": True}, "hint")


@pytest.mark.parametrize("backend", ["torch", "mlx"])
def test_auto_warns_once_when_a_gpu_is_present_that_the_framework_cannot_use(
    backend, monkeypatch, capsys
):
    """On this CPU machine each framework sees no GPU; a fake nvidia-smi lists one."""
    from sweeps.core.errors import HarnessError
    from sweeps.platform import devices

    train = __import__(f"qk{backend}.train", fromlist=["pick_device"])
    monkeypatch.setattr(devices, "_warned", set())
    assert train.pick_device("auto") == "cpu"
    assert capsys.readouterr().err == ""  # no nvidia-smi here: nothing to say
    fake_nvidia_smi(monkeypatch)
    assert train.pick_device("auto") == "cpu" and train.pick_device("auto") == "cpu"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1  # once per process
    assert err[0].startswith(f"qk{backend}: an NVIDIA GPU is present (nvidia-smi) but ")
    assert err[0].endswith("; training on the CPU")
    assert (
        "torch wheel for the driver's CUDA version"
        if backend == "torch"
        else "pip install -e '.[cuda]'"
    ) in err[0]
    gpu = "cuda" if backend == "torch" else "gpu"
    with pytest.raises(
        HarnessError, match=f"device '{gpu}' is not available here: a GPU is present"
    ):
        train.pick_device(gpu)


# -- GPU memory: the device's free memory, split between the workers sharing it ---------------
def test_check_fits_device_splits_the_gpu_between_the_runs_sharing_it(monkeypatch):
    from sweeps.core.errors import ConfigError
    from sweeps.core.params import RUNS_PER_GPU, check_fits_device, state_bytes

    cfg = smoke_config("torch")
    need = state_bytes(cfg)
    check_fits_device(cfg, None)  # the host's memory: nothing more to check
    check_fits_device(cfg, (need, 4 * need))
    with pytest.raises(ConfigError, match="more than the .* of GPU memory free; shrink"):
        check_fits_device(cfg, (need - 1, 4 * need))
    monkeypatch.setenv(RUNS_PER_GPU, "4")  # four workers on this GPU: a quarter each
    check_fits_device(cfg, (4 * need, 4 * need))
    with pytest.raises(ConfigError, match="GPU memory one of 4 runs sharing the GPU may use"):
        check_fits_device(cfg, (4 * need, 4 * need - 4))
    with pytest.raises(ConfigError):  # a quarter of the total, but less is free now
        check_fits_device(cfg, (need - 1, 8 * need))


def test_each_backend_asks_its_gpu_for_free_and_total_memory(monkeypatch):
    import mlx.core as mx
    import torch

    import qkmlx.train
    import qktorch.train

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (3 << 30, 80 << 30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: 1 << 30)  # reusable here
    assert qktorch.train.device_memory("cuda") == (4 << 30, 80 << 30)
    assert qktorch.train.device_memory("cpu") is None
    assert qktorch.train.device_memory("mps") is None  # unified: the host's memory
    assert qkmlx.train.device_memory("cpu") is None
    assert qkmlx.train.device_memory("gpu") is None  # no CUDA backend here
    monkeypatch.setattr(mx.cuda, "is_available", lambda: True)
    monkeypatch.setattr(qkmlx.train, "gpu_info", lambda: {"memory_size": 80 << 30})
    monkeypatch.setattr(mx, "get_active_memory", lambda: 1 << 30)
    assert qkmlx.train.device_memory("gpu") == (79 << 30, 80 << 30)


def test_a_local_pool_counts_its_workers_per_gpu_and_checks_nvidia_smis_free_memory(monkeypatch):
    from sweeps.core.errors import ConfigError
    from sweeps.core.params import RUNS_PER_GPU, state_bytes
    from sweeps.platform.devices import gpu_free_memory
    from sweeps.sweep.executors import check_gpus_fit
    from sweeps.sweep.workers import worker_envs

    envs = worker_envs(3, ["3", "5"], 16, {})
    assert [(e["CUDA_VISIBLE_DEVICES"], e[RUNS_PER_GPU]) for e in envs] == [
        ("3", "2"),
        ("5", "1"),
        ("3", "2"),
    ]
    cfg = smoke_config("torch")
    need = state_bytes(cfg)
    mib = -(-need // 2**20)  # nvidia-smi speaks MiB
    fake_nvidia_smi(monkeypatch, query=f"0, {4 * mib}\n1, {2 * mib}\n")
    assert gpu_free_memory(["0", "1"]) == 2 * mib * 2**20
    assert gpu_free_memory(["7"]) is None  # not a GPU nvidia-smi knows
    check_gpus_fit([cfg], 4, "torch", "cuda")  # 2 per GPU: 1 need each on GPU 1
    with pytest.raises(ConfigError, match="one of 3 runs sharing the GPU"):
        check_gpus_fit([cfg], 6, "torch", "cuda")  # 3 per GPU
    check_gpus_fit([cfg], 6, "torch", "cpu")  # no GPU: the host's memory, checked elsewhere


# -- a CUDA error breaks its worker's process: the worker is replaced ---------------------------
def test_breaks_device_knows_sticky_cuda_errors():
    from sweeps.core.errors import breaks_device

    class AcceleratorError(RuntimeError):
        pass

    assert breaks_device(AcceleratorError("anything"))
    assert breaks_device(RuntimeError("CUDA error: device-side assert triggered"))
    assert breaks_device(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not breaks_device(RuntimeError("shapes do not match"))
    assert not breaks_device(FileNotFoundError("metrics.jsonl"))


STICKY = """
import os

import sweeps.run.loop as loop

real, broken = loop.train_run, []


class AcceleratorError(RuntimeError):
    pass


def train_run(cfg, run_dir, make_trainer, **kwargs):
    # like a real broken CUDA context: once broken, every later run of this process fails
    if broken or cfg.train.lr == float(os.environ["FAKE_CUDA_ERROR_AT_LR"]):
        broken.append(True)
        raise AcceleratorError("CUDA error: an illegal memory access was encountered")
    return real(cfg, run_dir, make_trainer, **kwargs)


loop.train_run = train_run
"""


@pytest.mark.slow
def test_a_worker_that_hits_a_cuda_error_is_replaced_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """One worker, three runs: the first hits a (simulated) sticky CUDA error. Reused, the
    worker would fail the two after it too; replaced, they train."""
    import os

    from sweeps.run.rundir import RunDir
    from sweeps.sweep.executors import LocalExecutor

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(STICKY)  # loaded by the spawned workers
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(
            [
                str(hook),
                os.environ.get("PYTHONPATH", ""),
                str(Path(__file__).resolve().parent.parent),
            ]
        ),
    )
    monkeypatch.setenv("FAKE_CUDA_ERROR_AT_LR", "0.002")
    fast = [
        "train.max_steps=12",
        "train.warmup_steps=2",
        "train.eval_interval=6",
        "train.checkpoint_interval=4",
    ]  # tests/test_sweeps.py's FAST
    configs = [smoke_config("torch", f"train.lr={lr}", *fast) for lr in (2e-3, 3e-3, 4e-3)]
    executor = LocalExecutor(1, Execution("torch", "cpu"))
    results = {}
    try:
        for cfg in configs:
            executor.submit(cfg.run_id, str(tmp_path / cfg.run_id), cfg.to_dict())
            while cfg.run_id not in results:
                results.update(executor.wait(5.0))
    finally:
        executor.close()
    first, *others = (results[c.run_id] for c in configs)
    assert [r["status"] for r in others] == ["ok", "ok"]  # "failed" in a reused worker
    assert first["status"] == "failed" and first["worker_exits"]
    assert "AcceleratorError: CUDA error: an illegal memory access" in first["error"]
    assert RunDir(tmp_path / configs[0].run_id).read_summary()["status"] == "failed"


# -- the deterministic mode ---------------------------------------------------------------------
@pytest.fixture
def deterministic_flags_restored():
    import torch

    cuda = torch.backends.cuda
    before = (
        torch.are_deterministic_algorithms_enabled(),
        cuda.flash_sdp_enabled(),
        cuda.mem_efficient_sdp_enabled(),
        cuda.cudnn_sdp_enabled(),
    )
    yield
    torch.use_deterministic_algorithms(before[0])
    for enable, on in zip(
        (cuda.enable_flash_sdp, cuda.enable_mem_efficient_sdp, cuda.enable_cudnn_sdp), before[1:]
    ):
        enable(on)


def test_deterministic_sets_the_flags_and_changes_no_cpu_result(
    monkeypatch, deterministic_flags_restored
):
    import os

    import torch
    from click.testing import CliRunner

    from qktorch.train import Trainer
    from sweeps.cli import make_cli
    from sweeps.platform.devices import DETERMINISTIC, deterministic_mode

    cfg = smoke_config("torch", "model.qk_norm=rms")
    plain = torch_steps(Trainer(cfg, device="cpu"), steps=3)
    assert not torch.are_deterministic_algorithms_enabled()
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setenv(DETERMINISTIC, "1")  # what --deterministic sets
    deterministic = torch_steps(Trainer(cfg, device="cpu"), steps=3)
    assert torch.are_deterministic_algorithms_enabled()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    # on the CPU the SDPA flags stay as they were (they also pick the CPU's kernel)
    assert torch.backends.cuda.flash_sdp_enabled()
    np.testing.assert_array_equal(deterministic, plain)
    from qktorch.train import make_deterministic

    make_deterministic("cuda")  # the flags are process-wide: set without a GPU as with one
    assert not torch.backends.cuda.flash_sdp_enabled()
    assert not torch.backends.cuda.mem_efficient_sdp_enabled()
    monkeypatch.delenv(DETERMINISTIC)
    assert not deterministic_mode()
    result = CliRunner().invoke(
        make_cli("torch"), ["train", "--deterministic", "--set", "train.lr=-1"]
    )
    assert result.exit_code == 2  # the bad LR, after the options were read
    assert deterministic_mode()  # the flag sets it for this process and its workers


def test_qkmlx_refuses_deterministic_on_a_gpu():
    from qkmlx.train import make_deterministic
    from sweeps.core.errors import HarnessError

    make_deterministic("cpu")  # its CPU runs are bit-identical already
    with pytest.raises(HarnessError, match="MLX has no deterministic mode"):
        make_deterministic("gpu")


# -- MLX: TF32 is read once per process; MLX may be missing -------------------------------------
def test_mlx_tf32_is_set_once_per_process_and_a_change_is_refused(monkeypatch):
    import os

    import qkmlx.train
    from sweeps.core.errors import HarnessError

    monkeypatch.setattr(qkmlx.train, "_tf32", [])  # a fresh process
    monkeypatch.setenv("MLX_ENABLE_TF32", "1")
    qkmlx.train.set_tf32(False)
    assert os.environ["MLX_ENABLE_TF32"] == "0"
    qkmlx.train.set_tf32(False)  # the same again is fine
    with pytest.raises(HarnessError, match="--tf32 is off for MLX in this process already"):
        qkmlx.train.set_tf32(True)


def test_without_mlx_qkmlx_says_what_to_install_and_qktorch_still_works(monkeypatch, tmp_path):
    import importlib.util

    from click.testing import CliRunner

    from sweeps.cli import make_cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.startswith("mlx") else real(name, *a),
    )
    result = CliRunner().invoke(
        make_cli("mlx"), ["train", "--preset", "smoke", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert (
        lines[-1].startswith(
            "Error: qkmlx needs mlx, which is not installed here: pip install -e '.[cpu]'"
        )
        and "'.[cuda]'" in lines[-1]
    )
    assert "Traceback" not in result.output and not (tmp_path / "run").exists()
    from sweeps.run.backends import check_device

    check_device("torch", "cpu")  # qktorch does not need MLX


# -- sweep --estimate before a sweep: the probe in a child process --------------------------------
@pytest.mark.slow
def test_an_estimate_before_a_sweep_probes_in_a_child_process(tmp_path):
    import subprocess
    import sys

    code = f"""
import sys
from sweeps.run.backends import Execution
from sweeps.sweep.estimate import estimate_sweep
from sweeps.sweep.runner import Sweep
from sweeps.sweep.spec import load_spec
sweep = Sweep(load_spec("smoke"), "torch", ["data.builtin_stories=300"], {str(tmp_path)!r})
result = estimate_sweep(sweep, Execution("torch", "cpu"), seconds=0.2, echo=lambda line: None,
                        apart=True, workers=2)
print(result["runs"], sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "qktorch")))
print(result["threads"])
"""
    from sweeps.platform.blas import THREAD_VARS
    from sweeps.sweep.estimate import usable_cpus

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "36 []"  # measured, and no torch in this process
    # the probe computed with the threads of one of the sweep's 2 workers
    assert out.stdout.split("\n")[1] == str(max(1, usable_cpus() // 2))


# -- the GPU check script, on the CPU --------------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_throughput_prints_each_row_as_measured_and_the_table_to_a_summary(tmp_path):
    import subprocess
    import sys

    summary = tmp_path / "tables"
    out = subprocess.run(
        [
            sys.executable,
            "benchmarks/throughput.py",
            "--preset",
            "smoke",
            "--backends",
            "torch",
            "--threads",
            "1",
            "--steps",
            "1",
            "--rounds",
            "2",
            "--warmup",
            "1",
            "--workers",
            "1,2",
            "--summary",
            str(summary),
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("round ")]
    table = next(i for i, line in enumerate(lines) if line.startswith("case "))
    assert lines[0].startswith("throughput: preset smoke") and "ready: qktorch" in lines[1]
    assert len(rows) == 4 and max(rows) < table  # qktorch and qktorch x2, each round
    assert "round 2/2: qktorch x2" in lines[max(rows)] and "aggregate" in lines[max(rows)]
    written = summary.read_text()
    assert "case " in written and "2 worker(s):" in written and "round " not in written


@pytest.mark.slow
def test_gpu_check_needs_only_python3_and_ends_with_its_summary(tmp_path):
    """The script's skeleton in seconds: python3 only on PATH (no `python`), the environment
    section, then a budget too small for the rest, which is skipped and listed."""
    import os
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "DEVICE": "cpu",
        "BUDGET_S": "25",
        "OUT": str(tmp_path),
    }
    env.pop("PYTHON", None)
    out = subprocess.run(
        ["bash", "benchmarks/gpu_check.sh"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert f"python {sys.version.split()[0]} {sys.executable}" in text
    assert "torch " in text and "== summary (" in text
    summary = text[text.index("== summary (") :].splitlines()
    assert summary[1].split()[:2] == ["environment", "ok"]
    assert [line.split()[0] for line in summary[2:10]] == [
        "compiled",
        "crosscheck",
        "fused",
        "sweep",
        "estimate",
        "throughput",
        "throughput",
        "crosscheck",
    ]
    assert all("skipped" in line for line in summary[2:10])
    assert (tmp_path / "gpu_check.log").read_text().rstrip().endswith(summary[-1])
