"""Sweeps: specs, the sweep and status commands, resume after a real kill, locks, Ray.

Every sweep here is real (worker processes training real runs) at toy scale: the smoke
preset on a 300-story corpus for 20-60 steps.
"""

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.errors import ConfigError
from sweeps.core.params import count_params
from sweeps.run.rundir import RunDir
from sweeps.sweep.command import command_plan
from sweeps.sweep.grid import grid_additions, max_extra_runs
from sweeps.sweep.runner import Sweep
from sweeps.sweep.spec import MAX_RUNS, SPECS_DIR, load_spec, parse_spec
from sweeps.sweep.workers import uses_gpus, worker_envs

FAST = {
    "data.builtin_stories": 300,
    "train.max_steps": 12,
    "train.warmup_steps": 2,
    "train.eval_interval": 6,
    "train.checkpoint_interval": 4,
}
QKTORCH = [sys.executable, "-c", "from qktorch.cli import main; main()"]


def write_spec(
    tmp_path,
    name,
    lr,
    qk_norm=("none", "rms"),
    n_layer=(2,),
    seed=(0, 1, 2),
    settings=None,
    extend=None,
):
    """A toy spec: arms off and on from the qk_norm list, the analysis pre-registered."""
    settings = {**FAST, **(settings or {})}
    extend = {"max_extra_lrs": 0, **(extend or {})}
    lines = [
        f'name = "{name}"',
        'preset = "smoke"',
        "[grid]",
        f"qk_norm = {json.dumps(list(qk_norm))}",
        f"lr = {json.dumps(list(lr))}",
        f"n_layer = {list(n_layer)}",
        f"seed = {list(seed)}",
        "[set]",
    ]
    lines += [f'"{k}" = {json.dumps(v)}' for k, v in settings.items()]
    lines += [
        "[study]",
        "delta = 0.25",
        f"sensitivity_range = {json.dumps([lr[0], lr[1]])}",
        "target_loss = 4.5",
    ]
    lines += ["[extend]"] + [f"{k} = {json.dumps(v)}" for k, v in extend.items()]
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def sweep(backend, spec, runs_dir, *args):
    return CliRunner().invoke(
        make_cli(backend), ["sweep", spec, "--runs-dir", str(runs_dir), "--device", "cpu", *args]
    )


def final_losses(sweep_dir):
    df = pd.read_parquet(Path(sweep_dir) / "results.parquet")
    return {
        r.run_id: (r.status, None if pd.isna(r.final_val_loss) else r.final_val_loss)
        for r in df.itertuples()
    }


def metrics(sweep_dir):
    return {
        p.parent.name: RunDir(p.parent).read_metrics()
        for p in sorted(Path(sweep_dir).glob("*/config.json"))
    }


# -- specs ------------------------------------------------------------------------------------
def test_shipped_specs_expand_to_the_study_grid():
    assert {"core", "depth", "tiny", "smoke"} <= {p.stem for p in SPECS_DIR.glob("*.toml")}
    core, depth = load_spec("core"), load_spec("depth")
    for spec in (core, depth, load_spec("tiny"), load_spec("smoke")):
        arms = {a.name: a for a in spec.arms}
        assert arms["off"].set["model.qk_norm"] == "none" and arms["on"].full
        assert (spec.study.reference, spec.study.primary) == ("off", "on")
        steps = [b / a for a, b in zip(spec.lr, spec.lr[1:])]
        assert all(s <= math.sqrt(10) * 1.001 for s in steps), spec.name  # half-decade or finer
        configs = spec.configs("torch")
        depths = spec.n_layer or (1,)
        per_depth = sum(len(a.lr or spec.lr) for a in spec.arms) * len(spec.seed)
        assert len(configs) == per_depth * len(depths)
        assert len({c.run_id for c in configs}) == len(configs)
        assert [c.run_id for c in configs] == [c.run_id for c in spec.configs("torch")]
    for spec in (core, depth):
        assert len(spec.lr) >= 8 and len(spec.seed) >= 3
        assert spec.base_config("torch").train.weight_decay_mode == "independent"
    # docs/STUDY.md section 27: depth drops core's lowest LR and its start-matched control
    assert core.study.start_control == "off-warm" and depth.study.start_control is None
    assert core.n_layer == (6,) and depth.lr == core.lr[1:]
    # section 27 (as section 22): H3 on depths 2-12, depth 1 trained beside and set apart;
    # every rung at or above the study's floor of tokens per parameter, and every depth-6 run
    # of the ladder is core's run at that LR, config for config
    assert depth.n_layer == (1, 2, 3, 4, 6, 8, 12) and depth.study.set_apart == (1,)
    assert {c.model.n_embd for c in depth.configs("torch")} == {384}
    for spec in (core, depth):
        for cfg in spec.configs("torch"):
            tokens = cfg.train.max_steps * cfg.tokens_per_step
            assert tokens / count_params(cfg.model, cfg.vocab_size)["total"] >= 5.0, cfg.run_id
    rung6 = {c.run_id: c for c in depth.configs("torch") if c.model.n_layer == 6}
    in_core = {c.run_id: c for c in core.configs("torch")}
    assert len(rung6) == 64 and all(in_core.get(k) == c for k, c in rung6.items())
    assert len(load_spec("tiny").lr) >= 8


def test_width_control_trains_only_off_warm_and_reuses_the_width_ladders_runs():
    """docs/STUDY.md section 12: its off and on runs are cpu-width's (the same configs, so the
    same run ids), which is what lets it reuse them and compare like with like."""
    control = load_spec("cpu-width-control").configs("torch")
    ladder_ids = {c.run_id for c in load_spec("cpu-width").configs("torch")}
    warm = [c for c in control if c.run_id.startswith("torch-off-warm-")]
    assert len(warm) == 24 and {c.model.qk_init for c in warm} == {"matched"}
    reused = {c.run_id for c in control} - {c.run_id for c in warm}
    assert len(reused) == 48 and reused <= ladder_ids
    assert {c.model.n_embd for c in warm} == {64, 96, 128}


def test_spec_set_values_and_run_ids(tmp_path):
    spec = load_spec(write_spec(tmp_path, "ids", [1e-2, 0.1], seed=(0, 1, 2)))
    configs = spec.configs("mlx")
    assert all(c.train.max_steps == 12 and c.data.builtin_stories == 300 for c in configs)
    assert all(c.backend == "mlx" for c in configs)
    assert configs[0].run_id.startswith("mlx-off-L2-lr0.01-s0-") and configs[0].arm == "off"
    assert {c.run_id for c in configs}.isdisjoint(c.run_id for c in spec.configs("torch"))


STUDY = {"delta": 0.1, "sensitivity_range": [1e-3, 1e-2], "target_loss": 3.0}
ARMS = {"off": {"set": {"model.qk_norm": "none"}}, "on": {"set": {"model.qk_norm": "rms"}}}
GRID = {"lr": [1e-3, 1e-2, 0.1]}


def raw_spec(**parts):
    """A valid spec dict with some parts replaced (None: left out)."""
    raw = {"preset": "smoke", "grid": GRID, "arms": ARMS, "study": STUDY, **parts}
    return {k: v for k, v in raw.items() if v is not None}


def test_a_valid_spec_with_arms_a_control_subset_and_comparisons_parses():
    spec = parse_spec(
        raw_spec(
            arms={
                **ARMS,
                "off-warm": {
                    "set": {"model.qk_norm": "none", "model.qk_init": "matched"},
                    "lr": [1e-3],
                },
            },
            study={**STUDY, "start_control": "off-warm", "comparisons": [["off", "off-warm"]]},
        )
    )
    arms = [c.arm for c in spec.configs("torch")]
    assert arms.count("off-warm") == 4 and arms.count("on") == 12  # one LR x 4 seeds
    assert spec.study.all_comparisons() == [("off", "on"), ("off-warm", "on"), ("off", "off-warm")]


@pytest.mark.parametrize(
    "parts,message",
    [
        ({"grid": {"lr": [0.1, 0.01]}}, "strictly increasing"),
        ({"grid": {**GRID, "depth": [2]}}, "unknown key 'depth'"),
        ({"set": {"train.lr": 1}}, "set may not fix train.lr"),
        ({"set": {"model.n_head": 5}}, "model.n_embd must be divisible"),
        ({"preset": "nope"}, "unknown preset 'nope'"),
        ({"extend": {"until": "some"}}, "until"),
        ({"extend": {"refine": True, "resolution": 0}}, "resolution must be a positive"),
        # the pre-registration (docs/STUDY.md section 6)
        ({"study": None}, "has no \\[study\\]"),
        ({"study": {**STUDY, "delta": 0}}, "delta must be a number > 0"),
        ({"study": {**STUDY, "sensitivity_range": [1e-2, 1e-3]}}, "0 < low < high"),
        ({"study": {**STUDY, "sensitivity_range": []}}, "must be \\[low, high\\]"),
        ({"study": {**STUDY, "sensitivity_range": [2e-3, 5e-3]}}, "holds 0 grid LR"),
        (
            {
                "grid": {"lr": [1e-3, 1e-2, 0.1, 0.2]},
                "study": {**STUDY, "sensitivity_range": [1e-3, 0.2]},
            },
            "not log-uniform.*nearest log-uniform LRs: \\[0.001, 0.00585, 0.0342, 0.2\\]",
        ),
        ({"study": {**STUDY, "min_effect": -0.01}}, "min_effect must be a number >= 0"),
        ({"study": {k: v for k, v in STUDY.items() if k != "target_loss"}}, "has no target_loss"),
        ({"study": {**STUDY, "primary": "off"}}, "primary and reference are both"),
        ({"study": {**STUDY, "start_control": "warm"}}, "start_control 'warm' is not an arm"),
        ({"grid": {**GRID, "seed": [0, 1]}}, "at least 3 distinct seeds"),
        ({"target_loss": 2.0}, "no longer a top-level key"),
        # arms (issue: controls)
        ({"arms": {**ARMS, "x": {"set": {"seed": 3}}}}, "set may not fix seed"),
        ({"arms": {**ARMS, "x": {"set": {"train.lr": 0.1}}}}, "set may not fix train.lr"),
        ({"arms": {**ARMS, "twin": {"set": {"model.qk_norm": "rms"}}}}, "resolve to the same"),
        (
            {"arms": {**ARMS, "low": {"set": {"model.qk_init": "matched"}, "lr": [3e-4]}}},
            "not in the grid's lr list",
        ),
        ({"arms": {**ARMS, "Off": {}}}, "lower-case letters"),
        ({"arms": None}, "has no arms"),
    ],
)
def test_bad_specs_are_refused_with_a_clear_message(parts, message):
    with pytest.raises(ConfigError, match=message):
        parse_spec(raw_spec(**parts))


def test_the_nearest_log_uniform_list_keeps_the_endpoints_and_count():
    from sweeps.sweep.spec import is_log_uniform, nearest_log_uniform

    assert nearest_log_uniform([1e-3, 2e-3, 1e-2]) == [1e-3, 3.16e-3, 1e-2]
    for lrs in ([1e-4, 3e-4, 5e-4, 0.3], [0.01, 0.0101, 0.0102, 0.011], [2e-3, 0.7]):
        out = nearest_log_uniform(lrs)
        assert len(out) == len(set(out)) == len(lrs) and is_log_uniform(out), out
        assert out[0] == pytest.approx(lrs[0], rel=5e-3) and out[-1] == pytest.approx(
            lrs[-1], rel=5e-3
        )


def test_unknown_spec_and_swept_overrides_exit_2_with_one_line(tmp_path):
    result = CliRunner().invoke(make_cli("torch"), ["sweep", "nope", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0
    assert "unknown sweep spec 'nope'" in result.output and "core, cpu" in result.output
    result = sweep("torch", "smoke", tmp_path, "--set", "train.lr=1")
    assert result.exit_code == 2 and "train.lr is fixed by the spec's grid" in result.output
    assert not any(tmp_path.iterdir())


def summary(status: str, final: float = 2.0) -> dict:
    return {"status": status, "init_loss": 5.5, "final_val_loss": final}


def test_the_grid_extends_to_failure_then_bisects_brackets_to_the_resolution():
    spec = parse_spec(
        raw_spec(
            grid={"lr": [1e-3, 1e-2, 1e-1], "seed": [0, 1, 2]},
            extend={"max_extra_lrs": 2, "until": "all", "refine": True, "resolution": 0.25},
        )
    )
    configs = spec.configs("torch")
    done = {c.run_id: summary("ok") for c in configs}
    assert grid_additions(spec, configs, {}) == {}  # nothing finished: nothing to decide
    assert grid_additions(spec, configs, done)[2][0] == [1.0]  # factor: the grid's top ratio
    # one seed of one arm failing at the top is not enough under until = "all"
    top = [c for c in configs if c.train.lr == 0.1]
    done[top[0].run_id] = summary("unstable")
    assert grid_additions(spec, configs, done)[2][0] == [1.0]
    for c in top:  # off fails at 0.1 in every seed, on does not
        done[c.run_id] = summary("diverged" if c.arm == "off" else "ok")
    configs = spec.configs("torch", lrs={2: [1.0]})
    done.update({c.run_id: summary("diverged") for c in configs if c.train.lr == 1.0})
    # reached: bisect 1e-2 (ok) .. 1e-1 (fails) for off, 1e-1 .. 1 for on
    added = grid_additions(spec, configs, done)[2]
    assert added[0] == [0.0316, 0.316] and "off seed 0: 0.01 ok, 0.1 fails" in added[1]
    configs = spec.configs("torch", lrs={2: [1.0, 0.0316, 0.316]})
    done.update(
        {
            c.run_id: summary("ok" if (c.arm, c.train.lr) == ("on", 0.0316) else "diverged")
            for c in configs
            if c.train.lr in (0.0316, 0.316)
        }
    )
    # brackets now half a decade wide: one more round down to 0.25 decades
    assert grid_additions(spec, configs, done)[2][0] == [0.0178, 0.178]
    configs = spec.configs("torch", lrs={2: [1.0, 0.0316, 0.316, 0.0178, 0.178]})
    done.update({c.run_id: summary("ok") for c in configs if c.train.lr in (0.0178, 0.178)})
    assert grid_additions(spec, configs, done) == {}  # every bracket within 0.25 decades
    # the cap: at most max_extra_lrs above the grid
    capped = spec.configs("torch", lrs={2: [1.0, 10.0]})
    assert grid_additions(spec, capped, {c.run_id: summary("ok") for c in capped}) == {}
    # failed processes decide nothing
    assert grid_additions(spec, configs[:4], {c.run_id: summary("failed") for c in configs}) == {}


def test_refinement_bisects_the_necessity_threshold_bracket():
    spec = parse_spec(
        raw_spec(
            grid={"lr": [1e-3, 1e-2, 1e-1], "seed": [0, 1, 2]},
            extend={"max_extra_lrs": 0, "refine": True, "resolution": 0.5},
        )
    )
    configs = spec.configs("torch")
    gap = {1e-3: 0.0, 1e-2: 0.0, 1e-1: 0.6}  # QK-norm helps from 0.1 on, nowhere fails
    done = {
        c.run_id: summary(
            "ok",
            2.0
            + (gap[c.train.lr] + 0.004 * (c.seed - 1) if c.arm == "off" else 0.0)
            + 0.01 * c.seed,
        )
        for c in configs
    }  # off's seed jitter: exact ties bound nothing
    added = grid_additions(spec, configs, done)[2]
    assert added[0] == [0.0316] and "stability threshold between 0.01 and 0.1" in added[1]


def test_refinement_bisects_stuck_brackets_read_from_the_recorded_baseline():
    """Both arms finish worse than the bigram baseline at 0.1 without diverging: stuck, the
    primary failure. The runner reads the baseline as summary.json records it (bigram_loss);
    without it, it would see no failure and bisect nothing (cpu-width's widths 96 and 128 lost
    their 0.0562 this way)."""
    spec = parse_spec(
        raw_spec(
            grid={"lr": [1e-3, 1e-2, 1e-1], "seed": [0, 1, 2]},
            extend={"max_extra_lrs": 0, "refine": True, "resolution": 0.25},
            set={"train.baseline": "bigram"},  # the study presets' rule (smoke has none)
        )
    )
    assert spec.base_config("torch").train.baseline == "bigram"
    configs = spec.configs("torch")
    done = {
        c.run_id: {
            **summary("unstable" if c.train.lr == 0.1 else "ok", 2.5 if c.train.lr == 0.1 else 2.0),
            "bigram_loss": 2.34,
        }
        for c in configs
    }
    added = grid_additions(spec, configs, done)[2]
    assert added[0] == [0.0316] and "off seed 0: 0.01 ok, 0.1 fails" in added[1]
    assert "stability threshold" not in added[1]  # both stuck at 0.1: a ceiling, no bracket
    # the same runs above a baseline the runs did not record: nothing failed, nothing to bisect
    unrecorded = {
        rid: {k: v for k, v in s.items() if k != "bigram_loss"} for rid, s in done.items()
    }
    assert grid_additions(spec, configs, unrecorded) == {}


def test_a_width_ladder_keeps_the_head_size_and_grows_each_width_on_its_own():
    plain = parse_spec(raw_spec(grid={**GRID, "seed": [0, 1, 2]}))
    ladder = parse_spec(
        raw_spec(
            grid={**GRID, "n_embd": [16, 32], "seed": [0, 1, 2]},
            extend={"refine": True, "resolution": 0.5},
        )
    )
    assert (ladder.ladder, plain.ladder, ladder.rungs) == ("n_embd", "n_layer", 2)
    configs = ladder.configs("torch")
    base = plain.base_config("torch").model
    head = base.n_embd // base.n_head
    assert {(c.model.n_embd, c.model.n_head) for c in configs} == {
        (16, 16 // head),
        (32, 32 // head),
    }
    # the preset's width is the preset's config: the same run ids, so those runs are shared
    assert {c.run_id for c in configs if c.model.n_embd == 16} == {
        c.run_id for c in plain.configs("torch")
    }
    # off fails at the top LR at width 32 only: width 16 extends upward, width 32 stops there
    done = {
        c.run_id: summary(
            "diverged" if (c.arm, c.model.n_embd, c.train.lr) == ("off", 32, 0.1) else "ok"
        )
        for c in configs
    }
    added = grid_additions(ladder, configs, done)
    assert set(added) == {16, 32} and added[16][0] == [1.0] and "extension" in added[16][1]
    assert added[32][0] == [0.0316]  # its failure bracket 0.01 .. 0.1 bisected
    grown = ladder.configs("torch", lrs={16: [1.0]})
    assert {c.model.n_embd for c in grown if c.train.lr == 1.0} == {16}


def test_an_ad_hoc_width_ladder_plans_and_shows_its_widths(tmp_path):
    from sweeps.sweep.status import loss_table

    args = ["sweep", "--preset", "smoke", "--grid", "n_embd=16,32", "--grid", "lr=1e-3,1e-2"]
    args += ["--name", "wl", "--runs-dir", str(tmp_path), "--dry-run"]
    result = CliRunner().invoke(make_cli("torch"), args)
    assert result.exit_code == 0, result.output
    assert "x n_embd 16, 32 x seed" in result.output and "w16 " in result.output
    rows = [
        {"n_layer": 2, "n_embd": w, "lr": lr, "arm": "off", "state": "ok", "loss": w / 10 + lr}
        for w in (16, 32)
        for lr in (1e-3, 1e-2)
    ]
    table = loss_table(rows)
    blocks = [line for line in table if line.startswith("n_embd")]
    assert blocks == ["n_embd 16", "n_embd 32"]
    assert table[table.index("n_embd 32") + 2].split() == ["0.001", "3.201"]


@pytest.mark.parametrize(
    "grid,message",
    [
        ({**GRID, "n_layer": [1, 2], "n_embd": [16, 32]}, "ladders depth or width, not both"),
        ({**GRID, "n_embd": [16, 20]}, "not a multiple of the head size"),
    ],
)
def test_a_ladder_of_two_dimensions_or_a_width_off_the_head_size_is_refused(grid, message):
    with pytest.raises(ConfigError, match=message):
        parse_spec(raw_spec(grid=grid))


def test_only_a_width_ladder_fixes_the_width():
    width = {**GRID, "n_embd": [16, 32]}
    with pytest.raises(ConfigError, match=r"set may not fix model.n_embd: \[grid\] n_embd"):
        parse_spec(raw_spec(grid=width, set={"model.n_embd": 64}))
    arms = {**ARMS, "on": {"set": {"model.qk_norm": "rms", "model.n_head": 4}}}
    with pytest.raises(ConfigError, match="arms.on.*set may not fix model.n_head"):
        parse_spec(raw_spec(grid=width, arms=arms))
    ladder = parse_spec(raw_spec(grid=width))
    with pytest.raises(ConfigError, match="fixed by the width ladder"):
        ladder.base_config("torch", ["model.n_embd=64"])
    # a depth ladder may fix a width like any other field, in the spec or on the command
    plain = parse_spec(raw_spec(set={"model.n_embd": 32}))
    assert {c.model.n_embd for c in plain.configs("torch", ["model.n_head=4"])} == {32}


def test_max_extra_runs_bounds_extension_and_refinement():
    plain = parse_spec(raw_spec(extend={"max_extra_lrs": 2}))
    assert max_extra_runs(plain) == 2 * 2 * 4  # 2 LRs x 2 arms x 4 seeds
    refined = parse_spec(raw_spec(extend={"max_extra_lrs": 0, "refine": True, "resolution": 0.25}))
    # gaps of a decade: 2 rounds (0.5, 0.25), each at most min(9 brackets, gaps x 2^r) LRs
    assert max_extra_runs(refined) == (2 + 4) * 8


def test_local_workers_get_one_gpu_each_or_a_share_of_the_cores(monkeypatch):
    envs = worker_envs(3, ["3", "5"], 16, {})
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["3", "5", "3"]
    assert not any("OMP_NUM_THREADS" in e for e in envs)
    assert (
        worker_envs(2, [], 2, {})
        == [
            {
                "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "OMP_WAIT_POLICY": "PASSIVE",
            }
        ]
        * 2
    )
    assert worker_envs(2, [], 8, {"OMP_NUM_THREADS": "8"})[0]["MKL_NUM_THREADS"] == "4"
    assert worker_envs(1, [], 2, {}) == [{"OMP_WAIT_POLICY": "PASSIVE"}]
    assert worker_envs(1, [], 2, {"OMP_WAIT_POLICY": "ACTIVE"}) == [{}]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert uses_gpus("torch", "auto") == ["0", "1"] and uses_gpus("torch", "cpu") == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert uses_gpus("torch", "cuda") == []


# -- the sweep command ----------------------------------------------------------------------
def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    result = sweep("torch", "smoke", tmp_path / "runs", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "= 36 runs" in result.output and "tokens" in result.output
    # the runs counted, not listed (issue 72: the cost, printed last, stays on the screen)
    assert "pending     torch-o" not in result.output
    assert "  runs: 36 pending (each with its state: --dry-run --list-runs)" in result.output
    listed = sweep("torch", "smoke", tmp_path / "runs", "--dry-run", "--list-runs")
    assert listed.output.count("pending     torch-o") == 36
    assert not (tmp_path / "runs").exists()


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory):
    """A 2-LR x 2-arm x 3-seed torch sweep (the top LR diverges), run once with two workers."""
    tmp = tmp_path_factory.mktemp("sweep")
    spec = write_spec(tmp, "basic", [1e-2, 1.0])
    result = sweep("torch", spec, tmp / "runs", "--workers", "2")
    return spec, tmp / "runs", result


@pytest.mark.slow
def test_a_sweep_runs_to_completion_and_a_rerun_skips_everything(finished_sweep):
    spec, runs, result = finished_sweep
    assert result.exit_code == 0, result.output
    assert "12 runs" in result.output and "ETA" in result.output
    assert "2 worker process(es)" in result.output
    plan = json.loads((runs / "basic" / "plan.json").read_text())
    assert plan["name"] == "basic" and plan["spec"]["grid"]["lr"] == [0.01, 1.0]
    assert plan["spec"]["study"]["target_loss"] == 4.5  # the pre-registration is recorded
    df = pd.read_parquet(runs / "basic" / "results.parquet")
    assert sorted(df.run_id) == sorted(r["run_id"] for r in plan["runs"])
    assert dict(zip(df.lr, df.status)) == {0.01: "ok", 1.0: "diverged"}
    assert set(df.arm) == {"off", "on"} and df.final_val_loss.notna().sum() == 6
    stamps = {p: p.stat().st_mtime_ns for p in (runs / "basic").glob("*/summary.json")}
    again = sweep("torch", spec, runs, "--workers", "2")
    assert again.exit_code == 0 and "nothing to run" in again.output
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def foreign_run(sweep_dir: Path, rows: int = 50) -> Path:
    """A finished run of another config in the sweep's folder, its files in agreement."""
    from sweeps.core.presets import get_preset

    cfg = get_preset("tiny").with_overrides(["backend=torch", "seed=99"])
    run = RunDir(sweep_dir / cfg.run_id)
    run.write_config(cfg)
    run.append_metrics([{"step": i, "train_loss": 3.0} for i in range(rows)])
    run.write_summary(
        {
            "run_id": cfg.run_id,
            "status": "ok",
            "final_val_loss": 2.5,
            "metrics": run.metrics_fingerprint(),
        }
    )
    return run.path


@pytest.mark.slow
def test_bookkeeping_reads_each_run_once_and_never_a_foreign_one(tmp_path, monkeypatch):
    """The sweep hashes each finished run's metrics once, when it finishes, and a run it did
    not plan never; figures hashes every run directory once."""
    from sweeps.analysis.results import load_results

    spec = write_spec(tmp_path, "once", [1e-2, 3e-2])
    hashed = []
    fingerprint = RunDir.metrics_fingerprint
    monkeypatch.setattr(
        RunDir,
        "metrics_fingerprint",
        lambda self: hashed.append(self.path.name) or fingerprint(self),
    )
    result = sweep("torch", spec, tmp_path / "runs")
    assert result.exit_code == 0, result.output
    planned = [
        rid for rid in pd.read_parquet(tmp_path / "runs" / "once" / "results.parquet").run_id
    ]
    assert len(planned) == 12  # 2 arms x 2 LRs x 3 seeds
    assert sorted(hashed) == sorted(planned)  # once each (the workers hash in their process)
    # a run the sweep did not plan (a folder holding only such runs is no sweep's: refused)
    foreign = foreign_run(tmp_path / "runs" / "once")
    hashed.clear()  # planting it hashed it
    assert "nothing to run" in sweep("torch", spec, tmp_path / "runs").output
    assert sorted(hashed) == sorted(planned)
    hashed.clear()
    results = load_results(tmp_path / "runs" / "once")
    assert sorted(hashed) == sorted(planned + [foreign.name])
    assert results.ignored == [foreign.name]
    assert {rid: results.config(rid).run_id for rid in planned} == {rid: rid for rid in planned}
    assert results.config(foreign.name) is None  # not in the plan, not in the report


def test_corrupt_metrics_are_found_by_the_one_read(tmp_path):
    run = RunDir(foreign_run(tmp_path))
    assert run.record().finished and run.record().status == "ok"
    with open(run.metrics_path, "r+b") as f:  # same size, one byte changed
        f.seek(3)
        f.write(b"X")
    record = run.record()
    assert record.status == "corrupt" and record.summary is None
    assert "metrics.jsonl changed after the run finished" in record.problem
    assert record.config is not None and record.row()["status"] == "corrupt"


def test_status_shows_each_run_and_the_loss_table(finished_sweep, tmp_path):
    spec, runs, _ = finished_sweep
    result = CliRunner().invoke(make_cli("mlx"), ["status", spec, "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "12 runs: 6 ok, 6 diverged" in out
    assert out.count("torch-o") == 12 and "div@" in out
    assert "final val loss by lr and arm" in out and "n_layer 2" in out
    table = out.split("final val loss by lr and arm")[1].split("\n\n")[0].splitlines()
    assert table[2].split() == ["lr", "off", "on"]
    assert table[-1].split() == ["1", "div", "div"]
    assert f"note: {runs / 'basic'} is a torch sweep folder: this status is of its torch" in out
    # by sweep name too (plan.json), and before any run: everything pending
    by_name = CliRunner().invoke(make_cli("torch"), ["status", "basic", "--runs-dir", str(runs)])
    assert by_name.exit_code == 0 and "12 runs: 6 ok, 6 diverged" in by_name.output
    # where nothing ran, status refuses (a mistyped --runs-dir must not look like a sweep to
    # start); once a sweep has planned there, its runs are pending
    fresh = CliRunner().invoke(make_cli("torch"), ["status", "smoke", "--runs-dir", str(tmp_path)])
    assert fresh.exit_code == 2 and "does not exist: nothing of sweep smoke ran" in fresh.output
    planned = command_plan("smoke", None, (), None, None, tmp_path, MAX_RUNS, (), "torch")
    (tmp_path / "smoke").mkdir()
    Sweep(planned.spec, "torch", (), tmp_path, record=planned.record).write_plan()
    fresh = CliRunner().invoke(make_cli("torch"), ["status", "smoke", "--runs-dir", str(tmp_path)])
    assert fresh.exit_code == 0 and "36 runs: 36 pending" in fresh.output
    unknown = CliRunner().invoke(make_cli("torch"), ["status", "nope", "--runs-dir", str(runs)])
    assert unknown.exit_code == 2 and "unknown sweep 'nope': no " in unknown.output


@pytest.mark.slow
def test_the_grid_extends_until_a_run_diverges(tmp_path):
    spec = write_spec(
        tmp_path, "grows", [1e-3, 1e-2], seed=(0, 1, 2), extend={"factor": 10.0, "max_extra_lrs": 3}
    )
    result = sweep("torch", spec, tmp_path / "runs")
    assert result.exit_code == 0, result.output
    assert "no run at lr 0.01 failed; extension 1 of 3: adding lr 0.1" in result.output
    df = pd.read_parquet(tmp_path / "runs" / "grows" / "results.parquet")
    off = df[df.arm == "off"]
    assert set(zip(off.lr, off.status)) == {
        (1e-3, "ok"),
        (1e-2, "ok"),
        (0.1, "ok"),
        (1.0, "diverged"),
    }  # 10 never needed
    plan = json.loads((tmp_path / "runs" / "grows" / "plan.json").read_text())
    assert sorted({r["config"]["train"]["lr"] for r in plan["runs"]}) == [1e-3, 1e-2, 0.1, 1.0]
    again = sweep("torch", spec, tmp_path / "runs")
    assert "nothing to run" in again.output and "extend n_layer 2" in again.output


@pytest.mark.slow
def test_a_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path):
    spec = write_spec(tmp_path, "faulty", [1e-2, 1.0])
    runs = tmp_path / "runs"
    victim = next(c for c in load_spec(spec).configs("torch") if c.train.lr == 1e-2)
    broken = runs / "faulty" / victim.run_id / "metrics.jsonl"
    broken.mkdir(parents=True)  # a directory where the run appends its metrics: it raises
    result = sweep("torch", spec, runs)
    assert result.exit_code == 1, result.output
    assert "1 run(s) failed" in result.output
    statuses = {rid: s for rid, (s, _) in final_losses(runs / "faulty").items()}
    assert statuses[victim.run_id] == "failed"
    assert sorted(statuses.values()) == ["diverged"] * 6 + ["failed"] + ["ok"] * 5
    error = (runs / "faulty" / victim.run_id / "error.txt").read_text()
    assert "Traceback" in error and "IsADirectoryError" in error
    summary = RunDir(runs / "faulty" / victim.run_id).read_summary()
    assert summary["status"] == "failed" and summary["error"]
    status = CliRunner().invoke(make_cli("torch"), ["status", spec, "--runs-dir", str(runs)])
    assert "1 failed" in status.output and "fail" in status.output.splitlines()[-2]
    # a plain rerun keeps the failure; --retry-failed reruns it once the cause is gone
    assert "nothing to run" in sweep("torch", spec, runs).output
    broken.rmdir()
    retried = sweep("torch", spec, runs, "--retry-failed")
    assert retried.exit_code == 0, retried.output
    assert final_losses(runs / "faulty")[victim.run_id][0] == "ok"
    assert not (runs / "faulty" / victim.run_id / "error.txt").exists()


HOLD = """
import fcntl, select, sys, time
f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))  # until told to let go (or a backstop)
print(time.time(), flush=True)
"""


@pytest.mark.slow
def test_a_run_locked_by_another_process_is_waited_for_not_run_twice(tmp_path):
    spec = write_spec(tmp_path, "locked", [1e-2, 1.0])
    runs = tmp_path / "runs"
    victim = next(c for c in load_spec(spec).configs("torch") if c.train.lr == 1.0)
    run_dir = runs / "locked" / victim.run_id
    run_dir.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir / ".lock"), "300"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    assert RunDir(run_dir).is_locked() and not RunDir(run_dir).lock().acquire()
    # The holder lets go only once the sweep has said it found the run held, so the test
    # does not depend on how fast the machine trains the other runs.
    cmd = QKTORCH + ["sweep", spec, "--runs-dir", str(runs), "--device", "cpu"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    output = []
    for line in proc.stdout:
        output.append(line)
        if f"elsewhere {victim.run_id}" in line:
            holder.stdin.close()  # let go
    if not holder.stdin.closed:  # the sweep ended without saying so: the asserts tell
        holder.stdin.close()
    released = float(holder.stdout.readline())
    holder.wait()
    proc.wait(timeout=300)
    output = "".join(output)
    assert proc.returncode == 0, output
    assert f"elsewhere {victim.run_id}" in output
    # trained by the sweep only after the holder let go, exactly once
    assert (run_dir / "config.json").stat().st_mtime >= released
    steps = [r["step"] for r in RunDir(run_dir).read_metrics()]
    assert steps == sorted(set(steps)) and final_losses(runs / "locked")[victim.run_id][0]


@pytest.mark.slow
def test_two_sweeps_on_one_directory_share_the_work(tmp_path):
    spec = write_spec(tmp_path, "shared", [1e-2, 1.0])
    runs = tmp_path / "runs"
    cmd = QKTORCH + ["sweep", spec, "--runs-dir", str(runs), "--device", "cpu"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    finished = re.compile(r"^\[.*\] (?:ok|unstable|diverged) +(\S+)")
    trained = [
        {
            m[1]
            for m in map(finished.match, out.splitlines())
            if m and "finished elsewhere" not in m.string
        }
        for out in outputs
    ]
    everything = {rid for rid, _ in final_losses(runs / "shared").items()}
    assert len(everything) == 12 and trained[0] | trained[1] == everything
    assert not trained[0] & trained[1]
    for rows in metrics(runs / "shared").values():
        steps = [r["step"] for r in rows]
        assert steps == sorted(set(steps))


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [["--workers", "2"], ["--fuse", "6"]],
    ids=[
        "two-workers",
        "one-fused-group",
    ],  # a fused group's runs resume from their own checkpoints
)
def test_kill_9_mid_sweep_then_rerun_equals_an_uninterrupted_sweep(tmp_path, args):
    spec = write_spec(
        tmp_path,
        "killed",
        [1e-2, 0.1],
        settings={
            "train.max_steps": 60,
            "train.checkpoint_interval": 10,
            "train.eval_interval": 20,
        },
    )
    args = ["--device", "cpu", *args]
    clean = subprocess.run(
        QKTORCH + ["sweep", spec, "--runs-dir", str(tmp_path / "a"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr

    sweep_dir = tmp_path / "b" / "killed"
    proc = subprocess.Popen(
        QKTORCH + ["sweep", spec, "--runs-dir", str(tmp_path / "b"), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once some run has a checkpoint but no summary
        mid = [
            p
            for p in sweep_dir.glob("*/checkpoint/step_*/state.json")
            if not (p.parents[2] / "summary.json").exists()
        ]
        if mid:
            break
        time.sleep(0.02)
    assert mid, "the sweep never got to a checkpoint"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    unfinished = [
        d for d in sweep_dir.iterdir() if d.is_dir() and not (d / "summary.json").exists()
    ]
    assert unfinished  # really killed mid-sweep
    deadline = time.time() + 15  # its workers notice and exit: no run stays locked
    while any(RunDir(d).is_locked() for d in unfinished) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(RunDir(d).is_locked() for d in unfinished)

    rerun = subprocess.run(
        QKTORCH + ["sweep", spec, "--runs-dir", str(tmp_path / "b"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert final_losses(sweep_dir) == final_losses(tmp_path / "a" / "killed")
    assert metrics(sweep_dir) == metrics(tmp_path / "a" / "killed")
    assert all(RunDir(d).problem() is None for d in sweep_dir.iterdir() if d.is_dir())


def _ignore_sigint() -> None:
    """What a non-interactive shell does to a background job (`cmd &`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
def test_sigint_to_the_sweep_process_alone_stops_it_as_ctrl_c_does(tmp_path):
    """`kill -INT PID` (as `timeout -s INT` or a job runner sends it) reaches the main process
    only, which may have started with SIGINT ignored: it stops its workers and exits 130, and
    the runs it was training are left interrupted, resumable from their checkpoints."""
    spec = write_spec(
        tmp_path,
        "intr",
        [1e-2, 3.16e-2],
        settings={"train.max_steps": 100000, "train.checkpoint_interval": 10},
    )
    runs = tmp_path / "runs"
    sweep_dir = runs / "intr"
    proc = subprocess.Popen(
        QKTORCH + ["sweep", spec, "--runs-dir", str(runs), "--device", "cpu", "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint,
    )
    try:
        deadline = time.time() + 120
        while not list(sweep_dir.glob("*/checkpoint/step_*/state.json")):
            assert proc.poll() is None and time.time() < deadline, "no checkpoint was written"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)  # the main process alone, not its group
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stdout + stderr
    assert "Traceback" not in stdout + stderr
    assert stdout.strip().splitlines()[-1].startswith("interrupted after ")
    started = [d for d in sweep_dir.iterdir() if d.is_dir()]
    deadline = time.time() + 15  # the killed workers' locks go with them
    while any(RunDir(d).is_locked() for d in started) and time.time() < deadline:
        time.sleep(0.1)
    status = CliRunner().invoke(make_cli("torch"), ["status", spec, "--runs-dir", str(runs)])
    assert status.exit_code == 0, status.output
    head = status.output.splitlines()[0]
    assert "interrupted" in head and "running" not in head, head
    assert all(RunDir(d).problem() is None for d in started)
    resumable = [
        d for d in started if RunDir(d).state() == "interrupted" and RunDir(d).checkpoints()
    ]
    assert resumable
    # the plan counts them apart from the runs that start from scratch
    plan = sweep("torch", spec, runs, "--dry-run")
    assert plan.exit_code == 0, plan.output
    assert f"state: 0 finished; {len(resumable)} resume from a checkpoint; " in plan.output
    assert f"; {12 - len(resumable)} to run" in plan.output


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["mlx"])
def test_an_mlx_sweep_writes_the_same_layout(backend, tmp_path):
    spec = write_spec(tmp_path, "mlx", [1e-2, 1.0])
    result = sweep(backend, spec, tmp_path / "runs", "--workers", "2")
    assert result.exit_code == 0, result.output
    runs = final_losses(tmp_path / "runs" / "mlx")
    assert sorted(s for s, _ in runs.values()) == ["diverged"] * 6 + ["ok"] * 6
    assert all(rid.startswith("mlx-") for rid in runs)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_the_ray_executor_on_a_real_local_cluster(finished_sweep, tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'qknorm-study[cluster]')")
    spec, local_runs, _ = finished_sweep
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # unix socket paths must stay short
    # Ray registers the node under this machine's own address (it resolves 127.0.0.1 away);
    # the driver reaches the head's port on 127.0.0.1.
    head = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("ray")),
            "start",
            "--head",
            "--block",
            "--port",
            str(port),
            "--node-ip-address",
            "127.0.0.1",
            "--num-cpus",
            "2",
            "--num-gpus",
            "0",
            "--include-dashboard",
            "false",
            "--disable-usage-stats",
            "--temp-dir",
            temp,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        cmd = QKTORCH + [
            "sweep",
            spec,
            "--runs-dir",
            str(tmp_path / "ray"),
            "--device",
            "cpu",
            "--executor",
            "ray",
            "--address",
            f"127.0.0.1:{port}",
        ]
        for _ in range(60):  # the head takes a few seconds to accept drivers
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if "cannot reach the Ray cluster" not in result.stderr:
                break
            time.sleep(2)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Ray cluster (2 CPUs, 0 GPUs)" in result.stdout
    finally:
        _stop_group(head)
        shutil.rmtree(temp, ignore_errors=True)
    # one CPU thread per run in both executors: the same numbers, the same run directories
    assert final_losses(tmp_path / "ray" / "basic") == final_losses(local_runs / "basic")
    assert metrics(tmp_path / "ray" / "basic") == metrics(local_runs / "basic")


def _stop_group(proc) -> None:
    """SIGTERM `ray start --block`: it drains and stops what it started. SIGKILL what is
    left of its session only if that fails."""
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def test_sweep_modules_import_neither_mlx_nor_torch():
    code = (
        "import sys, sweeps.sweep.spec, sweeps.sweep.runner, sweeps.sweep.executors, "
        "sweeps.sweep.status, sweeps.cli; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlx', 'torch')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_token_check_names_its_ladder_and_reference_and_survives_the_record(tmp_path):
    from sweeps.sweep.record import read_raw, to_toml

    check = {"ladder": "ladder", "reference": 2}
    spec = parse_spec(raw_spec(grid={**GRID, "n_layer": [4]}, token_check=check))
    assert (spec.token_check.ladder, spec.token_check.reference) == ("ladder", 2)
    # the record (spec.toml) writes it and reads it back: a resumed check is still a check
    (tmp_path / "spec.toml").write_text(to_toml(spec.to_dict()), encoding="utf-8")
    again = parse_spec(read_raw(tmp_path / "spec.toml"))
    assert again.token_check == spec.token_check and again.to_dict() == spec.to_dict()
    assert "token_check" not in parse_spec(raw_spec()).to_dict()


@pytest.mark.parametrize(
    "grid,check,message",
    [
        ({**GRID, "n_layer": [2, 4]}, {"ladder": "l", "reference": 2}, "one depth of its ladder"),
        ({**GRID, "n_layer": [2]}, {"ladder": "l", "reference": 2}, "is its reference depth"),
        ({**GRID, "n_layer": [4]}, {"ladder": "l"}, "reference must be the ladder's depth"),
        ({**GRID, "n_layer": [4]}, {"ladder": "../x", "reference": 2}, "ladder must be a sweep"),
        ({**GRID, "n_layer": [4]}, {"ladder": "l", "reference": 2, "x": 1}, "unknown key"),
    ],
)
def test_a_token_check_that_cannot_check_is_refused(grid, check, message):
    with pytest.raises(ConfigError, match=message):
        parse_spec(raw_spec(grid=grid, token_check=check))
