"""MKL's matmul path for torch on x86 Linux (sweeps.platform.mkl): the opt-in, its library,
what a run records and what `train` says."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.core.errors import HarnessError
from sweeps.platform import mkl

ON_X86_LINUX = mkl.applies()


def cpuinfo(tmp_path, vendor: str) -> str:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: fpu avx2\n")
    return str(path)


def test_the_opt_in_takes_intel_or_default_and_refuses_anything_else_naming_the_fix():
    assert mkl.requested({}) == "default"
    assert mkl.requested({mkl.OPT_IN: " Intel "}) == "intel"
    assert mkl.requested({mkl.OPT_IN: "default"}) == "default"
    with pytest.raises(HarnessError, match="set it to 'intel'.*or unset it"):
        mkl.requested({mkl.OPT_IN: "fast"})


def test_mkl_computes_torchs_matmuls_only_on_x86_64_linux():
    assert mkl.applies("x86_64", "linux")
    assert not mkl.applies("arm64", "darwin")
    assert not mkl.applies("aarch64", "linux")
    assert not mkl.applies("x86_64", "darwin")


def test_the_line_names_the_path_the_vendor_decides_and_the_opt_in(tmp_path, monkeypatch):
    monkeypatch.setattr(mkl, "applies", lambda: True)
    amd = mkl.describe({}, cpuinfo(tmp_path, "AuthenticAMD"))
    assert "generic path" in amd and "AuthenticAMD" in amd and "QKNORM_MKL_PATH=intel" in amd
    assert "not bit-identical" in amd
    intel = mkl.describe({}, cpuinfo(tmp_path, "GenuineIntel"))
    assert "own path" in intel and mkl.OPT_IN not in intel
    chosen = mkl.describe({mkl.OPT_IN: "intel"}, cpuinfo(tmp_path, "AuthenticAMD"))
    assert "Intel path" in chosen and "not bit-identical" in chosen
    monkeypatch.setattr(mkl, "applies", lambda: False)
    assert mkl.describe({}, cpuinfo(tmp_path, "AuthenticAMD")) is None


def test_only_commands_that_run_torch_math_are_re_executed():
    assert mkl.runs_torch(["train", "--preset", "smoke"])
    assert mkl.runs_torch(["--quiet", "sweep", "smoke"])
    assert not mkl.runs_torch(["sweep", "--help"])
    assert not mkl.runs_torch(["figures", "smoke"])
    assert not mkl.runs_torch(["status", "smoke"])


def test_the_default_path_preloads_nothing():
    assert mkl.preload_env({}) == {}
    assert mkl.preload_env({mkl.OPT_IN: "default", "LD_PRELOAD": "x.so"}) == {}


def test_a_missing_compiler_is_one_clear_error_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, **kw: None)
    env = {"XDG_CACHE_HOME": str(tmp_path), "CC": ""}
    with pytest.raises(HarnessError, match="needs a C compiler.*unset QKNORM_MKL_PATH"):
        mkl.build_shim(env)
    assert not any(tmp_path.rglob("*.so"))


@pytest.mark.slow
@pytest.mark.skipif(not ON_X86_LINUX or not shutil.which("cc"), reason="x86 Linux with cc")
def test_the_opt_in_library_moves_mkl_off_its_generic_path_and_the_run_records_it(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.backends.mkl.is_available():
        pytest.skip("this torch has no MKL")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), mkl.OPT_IN: "intel"}
    env.pop("LD_PRELOAD", None)
    extra = mkl.preload_env(env)
    library = Path(extra["LD_PRELOAD"])
    assert library.is_file() and library.parent == tmp_path / "qknorm-study"
    assert mkl.preload_env({**env, "LD_PRELOAD": str(library)}) == {}  # already loaded
    code = (
        "import torch; from sweeps.platform.provenance import kernels; "
        "print(kernels()['torch']['mkl_path'])"
    )
    plain = {k: v for k, v in env.items() if k != mkl.OPT_IN}
    default = subprocess.run(
        [sys.executable, "-c", code], env=plain, capture_output=True, text=True
    )
    forced = subprocess.run(
        [sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True
    )
    assert default.returncode == 0 and forced.returncode == 0, default.stderr + forced.stderr
    forced_path = forced.stdout.strip()
    assert forced_path in ("AVX2", "AVX-512", "AVX-512 (VNNI)") or forced_path.startswith("branch")
    if mkl.cpu_vendor() != "GenuineIntel":
        assert default.stdout.strip() == "generic"  # what the opt-in is for


def test_a_bad_opt_in_stops_qktorch_with_one_line_and_exit_2(tmp_path):
    program = shutil.which("qktorch", path=str(Path(sys.executable).parent))
    if program is None:
        pytest.skip("qktorch is not installed in this environment")
    env = {**os.environ, mkl.OPT_IN: "fastest"}
    env.pop(mkl.GUARD, None)
    done = subprocess.run(
        [program, "train", "--preset", "smoke", "--out", str(tmp_path / "run")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "QKNORM_MKL_PATH='fastest'" in done.stderr
    assert not (tmp_path / "run").exists()


def test_the_note_is_only_for_torch_on_the_cpu(monkeypatch):
    from sweeps import cli

    monkeypatch.setattr(mkl, "describe", lambda: "torch CPU matmuls: ...")
    assert cli.cpu_kernels_note("torch", "cpu") == "torch CPU matmuls: ..."
    assert cli.cpu_kernels_note("torch", "cuda") is None
    assert cli.cpu_kernels_note("mlx", "cpu") is None


def test_a_torch_sweep_on_the_cpu_names_the_path_in_its_executor_line(monkeypatch):
    from sweeps.run.backends import Execution
    from sweeps.sweep.executors import LocalExecutor

    monkeypatch.setattr(mkl, "describe", lambda: "torch CPU matmuls: MKL's generic path")
    pool = LocalExecutor.__new__(LocalExecutor)  # the line only, no worker processes
    pool.capacity, pool.envs = 2, [{"OMP_NUM_THREADS": "1"}]
    for backend, gpus, named in (("torch", [], True), ("mlx", [], False), ("torch", ["0"], False)):
        pool.execution, pool.gpus = Execution(backend, "cpu"), gpus
        assert ("MKL's generic path" in pool.describe()) is named, (backend, gpus)
