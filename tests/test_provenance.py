"""What each run records about where and with what it was made (sweeps/platform/provenance.py),
and the sweep's warning when that record could not name the code."""

from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.platform.provenance import checkout, host
from sweeps.sweep.runner import dirty_checkout


def test_provenance_names_the_host_cpu_its_vector_extensions_and_thread_counts(tmp_path):
    """A CPU run is bit-identical only on the same processor kind with the same threads, so
    each run records them: the SIMD_FLAGS the CPU has (in their order) and the thread
    variables as set, nothing else."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx2 avx ht\n")
    made = host({"OMP_NUM_THREADS": "1", "HOME": "/x"}, str(cpuinfo))
    assert made["simd"] == ["avx", "avx2", "avx512f"]
    assert made["threads"] == {"OMP_NUM_THREADS": "1"} and made["cpu"]
    assert host({}, str(tmp_path / "absent"))["simd"] == []  # not Linux: the name says it


def test_a_dirty_checkout_is_a_one_line_warning_and_a_clean_one_says_nothing():
    assert dirty_checkout(("0123456789abcdef", False)) == []
    assert dirty_checkout((None, None)) == []  # not a git checkout: nothing to name
    (line,) = dirty_checkout(("0123456789abcdef", True))
    assert "on 0123456" in line and "git_dirty true" in line and "clean clone" in line


def test_the_sweep_plan_warns_exactly_when_this_checkout_is_dirty(tmp_path):
    args = ["sweep", "--preset", "smoke", "--grid", "train.lr=0.01,0.1", "--name", "p"]
    args += ["--runs-dir", str(tmp_path), "--dry-run"]
    shown = CliRunner().invoke(make_cli("torch"), args)
    assert shown.exit_code == 0, shown.output
    warned = "warning: uncommitted changes to tracked files" in shown.output
    assert warned == bool(checkout()[1]), shown.output
