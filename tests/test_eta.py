"""The sweep's ETA from finished runs' timings (sweeps.core.ladder.step_s_by_shape), as the
runner's progress line and `status --watch` both read it: the median seconds per step per model
shape, so a few runs slowed by other work on the machine do not set the rest's ETA."""

from types import SimpleNamespace

import pytest

from sweeps.core.ladder import step_s_by_shape, step_s_from


def model(n_layer: int, n_embd: int = 64):
    return SimpleNamespace(n_layer=n_layer, n_embd=n_embd)


def test_the_median_per_shape_is_not_moved_by_a_few_slowed_runs():
    # depth 8: three runs at 0.3 s a step and one that a test suite beside it slowed 5x; a
    # pooled mean would read 0.6 s (twice the truth), the median keeps 0.3
    timings = [(model(8), 660.0, 2200)] * 3 + [(model(8), 3300.0, 2200)]
    timings += [(model(1), 30.0, 450), (model(1), 36.0, 450)]  # an even count: the midpoint
    timings += [(model(4), None, 1200), (model(4), 100.0, 0)]  # no timing: left out
    got = step_s_by_shape(timings)
    assert got == pytest.approx({(8, 64): 0.3, (1, 64): 66.0 / 900})
    # a shape never timed is scaled from the nearest timed one by n_layer x n_embd^2
    assert step_s_from(got, model(6)) == pytest.approx(0.3 * 6 / 8)


def test_the_runner_and_watch_give_the_median_based_eta(tmp_path):
    """Three finished runs of one shape, one of them slowed 10x, and one run not started: both
    readers time a step at the median 0.5 s (a pooled mean: 2 s), so the runner's ETA is
    10 steps x 0.5 s / 2 workers."""
    from sweeps.run.rundir import RunDir
    from sweeps.sweep import runner, watch

    cfg = SimpleNamespace(model=model(2), train=SimpleNamespace(max_steps=10))
    walls = {"a": 5.0, "b": 50.0, "c": 5.0}  # b: slowed
    for rid, wall in walls.items():
        RunDir(tmp_path / rid).write_summary({"status": "ok", "wall_time_s": wall, "steps_run": 10})
    configs = {rid: cfg for rid in [*walls, "todo"]}
    sweep = SimpleNamespace(
        configs=configs,
        summary=lambda rid: RunDir(tmp_path / rid).read_summary(),
        status=lambda rid: "ok" if rid in walls else None,
        run_dir=lambda rid: tmp_path / rid,
    )
    progress = runner._Progress.__new__(runner._Progress)  # its ETA alone, no scheduler
    progress.sweep, progress.capacity = sweep, 2
    assert progress.eta() == pytest.approx(10 * 0.5 / 2)
    assert watch._finished_step_s(tmp_path, configs) == pytest.approx({(2, 64): 0.5})
