"""What each run records about where and with what it was made (sweeps/platform/provenance.py),
and the sweep's warning when that record could not name the code."""

from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.platform.provenance import checkout, host
from sweeps.sweep.plan_text import dirty_checkout


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
    assert "preload" not in made  # OpenBLAS preloaded changes torch's bits: named when set
    assert (
        host({"LD_PRELOAD": "/x/libopenblas.so.0"}, str(cpuinfo))["preload"]
        == "/x/libopenblas.so.0"
    )


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


def test_the_report_names_the_hosts_runs_went_on_on(tmp_path):
    """A run resumed (or restarted) by another process trained from there on that process's
    host: the report's provenance says so, and says nothing when no run went on."""
    import json

    import figures_fakes as ff

    from figures.report import make_report

    root = tmp_path / "study"
    ff.write_study(root, depths=[2], seeds=[0, 1])
    text = make_report(root, tmp_path / "before", ()).read_text()
    assert "- Hosts: Test CPU (avx2), 2 CPUs, threads OMP_NUM_THREADS=1" in text
    assert "Resumed or restarted" not in text
    config = sorted(root.glob("*/config.json"))[0]
    doc = json.loads(config.read_text())
    other = {
        "cpu": "Other CPU",
        "simd": ["avx512f"],
        "cpus": 4,
        "threads": {},
        "preload": "/l/b.so",
    }
    doc["provenance"]["continued"] = [{"host": other, "from_step": 400}]
    config.write_text(json.dumps(doc))
    text = make_report(root, tmp_path / "after", ()).read_text()
    assert (
        "- Resumed or restarted by another process (1 time, trained from there on its host): "
        "Other CPU (avx512f), 4 CPUs, threads default, preloaded b.so (1)"
    ) in text
