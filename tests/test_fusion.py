"""`sweep --fuse`: the runner trains groups of runs as one program (sweeps.sweep.fusion), and
nothing downstream changes: results, run directories, status and its watch, resume after
kill -9."""

import json
import re
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
from sweeps.sweep import adhoc, fusion
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
    spec = adhoc.adhoc_spec(runs, "live", "smoke", ["lr=0.01,0.003"], 3, "", write=True)
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


def test_the_fused_benchmark_runs_on_the_cpu(tmp_path):
    """benchmarks/fused.py, the python part of gpu_check.sh's fused section, on a tiny
    config: one run alone, fused M = 1 and 2, sequential M = 2, eager; the table it appends."""
    import benchmarks.fused

    summary = tmp_path / "tables"
    benchmarks.fused.main(
        [
            "--preset",
            "smoke",
            "--models",
            "1,2",
            "--sequential",
            "--steps",
            "2",
            "--rounds",
            "1",
            "--threads",
            "1",
            "--set",
            "data.builtin_stories=300",
            "--summary",
            str(summary),
        ]
    )
    lines = summary.read_text().splitlines()
    assert lines[0].startswith("fused throughput: smoke float32 on cpu")
    rows = [line.split() for line in lines[2:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("torch", "eager", "1"), ("torch", "eager", "2")]
    for r in rows:
        one, fused = (float(v.replace(",", "")) for v in r[3:5])
        assert one > 0 and fused > 0 and float(r[6]) == pytest.approx(fused / one, rel=0.01)
    assert rows[0][5] == "nan" and float(rows[1][5].replace(",", "")) > 0  # sequential M=2
