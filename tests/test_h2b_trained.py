"""H2b's robustness check (sweeps.study.rules.h2b_trained, descriptive): LR sensitivity off - on
over the range's LRs where every run of both arms trained, so a reader sees how much of H2b's
difference is only `off`'s failures. Proven on hand-made tables and on simulated sweeps with a
known answer: a null (QK-norm's whole advantage is off's stuck runs) and a planted flatter
basin, with the noise real sweeps have (persistent per seed, growing toward the LR edge, an
occasional stuck run of the treated arm)."""

import math

import numpy as np
import pytest

from sweeps.study import rules
from sweeps.study.cells import Cells

LRS = (3.16e-4, 1e-3, 3.16e-3, 1e-2, 3.16e-2, 0.1, 0.316)  # docs/cpu's sensitivity range
SEEDS = 4
STUCK = 2.4  # a stuck run's capped loss (about the bigram baseline)


def table(off: np.ndarray, on: np.ndarray, off_failing, on_failing) -> Cells:
    """Cells of two arms from [LR, seed] losses (NaN: no finished run) and failure masks."""
    loss = np.stack([off, on])
    failing = np.stack([np.asarray(off_failing, bool), np.asarray(on_failing, bool)])
    shape = loss.shape
    ids = np.full(shape, None, dtype=object)
    return Cells(("off", "on"), LRS, tuple(range(shape[2])), loss, failing, ids)


def test_trained_lrs_are_those_where_every_seed_of_both_arms_trained():
    base = np.full((len(LRS), SEEDS), 1.0)
    off_fail = np.zeros_like(base, bool)
    off_fail[5:, :] = True  # off stuck at 0.1 and 0.316
    on_fail = np.zeros_like(base, bool)
    on_fail[0, 2] = True  # one stuck run of on at the lowest LR
    off = base.copy()
    off[1, 3] = math.nan  # a seed without a finished run at 1e-3
    cells = table(off, base, off_fail, on_fail)
    assert rules.trained_lrs(cells, ("off", "on"), LRS) == [3.16e-3, 1e-2, 3.16e-2]
    assert rules.trained_lrs(cells, ("on",), LRS) == list(LRS[1:])
    assert rules.trained_lrs(cells, ("off", "warm"), LRS) == []  # an arm the table lacks
    lrs, p = rules.h2b_trained(cells, "off", "on", [0.1, 0.316], 0.0)
    assert lrs == [] and p is None


def simulated(rng, basin: float, on_stuck: float = 0.0) -> Cells:
    """One sweep: both arms' losses are a basin around 0.01 with their own per-seed offsets
    (persistent over the LRs) and noise growing toward both edges, equally noisy (mean - min
    reads the noisier arm as more sensitive: a null must not differ there); off's basin is
    steeper by `basin` x the distance from 0.01 in decades, and off is stuck from 0.1 up.
    on_stuck: the chance that one of on's runs is stuck anyway."""
    x = np.log10(np.asarray(LRS)) + 2  # decades from 0.01

    def arm(steeper: float) -> np.ndarray:
        seed = rng.normal(0, 0.03, SEEDS)[None, :]
        noise = rng.normal(0, 0.02 + 0.03 * np.abs(x)[:, None], (len(LRS), SEEDS))
        return 0.9 + (0.25 * x**2 + steeper * np.abs(x))[:, None] + seed + noise

    on, off = arm(0.0), arm(basin)
    off_fail = np.zeros(on.shape, bool)
    off_fail[x >= 1 - 1e-9, :] = True
    off[off_fail] = STUCK + rng.normal(0, 0.01, off_fail.sum())
    on_fail = rng.random(on.shape) < on_stuck
    on[on_fail] = STUCK
    return table(off, on, off_fail, on_fail)


@pytest.mark.parametrize("on_stuck", [0.0, 0.02])
def test_a_null_basin_is_rarely_said_flatter_and_a_planted_one_is_found(on_stuck):
    rng = np.random.default_rng(7)
    n = 400
    said_null, found, full_supported = 0, 0, 0
    for _ in range(n):
        null = simulated(rng, 0.0, on_stuck)
        _, p = rules.h2b_trained(null, "off", "on", LRS, 0.0)
        full = rules.h2b_stats(
            rules.sensitivities(null, "off", LRS), rules.sensitivities(null, "on", LRS), 0.0
        )
        full_supported += full.lower > 0.05  # H2b as registered: off's failures carry it
        said_null += p is not None and p.lower > 0
        _, q = rules.h2b_trained(simulated(rng, 0.1, on_stuck), "off", "on", LRS, 0.0)
        found += q is not None and q.lower > 0
    # the one-sided 95% bound: at most 5% false, with 2.5 binomial standard errors of slack
    assert said_null / n <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / n)
    assert full_supported / n > 0.95  # the registered H2b alone would call it a flatter loss
    assert found / n >= 0.8


def test_no_failure_in_the_range_gives_the_registered_difference_itself():
    rng = np.random.default_rng(1)
    on = 1.0 + rng.normal(0, 0.05, (len(LRS), SEEDS))
    off = on + 0.1 + rng.normal(0, 0.05, (len(LRS), SEEDS))
    none = np.zeros(on.shape, bool)
    cells = table(off, on, none, none)
    lrs, p = rules.h2b_trained(cells, "off", "on", LRS, 0.0)
    full = rules.h2b_stats(
        rules.sensitivities(cells, "off", LRS), rules.sensitivities(cells, "on", LRS), 0.0
    )
    assert lrs == list(LRS) and p == full
