"""What each run records about where and with what it was made (sweeps/platform/provenance.py),
and the sweep's warning when that record could not name the code."""

import copy
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.platform.provenance import checkout, host, identity_expected, kernels
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


@pytest.mark.slow
def test_the_report_names_the_hosts_runs_went_on_on(tmp_path):
    """A run resumed (or restarted) by another process trained from there on that process's
    host: the report's provenance says so, and says nothing when no run went on."""
    import json

    import figures_fakes as ff

    from figures.report.assemble import make_report

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


def fake_torch(**backends):
    return SimpleNamespace(get_num_threads=lambda: 3, backends=SimpleNamespace(**backends))


def test_kernels_reads_only_a_torch_already_imported_and_leaves_out_what_it_cannot_tell():
    assert kernels({}) == {}  # no framework loaded: nothing, and nothing imported to say so
    full = fake_torch(
        cpu=SimpleNamespace(get_cpu_capability=lambda: "AVX512"),
        mkldnn=SimpleNamespace(is_available=lambda: True),
        mkl=SimpleNamespace(is_available=lambda: False),
    )
    assert kernels({"torch": full}) == {
        "torch": {"threads": 3, "cpu_capability": "AVX512", "mkldnn": True, "mkl": False}
    }
    old = fake_torch(mkldnn=SimpleNamespace(is_available=lambda: True))  # no backends.cpu, mkl
    assert kernels({"torch": old}) == {"torch": {"threads": 3, "mkldnn": True}}


def test_provenance_imports_no_framework_to_describe_the_kernels():
    code = (
        "import sys; from sweeps.platform.provenance import provenance; p = provenance('cpu'); "
        "assert p['kernels'] == {}, p; "
        "assert not {'torch', 'mlx', 'mlx.core'} & set(sys.modules), 'imported a framework'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_run_directorys_config_records_torchs_kernels_as_json(tmp_path):
    torch = pytest.importorskip("torch")
    from sweeps.core.presets import get_preset
    from sweeps.run.rundir import RunDir

    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_config(get_preset("smoke").with_overrides(["backend=torch"]), "cpu")
    made = json.loads(run.config_path.read_text())["provenance"]
    recorded = made["kernels"]["torch"]
    assert recorded["threads"] == torch.get_num_threads()
    assert recorded["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert (recorded["mkldnn"], recorded["mkl"]) == (
        torch.backends.mkldnn.is_available(),
        torch.backends.mkl.is_available(),
    )
    json.dumps(made, allow_nan=False)  # strict JSON throughout
    assert identity_expected(made, made) == ("expected", "")


HOST = {
    "cpu": "Intel Y",
    "simd": ["avx", "avx2"],
    "cpus": 2,
    "threads": {"MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
}
PROV = {
    "git_commit": "0123456",
    "git_dirty": False,
    "versions": {"torch": "2.13.0+cpu", "mlx": "0.32.4", "numpy": "2.4.6", "tiktoken": "0.14.0"},
    "python": "3.11.7",
    "platform": "Linux-6.18.44-fc-v973-x86_64",
    "host": HOST,
    "kernels": {"torch": {"threads": 1, "cpu_capability": "AVX2", "mkldnn": True, "mkl": True}},
    "device": "cpu",
    "started_at": "2026-12-01T22:50:05+00:00",
}


def changed(path: str, value) -> dict:
    """PROV with the field at the dotted `path` set to `value` (None: removed)."""
    prov = copy.deepcopy(PROV)
    *parents, last = path.split(".")
    at = prov
    for key in parents:
        at = at[key]
    if value is None:
        del at[last]
    else:
        at[last] = value
    return prov


def test_the_same_record_is_expected_identical_whatever_the_commit_time_python_and_platform():
    assert identity_expected(PROV, copy.deepcopy(PROV)) == ("expected", "")
    for path, value in [
        ("git_dirty", True),
        ("started_at", "2027-01-01T00:00:00+00:00"),
        ("python", "3.12.1"),
        ("platform", "Linux-6.18.44-fc-v1045-x86_64"),  # another VM build, the same CPU kind
        ("versions.tiktoken", "0.15.0"),  # not a package that computes a step
        ("host.cpus", 4),  # every thread count pinned: the core count picks nothing
    ]:
        later = changed(path, value) | {"git_commit": "fedcba9"}
        assert identity_expected(PROV, later) == ("expected", ""), path


PINNED = "MKL_NUM_THREADS=1, OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1"


@pytest.mark.parametrize(
    "path,value,field,ours,theirs",
    [
        ("host.cpu", "AMD X", "cpu", "Intel Y", "AMD X"),
        ("host.simd", ["avx", "avx2", "avx512f"], "simd", "avx, avx2", "avx, avx2, avx512f"),
        ("host.threads", {"OMP_NUM_THREADS": "2"}, "threads", PINNED, "OMP_NUM_THREADS=2"),
        ("host.threads", {}, "threads", PINNED, "default"),
        ("host.preload", "/x/libopenblas.so.0", "preload", "none", "/x/libopenblas.so.0"),
        ("versions.torch", "2.12.0+cpu", "torch version", "2.13.0+cpu", "2.12.0+cpu"),
        ("versions.mlx", None, "mlx version", "0.32.4", "none"),
        ("versions.numpy", "2.5.0", "numpy version", "2.4.6", "2.5.0"),
        ("device", "cuda", "device", "cpu", "cuda"),
        ("kernels.torch.threads", 2, "torch threads", "1", "2"),
        ("kernels.torch.cpu_capability", "DEFAULT", "torch cpu_capability", "AVX2", "DEFAULT"),
        ("kernels.torch.mkldnn", False, "torch mkldnn", "True", "False"),
        ("kernels.torch.mkl", False, "torch mkl", "True", "False"),
    ],
)
def test_each_field_that_picks_the_kernels_is_named_when_it_alone_differs(
    path, value, field, ours, theirs
):
    other = changed(path, value)
    assert identity_expected(PROV, other) == ("not expected", f"{field}: {ours} vs {theirs}")
    assert identity_expected(other, PROV) == ("not expected", f"{field}: {theirs} vs {ours}")


def test_the_core_count_counts_only_when_a_library_is_left_its_default_thread_count():
    default = changed("host.threads", {"OMP_NUM_THREADS": "1"})
    assert identity_expected(default, copy.deepcopy(default)) == ("expected", "")
    more = copy.deepcopy(default)
    more["host"]["cpus"] = 4
    assert identity_expected(default, more) == ("not expected", "cpus: 2 vs 4")


def test_kernels_count_only_where_both_runs_record_them():
    """Runs made before `kernels` existed, or a qkmlx run in a process without torch, say
    nothing about torch's kernels: the rest decides."""
    for path in ("kernels", "kernels.torch", "kernels.torch.cpu_capability"):
        assert identity_expected(PROV, changed(path, None)) == ("expected", ""), path


def test_a_run_without_a_host_record_is_unknown():
    bare = changed("host", None)
    assert identity_expected(PROV, bare) == ("unknown", "host not recorded")
    assert identity_expected(bare, PROV) == ("unknown", "host not recorded")
    assert identity_expected({}, {}) == ("unknown", "host not recorded")
    assert identity_expected(PROV, changed("host", {})) == ("unknown", "host not recorded")
    resumed_before = changed("continued", [{"git_commit": "x", "from_step": 400}])
    assert identity_expected(PROV, resumed_before) == ("unknown", "host not recorded")


def test_a_run_another_process_went_on_with_holds_for_each_process():
    """Resumed on the same kind of machine, a run is bit-identical to one that was not; on
    another, from that step on it is not."""
    same = changed("continued", [{**copy.deepcopy(PROV), "from_step": 400}])
    assert identity_expected(PROV, same) == ("expected", "")
    other = {**changed("host.cpu", "AMD X"), "from_step": 400}
    moved = changed("continued", [other])
    assert identity_expected(PROV, moved) == (
        "not expected",
        "cpu: Intel Y vs AMD X (B went on from step 400 in another process)",
    )
    assert identity_expected(moved, PROV)[1] == (
        "cpu: AMD X vs Intel Y (A went on from step 400 in another process)"
    )


def test_processors_named_alike_are_told_apart_by_family_model_and_stepping(tmp_path):
    """Two VM generations both called "Intel(R) Xeon(R) Processor" gave different bits
    (docs/cpu-width/reruns.md): cpu_id records what the name hides, and decides only where
    both runs record it."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\ncpu family\t: 6\nmodel\t\t: 143\nstepping\t: 8\nflags\t\t: avx\n"
    )
    made = host({}, str(cpuinfo))
    assert made["cpu_id"] == "cpu family 6 model 143 stepping 8"
    assert "cpu_id" not in host({}, str(tmp_path / "absent"))
    a, b = copy.deepcopy(PROV), copy.deepcopy(PROV)
    a["host"]["cpu_id"], b["host"]["cpu_id"] = (
        "cpu family 6 model 143 stepping 8",
        "cpu family 6 model 106 stepping 6",
    )
    assert identity_expected(a, b) == (
        "not expected",
        "cpu_id: cpu family 6 model 143 stepping 8 vs cpu family 6 model 106 stepping 6",
    )
    del b["host"]["cpu_id"]
    assert identity_expected(a, b) == ("expected", "")


def test_provenance_and_crosscheck_read_typed_old_records_unknown_non_records_skipped():
    from sweeps.analysis.what_ran import CrosscheckSummary, RunProvenance

    new = RunProvenance.of(
        {
            "git_commit": "abc",
            "git_dirty": False,
            "versions": {"torch": "2.13.0"},
            "host": {"cpu": "EPYC", "cpus": 2, "simd": ["avx2"], "threads": {"B": "1", "A": "2"}},
            "continued": [{"host": {"cpu": "Xeon", "cpus": 4}}, "not a record", {"at": 3}],
        }
    )
    assert new.versions == (("torch", "2.13.0"),)
    assert new.host.threads == (("A", "2"), ("B", "1")) and new.host.simd == ("avx2",)
    # each later process's host, one without a host record as None; a non-record is skipped
    assert [h and h.cpu for h in new.continued] == ["Xeon", None]
    old = RunProvenance.of({})  # a run made before any of these fields existed
    assert (old.git_commit, old.host, old.continued, old.started_at) == (None, None, (), None)
    assert RunProvenance.of(None) is None and RunProvenance.of(float("nan")) is None
    cc = CrosscheckSummary.of({"verdict": "pass", "configs": [{"checks": [1, 2]}, {"checks": [3]}]})
    assert (cc.verdict, cc.configs, cc.checks) == ("pass", 2, 3)
    assert CrosscheckSummary.of({}).verdict == "unknown" and CrosscheckSummary.of(None) is None
