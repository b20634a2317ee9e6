"""Section 21's rules (sweeps/study/carry.py) proven before they judge the bfloat16 sweeps:
the paired cost rule and the failure-edge rule on planted data with known answers, the
reference numbers STUDY.md quotes recomputed from docs/cpu-depth-matched, and the carry page of
a report made from the reference rung itself (everything carries) and with a planted cost (T7
and T8 differ, nothing else)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from figures import carry as page
from sweeps.analysis import carry_page as cp
from sweeps.study import carry as c

DOCS = Path(__file__).resolve().parents[1] / "docs"
SEEDS = (0, 1, 2, 3)


def side(values, seeds=SEEDS) -> c.Side:
    return c.Side(values=tuple(float(v) for v in values), seeds=tuple(seeds))


# -- the paired cost rule ----------------------------------------------------------------------
def test_the_paired_shift_matches_seeds_by_id_not_by_position():
    ref = side([0.1, 0.2, 0.3, 0.4])
    new = side([0.45, 0.35, 0.25, 0.15], seeds=(3, 2, 1, 0))  # the same values, +0.05 each
    s = c.paired_shift(ref, new, 0.01)
    assert s.mean == pytest.approx(0.05)
    assert s.df == 3 and s.lower < 0.05 < s.upper


def test_a_seed_one_side_lacks_is_left_out_and_too_few_decide_nothing():
    ref = side([0.1, 0.2, 0.3, 0.4])
    assert c.paired_shift(ref, side([0.1, 0.2, 0.3], seeds=(0, 1, 2)), 0.01).df == 2
    two = c.paired_shift(ref, side([0.1, 0.2], seeds=(0, 5)), 0.01)
    assert math.isnan(two.lower)
    assert c.decide_paired_shift(two, 0.1) == (c.INCONCLUSIVE, c.TOO_FEW_SEEDS)


@pytest.mark.parametrize(
    "offsets, outcome, reason",
    [
        ((0.0, 0.01, -0.01, 0.005), c.CARRIES, c.NEGLIGIBLE),  # shown inside +-0.1
        ((0.03, 0.05, 0.04, 0.06), c.CARRIES, c.NEGLIGIBLE),  # a shift shown, but negligible
        ((0.2, 0.25, 0.22, 0.18), c.DIFFERS, c.SMALLER),  # QK-norm costs less in bfloat16
        ((-0.2, -0.25, -0.22, -0.18), c.DIFFERS, c.LARGER),
        ((0.2, -0.2, 0.15, -0.1), c.INCONCLUSIVE, c.NOT_SHOWN),  # noise: neither shown
    ],
)
def test_the_paired_rule(offsets, outcome, reason):
    ref = side([-0.1, 0.05, -0.2, 0.0])
    new = side(np.array(ref.values) + np.array(offsets))
    assert c.decide_paired_shift(c.paired_shift(ref, new, 0.01), 0.1) == (outcome, reason)


def test_the_paired_rule_on_simulated_sweeps_matches_section_21():
    """Section 21's table: with pairs' sd 0.03 and no shift it carries nearly always and never
    differs; a shift of 0.2 differs nearly always; at sd 0.09 (decorrelated runs) a null is
    mostly inconclusive, not 'carries'."""
    rng = np.random.default_rng(0)

    def rates(sd, true, n=400):
        out = {c.CARRIES: 0, c.DIFFERS: 0, c.INCONCLUSIVE: 0}
        for _ in range(n):
            ref = side(rng.normal(0, 0.065, 4))
            new = side(np.array(ref.values) + true + rng.normal(0, sd, 4))
            out[c.decide_paired_shift(c.paired_shift(ref, new, 0.01), 0.1)[0]] += 1
        return {k: v / n for k, v in out.items()}

    assert rates(0.03, 0.0)[c.CARRIES] > 0.95
    assert rates(0.03, 0.0)[c.DIFFERS] < 0.03
    assert rates(0.03, 0.2)[c.DIFFERS] > 0.95
    noisy = rates(0.09, 0.0)
    assert noisy[c.INCONCLUSIVE] > 0.5 and noisy[c.CARRIES] < 0.4 and noisy[c.DIFFERS] < 0.12


# -- the edge rule -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "new, outcome",
    [
        ((0.04, 0.08), c.CARRIES),
        ((0.09, 0.14), c.CARRIES),  # above the reference, inside its quarter-decade widening
        ((0.2, 0.3), c.DIFFERS),
        ((0.005, 0.01), c.DIFFERS),
        (None, c.INCONCLUSIVE),  # censored
    ],
)
def test_the_edge_rule(new, outcome):
    ref = c.Side(0.056, (0.038, 0.083))
    s = c.Side(math.nan if new is None else math.sqrt(new[0] * new[1]), new)
    assert c.decide("T10", s, ref, c.SECTION_21_DEPTH_2)[0] == outcome


# -- the reference rungs and the page ----------------------------------------------------------
@pytest.fixture(scope="module")
def ladder():
    return pd.read_parquet(DOCS / "cpu-depth-matched" / "runs.parquet")


@pytest.mark.parametrize(
    "depth, predictions, quoted",
    [
        (2, c.SECTION_21_DEPTH_2, {"T5": 0.143, "T7": -0.137, "T10": 0.0562, "T11": 0.562}),
        (4, c.SECTION_21_DEPTH_4, {"T5": 0.229, "T7": -0.042, "T10": 0.0649, "T11": 0.562}),
    ],
)
def test_the_reference_rungs_are_the_ones_section_21_quotes(ladder, depth, predictions, quoted):
    rows = ladder[ladder.n_layer == depth].to_dict("records")
    sides = c.sides(c.cells_of(rows), predictions)
    assert sides["T1"].interval == pytest.approx((5.62, 10.0))
    assert sides["T2"].per_seed == ("stuck",) * 4
    for q, value in quoted.items():
        assert sides[q].value == pytest.approx(value, abs=6e-4), q
    assert predictions.t5_window == (round(quoted["T5"] / 2, 3), round(quoted["T5"] * 2, 3))
    study = (DOCS / "STUDY.md").read_text()
    lo, hi = predictions.t5_window
    assert f"[{lo:g}, {hi:g}] (depth {depth})" in study


def _report(tmp_path: Path, rows: pd.DataFrame, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    rows.to_parquet(folder / "runs.parquet")
    return folder


def test_the_reference_rung_carries_to_itself_and_a_planted_cost_differs_on_t7_t8(
    tmp_path, ladder, capsys
):
    rung = ladder[ladder.n_layer == 2].copy()
    same = _report(tmp_path, rung, "cpu-bf16-depth2")
    assert page.main([str(same), "--reference", str(DOCS / "cpu-depth-matched")]) == 0
    text = (same / "carry.md").read_text()
    assert "# What carries from cpu-depth-matched (n_layer 2) to cpu-bf16-depth2" in text
    assert "paired shift +0.000" in text
    doc = json.loads((same / "carry.json").read_text())
    outcomes = {q["quantity"]: q["outcome"] for q in doc["quantities"]}
    assert set(outcomes.values()) == {c.CARRIES}
    assert set(outcomes) == set(c.SECTION_21_DEPTH_2.quantities)

    worse = rung.copy()  # QK-norm 0.3 nats worse at 0.01 (off's best), the same elsewhere
    at = (worse.arm == "on") & np.isclose(worse.lr, 0.01)
    worse.loc[at, "final_val_loss"] += 0.3
    (tmp_path / "w").mkdir()
    moved = _report(tmp_path / "w", worse, "cpu-bf16-depth2")
    assert page.main([str(moved), "--reference", str(DOCS / "cpu-depth-matched")]) == 0
    doc = json.loads((moved / "carry.json").read_text())
    out = {q["quantity"]: (q["outcome"], q["reason"]) for q in doc["quantities"]}
    assert out["T7"] == (c.DIFFERS, c.LARGER)
    assert out["T8"][0] != c.CARRIES  # on's own best may move off 0.01
    assert out["T1"][0] == out["T2"][0] == out["T10"][0] == out["T11"][0] == c.CARRIES
    text = (moved / "carry.md").read_text()
    assert "paired shift -0.300" in text
    # the descriptive table: the planted 0.3 nats on `on` at 0.01, nothing anywhere else
    row = next(line for line in text.splitlines() if line.startswith("| 0.01 |"))
    assert (
        row == "| 0.01 | +0.000 [-0.012, +0.012] | +0.300 [+0.288, +0.312] |"
    )  # sd floored at 0.01
    shifts = {(x["arm"], x["lr"]): x["mean"] for x in doc["loss_shifts"]}
    assert shifts.pop(("on", 0.01)) == pytest.approx(0.3)
    assert all(v == pytest.approx(0.0) for v in shifts.values() if v == v)


# -- section 24: depth 2 on eight seeds --------------------------------------------------------
def test_section_24s_sweep_is_cpu_bf16_depth2_at_the_ladders_seeds_4_to_7():
    """cpu-bf16-depth2-s4 trains cpu-bf16-depth2's configs at seeds 4-7, and each run's float32
    partner is cpu-depth-2-12's depth-2 run: the same config but train.dtype (so the same init
    weights and batches); none of its runs has been seen."""
    from sweeps.sweep.spec import load_spec

    def key(cfg, *drop):
        """The config as a comparable string with the named fields ("train.dtype", "seed")
        left out."""
        d = cfg.to_dict()
        for path in drop:
            if "." in path:
                section, name = path.split(".")
                d[section] = {k: v for k, v in d[section].items() if k != name}
            else:
                d.pop(path)
        return repr(sorted((k, repr(v)) for k, v in d.items()))

    new = load_spec("cpu-bf16-depth2-s4").configs("torch")
    assert len(new) == 72 and {c.seed for c in new} == {4, 5, 6, 7}
    assert {c.train.dtype for c in new} == {"bfloat16"} and {c.model.n_layer for c in new} == {2}
    ladder = [c for c in load_spec("cpu-depth-2-12").configs("torch") if c.model.n_layer == 2]
    assert {key(c, "train.dtype") for c in new} == {key(c, "train.dtype") for c in ladder}
    assert {c.train.dtype for c in ladder} == {"float32"}
    # the first look's configs but for the seed; none of its runs is trained again
    first = load_spec("cpu-bf16-depth2").configs("torch")
    assert {key(c, "seed") for c in first} == {key(c, "seed") for c in new}
    seen = set(pd.read_parquet(DOCS / "cpu-bf16-depth2" / "runs.parquet").run_id)
    assert not seen & {c.run_id for c in new}


def test_section_24s_second_look_keeps_a_false_carries_near_five_percent():
    """benchmarks/precision_carry_design.py's procedure: at a true shift of 0.1 the second look
    at 99% after an inconclusive first says 'carries' rarely, at 95% (no correction) more often;
    with nothing changed it still says 'carries' where the pairs are tight."""
    import sys

    sys.path.insert(0, str(DOCS.parent / "benchmarks"))
    import precision_carry_design as design

    rng = np.random.default_rng(3)
    strict = design.rates(0.068, 0.1, 800, rng)[1][c.CARRIES]
    lax = design.rates(0.068, 0.1, 800, rng, second=c.CONFIDENCE)[1][c.CARRIES]
    assert design.SECOND_LOOK == 0.99 and strict < 0.03 and lax > strict
    assert design.rates(0.03, 0.0, 200, rng)[1][c.CARRIES] > 0.9


def test_section_24_pools_each_side_from_several_reports_and_pairs_by_seed(tmp_path, ladder):
    """The depth-2 rung split by seed into two reports on each side (as section 24 pools
    cpu-bf16-depth2 with cpu-bf16-depth2-s4, and cpu-depth-matched with cpu-depth-2-12) is
    judged as the whole rung is; two reports holding the same run are refused; section 24's
    page says what it pooled and reads T7 and T8 at 98% two-sided."""
    from dataclasses import replace

    rung = ladder[ladder.n_layer == 2].copy()
    low, high = rung[rung.seed <= 1], rung[rung.seed >= 2]
    whole = cp.build(
        _report(tmp_path, rung, "new"),
        _report(tmp_path, rung, "ref"),
        None,
        cp.Plan(c.SECTION_21_DEPTH_2, control=None, reference_rows=(("n_layer", 2),)),
    )
    (tmp_path / "split").mkdir()
    split = tmp_path / "split"
    plan = cp.Plan(
        c.SECTION_21_DEPTH_2,
        control=None,
        reference_rows=(("n_layer", 2),),
        more_reference=(_report(split, high, "ref-more"),),
        more_new=(_report(split, high, "new-more"),),
    )
    pooled = cp.build(_report(split, low, "new"), _report(split, low, "ref"), None, plan)
    assert pooled["quantities"] == whole["quantities"]
    assert pooled["pooled"] == {"reference": ["ref-more"], "new": ["new-more"]}
    assert "Pooled with them, seeds paired by seed: new-more's runs" in page.render(pooled)
    twice = replace(plan, more_new=(split / "new",))
    with pytest.raises(ValueError, match="hold the same run"):
        cp.build(split / "new", split / "ref", None, twice)
    section_24 = cp.build(
        split / "new", split / "ref", None, replace(plan, predictions=c.SECTION_24)
    )
    assert section_24["predictions"]["cost_confidence"] == 0.99
    assert section_24["predictions"]["section"] == 24
    assert "paired 98% interval of the shift" in page.render(section_24)
    t7 = next(q for q in section_24["quantities"] if q["quantity"] == "T7")
    assert t7["shift"]["paired"] and t7["shift"]["upper"] > t7["shift"]["lower"]
    assert cp.PLANS["cpu-bf16-depth2-s4"].predictions is c.SECTION_24
