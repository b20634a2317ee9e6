"""[budget] (tokens per parameter held at every rung) and order = "seed" (sweeps/sweep/spec.py,
runner.py), on the committed cpu-depth-matched spec (docs/STUDY.md section 18) and on specs
made as data: the steps each rung plans, what stays fixed, the run ids it shares with the
committed reports (the machine check section 18 names), the refusals, and the execution order.
Plus the design's simulated power and false rates (benchmarks/depth_design.py --matched)."""

import math
from pathlib import Path

import pandas as pd
import pytest

from sweeps.core.errors import ConfigError
from sweeps.core.params import count_params
from sweeps.study.simulation import rungs as sim
from sweeps.sweep import record
from sweeps.sweep.runner import Sweep
from sweeps.sweep.spec import load_spec, parse_spec

DOCS = Path(__file__).resolve().parents[1] / "docs"
MATCHED = load_spec("cpu-depth-matched")


def by_depth(spec) -> dict:
    return {c.model.n_layer: c for c in spec.configs("torch")}


def test_every_rung_trains_the_same_tokens_per_parameter_within_rounding():
    rungs = by_depth(MATCHED)
    assert {d: c.train.max_steps for d, c in rungs.items()} == {
        1: 450,
        2: 700,
        4: 1200,
        6: 1700,
        8: 2200,
    }
    for c in rungs.values():
        tpp = c.train.max_steps * c.tokens_per_step / count_params(c.model, c.vocab_size)["total"]
        assert 10.2 < tpp < 10.36, (c.model.n_layer, tpp)
        assert c.train.max_steps % 50 == 0


def test_warmup_and_the_early_evaluations_keep_their_steps_at_every_rung():
    for c in by_depth(MATCHED).values():
        assert c.train.warmup_steps == 120
        # the early window reaches step 120 (the end of warmup) on the short rungs, and keeps
        # the preset's 10% (so the deep rungs' configs stay the committed ones) on the long
        assert c.train.early_eval_end == max(120, math.floor(0.1 * c.train.max_steps))


def test_depth_4_and_8_plan_the_committed_configs_the_machine_check_compares():
    planned = {c.run_id for c in MATCHED.configs("torch")}
    depth = pd.read_parquet(DOCS / "cpu-depth" / "runs.parquet")
    tokens = pd.read_parquet(DOCS / "cpu-depth-tokens" / "runs.parquet")
    assert len(planned & set(depth.run_id)) == 56  # depth 4 at 7 of its 9 LRs, both arms
    assert set(tokens.run_id) <= planned  # depth 8 at 0.0178-0.1: all 32


def raw(**extra) -> dict:
    return {
        "name": "bt",
        "preset": "smoke",
        "grid": {
            "lr": [0.01, 0.1],
            "n_layer": [1, 2],
            "seed": [0, 1, 2],
            "qk_norm": ["none", "rms"],
        },
        "study": {"delta": 0.25, "sensitivity_range": [0.01, 0.1], "target_loss": 3.5},
        "extend": {"max_extra_lrs": 0},
        **extra,
    }


def test_a_spec_without_budget_keeps_one_step_count_and_its_record():
    spec = parse_spec(raw())
    assert {c.train.max_steps for c in spec.configs("torch")} == {60}
    assert "budget" not in spec.to_dict() and "order" not in spec.to_dict()


def test_the_budget_sets_steps_from_parameters_and_is_part_of_the_definition():
    spec = parse_spec(raw(budget={"tokens_per_param": 2.0, "round_steps": 10}))
    steps = {c.model.n_layer: c.train.max_steps for c in spec.configs("torch")}
    assert steps[2] > steps[1]  # the deeper rung has more parameters, so more steps
    for c in spec.configs("torch"):
        params = count_params(c.model, c.vocab_size)["total"]
        assert abs(c.train.max_steps - 2.0 * params / c.tokens_per_step) <= 5
    diffs = record.differences(spec, parse_spec(raw(budget={"tokens_per_param": 3.0})))
    assert any("tokens_per_param" in d for d in diffs)


@pytest.mark.parametrize(
    "budget, message",
    [
        ({}, "give tokens_per_param"),
        ({"tokens_per_param": -1}, "tokens_per_param"),
        ({"tokens_per_param": 5, "round_steps": 0}, "round_steps must be a positive integer"),
        ({"tokens_per_param": 5, "steps": 3}, "steps"),
    ],
)
def test_a_bad_budget_is_refused_in_one_line(budget, message):
    with pytest.raises(ConfigError, match=message) as e:
        parse_spec(raw(budget=budget))
    assert "\n" not in str(e.value)


def test_a_budget_refuses_a_fixed_step_count_beside_it():
    with pytest.raises(ConfigError, match=r"drop them from \[set\]"):
        parse_spec(raw(budget={"tokens_per_param": 5}, set={"train.max_steps": 100}))


def test_order_seed_trains_one_seed_at_a_time_and_lr_order_stays_the_default(tmp_path):
    seed_major = Sweep(parse_spec(raw(order="seed")), "torch", runs_dir=tmp_path)
    seeds = [seed_major.configs[r].seed for r in seed_major.order()]
    assert seeds == sorted(seeds)  # every run of seed 0 before any of seed 1
    first = [seed_major.configs[r] for r in seed_major.order()[:4]]
    assert {c.model.n_layer for c in first} == {1, 2}  # rungs interleaved within a seed
    default = Sweep(parse_spec(raw()), "torch", runs_dir=tmp_path)
    lrs = [default.configs[r].train.lr for r in default.order()]
    assert lrs == sorted(lrs, reverse=True)
    with pytest.raises(ConfigError, match="order must be one of lr, seed"):
        parse_spec(raw(order="depth"))


# -- the design's simulation (docs/STUDY.md section 18's table, chosen row) -----------------
N = 600


def margin(p: float, n: int = N) -> float:
    return 2.5 * math.sqrt(p * (1 - p) / n)


GRID = tuple(MATCHED.lr)


def test_the_simulated_ladder_judges_the_grid_the_spec_trains():
    lad = sim.Ladder("matched", tuple(MATCHED.n_layer), grid=GRID)
    assert list(lad.lrs) == list(GRID) and lad.sizes == (1, 2, 4, 6, 8)


def test_the_chosen_design_keeps_its_power_and_false_rates_under_the_reversal_rule():
    lad = sim.Ladder("matched", (1, 2, 4, 6, 8), rung_sd=0.15, grid=GRID)
    r = sim.ladder_rates(lad, N)
    assert r["planted: unreversed supported"] >= 0.80 - margin(0.80), r
    assert r["flat: unreversed supported"] <= 0.05 + margin(0.05), r
    assert r["planted: unreversed ruled out"] <= 0.05 + margin(0.05), r
    # a reversal only ever takes a verdict away
    assert r["planted: unreversed supported"] <= r["planted: v5 supported"]


def test_a_first_rung_off_the_line_raises_false_ruled_out_and_the_reversal_rule_cuts_it():
    lad = sim.Ladder("matched", (1, 2, 4, 6, 8), rung_sd=0.15, grid=GRID)
    plain = sim.ladder_rates(lad, N)
    special = sim.ladder_rates(sim.replace(lad, first_offset=-0.3), N)
    assert special["planted: v5 ruled out"] > plain["planted: v5 ruled out"]
    assert special["planted: unreversed ruled out"] <= special["planted: v5 ruled out"]


def test_seed_and_fate_margins_are_study_fields_recorded_only_when_set():
    spec = parse_spec(raw())
    assert (spec.study.seed_margin, spec.study.fate_margin) == (0.1, 0.01)
    assert "seed_margin" not in spec.study.to_dict()
    study = {"delta": 0.25, "sensitivity_range": [0.01, 0.1], "target_loss": 3.5}
    spec = parse_spec(raw(study={**study, "seed_margin": 0.2, "fate_margin": 0.005}))
    assert (spec.study.seed_margin, spec.study.fate_margin) == (0.2, 0.005)
    assert spec.study.to_dict()["seed_margin"] == 0.2
    with pytest.raises(ConfigError, match="seed_margin"):
        parse_spec(raw(study={**study, "seed_margin": "wide"}))
