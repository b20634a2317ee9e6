"""`sweep --fuse`: the runner trains groups of runs as one program (sweeps.sweep.fusion), and
nothing downstream changes: results, run directories, status and its watch (resume after
kill -9: tests/test_sweeps.py's kill -9 test, with a fused group)."""

import json
import re
import subprocess
import sys
import time

import pandas as pd
import pytest
from click.testing import CliRunner

from crosscheck.checks import series_errors
from crosscheck.tolerances import TOLERANCES
from sweeps.cli import make_cli
from sweeps.core.errors import HarnessError
from sweeps.run.backends import Execution, fused_factory
from sweeps.run.fused import train_group
from sweeps.run.rundir import RunLock
from sweeps.sweep import fusion
from sweeps.sweep.record import adhoc_spec
from sweeps.sweep.watch import Seen, frame
from tests.conftest import smoke_config
from tests.test_sweeps import final_losses, metrics, sweep, write_spec

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_fuse_values_and_one_line_errors(tmp_path):
    assert fusion.parse_fuse("auto") == "auto" and fusion.parse_fuse("OFF") == "off"
    assert fusion.parse_fuse("16") == 16
    for bad in ("0", "-2", "many"):
        with pytest.raises(HarnessError, match="--fuse takes auto, off or a group size"):
            fusion.parse_fuse(bad)
    spec = write_spec(tmp_path, "bad", [1e-2, 1e-1])
    result = sweep("torch", spec, tmp_path / "runs", "--fuse", "0")
    assert result.exit_code == 2 and "--fuse takes" in result.output
    assert "Traceback" not in result.output


def test_auto_is_off_on_a_cpu_and_sized_to_memory_on_a_gpu(monkeypatch):
    cfgs = [smoke_config("torch", f"seed={s}") for s in range(3)]
    cpu = Execution("torch", "cpu")
    assert fusion.group_size("auto", cpu, cfgs, gpus=[])[0] == 1
    assert fusion.group_size("off", cpu, cfgs, gpus=["0"])[0] == 1
    assert fusion.group_size(5, cpu, cfgs, gpus=[]) == (5, "--fuse 5")
    from sweeps.core.params import state_bytes

    need = state_bytes(cfgs[0])
    monkeypatch.setattr(fusion, "gpu_free_memory", lambda gpus: 10 * need)
    size, why = fusion.group_size("auto", Execution("torch", "cuda"), cfgs, gpus=["0"])
    assert size == 5 and "GPU memory free" in why  # half of the free memory
    monkeypatch.setattr(fusion, "gpu_free_memory", lambda gpus: 10**15)
    assert fusion.group_size("auto", Execution("torch", "cuda"), cfgs, gpus=["0"])[0] == 64


class FakeExecutor:
    """Workers that take one task each; tasks end when the test says."""

    def __init__(self, capacity):
        self.capacity, self.tasks, self.ended = capacity, {}, []

    def describe(self):
        return "fake"

    def free_slots(self):
        return self.capacity - len(self.tasks)

    def submit(self, task, run_dir, config):
        self.tasks[task] = config

    def wait(self, timeout):
        out, self.ended = self.ended, []
        for task, _ in out:
            del self.tasks[task]
        return out

    def close(self, kill=False):
        pass


def test_the_fusing_executor_sends_full_groups_first_and_reports_runs():
    inner = FakeExecutor(capacity=2)
    fused = fusion.FusingExecutor(inner, size=3)
    runs = {}
    for arm, n in (("a", 4), ("b", 2)):  # arm a: 4 runs (a group of 3 and one), arm b: 2
        for s in range(n):
            cfg = smoke_config("torch", f"seed={s}", f"arm={arm}")
            runs[cfg.run_id] = cfg
            fused.submit(cfg.run_id, f"/x/{cfg.run_id}", cfg.to_dict())
    assert fused.free_slots() > 1000  # every pending run is taken, to group them well
    assert fused.wait(0) == []
    groups = {t: [r[0] for r in c[fusion.GROUP]] for t, c in inner.tasks.items()}
    sizes = sorted(len(g) for g in groups.values())
    assert sizes == [2, 3]  # the full group of a, then the largest partial one (b)
    assert all(len({runs[r].arm for r in g}) == 1 for g in groups.values())
    task, members = next((t, g) for t, g in groups.items() if len(g) == 3)
    inner.ended = [(task, {"status": "group", "results": {r: {"status": "ok"} for r in members}})]
    events = fused.wait(0)
    assert sorted(r for r, _ in events) == sorted(members)  # runs, not the group
    assert len(inner.tasks) == 2  # the last run of a went to the freed worker
    assert fused.queued == {}
    inner.ended = [(t, {"status": "died", "exitcode": 9}) for t in list(inner.tasks)]
    events = fused.wait(0)  # b's two runs and a's last one, each reported as died
    assert len(events) == 3 and {e["status"] for _, e in events} == {"died"}
    assert {runs[r].arm for r, _ in events} == {"a", "b"}


def spec_for(tmp_path, name):
    return write_spec(
        tmp_path, name, [1e-2, 1.0], settings={"train.max_steps": 24, "train.eval_interval": 12}
    )


def rel_ok(kind, a, b) -> None:
    assert series_errors(a, b)[1] <= TOLERANCES[kind].rel, (kind, a, b)


@pytest.mark.slow
def test_a_fused_sweep_gives_the_unfused_sweeps_results(tmp_path):
    """2 LRs (the top one diverges) x 2 arms x 3 seeds in groups of 6 (one per arm) on one
    worker, against the same sweep unfused: the same statuses, losses within crosscheck's
    tolerances, the same metrics rows, provenance that says fused; status reads it."""
    spec = spec_for(tmp_path, "fz")
    off = sweep("torch", spec, tmp_path / "off", "--fuse", "off")
    on = sweep("torch", spec, tmp_path / "on", "--fuse", "6")
    assert off.exit_code == 0 and on.exit_code == 0, on.output
    assert "fuse: off" in off.output and "fuse: --fuse 6" in on.output
    assert "fused in groups of up to 6" in on.output
    a, b = final_losses(tmp_path / "off" / "fz"), final_losses(tmp_path / "on" / "fz")
    assert set(a) == set(b) and len(a) == 12
    for rid in a:
        assert a[rid][0] == b[rid][0]
        if a[rid][1] is not None:
            rel_ok("train_loss", [b[rid][1]], [a[rid][1]])
    ma, mb = metrics(tmp_path / "off" / "fz"), metrics(tmp_path / "on" / "fz")
    for rid in ma:
        assert [sorted(r) for r in ma[rid]] == [sorted(r) for r in mb[rid]]
        loss = [
            [r["train_loss"] for r in m[rid] if r.get("train_loss") is not None] for m in (ma, mb)
        ]
        rel_ok("train_loss", loss[1], loss[0])
        provenance = json.loads((tmp_path / "on" / "fz" / rid / "config.json").read_text())
        assert provenance["provenance"]["fused"] == {"models": 6}
    df = pd.read_parquet(tmp_path / "on" / "fz" / "results.parquet")
    assert dict(zip(df.lr, df.status)) == {0.01: "ok", 1.0: "diverged"}
    status = CliRunner().invoke(
        make_cli("torch"), ["status", spec, "--runs-dir", str(tmp_path / "on")]
    )
    assert status.exit_code == 0 and "12" in status.output
    again = sweep("torch", spec, tmp_path / "on", "--fuse", "6")
    assert again.exit_code == 0 and "nothing to run" in again.output


def test_watch_shows_a_fused_groups_runs_as_runs(tmp_path):
    """Runs of a group in progress (their locks held, as execute_group holds them) each show
    as running with their own step in `status --watch`."""
    from sweeps.sweep.runner import Sweep

    runs = tmp_path / "runs"
    spec = adhoc_spec(runs, "live", "smoke", ["lr=0.01,0.003"], 3, "", write=True)
    plan = Sweep(spec, "torch", ["data.builtin_stories=300", "train.log_interval=5"], runs)
    plan.write_plan()
    first = next(iter(plan.configs.values()))
    rids = [r for r, c in plan.configs.items() if c.arm == first.arm]  # one group: one arm
    cfgs = [plan.configs[r] for r in rids]
    train_group(cfgs, [plan.run_dir(r) for r in rids], fused_factory("torch", "cpu"), stop_after=25)
    locks = [RunLock(plan.run_dir(r)) for r in rids]
    assert all(lock.acquire() for lock in locks)
    try:
        lines, _ = frame("live", runs, "torch", Seen(), now=time.time())
    finally:
        for lock in locks:
            lock.release()
    assert any(f"0/{len(plan.configs)} done, {len(rids)} running" in line for line in lines)
    for rid in rids:
        row = next(line for line in lines if rid in line)
        assert 5 <= int(re.search(r"\b(\d+)/60\b", row).group(1)) <= 25, row


@pytest.mark.slow
def test_estimate_prints_the_fused_cost_beside_the_unfused_one(tmp_path):
    spec = write_spec(tmp_path, "est", [1e-2, 1e-1])
    args = ["--estimate", "--dry-run"]
    fused = sweep("torch", spec, tmp_path / "runs", *args, "--fuse", "3")
    assert fused.exit_code == 0, fused.output
    line = next(x for x in fused.output.splitlines() if "fused in groups of 3" in x)
    rates = re.search(r"([\d,]+) tokens/s per group \(([\d,]+) per run\)", line).groups()
    group, per_run = (float(v.replace(",", "")) for v in rates)
    assert group == pytest.approx(3 * per_run, rel=0.01)  # a group's rate is 3 runs' rate
    assert "device-hours" in line
    auto = sweep("torch", spec, tmp_path / "runs", *args)
    assert "not fused (--fuse auto: off on a CPU" in auto.output
    assert not (tmp_path / "runs" / "est").exists()  # a dry run writes nothing


def number(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.slow
def test_the_fused_benchmark_runs_on_the_cpu(tmp_path):
    """benchmarks/fused.py, the python part of gpu_check.sh's fused section, on a tiny
    config: per M (1 and 2) one run alone, the fused program and M separate processes, eager;
    the table it appends, each ratio its round's (one round) rates' ratio."""
    import benchmarks.fused

    summary = tmp_path / "tables"
    benchmarks.fused.main(
        [
            *("--presets", "smoke", "--models", "1,2", "--steps", "2", "--rounds", "1"),
            *("--threads", "1", "--set", "data.builtin_stories=300", "--summary", str(summary)),
        ]
    )
    lines = summary.read_text().splitlines()
    assert lines[0].startswith("fused throughput on cpu (float32)")
    assert "1 CPU thread(s) per case" in lines[0]
    rows = [line.split() for line in lines[2:] if line.strip()]
    assert [r[:4] for r in rows] == [
        ["smoke", "torch", "eager", "1"],
        ["smoke", "torch", "eager", "2"],
    ]
    for r in rows:
        one, fused = number(r[4]), number(r[5])
        assert one > 0 and fused > 0 and number(r[7]) == pytest.approx(fused / one, abs=0.01)
    assert rows[0][6] == rows[0][8] == "-"  # M = 1: the one run is its own processes case
    processes = number(rows[1][6])
    assert processes > 0 and number(rows[1][8]) == pytest.approx(
        number(rows[1][5]) / processes, abs=0.01
    )


@pytest.mark.slow
def test_the_fused_benchmarks_processes_are_separate_processes():
    """The `processes` case of M is M worker processes of their own, each training its run of
    the group (its seed), answering the round's `run N` at once."""
    import os

    import benchmarks.fused
    from benchmarks.throughput import Case, measure_round

    args = benchmarks.fused.parse_args(["--presets", "smoke", "--set", "data.builtin_stories=300"])
    spec = benchmarks.fused.case_spec(args, "smoke", "torch", False, 2, False)
    cases = {"processes": [Case("processes", {**spec, "index": i}) for i in range(2)]}
    groups, failed = benchmarks.fused.start(cases, {"processes": 1})
    try:
        assert failed == {} and len(groups["processes"]) == 2
        pids = {w.proc.pid for w in groups["processes"]}
        assert len(pids) == 2 and os.getpid() not in pids
        result = measure_round(groups["processes"], 2)
        assert len(result["per_worker"]) == 2 and result["wall"] > 0
    finally:
        for w in groups.get("processes", []):
            w.close()
    assert all(w.proc.poll() is not None for w in groups["processes"])


@pytest.mark.slow
def test_the_fused_sweep_benchmark_times_both_ways_and_compares_results(tmp_path):
    """benchmarks/fused_sweep.py, gpu_check.sh's end-to-end section, at smoke scale: the same
    ad-hoc grid swept fused (--fuse 6: a group per arm) and unfused through the command, both
    timed, every run's result compared; the fused runs say so in their provenance."""
    import benchmarks.fused_sweep

    summary, work = tmp_path / "tables", tmp_path / "work"
    small = ("--set", "train.max_steps=20", "--set", "data.builtin_stories=300")
    benchmarks.fused_sweep.main(
        [
            *("--preset", "smoke", "--lrs", "1e-2,3.16e-2", "--seeds", "3", *small),
            *("--device", "cpu", "--work", str(work), "--summary", str(summary)),
        ]
    )
    text = summary.read_text()
    assert "12 runs (2 LRs x 3 seeds x QK-norm off and on) on cpu" in text
    ways = re.findall(r"\((--fuse \w+)\)\s+(\d+)/12 runs\s+([\d.]+) s\s+([\d.]+) runs/h", text)
    assert [(w[0], w[1]) for w in ways] == [("--fuse 6", "12"), ("--fuse off", "12")]
    for _, runs, seconds, per_hour in ways:
        # the seconds are printed to 0.1 s, the rate from the unrounded time: a short smoke run's
        # rate may sit anywhere the rounding allows (3.1 s is 3.05-3.15 s: +-1.6%), no further
        fastest, slowest = float(seconds) - 0.05, float(seconds) + 0.05
        rate = float(per_hour)  # itself printed to 0.1 runs/h
        assert 3600 * int(runs) / slowest - 0.05 <= rate <= 3600 * int(runs) / fastest + 0.05
    ratio = float(re.search(r"fused / unfused: ([\d.]+)x", text)[1])
    assert ratio == pytest.approx(float(ways[0][3]) / float(ways[1][3]), abs=0.01)
    worst = float(
        re.search(r"worst \|difference\| (\S+) \(median \S+\) over 12 runs, statuses equal", text)[
            1
        ]
    )
    assert worst <= 1e-4
    again = subprocess.run(  # the same --work again: refused, it would time nothing
        [sys.executable, benchmarks.fused_sweep.__file__, "--work", str(work)],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 2 and "is not empty" in again.stderr
    for rid in (p.name for p in (work / "fused" / "e2e").iterdir() if p.is_dir()):
        fused = json.loads((work / "fused" / "e2e" / rid / "config.json").read_text())
        alone = json.loads((work / "unfused" / "e2e" / rid / "config.json").read_text())
        assert fused["provenance"]["fused"] == {"models": 6} and "fused" not in alone["provenance"]


@pytest.mark.slow
def test_the_fused_sweep_benchmark_stops_the_unfused_sweep_at_its_limit(tmp_path):
    """--limit-s stops the unfused sweep with every process it started (no run finishes
    afterwards) and counts the runs it finished, saying it was stopped."""
    import benchmarks.fused_sweep

    summary, work = tmp_path / "tables", tmp_path / "work"
    benchmarks.fused_sweep.main(
        [
            *("--preset", "smoke", "--lrs", "1e-2,3.16e-2", "--seeds", "3", "--limit-s", "5"),
            *("--set", "data.builtin_stories=300", "--device", "cpu"),
            *("--work", str(work), "--summary", str(summary)),
        ]
    )
    done = re.search(
        r"unfused \(--fuse off\)\s+(\d+)/12 runs .* stopped at its limit, 5 s", summary.read_text()
    )
    assert done and int(done[1]) < 12
    assert len(list((work / "unfused").glob("e2e/*/summary.json"))) == int(done[1])
    files = lambda: {(p, p.stat().st_size) for p in (work / "unfused").rglob("*") if p.is_file()}  # noqa: E731
    before = files()
    time.sleep(5)  # a worker left running would write metrics rows (every 10 steps) by now
    assert files() == before
