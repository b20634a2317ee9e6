"""The confirmatory depth ladder of docs/STUDY.md section 22 (sweeps/specs/cpu-depth-2-12.toml):
what it trains (section 18's configs at fresh seeds, depths 3 and 12 added), that none of its
runs has been seen, and the design's simulated power and false rates at the measured seed
scatter (benchmarks/depth_design.py --two-to-twelve), including why it does not reuse the seen
rungs."""

import math
import sys
from pathlib import Path

import pandas as pd

from sweeps.study.simulation import rungs as sim
from sweeps.sweep.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import depth_design  # noqa: E402

LADDER = load_spec("cpu-depth-2-12")
MATCHED = load_spec("cpu-depth-matched")
N = 600


def margin(p: float, n: int = N) -> float:
    return 2.5 * math.sqrt(p * (1 - p) / n)


def test_every_rung_trains_section_22s_steps_at_fresh_seeds():
    configs = LADDER.configs("torch")
    steps = {c.model.n_layer: c.train.max_steps for c in configs}
    assert steps == {1: 450, 2: 700, 3: 950, 4: 1200, 6: 1700, 8: 2200, 12: 3200}
    assert {c.seed for c in configs} == {4, 5, 6, 7}
    assert len(configs) == 504 and LADDER.order == "seed"


def test_no_run_of_the_ladder_has_been_seen():
    planned = {c.run_id for c in LADDER.configs("torch")}
    for report in ("cpu-depth", "cpu-depth-tokens", "cpu-depth-matched"):
        seen = set(pd.read_parquet(ROOT / "docs" / report / "runs.parquet").run_id)
        assert not planned & seen, report


def test_at_a_shared_depth_only_the_seed_differs_from_the_matched_ladder():
    def key(c):
        d = c.to_dict()
        d.pop("seed", None)
        return c.model.n_layer, c.train.lr, c.model.qk_norm, repr(sorted(d.items()))

    mine = {key(c) for c in LADDER.configs("torch") if c.seed == 4}
    theirs = {key(c) for c in MATCHED.configs("torch") if c.seed == 0}
    assert theirs <= mine  # depths 1, 2, 4, 6, 8: the same config but for the seed
    assert len(mine - theirs) == 2 * 9 * 2  # depths 3 and 12, every LR, both arms


def test_the_chosen_ladder_keeps_its_false_rates_and_states_its_power():
    lad = sim.Ladder(
        "2-12", (2, 3, 4, 6, 8, 12), 4, 0.15, depth_design.SCATTER, grid=tuple(LADDER.lr)
    )
    power, kept, _ = depth_design.verdict_rates(lad, N, -0.25, 31)
    false_supported = depth_design.verdict_rates(lad, N, 0.0, 51)[1]
    false_ruled_out = depth_design.verdict_rates(lad, N, -0.25, 31)[2]
    # section 22's table (4000 ladders): 74% / 72%, false 2.3% and 1.9%
    assert abs(kept - 0.72) <= margin(0.72) and kept <= power
    assert false_supported <= 0.05 + margin(0.05)
    assert false_ruled_out <= 0.05 + margin(0.05)


def test_reusing_the_seen_rungs_would_decide_the_verdict_before_the_new_runs():
    # new rungs on a flat line through the seen rungs' centre: "supported" far above 5%
    supported, _ = depth_design.reused_rates((3, 12), 0.0, 0.15, 4000, 7)
    assert supported > 0.2
    # the seen rungs are cpu-depth-matched's depths 2-8, four seeds each
    seen = depth_design.seen_rungs()
    assert sorted(seen) == [2, 4, 6, 8] and all(len(v) == 4 for v in seen.values())


def test_the_run_time_model_prices_the_ladder_as_section_22_says():
    hours = depth_design.run_hours((1, 2, 3, 4, 6, 8, 12), 4, depth_design.h3_run_seconds)
    assert round(hours, 1) == 13.3
    deep = depth_design.run_hours((12,), 4, depth_design.h3_run_seconds)
    assert round(deep, 1) == 6.3
