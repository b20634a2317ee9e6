"""The study's statistics (sweeps/study/stats.py) proven before they judge real runs: simulated
sweeps with a known answer (null and planted effects, docs/STUDY.md section 7) and hand-made
cases for every metric."""
import math

import numpy as np
import pytest

from sweeps.study import stats
LRS = [1e-4 * 10 ** (k / 2) for k in range(9)]  # 9 half-decade LRs, 1e-4 .. 1
SEEDS = 3
NOISE = 0.03  # per-arm seed sd, nats: the spread of the tiny sweep's stable LRs
SIGMA = NOISE * math.sqrt(2)  # sd of the paired difference d = L_off - L_on
MIN_EFFECT = 0.02
L0 = 5.5  # loss at initialization: what a failed run counts as
SWEEPS = 1000


def simulate(rng, effect_from=None, ceiling=0, fail_prob=None):
    """One sweep's paired differences [LR, seed] and its common-ceiling mask.

    Both arms share a U-shaped loss curve plus independent seed noise; from LR index
    effect_from up, QK-norm on is better by 3 sigma. The top `ceiling` LRs fail in every run
    of both arms; fail_prob[k] makes each run at LR k fail on its own (either arm)."""
    base = 1.0 + 0.3 * (np.log10(LRS) + 2.5) ** 2
    off = base[:, None] + rng.normal(0, NOISE, (len(LRS), SEEDS))
    on = base[:, None] + rng.normal(0, NOISE, (len(LRS), SEEDS))
    if effect_from is not None:
        on[effect_from:] -= 3 * SIGMA
    failed_off = np.zeros(off.shape, bool)
    failed_on = np.zeros(on.shape, bool)
    if fail_prob is not None:
        p = np.asarray(fail_prob)[:, None]
        failed_off |= rng.random(off.shape) < p
        failed_on |= rng.random(on.shape) < p
    if ceiling:
        failed_off[-ceiling:] = failed_on[-ceiling:] = True
    off, on = np.where(failed_off, L0, off), np.where(failed_on, L0, on)
    both_fail = failed_off.all(axis=1) & failed_on.all(axis=1)
    return off - on, both_fail


def rate(found) -> float:
    return float(np.mean(found))


NEAR_TOP = [0, 0, 0, 0, 0, 0, 0.2, 0.5, 0.8]  # failures strike at random near the top


@pytest.mark.parametrize("ceiling,fail_prob", [(0, None), (2, None), (1, NEAR_TOP)],
                         ids=["plain", "top two LRs fail in both arms", "random failures"])
def test_null_sweeps_report_a_threshold_at_most_5_percent_of_the_time(ceiling, fail_prob):
    rng = np.random.default_rng(1)
    found = []
    for _ in range(SWEEPS):
        d, both = simulate(rng, ceiling=ceiling, fail_prob=fail_prob)
        found.append(stats.necessity(LRS, d, both, MIN_EFFECT).threshold.kind != "none")
    assert rate(found) <= 0.05


@pytest.mark.parametrize("planted,ceiling", [(2, 0), (4, 0), (6, 0), (2, 2), (4, 2), (5, 2)],
                         ids=lambda v: str(v))
def test_a_planted_threshold_is_recovered_within_one_grid_step(planted, ceiling):
    """At least two judged LRs carry the effect (with a ceiling of 2, LR 6 is the last one
    judged: a threshold there rests on one test, recovered in ~85%; docs/STUDY.md)."""
    rng = np.random.default_rng(2)
    hits = []
    for _ in range(SWEEPS):
        d, both = simulate(rng, effect_from=planted, ceiling=ceiling)
        t = stats.necessity(LRS, d, both, MIN_EFFECT).threshold
        # inside the grid the value lies between the LR below its bracket and its bracket:
        # within one step of the planted LR means its bracket's top is planted +- 1
        top = t.bracket[1] if t.inside else t.value
        hits.append(t.kind != "none" and abs(LRS.index(top) - planted) <= 1)
    assert rate(hits) >= 0.90


def test_the_literal_every_higher_lr_rule_would_not_recover_it():
    """Why docs/STUDY.md relaxes "necessary at every higher LR" (a check on the argument,
    not on the code): with 3 seeds the per-LR test passes at 5 LRs in a row too rarely."""
    rng = np.random.default_rng(3)
    hits = []
    for _ in range(300):
        d, both = simulate(rng, effect_from=4)
        n = stats.necessity(LRS, d, both, MIN_EFFECT)
        run = 0
        for necessary in reversed(n.necessary):
            if not necessary:
                break
            run += 1
        hits.append(run >= len(LRS) - 5)  # necessary from planted + 1 up
    assert rate(hits) < 0.9


def test_the_threshold_is_interpolated_where_the_bound_crosses_the_minimum_effect():
    lrs = [1e-3, 1e-2, 1e-1]
    d = np.array([[0.00, 0.01, -0.01], [0.50, 0.52, 0.48], [0.90, 1.00, 0.95]])
    n = stats.necessity(lrs, d, [False] * 3, MIN_EFFECT)
    assert n.necessary == [False, True, True]
    t = n.threshold
    assert t.inside and t.bracket == (1e-3, 1e-2) and 1e-3 < t.value < 1e-2
    g_lo, g_hi = n.stats[0].lb - MIN_EFFECT, n.stats[1].lb - MIN_EFFECT
    expected = math.exp(math.log(1e-3) + (-g_lo / (g_hi - g_lo)) * math.log(10))
    assert t.value == pytest.approx(expected)
    assert all(s.inside and s.bracket == (1e-3, 1e-2) for s in n.seed_thresholds)


def test_a_common_ceiling_neither_makes_nor_breaks_a_threshold():
    lrs = [1e-3, 1e-2, 1e-1, 1.0]
    d = np.array([[0.0, 0.01, -0.01], [0.5, 0.52, 0.48], [0.9, 1.0, 0.95], [0.0, 0.0, 0.0]])
    with_ceiling = stats.necessity(lrs, d, [False, False, False, True], MIN_EFFECT)
    assert with_ceiling.ceiling == [1.0] and with_ceiling.threshold.bracket == (1e-3, 1e-2)
    without = stats.necessity(lrs, d, [False] * 4, MIN_EFFECT)
    assert without.threshold.kind == "none"  # judged as an LR where QK-norm does not help


def test_necessary_from_the_lowest_lr_is_censored_below_and_none_is_none():
    lrs = [1e-3, 1e-2]
    big = np.full((2, 3), 0.5) + np.array([0.0, 0.01, -0.01])
    assert stats.necessity(lrs, big, [False, False], MIN_EFFECT).threshold.kind == "below"
    small = np.zeros((2, 3)) + np.array([0.0, 0.01, -0.01])
    assert stats.necessity(lrs, small, [False, False], MIN_EFFECT).threshold.kind == "none"


def test_paired_bounds_are_t_bounds_and_need_two_pairs():
    p = stats.paired([1.0, 2.0, 3.0, math.nan])
    assert p.n == 3 and p.mean == 2.0 and p.sd == pytest.approx(1.0)
    assert p.lb == pytest.approx(2.0 - 2.919986 / math.sqrt(3), rel=1e-5)
    assert p.lo == pytest.approx(2.0 - 4.302653 / math.sqrt(3), rel=1e-5)
    assert math.isnan(stats.paired([1.0]).lb) and stats.paired([]).n == 0


def test_critical_lr_is_the_midpoint_of_the_last_ok_and_first_failed_lr_above_the_best():
    lrs = [1e-3, 1e-2, 1e-1, 1.0]
    loss = [2.0, 1.5, 3.0, 5.5]
    t = stats.critical_lr(lrs, [False, False, True, False], loss)  # a later ok does not count
    assert t.value == pytest.approx(math.sqrt(1e-2 * 1e-1)) and t.bracket == (1e-2, 1e-1)
    assert stats.critical_lr(lrs, [False, None, True, True], loss).bracket == (1e-3, 1e-1)
    assert stats.critical_lr(lrs, [False] * 4, loss) == stats.GridValue(1.0, "above")
    assert stats.critical_lr(lrs, [True] * 4, loss) == stats.GridValue(1e-3, "below")
    # too small an LR for the budget (worse than bigram: unstable) is not the stability edge
    slow = stats.critical_lr(lrs, [True, False, True, True], [2.5, 1.5, 3.0, 5.5])
    assert slow.bracket == (1e-2, 1e-1)


def test_eta_max_interpolates_the_worst_seed_towards_the_next_lr():
    lrs = [1e-3, 1e-2, 1e-1]
    worst = [1.5, 1.2, 2.2]  # target 1.7 is crossed a fifth of the way from 1e-2 to 1e-1
    t = stats.eta_max(lrs, worst, 1.7)
    assert t.value == pytest.approx(10 ** (-2 + 0.5)) and t.bracket == (1e-2, 1e-1)
    assert stats.eta_max(lrs, [1.0, 1.0, 1.0], 1.7).kind == "above"
    assert stats.eta_max(lrs, [2.0, 2.0, 2.0], 1.7).kind == "none"
    assert stats.eta_max(lrs, [1.5, math.nan, 2.2], 1.7).bracket == (1e-3, 1e-1)


def test_sensitivity_is_mean_minus_min_and_incomplete_with_a_gap():
    assert stats.sensitivity([1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert math.isnan(stats.sensitivity([1.0, math.nan, 3.0]))


def test_slope_interval_covers_the_truth_and_excludes_zero_for_a_clear_trend():
    rng = np.random.default_rng(4)
    x = np.repeat(np.log2([3, 6, 12]), 3)
    y = -0.3 * x + rng.normal(0, 0.05, x.size)
    s = stats.slope(x, y)
    assert s.lo < -0.3 < s.hi and s.hi < 0
    assert math.isnan(stats.slope([1, 1, 1], [1, 2, 3]).slope)


def test_the_code_implements_the_study_md_it_cites():
    assert stats.study_digest() == stats.STUDY_SHA256, (
        "docs/STUDY.md changed: review the rules in sweeps/study/stats.py and figures/, then set "
        "sweeps.study.stats.STUDY_SHA256 to the new digest in the same commit")
