"""The researcher's workflow around a long sweep: watching it, TensorBoard, the curves table,
ad-hoc grids, data found early, readable files, other backends' runs,
and the smaller rough edges of the command line.

One real ad-hoc sweep (smoke preset, 12 runs of 12 steps) is shared by the tests that read a
finished sweep; everything else is files made by hand or fakes.
"""

import json
import math
import os
import re
import stat
import time

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core import files
from sweeps.core.config import DataConfig
from sweeps.core.errors import ConfigError, DataError
from sweeps.core.params import count_params
from sweeps.core.presets import get_preset
from sweeps.run.rundir import RunDir, RunLock
from sweeps.sweep.record import RECORD, adhoc_plan, adhoc_spec, to_toml
from sweeps.sweep.spec import adhoc_raw, parse_grid
from sweeps.sweep.watch import Seen, frame, watch

FAST = [
    "data.builtin_stories=300",
    "train.max_steps=12",
    "train.warmup_steps=2",
    "train.eval_interval=6",
    "train.checkpoint_interval=4",
]
GRID = [
    "--preset",
    "smoke",
    "--grid",
    "train.lr=0.01,0.1",
    "--grid",
    "qk_norm=none,rms",
    "--seeds",
    "3",
    "--name",
    "grid",
]


def invoke(backend, *args):
    from figures.cli import figures

    return CliRunner().invoke(make_cli(backend, [figures]), [str(a) for a in args])


def sets(overrides):
    return [a for o in overrides for a in ("--set", o)]


# -- one real ad-hoc sweep ------------------------------------------------------------------
@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory):
    """An ad-hoc grid trained by the sweep command with live TensorBoard logging."""
    root = tmp_path_factory.mktemp("workflow")
    runs, tb = root / "runs", root / "tb"
    result = invoke(
        "torch",
        "sweep",
        *GRID,
        "--runs-dir",
        runs,
        "--device",
        "cpu",
        "--tensorboard",
        tb,
        *sets(FAST),
    )
    assert result.exit_code == 0, result.output
    return runs, tb, result.output


@pytest.mark.slow
def test_an_adhoc_grid_runs_writes_its_spec_and_resumes(grid_sweep):
    runs, _, output = grid_sweep
    spec = (runs / "grid" / "spec.toml").read_text()
    assert 'preset = "smoke"' in spec and "lr = [0.01, 0.1]" in spec
    assert "seed = [0, 1, 2]" in spec and 'qk_norm = ["none", "rms"]' in spec
    assert "done in" in output and "12 ok" in output
    again = invoke("torch", "sweep", *GRID, "--runs-dir", runs, "--device", "cpu", *sets(FAST))
    assert again.exit_code == 0 and "nothing to run" in again.output
    by_name = invoke("torch", "sweep", "grid", "--runs-dir", runs, "--device", "cpu", *sets(FAST))
    assert by_name.exit_code == 0 and "nothing to run" in by_name.output
    other = invoke(
        "torch", "sweep", *GRID[:3], "train.lr=0.01,0.3", *GRID[4:], "--runs-dir", runs, *sets(FAST)
    )
    assert other.exit_code == 2 and "12 finished run(s) of another definition" in other.output
    assert "[grid] lr [0.01, 0.1] in the record, [0.01, 0.3] here" in other.output
    status = invoke("torch", "status", "grid", "--runs-dir", runs)
    assert status.exit_code == 0 and "12 runs: 12 ok" in status.output


def test_sweep_progress_counts_the_runs_that_started(grid_sweep):
    lines = [line for line in grid_sweep[2].splitlines() if line.startswith("[")]
    assert len(lines) == 12
    assert all(", 1 running," in line for line in lines[:-1]), lines  # one worker, never idle
    assert ", 0 running," in lines[-1]


def test_curves_parquet_is_the_long_table_of_every_run(grid_sweep):
    runs = grid_sweep[0]
    curves = pd.read_parquet(runs / "grid" / "curves.parquet")
    assert list(curves.columns) == [
        "run_id",
        "arm",
        "lr",
        "depth",
        "seed",
        "step",
        "metric",
        "value",
    ]
    assert curves.run_id.nunique() == 12 and set(curves.arm) == {"off", "on"}
    metrics = set(curves.metric)
    assert {
        "train_loss",
        "train_loss_ema",
        "val_loss",
        "grad_norm",
        "lr",
        "max_attn_logit",
        "attn_entropy",
    } <= metrics
    one = curves[(curves.run_id == curves.run_id.iloc[0]) & (curves.metric == "train_loss")]
    assert sorted(one.step) == list(range(1, 13))
    results = pd.read_parquet(runs / "grid" / "results.parquet")
    last = curves[(curves.metric == "val_loss") & (curves.step == 12)].set_index("run_id")
    for row in results.itertuples():  # the periodic val loss; final_val_loss is the split's
        assert last.value[row.run_id] == pytest.approx(row.last_val_loss)
        assert row.final_val_tokens > 0 and math.isfinite(row.final_val_loss)


def read_tensorboard(path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    acc = EventAccumulator(str(path))
    acc.Reload()
    content = acc.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(
        content["_hparams_/session_start_info"]
    ).session_start_info
    hparams = {k: v.string_value or v.number_value for k, v in start.hparams.items()}
    return acc, hparams


@pytest.mark.parametrize("live", [True, False])
def test_tensorboard_export_holds_scalars_and_hparams(grid_sweep, tmp_path, live):
    runs, tb, _ = grid_sweep
    if not live:
        out = tmp_path / "tb"
        result = invoke("torch", "export", "tensorboard", "grid", "--out", out, "--runs-dir", runs)
        assert result.exit_code == 0 and "exported 12 of 12" in result.output
        again = invoke("torch", "export", "tensorboard", "grid", "--out", out, "--runs-dir", runs)
        assert again.exit_code == 0  # an export replaces the last: no doubled events
        tb = out
    assert len([p for p in tb.iterdir() if p.is_dir()]) == 12
    run = next(p for p in sorted(tb.iterdir()) if "-on-" in p.name and "lr0.1-" in p.name)
    acc, hparams = read_tensorboard(run)
    tags = acc.Tags()["scalars"]
    for tag in (
        "loss/train",
        "loss/train_smoothed",
        "loss/val",
        "optim/grad_norm",
        "optim/lr",
        "diagnostics/max_attn_logit",
        "diagnostics/qk_gain_max",
    ):
        assert tag in tags, tag
    assert [e.step for e in acc.Scalars("loss/train")] == list(range(1, 13))
    metrics = RunDir(runs / "grid" / run.name).read_metrics()
    assert acc.Scalars("loss/val")[-1].value == pytest.approx(metrics[-1]["val_loss"], rel=1e-6)
    assert hparams["arm"] == "on" and hparams["qk_norm"] == "rms"
    assert hparams["lr"] == pytest.approx(0.1) and hparams["depth"] == 2
    assert hparams["seed"] in (0, 1)


def test_watch_ends_with_the_sweep(grid_sweep, capsys):
    runs = grid_sweep[0]
    result = invoke("torch", "status", "grid", "--runs-dir", runs, "--watch", "--interval", 0)
    assert result.exit_code == 0
    assert "12/12 done, 0 running, 0 left" in result.output
    assert result.output.rstrip().endswith("the sweep has ended")


def test_runs_of_another_backend_are_reported_not_hidden(grid_sweep, tmp_path):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(grid_sweep[0] / "grid", runs / "grid")
    torch_run = RunDir(next((runs / "grid").glob("torch-*")))
    mlx_cfg = torch_run.read_config().with_overrides(["backend=mlx"])
    RunDir(runs / "grid" / mlx_cfg.run_id).write_config(mlx_cfg)  # an unfinished mlx run
    status = invoke("torch", "status", "grid", "--runs-dir", runs)
    assert "1 mlx run(s)" in status.output and "it is a torch sweep folder" in status.output
    assert "`qkmlx status grid --runs-dir OTHER_DIR`" in status.output  # in a folder of their own
    mlx_view = invoke("mlx", "status", "grid", "--runs-dir", runs)  # plan.json: the torch runs
    assert "12 runs: 12 ok" in mlx_view.output and "1 mlx run(s)" in mlx_view.output
    assert "is a torch sweep folder: this status is of its torch runs" in mlx_view.output
    report = invoke("torch", "figures", "grid", "--runs-dir", runs, "--formats", "vl.json")
    assert report.exit_code == 0, report.output
    assert "1 mlx run(s)" in report.output
    assert "`qkmlx figures grid --runs-dir OTHER_DIR`" in report.output
    text = (runs / "grid" / "report" / "report.md").read_text()
    assert "This report covers 12 of the 13 run directories in `grid`**: 1 (1 mlx)" in text


# -- a named sweep is one thing: its record -------------------------------------------------
def test_a_sweep_records_every_set_and_resumes_checks_and_reports_from_it(grid_sweep, tmp_path):
    """The issue's case: an ad-hoc grid run with --set resumes by name as the grid that ran;
    a command that would plan other runs beside the finished ones is refused in one line
    naming the difference; crosscheck --sweep NAME reads the record."""
    import shutil

    from crosscheck.cli import _targets
    from sweeps.sweep.spec import load_spec

    runs = tmp_path / "runs"
    shutil.copytree(grid_sweep[0] / "grid", runs / "grid")
    record = runs / "grid" / "spec.toml"
    text = record.read_text()
    table = text.split("[set]\n")[1].split("\n\n")[0]  # every --set, typed
    assert '"train.max_steps" = 12' in table and '"data.builtin_stories" = 300' in table
    assert "--set train.max_steps=12" in text  # the description: the command as typed
    spec = load_spec(str(record))  # a complete spec: the record alone plans the same runs
    assert spec.set["train.max_steps"] == 12 and spec.set["train.warmup_steps"] == 2
    plan = json.loads((runs / "grid" / "plan.json").read_text())
    assert plan["overrides"] == [] and plan["execution"]["device"] == "cpu"
    by_name = invoke("torch", "sweep", "grid", "--runs-dir", runs, "--dry-run")
    assert by_name.exit_code == 0 and "state: 12 finished" in by_name.output
    assert "12 steps x 256 tokens" in by_name.output and "; 0 to run" in by_name.output
    longer = invoke("torch", "sweep", "grid", "--runs-dir", runs, "--set", "train.max_steps=24")
    line = one_line(longer)
    assert "holds 12 finished run(s) of another definition" in line
    assert "train.max_steps 12 in the record, 24 here" in line
    assert "resume them with `qktorch sweep grid`" in line
    retyped = invoke("torch", "sweep", *GRID, "--runs-dir", runs)  # the --set forgotten
    line = one_line(retyped)
    assert "train.max_steps 12 in the record, 60 here" in line and "train.warmup_steps 2" in line
    again = invoke("torch", "sweep", *GRID, "--runs-dir", runs, "--dry-run", *sets(FAST))
    assert again.exit_code == 0 and "; 0 to run" in again.output  # the same command resumes
    cc_spec, targets, path = _targets(None, "grid", runs, (), ())
    assert cc_spec.set["train.max_steps"] == 12 and path == runs / "grid" / "crosscheck.json"
    assert {t.cfg.data.builtin_stories for t in targets} == {300}  # the record's [set]
    unknown = invoke("torch", "status", "nope", "--runs-dir", runs)
    assert f"no {runs / 'nope' / 'spec.toml'}" in one_line(unknown)


def test_a_spec_sweeps_record_holds_its_set_and_wins_over_the_spec(tmp_path):
    from sweeps.core.errors import HarnessError
    from sweeps.sweep import record

    runs = tmp_path / "runs"
    planned = record.plan(runs, record.base_raw("smoke", runs), ["train.max_steps=30"])
    assert planned.spec.set["train.max_steps"] == 30 and planned.record is not None
    (runs / "smoke").mkdir(parents=True)
    (runs / "smoke" / "spec.toml").write_text(planned.record)
    again = record.plan(runs, record.base_raw("smoke", runs), ())  # `sweep smoke`: the record
    assert again.spec == planned.spec and again.record is None and not again.notes
    note = record.spec_note("smoke", runs, "qktorch")
    assert "train.max_steps 60 in the spec, 30 in the record" in note
    assert record.find_spec("smoke", runs).set["train.max_steps"] == 30  # status, figures
    # no run finished: another definition replaces the record, and says so
    other = record.plan(runs, record.base_raw("smoke", runs), ["train.max_steps=40"])
    assert other.record is not None and "replaced (no run had finished)" in other.notes[0]
    finished = runs / "smoke" / "torch-off-L2-lr0.01-s0-0123456789"
    finished.mkdir()
    (finished / "summary.json").write_text("{}")
    with pytest.raises(HarnessError, match="holds 1 finished run.* 30 in the record, 40 here"):
        record.plan(runs, record.base_raw("smoke", runs), ["train.max_steps=40"])
    # the study's settings are no part of the comparison (an ad-hoc grid inherits them)
    edited = (runs / "smoke" / "spec.toml").read_text().replace("delta = 0.25", "delta = 0.3")
    (runs / "smoke" / "spec.toml").write_text(edited)
    assert record.plan(runs, record.base_raw("smoke", runs), ()).spec.study.delta == 0.3


def test_a_plan_json_from_before_records_keeps_its_overrides(tmp_path):
    """A folder written before the record held every --set: plan.json's overrides are part
    of the record, so the grid resumes as it ran (and the next plan writes it whole)."""
    from sweeps.sweep import record

    runs = tmp_path / "runs"
    folder = runs / "old"
    folder.mkdir(parents=True)
    raw = adhoc_raw("old", "smoke", parse_grid(["lr=0.01,0.1"]), 3)
    (folder / "spec.toml").write_text(to_toml(raw))
    (folder / "plan.json").write_text(json.dumps({"overrides": ["train.max_steps=30"]}))
    assert record.find_spec("old", runs).set["train.max_steps"] == 30
    planned = adhoc_plan(runs, "old", "smoke", ["lr=0.01,0.1"], 3, "", overrides=FAST[1:2])
    assert planned.spec.set["train.max_steps"] == 12  # no run finished: replaced, and said
    assert (
        "replaced" in planned.notes[0]
        and "train.max_steps 30 in the record, 12 here" in (planned.notes[0])
    )
    resumed = record.plan(runs, record.base_raw("old", runs), ())
    assert resumed.record is not None and '"train.max_steps" = 30' in resumed.record
    # a spec's sweep from before: no spec.toml, its plan.json's spec and overrides are it
    from sweeps.core.errors import HarnessError
    from sweeps.sweep.spec import load_spec

    spec_folder = runs / "smoke"
    spec_folder.mkdir()
    plan = {"spec": load_spec("smoke").to_dict(), "overrides": ["train.max_steps=30"]}
    (spec_folder / "plan.json").write_text(json.dumps(plan))
    (spec_folder / "torch-x").mkdir()
    (spec_folder / "torch-x" / "summary.json").write_text("{}")
    assert record.find_spec("smoke", runs).set["train.max_steps"] == 30
    same = record.plan(runs, record.base_raw("smoke", runs), ["train.max_steps=30"])
    assert same.record is not None and '"train.max_steps" = 30' in same.record  # written whole
    with pytest.raises(HarnessError, match="train.max_steps 30 in the record, 60 here"):
        record.plan(runs, record.base_raw("smoke", runs), ["train.max_steps=60"])


@pytest.mark.slow
def test_figures_says_when_it_reports_fewer_runs_than_the_folder_holds(grid_sweep, tmp_path):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(grid_sweep[0] / "grid", runs / "grid")
    one = RunDir(next((runs / "grid").glob("torch-*")))
    stray = one.read_config().with_overrides(["train.max_steps=10"])  # an earlier definition
    RunDir(runs / "grid" / stray.run_id).write_config(stray)
    report = invoke("torch", "figures", "grid", "--runs-dir", runs, "--formats", "vl.json")
    assert report.exit_code == 0, report.output
    assert "holds 1 torch run directory that its plan.json does not plan" in report.output
    text = (runs / "grid" / "report" / "report.md").read_text()
    assert "This report covers 12 of the 13 run directories in `grid`**: 1 (1 torch)" in text
    status = invoke("torch", "status", "grid", "--runs-dir", runs)
    assert "holds 1 torch run directory that its plan.json does not plan" in status.output


# -- watching a run that is training --------------------------------------------------------
def test_watch_frame_shows_a_running_runs_step_loss_lr_and_eta(tmp_path):
    runs = tmp_path / "runs"
    spec = adhoc_spec(runs, "live", "smoke", ["lr=0.01,0.1"], 3, "", write=True)
    from sweeps.sweep.runner import Sweep

    sweep = Sweep(spec, "torch", FAST, runs)
    sweep.write_plan()
    rid, cfg = next(iter(sweep.configs.items()))
    run = RunDir(sweep.run_dir(rid))
    run.write_config(cfg)
    run.append_metrics(
        [
            {"step": s, "train_loss": 3.0, "train_loss_ema": 2.5 + 0.01 * s, "lr": 0.001 * s}
            for s in range(1, 7)
        ]
    )
    lock = RunLock(run.path)
    assert lock.acquire()
    try:
        now = time.time()
        seen = Seen({rid: (now - 12.0, 2)})  # the last frame saw step 2, 12 s ago: 3 s/step
        lines, ended = frame("live", runs, "torch", seen, now=now)
    finally:
        lock.release()
    text = "\n".join(lines)
    assert not ended
    assert "0/12 done, 1 running, 11 left" in lines[0]
    row = next(line for line in lines if rid in line)
    assert "6/12" in row and "2.5600" in row and "0.006" in row
    assert re.search(r"\s18\.0 s\s", row), row  # 6 steps left x 3 s
    assert "sweep ETA" in text and "sweep ETA --" not in text  # 11 more runs x 12 steps x 3 s
    # a lock held on another machine may not show: a run writing metrics counts as running
    assert "1 running" in frame("live", runs, "torch", Seen(), now=time.time())[0][0]
    later = frame("live", runs, "torch", Seen(), now=time.time() + 600)[0]
    assert "0 running" in later[0] and "no run is training now" in "\n".join(later)


def test_watch_frames_option_stops_a_sweep_that_has_not_ended(tmp_path):
    runs = tmp_path / "runs"
    adhoc_spec(runs, "idle", "smoke", ["lr=0.01,0.1"], 3, "", write=True)
    sleeps, out = [], __import__("io").StringIO()
    ended = watch("idle", runs, "torch", interval=7, frames=3, out=out, sleep=sleeps.append)
    assert not ended and sleeps == [7, 7]
    assert out.getvalue().count("0/12 done, 0 running, 12 left") == 3
    assert "no run is training now" in out.getvalue()


def test_train_progress_shows_the_smoothed_loss(tmp_path):
    result = invoke(
        "torch",
        "train",
        "--preset",
        "smoke",
        *sets(FAST),
        "--out",
        tmp_path / "run",
        "--device",
        "cpu",
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"loss \d+\.\d{4} lr ", result.output), result.output


# -- ad-hoc grids ---------------------------------------------------------------------------
def test_adhoc_grids_take_the_study_defaults_of_the_presets_spec():
    from sweeps.study.rules import STUDY_SEEDS

    raw = adhoc_raw("x", "tiny", parse_grid(["train.lr=1e-3,1e-2,0.1"]))
    assert STUDY_SEEDS >= 4 and raw["grid"]["seed"] == list(range(STUDY_SEEDS))  # STUDY.md 7
    assert raw["grid"]["qk_norm"] == ["none", "rms"] and raw["grid"]["n_layer"] == [4]
    assert raw["set"]["train.weight_decay_mode"] == "independent"
    assert raw["study"]["delta"] == 0.1 and raw["study"]["target_loss"] == 2.3
    assert raw["study"]["sensitivity_range"] == [3.16e-4, 0.316]  # tiny's, holding 3 LRs
    assert raw["extend"] == {"max_extra_lrs": 0}
    deep = adhoc_raw("x", "core-L12", parse_grid(["lr=1e-3,1e-2"]))
    assert deep["grid"]["n_layer"] == [12] and deep["study"]["target_loss"] == 2.0
    assert deep["study"]["sensitivity_range"] == [3.16e-4, 0.316]
    narrow = adhoc_raw("x", "tiny", parse_grid(["lr=1,3"]))
    assert narrow["study"]["sensitivity_range"] == [1.0, 3.0]


def test_adhoc_spec_toml_reads_back_as_the_same_spec(tmp_path):
    from sweeps.sweep.spec import load_spec, parse_spec

    raw = adhoc_raw("x", "tiny", parse_grid(["lr=1e-3,1e-2", "n_layer=2,4", "seed=0,1,5"]))
    path = tmp_path / "x.toml"
    path.write_text(to_toml(raw))
    assert load_spec(str(path)) == parse_spec(raw)
    assert load_spec(str(path)).seed == (0, 1, 5)


@pytest.mark.parametrize(
    "items, message",
    [
        (["train.batch_size=4,8"], "--set train.batch_size"),
        (["lr"], "FIELD=V1,V2"),
        (["lr=a,b"], "must be floats"),
        (["train.lr=1e-2,-0.1,0.3"], "--grid train.lr: train.lr must be > 0 (got -0.1)"),
        (["lr=0,1e-2"], "train.lr must be > 0 (got 0)"),
        (["lr=1e-2,inf"], "train.lr must be a finite number"),
        (["seed=0,1", "lr=1e-2,0.1"], "--grid seed=0,1: the study's paired rules need at least 3"),
        (["lr=1e-3,2e-3,1e-2"], "nearest log-uniform list: --grid train.lr=0.001,0.00316,0.01"),
        (["lr=1e-3", "train.lr=1e-2"], "given twice"),
        (["qk_norm=rms"], "give none and at least one kind"),
    ],
)
def test_bad_grids_are_one_line(items, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        adhoc_raw("x", "smoke", parse_grid(items))


def test_adhoc_grid_command_refusals(tmp_path):
    no_name = invoke(
        "torch",
        "sweep",
        "--preset",
        "smoke",
        "--grid",
        "lr=0.01,0.1",
        "--runs-dir",
        tmp_path,
        "--dry-run",
    )
    assert no_name.exit_code == 2 and "--name" in no_name.output
    builtin = invoke("torch", "sweep", *GRID[:-1], "smoke", "--runs-dir", tmp_path, "--dry-run")
    assert builtin.exit_code == 2 and "built-in spec" in builtin.output
    seeds = invoke("torch", "sweep", "smoke", "--seeds", "4", "--runs-dir", tmp_path, "--dry-run")
    assert seeds.exit_code == 2 and "--seeds sets the seeds of an ad-hoc grid" in seeds.output
    default = invoke(
        "torch",
        "sweep",
        "--preset",
        "smoke",
        "--grid",
        "lr=0.01,0.1",
        "--name",
        "three",
        "--runs-dir",
        tmp_path,
        "--dry-run",
    )
    assert default.exit_code == 0 and "x seed 0, 1, 2, 3 = 16 runs" in default.output  # 4
    dry = invoke("torch", "sweep", *GRID, "--runs-dir", tmp_path, "--dry-run", *sets(FAST))
    assert dry.exit_code == 0 and "= 12 runs" in dry.output and not (tmp_path / "grid").exists()


def one_line(result) -> str:
    """The error line of a refused command: exit 2, one line, no traceback."""
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0 and "Traceback" not in result.output
    return result.output.strip()


def test_a_grid_lr_is_refused_in_the_words_of_set(tmp_path):
    grid = invoke(
        "torch", "sweep", *GRID[:3], "train.lr=1e-2,-0.1,0.3", *GRID[4:], "--runs-dir", tmp_path
    )
    assert "--grid train.lr: train.lr must be > 0 (got -0.1)" in one_line(grid)
    single = invoke("torch", "train", "--set", "train.lr=-1e-3", "--out", tmp_path / "t")
    assert "train.lr must be > 0 (got -0.001)" in one_line(single)


def test_too_few_seeds_are_refused_when_the_plan_is_made(tmp_path):
    from sweeps.study.rules import MIN_SEEDS

    args = ["--preset", "smoke", "--grid", "lr=0.01,0.1", "--name", "few", "--runs-dir", tmp_path]
    for extra in (["--dry-run"], []):
        few = invoke("torch", "sweep", *args, "--seeds", MIN_SEEDS - 1, *extra)
        line = one_line(few)
        assert f"--seeds {MIN_SEEDS - 1}:" in line and f"at least {MIN_SEEDS} seeds" in line
    assert not (tmp_path / "few").exists()
    twice = invoke("torch", "sweep", *args, "--seeds", 4, "--grid", "seed=0,1,2", "--dry-run")
    assert "give the seeds once" in one_line(twice)
    assert f"N at least {MIN_SEEDS}" in " ".join(invoke("torch", "sweep", "--help").output.split())


def test_a_grid_that_is_not_log_uniform_is_refused_with_the_nearest_that_is(tmp_path):
    args = ["--preset", "smoke", "--name", "lu", "--runs-dir", tmp_path, "--dry-run"]
    bad = invoke("torch", "sweep", *args, "--grid", "train.lr=0.01,0.02,0.1,1")
    line = one_line(bad)
    assert "not log-uniform" in line
    suggested = line.split("nearest log-uniform list: ")[1].split()
    assert suggested == ["--grid", "train.lr=0.01,0.0464,0.215,1"]
    assert invoke("torch", "sweep", *args, *suggested).exit_code == 0


def test_a_short_budget_is_a_one_line_warning_in_the_plan(tmp_path):
    from sweeps.study.rules import MIN_TOKENS_PER_PARAM

    args = [
        "sweep",
        *GRID,
        "--runs-dir",
        tmp_path,
        "--dry-run",
        "--set",
        "data.builtin_stories=300",
    ]
    short = invoke("torch", *args, "--set", "train.baseline=bigram")
    assert short.exit_code == 0, short.output
    warning = [x for x in short.output.splitlines() if "warning: short budget" in x]
    assert len(warning) == 1, short.output
    assert f"as few as 1.03 tokens per parameter, under {MIN_TOKENS_PER_PARAM:g}" in warning[0]
    assert "not yet learned (not yet below the bigram baseline)" in warning[0]
    cfg = get_preset("smoke").with_overrides(["model.qk_norm=rms"])  # the larger arm: gains
    params = count_params(cfg.model, cfg.vocab_size)["total"]
    steps = math.ceil(MIN_TOKENS_PER_PARAM * params / cfg.tokens_per_step)
    for max_steps, warned in ((steps - 1, True), (steps, False)):
        shown = invoke(
            "torch",
            *args,
            "--set",
            "train.baseline=bigram",
            "--set",
            f"train.max_steps={max_steps}",
        )
        assert shown.exit_code == 0 and ("short budget" in shown.output) == warned, shown.output
        if warned:  # below the limit, and says so in as many digits as it takes
            fewest = float(re.search(r"as few as (\S+) tokens", shown.output)[1])
            assert fewest < MIN_TOKENS_PER_PARAM
    # smoke's own baseline is none: no run fails for not being below a baseline
    assert "short budget" not in invoke("torch", *args).output


# -- data found early -----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["mlx", "torch"])
def test_dry_run_says_which_data_is_missing_and_how_to_prepare_it(tmp_path, backend):
    result = invoke(backend, "sweep", "core", "--dry-run", "--runs-dir", tmp_path)
    assert result.exit_code == 0, result.output
    assert (
        "data: tinystories corpus, tokenizer gpt2-compact: NOT prepared; needs the Hugging "
        f"Face hub once: run `qk{backend} data prepare --corpus tinystories --tokenizer "
        "gpt2-compact`"
    ) in result.output


def test_dry_run_says_when_the_data_is_prepared(tmp_path):
    from sweeps.data import load_tokens

    load_tokens(DataConfig(builtin_stories=300))
    result = invoke("torch", "sweep", *GRID, "--runs-dir", tmp_path, "--dry-run", *sets(FAST))
    assert "data: builtin corpus, tokenizer bytes: prepared" in result.output


def test_the_offline_error_names_the_tokenizer(monkeypatch, tmp_path):
    from sweeps.data import cache
    from sweeps.data.corpora import tinystories as corpora

    def offline(path):
        raise corpora.HubUnreachable("roneneldan/TinyStories")

    monkeypatch.setattr(corpora, "_load_tinystories", offline)
    with pytest.raises(DataError, match="--corpus tinystories --tokenizer gpt2-compact`"):
        cache.load_tokens(DataConfig(corpus="tinystories", tokenizer="gpt2-compact"), tmp_path)


def _offline_hub(monkeypatch, reachable: bool):
    """datasets.load_dataset replaced: it says whether it ran in offline mode and never
    touches the network; hub_reachable replaced by `reachable` (None: must not be asked)."""
    import datasets

    from sweeps.data.corpora import tinystories as corpora

    calls = []

    def load_dataset(repo, split):
        offline = datasets.config.HF_HUB_OFFLINE and os.environ.get("HF_HUB_OFFLINE") == "1"
        calls.append(offline)
        if offline:  # what datasets raises offline without the dataset in its cache
            raise ConnectionError(f"Couldn't reach '{repo}' on the Hub (OfflineModeIsEnabled)")
        return {"train": FakeSplit(["a story", "another"]), "validation": FakeSplit(["a third"])}[
            split
        ]

    def probe(timeout=corpora.HUB_PROBE_TIMEOUT_S):
        assert reachable is not None, "the hub was probed although the user set offline mode"
        return reachable

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setattr(corpora, "hub_reachable", probe)
    for key in corpora.OFFLINE_VARS:
        monkeypatch.delenv(key, raising=False)
    return calls


class FakeSplit(dict):
    def __init__(self, texts):
        super().__init__(text=texts)
        self.column_names = ["text"]


def test_an_offline_prepare_fails_at_once_without_the_hubs_retries(monkeypatch, tmp_path):
    import datasets

    from sweeps.data import cache
    from sweeps.data.corpora import tinystories as corpora

    calls = _offline_hub(monkeypatch, reachable=False)
    data = DataConfig(corpus="tinystories", tokenizer="gpt2-compact")
    began = time.perf_counter()
    with pytest.raises(corpora.HubUnreachable, match="--corpus tinystories --tokenizer gpt2"):
        cache.load_tokens(data, tmp_path)
    assert time.perf_counter() - began < 5 and calls == [True]  # offline: cache or nothing
    assert "HF_HUB_OFFLINE" not in os.environ and not datasets.config.HF_HUB_OFFLINE  # restored
    # online, the hub is asked as before
    calls = _offline_hub(monkeypatch, reachable=True)
    assert corpora._load_tinystories("") == (["a story", "another"], ["a third"])
    assert calls == [False, False]
    # the user's own setting is honoured, without a probe
    calls = _offline_hub(monkeypatch, reachable=None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(corpora.HubUnreachable):
        corpora._load_tinystories("")
    assert calls == [True] and os.environ["HF_HUB_OFFLINE"] == "1"
    calls = _offline_hub(monkeypatch, reachable=None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert corpora._load_tinystories("")[1] == ["a third"] and calls == [False, False]


def test_the_hub_probe_is_one_bounded_connection(monkeypatch):
    import socket

    from sweeps.data.corpora import tinystories as corpora

    with socket.socket() as s:  # a local port that nothing listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    began = time.perf_counter()
    assert not corpora.hub_reachable(timeout=2.0)
    assert time.perf_counter() - began < 2.5
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert corpora.hub_reachable(timeout=2.0)


# -- files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_are_as_readable_as_the_umask_allows(tmp_path, monkeypatch, mask, mode):
    monkeypatch.setattr(files, "_UMASK", None)
    old = os.umask(mask)
    try:
        files.write_atomic(tmp_path / "report.md", "x")
        files.write_json_atomic(tmp_path / "summary.json", {"a": 1})
        run = RunDir(tmp_path / "run")
        run.save_checkpoint(1, {"w": np.zeros(2, np.float32)}, {"m": np.zeros(2, np.float32)}, {})
    finally:
        os.umask(old)
        monkeypatch.setattr(files, "_UMASK", None)
    for path in (
        tmp_path / "report.md",
        tmp_path / "summary.json",
        run.latest_checkpoint() / "model.safetensors",
    ):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path
    assert stat.S_IMODE(run.latest_checkpoint().stat().st_mode) == 0o777 & ~mask


# -- the command line's smaller edges --------------------------------------------------------
def test_blas_is_checked_only_by_commands_that_run_mlx(monkeypatch, capsys):
    from sweeps.platform import blas

    assert blas.runs_mlx(["sweep", "smoke"]) and blas.runs_mlx(["train", "--preset", "tiny"])
    assert not blas.runs_mlx(["--help"]) and not blas.runs_mlx(["sweep", "--help"])
    assert not blas.runs_mlx(["status", "smoke"]) and not blas.runs_mlx(["figures", "smoke"])
    assert not blas.runs_mlx([])
    monkeypatch.delenv(blas.GUARD, raising=False)
    monkeypatch.delenv(blas.NOTE, raising=False)
    monkeypatch.setattr(blas, "preload_env", lambda environ=None: None)  # no OpenBLAS
    blas.ensure_fast_blas(["status", "smoke"])
    assert capsys.readouterr().err == "" and blas.take_note() is None
    blas.ensure_fast_blas(["sweep", "smoke"])  # the warning is kept for the command to say
    assert capsys.readouterr().err == "" and "slow reference BLAS" in blas.take_note()
    assert blas.take_note() is None  # once per command
    blas.ensure_fast_blas(["sweep", "smoke"])
    assert capsys.readouterr().err == "" and blas.take_note() is None


def test_workers_zero_is_refused_by_a_dry_run_too(tmp_path):
    result = invoke(
        "torch", "sweep", "smoke", "--workers", "0", "--dry-run", "--runs-dir", tmp_path
    )
    assert result.exit_code == 2 and "--workers must be at least 1" in result.output


def test_a_field_without_its_section_suggests_it(tmp_path):
    result = invoke("torch", "train", "--set", "lr=1e-3", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "did you mean train.lr?" in result.output
    with pytest.raises(ConfigError, match="did you mean train.max_steps"):
        get_preset("smoke").with_overrides(["train.max_step=3"])


def test_figures_of_a_misspelt_sweep_suggests_the_folder(tmp_path):
    (tmp_path / "smoke").mkdir()
    (tmp_path / "smoke" / "plan.json").write_text(json.dumps({"runs": []}))
    result = invoke("torch", "figures", "smok", "--runs-dir", tmp_path)
    assert result.exit_code == 2
    assert "did you mean `figures smoke`?" in result.output and "sweep smok" not in result.output


@pytest.mark.parametrize("backend", ["mlx", "torch"])
def test_figures_of_a_sweep_not_run_suggests_the_program_the_user_ran(tmp_path, backend):
    result = invoke(backend, "figures", "nothing", "--runs-dir", tmp_path)
    other = "qkmlx" if backend == "torch" else "qktorch"
    # not a spec: the ad-hoc grid that starts it (issue 72; `sweep nothing` would fail)
    assert f"`qk{backend} sweep --preset smoke " in one_line(result) and other not in result.output


def test_the_sweep_helps_set_example_is_one_a_sweep_accepts(tmp_path):
    text = " ".join(invoke("torch", "sweep", "--help").output.split())
    example = re.search(r"e\.g\. --set (\S+) \(repeatable\)", text)[1]
    result = invoke(
        "torch", "sweep", "smoke", "--set", example, "--runs-dir", tmp_path, "--dry-run"
    )
    assert result.exit_code == 0, result.output


def test_config_show_explain_gives_each_field_its_unit_and_meaning():
    result = invoke("torch", "config", "show", "tiny", "--explain")
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("train.max_steps"))
    assert "400" in line and "[steps]" in line and "optimizer steps" in line
    assert re.search(r"model\.block_size\s+= 128\s+\[tokens\]\s+context length", result.output)
    for field in ("model.qk_init", "train.weight_decay_mode", "data.tokenizer", "seed"):
        assert re.search(rf"^\s+{re.escape(field)}\s+=.*\]\s+\S", result.output, re.M), field


def test_sweep_help_lists_the_specs():
    result = invoke("torch", "sweep", "--help")
    from sweeps.sweep.spec import SPECS_DIR

    listed = "".join(result.output.split())  # click wraps the line, also after a dash
    assert "Specs:" + ",".join(sorted(p.stem for p in SPECS_DIR.glob("*.toml"))) in listed


def test_an_adhoc_grid_resumes_with_the_spec_it_wrote(tmp_path):
    first = adhoc_spec(tmp_path, "held", "smoke", ["lr=0.01,0.1"], 3, "", write=True)
    path = tmp_path / "held" / RECORD
    path.write_text(path.read_text().replace("delta = 0.25", "delta = 0.3"))  # as if written
    again = adhoc_spec(tmp_path, "held", "smoke", ["lr=0.01,0.1"], 3, "", write=True)
    assert first.study.delta == 0.25 and again.study.delta == 0.3  # before smoke.toml changed


def test_single_runs_and_sweep_workers_choose_threads_alike(monkeypatch):
    from sweeps.platform.blas import THREAD_VARS, thread_env

    assert thread_env(1, 8, {}) == {"OMP_WAIT_POLICY": "PASSIVE"}  # every core, passive
    assert thread_env(4, 8, {})["OMP_NUM_THREADS"] == "2"
    assert thread_env(1, 8, {"OMP_NUM_THREADS": "3"}, threads=1)["MKL_NUM_THREADS"] == "1"
    for key in (*THREAD_VARS, "OMP_WAIT_POLICY"):
        monkeypatch.delenv(key, raising=False)  # restored after the test
    # set before anything else (here the --out that cannot be written ends the command)
    invoke("torch", "train", "--threads", 1, "--out", "/proc/no/such/run")
    assert os.environ.get("OMP_NUM_THREADS") == "1" and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_watch_is_live_between_checkpoints(tmp_path):
    """A run in progress shows its step, smoothed loss and LR before its first checkpoint: its
    metric rows reach disk every block of train.log_interval steps, not only at checkpoints."""
    from sweeps.run.backends import trainer_factory
    from sweeps.run.loop import train_run
    from sweeps.sweep.runner import Sweep

    runs = tmp_path / "runs"
    spec = adhoc_spec(runs, "live", "smoke", ["lr=0.01,0.1"], 3, "", write=True)
    slow = FAST[:1] + ["train.max_steps=60", "train.checkpoint_interval=60", "train.log_interval=5"]
    sweep = Sweep(spec, "torch", slow, runs)
    sweep.write_plan()
    rid, cfg = next(iter(sweep.configs.items()))
    run = RunDir(sweep.run_dir(rid))
    train_run(cfg, run.path, trainer_factory("torch", "cpu"), stop_after=25)  # killed at 25
    assert run.latest_checkpoint() is None  # nothing saved: only the rows tell the progress
    lock = RunLock(run.path)
    assert lock.acquire()
    try:
        lines, _ = frame("live", runs, "torch", Seen(), now=time.time())
    finally:
        lock.release()
    row = next(line for line in lines if rid in line)
    step, smoothed, lr = re.search(r"\b(\d+)/60\s+(\S+)\s+(\S+)", row).groups()
    assert 5 <= int(step) <= 25, row  # the last block read before the kill, not step 0
    assert float(smoothed) > 0 and float(lr) > 0, row
