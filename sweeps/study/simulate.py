"""Simulated sweeps with known answers, judged by the study's own rules (docs/STUDY.md
section 7): the engine behind tests/test_stats.py and benchmarks/study_simulation.py.

A sweep: two arms (off, on) on a log grid of LRs from 1e-4 to 1, n seeds. Each run's effective
loss is a shared U-shaped curve plus seed noise; a failed run counts as its loss at init L0.
The conditions real sweeps have: noise that grows toward the stability edge (hetero), a
per-(arm, seed) offset that persists across LRs (a seed's luck), seed noise shared by the arms
of a seed (same draws and batches), noise large against m, random failures in both arms, 9 or
17 LRs, and the adaptive refinement loop as the runner runs it. Planted: QK-norm on is better
by 3 sigma (sd of the paired difference at that LR) from a given LR up; null: identical arms.

The base-grid conditions are judged vectorised (hundreds of sweeps in one call of the same
functions sweeps.study.stats uses); refinement runs sweep by sweep through sweeps.study.rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sweeps.study import rules, stats

L0 = 5.5  # loss at initialization: what a failed run counts as
PLANTED_SIGMAS = 3.0


@dataclass(frozen=True)
class Condition:
    name: str
    n_lr: int = 9  # from 1e-4 to 1: 9 is half-decade, 17 quarter-decade
    seeds: int = 3
    noise: float = 0.03  # per-run seed sd at stable LRs, nats
    hetero: float = 0.0  # the sd grows to (1 + hetero) x noise at the top LR
    offset: float = 0.0  # sd of a per-(arm, seed) offset that persists across LRs
    shared: float = 0.0  # fraction of the per-run noise variance shared by a seed's arms
    fail: float = 0.0  # random failures of either arm: this probability at the top LR,
    # falling linearly to 0 over the top third of the grid
    ceiling: int = 0  # top LRs where every run of both arms fails
    min_effect: float = 0.02

    @property
    def lrs(self) -> np.ndarray:
        return 10.0 ** np.linspace(-4, 0, self.n_lr)

    def noise_at(self, position) -> np.ndarray:
        """Per-run sd at positions 0 (bottom LR) .. 1 (top LR)."""
        return self.noise * (1 + self.hetero * np.asarray(position, float) ** 2)

    def sigma_d(self, position) -> np.ndarray:
        """sd of the paired difference: the unshared noise and the offsets of both arms."""
        return np.sqrt(2 * (1 - self.shared) * self.noise_at(position) ** 2 + 2 * self.offset**2)

    def fail_prob(self, position) -> np.ndarray:
        x = np.asarray(position, float)
        return self.fail * np.clip((x - 2 / 3) * 3, 0, 1)


def _curve(lrs) -> np.ndarray:
    return 1.0 + 0.3 * (np.log10(lrs) + 2.5) ** 2


def draw(cond: Condition, rng, sweeps: int, lrs=None, planted_lr=None, offsets=None):
    """Effective losses and failures [sweep, arm (off, on), LR, seed] at `lrs` (default: the
    condition's grid). planted_lr: per sweep, on is better by 3 sigma from that LR up (None:
    null). offsets [sweep, arm, seed]: persistent offsets (drawn when None)."""
    lrs = cond.lrs if lrs is None else np.asarray(lrs, float)
    pos = (np.log10(lrs) + 4) / 4
    shape = (sweeps, 2, len(lrs), cond.seeds)
    sd = cond.noise_at(pos)[None, None, :, None]
    own = rng.normal(0, 1, shape) * math.sqrt(1 - cond.shared)
    common = rng.normal(0, 1, (sweeps, 1, len(lrs), cond.seeds)) * math.sqrt(cond.shared)
    if offsets is None:
        offsets = rng.normal(0, cond.offset, (sweeps, 2, cond.seeds))
    loss = _curve(lrs)[None, None, :, None] + sd * (own + common) + offsets[:, :, None, :]
    if planted_lr is not None:
        on = np.asarray(lrs)[None, :] >= np.asarray(planted_lr)[:, None] * (1 - 1e-9)
        effect = PLANTED_SIGMAS * cond.sigma_d(pos)[None, :] * on
        loss[:, 1] -= effect[:, :, None]
    failing = rng.random(shape) < cond.fail_prob(pos)[None, None, :, None]
    if cond.ceiling:
        failing[:, :, -cond.ceiling :] = True
    return np.where(failing, L0, loss), failing, offsets


def thresholds(loss, failing, min_effect: float) -> np.ndarray:
    """The necessity rule's decision on simulated sweeps: per sweep the LR index of the
    threshold's bracket top (-1: none), by stats.threshold_index with the noise floor and
    common ceiling computed as sweeps.study.rules computes them."""
    d = loss[:, 0] - loss[:, 1]
    ceiling = failing.all(axis=(1, 3))
    clean = ~failing.any(axis=(1, 3))
    floor = stats.noise_floor(d, clean & ~ceiling)
    a = stats.paired_arrays(d, floor[:, None])
    mixed = rules.mixed_failures(failing, np.ones(failing.shape, bool))
    judged = ~ceiling & ~mixed & (a["n"] >= stats.MIN_PAIRS) & np.isfinite(a["lower"])
    return stats.threshold_index(a["lower"], a["lower75"], judged, min_effect)


def false_thresholds(cond: Condition, sweeps: int, seed: int = 1) -> float:
    """The share of null sweeps (identical arms) with a threshold."""
    loss, failing, _ = draw(cond, np.random.default_rng(seed), sweeps)
    return float(np.mean(thresholds(loss, failing, cond.min_effect) >= 0))


def recovery(cond: Condition, sweeps: int, planted: int, seed: int = 2) -> float:
    """The share of sweeps whose threshold lies within one grid step of the planted LR
    index (the bracket's top: planted +- 1)."""
    rng = np.random.default_rng(seed)
    at = np.full(sweeps, cond.lrs[planted])
    loss, failing, _ = draw(cond, rng, sweeps, planted_lr=at)
    k = thresholds(loss, failing, cond.min_effect)
    return float(np.mean((k >= 0) & (np.abs(k - planted) <= 1)))


# -- the adaptive refinement loop, as the runner runs it ----------------------------------------
def refined_sweep(
    cond: Condition, rng, planted_lr: float | None, edge: float, resolution: float = 0.125
):
    """One sweep on the condition's grid grown by refinement (sweeps.study.rules, the same
    brackets and midpoints as sweeps.sweep.grid) until every bracket is resolved. Both arms
    fail above a per-(arm, seed) edge (log10 jitter 0.1 decades); on's edge is half a decade
    higher when planted. Returns the final Judgement."""
    offsets = rng.normal(0, cond.offset, (1, 2, cond.seeds))
    edges = np.log10(edge) + rng.normal(0, 0.1, (2, cond.seeds))
    if planted_lr is not None:
        edges[1] += 0.5
    study = rules.Study(
        delta=0.1, sensitivity_range=(1e-4, 1.0), target_loss=None, min_effect=cond.min_effect
    )
    lrs, loss, failing = [], np.zeros((2, 0, cond.seeds)), np.zeros((2, 0, cond.seeds), bool)
    new = list(cond.lrs)
    while new:
        x, f, _ = draw(
            cond,
            rng,
            1,
            lrs=new,
            offsets=offsets,
            planted_lr=None if planted_lr is None else [planted_lr],
        )
        above = np.log10(np.asarray(new))[None, :, None] > edges[:, None, :]
        f = f[0] | above
        x = np.where(f, L0, x[0])
        lrs += [float(v) for v in new]
        order = np.argsort(lrs)
        loss = np.concatenate([loss, x], axis=1)[:, order]
        failing = np.concatenate([failing, f], axis=1)[:, order]
        lrs = [lrs[i] for i in order]
        cells = rules.Cells(
            ("off", "on"),
            tuple(lrs),
            tuple(range(cond.seeds)),
            loss,
            failing,
            np.full(loss.shape, None, dtype=object),
        )
        brackets = rules.refinement_brackets(cells, study, ("off", "on"))
        new = list(rules.midpoints(brackets, resolution, set(lrs)))
    return rules.compare(cells, study.primary_comparison, cond.min_effect, influence=False)


def refined_rates(cond: Condition, sweeps: int, seed: int = 3) -> tuple[float, float]:
    """(false thresholds under the null, recovery within one base-grid step of the planted
    LR) with the refinement loop. The planted LR is drawn uniformly between grid indices 2
    and n - 4, the off arm's edge 0.75 decades above it (the null: the same edge)."""
    rng = np.random.default_rng(seed)
    step = 4 / (cond.n_lr - 1)
    false, hits = [], []
    for _ in range(sweeps):
        planted = 10 ** rng.uniform(-4 + 2 * step, -4 + (cond.n_lr - 4) * step)
        edge = planted * 10**0.75
        t = refined_sweep(cond, rng, None, edge).necessity.threshold
        false.append(t.kind != "none")
        t = refined_sweep(cond, rng, planted, edge).necessity.threshold
        value = t.bracket[1] if t.inside else t.value
        hits.append(t.kind in ("", "below") and abs(math.log10(value / planted)) <= step * 1.01)
    return float(np.mean(false)), float(np.mean(hits))


# -- H1, H2a, H2b under nulls where both arms fail at the same true LR -------------------------
def hypothesis_nulls(cond: Condition, sweeps: int, seed: int = 4) -> dict[str, float]:
    """The share of null sweeps where H1, H2a or H2b comes out supported. Both arms fail above
    the same true edge (drawn between grid indices 4 and n - 2) with per-(arm, seed) jitter of
    0.15 decades; the sensitivity range is the whole grid."""
    rng = np.random.default_rng(seed)
    lrs = cond.lrs
    support = {"H1": [], "H2a": [], "H2b": []}
    for _ in range(sweeps):
        x, f, _ = draw(cond, rng, 1)
        edge = rng.uniform(np.log10(lrs[4]), np.log10(lrs[-2]))
        f = f[0] | (np.log10(lrs)[None, :, None] > edge + rng.normal(0, 0.15, (2, 1, cond.seeds)))
        x = np.where(f, L0, x[0])
        cells = rules.Cells(
            ("off", "on"),
            tuple(lrs),
            tuple(range(cond.seeds)),
            x,
            f,
            np.full(x.shape, None, dtype=object),
        )
        j = rules.compare(
            cells, rules.Comparison("off", "on"), cond.min_effect, influence=False
        ).necessity
        low = j.stats[0] if j.lrs and j.lrs[0] == lrs[0] else None
        support["H1"].append(
            low is not None and rules.negligible(low, cond.min_effect, 0.05) and j.threshold.inside
        )
        p, _ = rules.h2a_stats(rules.critical_lrs(cells, "off"), rules.critical_lrs(cells, "on"))
        support["H2a"].append(rules.paired_verdict(p) == rules.SUPPORTED)
        s = {arm: rules.sensitivities(cells, arm, lrs) for arm in ("off", "on")}
        q = rules.h2b_stats(s["off"], s["on"], j.floor)
        support["H2b"].append(rules.paired_verdict(q, 0.05) == rules.SUPPORTED)
    return {k: float(np.mean(v)) for k, v in support.items()}


BASE = Condition("independent noise 0.03")
CONDITIONS = [
    BASE,
    Condition("noise 0.1 (large against m)", noise=0.1),
    Condition("noise 0.3 (m negligible)", noise=0.3),
    Condition("heteroscedastic (x4 at the top)", hetero=3.0),
    Condition("persistent per-(arm, seed) offset", offset=0.05),
    Condition("offset, noise 0.1, heteroscedastic", noise=0.1, offset=0.1, hetero=2.0),
    Condition("seed noise shared by the arms", shared=0.8, noise=0.06),
    Condition("random failures in both arms", fail=0.3, ceiling=1),
    Condition("17 LRs", n_lr=17),
    Condition("17 LRs, offset, heteroscedastic", n_lr=17, offset=0.05, hetero=3.0),
]


def with_seeds(cond: Condition, seeds: int) -> Condition:
    return replace(cond, seeds=seeds)
