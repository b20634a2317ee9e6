"""Simulated sweeps with known answers, judged by the study's own rules (docs/STUDY.md
section 7): the engine behind tests/test_stats.py and benchmarks/sweep_simulation.py.

A sweep: two arms (off, on) on a log grid of LRs from 1e-4 to 1, n seeds. A run that trained
has a U-shaped loss in log LR plus seed noise; a failing run is stuck just above the bigram
baseline (most) or stopped at its loss at init L0. The conditions real sweeps have: noise that
grows toward the stability edge (hetero), a per-(arm, seed) offset that persists across LRs (a
seed's luck), seed noise shared by the arms of a seed, noise large against m, heavy tails,
random failures in both arms, failures clustered at each arm's edge, a bimodal seed on a
plateau at one LR, 9 or 17 LRs, and the adaptive refinement loop as the runner runs it.
Planted: QK-norm on is better by 3 sigma (sd of the paired difference at that LR) from a given
LR up; null: identical arms.

The base-grid conditions are judged vectorised (thousands of sweeps in one call of the same
functions sweeps.study.stats uses); refinement runs sweep by sweep through sweeps.study.rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sweeps.study import judge, rules, stats
from sweeps.study.rung import judge_rung
from sweeps.study.stats import _bracketed

L0 = 5.5  # loss at initialization: what a run that stopped (diverged) counts as
STUCK = (2.4, 3.0)  # a stuck run finishes here, just above a bigram baseline of ~2.34
PLATEAU = (2.2, 2.33)  # a bimodal seed: stuck on a plateau just below the baseline (docs/cpu's
# off seed 3 at LR 0.0316 ended at 2.266): not a failure, an outlier in its LR's pairs
DIVERGED_SHARE = 0.2  # of failing runs, the share that stop (diverged) rather than stick
PLANTED_SIGMAS = 3.0
PRECISION = 0.01  # the study's precision floor (Study.precision)


@dataclass(frozen=True)
class Condition:
    name: str
    n_lr: int = 9  # from 1e-4 to 1: 9 is half-decade, 17 quarter-decade
    seeds: int = 4
    noise: float = 0.03  # per-run seed sd at stable LRs, nats
    hetero: float = 0.0  # the sd grows to (1 + hetero) x noise at the top LR
    offset: float = 0.0  # sd of a per-(arm, seed) offset that persists across LRs
    shared: float = 0.0  # fraction of the per-run noise variance shared by a seed's arms
    tails: float = math.inf  # degrees of freedom of the noise (Student t, sd kept)
    fail: float = 0.0  # random failures of either arm: this probability at the top LR,
    # falling linearly to 0 over the top third of the grid
    edge: bool = False  # failures cluster at each arm's edge: every run above it fails
    ceiling: int = 0  # top LRs where every run of both arms fails
    stuck_seed: bool = False  # one seed of `off` on a plateau (PLATEAU) at one LR of the
    # grid's top half below its top LR
    # section 22's messier failures: each run of either arm fails at random with this
    # probability at every LR from the curve's best (1e-2) up, the whole search range
    fail_anywhere: float = 0.0
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
    """The loss of a run that trained, shaped like docs/cpu's: best (0.9) at LR 1e-2, 1.7 at
    both ends of the grid, below the stuck band (a run that trained beats the baseline)."""
    return 0.9 + 0.2 * (np.log10(lrs) + 2.0) ** 2


def _unit_noise(cond: Condition, rng, shape) -> np.ndarray:
    """Standard normal draws, or Student t with cond.tails degrees of freedom scaled to sd 1."""
    if math.isinf(cond.tails):
        return rng.normal(0, 1, shape)
    return rng.standard_t(cond.tails, shape) / math.sqrt(cond.tails / (cond.tails - 2))


def failed_losses(rng, shape) -> tuple[np.ndarray, np.ndarray]:
    """What a failing run counts as under v4's outcomes: most stick just above the bigram
    baseline and count as their final loss; some stop and count as L0. (loss, diverged)."""
    diverged = rng.random(shape) < DIVERGED_SHARE
    return np.where(diverged, L0, rng.uniform(*STUCK, shape)), diverged


def draw(cond: Condition, rng, sweeps: int, lrs=None, planted_lr=None, offsets=None):
    """Capped losses, failures and divergences [sweep, arm (off, on), LR, seed] at `lrs`
    (default: the condition's grid). planted_lr: per sweep, on is better by 3 sigma from that
    LR up (None: null). offsets [sweep, arm, seed]: persistent offsets (drawn when None).
    A failing run's loss is failed_losses'; the v3 rules counted every one at L0."""
    lrs = cond.lrs if lrs is None else np.asarray(lrs, float)
    pos = (np.log10(lrs) + 4) / 4
    shape = (sweeps, 2, len(lrs), cond.seeds)
    sd = cond.noise_at(pos)[None, None, :, None]
    own = _unit_noise(cond, rng, shape) * math.sqrt(1 - cond.shared)
    common = _unit_noise(cond, rng, (sweeps, 1, len(lrs), cond.seeds)) * math.sqrt(cond.shared)
    if offsets is None:
        offsets = rng.normal(0, cond.offset, (sweeps, 2, cond.seeds))
    loss = _curve(lrs)[None, None, :, None] + sd * (own + common) + offsets[:, :, None, :]
    if planted_lr is not None:
        on = np.asarray(lrs)[None, :] >= np.asarray(planted_lr)[:, None] * (1 - 1e-9)
        effect = PLANTED_SIGMAS * cond.sigma_d(pos)[None, :] * on
        loss[:, 1] -= effect[:, :, None]
    failing = rng.random(shape) < cond.fail_prob(pos)[None, None, :, None]
    if cond.edge:
        failing |= _above_edges(cond, rng, sweeps, lrs, planted_lr)
    if cond.ceiling:
        failing[:, :, -cond.ceiling :] = True
    if cond.fail_anywhere:
        search = np.asarray(lrs, float) >= 1e-2 * (1 - 1e-9)
        failing |= (rng.random(shape) < cond.fail_anywhere) & search[None, None, :, None]
    if cond.stuck_seed:
        near = np.flatnonzero((pos >= 0.5) & (pos < 1))
        at = rng.choice(near, sweeps) if len(near) else np.zeros(sweeps, int)
        seed = rng.integers(0, cond.seeds, sweeps)
        loss[np.arange(sweeps), 0, at, seed] = rng.uniform(*PLATEAU, sweeps)
    bad, diverged = failed_losses(rng, shape)
    return np.where(failing, bad, loss), failing, offsets, failing & diverged


EDGE_ABOVE_PLANTED = 0.75  # decades from a planted threshold up to off's edge
ON_EDGE_HIGHER = 0.5  # decades from off's edge up to on's, when planted
EDGE_JITTER = 0.1  # per-(arm, seed) sd of an edge, decades


def _above_edges(cond: Condition, rng, sweeps: int, lrs, planted_lr) -> np.ndarray:
    """[sweep, arm, LR, seed]: the run lies above its arm's and seed's edge (it fails there).
    Planted: off's edge 0.75 decades above the planted LR, on's half a decade higher; null: one
    edge for both arms, drawn between the grid's 5th LR and the one below the top."""
    if planted_lr is None:
        grid = np.log10(cond.lrs)
        edge = rng.uniform(grid[4], grid[-2], sweeps)[:, None]
        edges = np.repeat(edge, 2, axis=1)
    else:
        off = np.log10(np.asarray(planted_lr, float)) + EDGE_ABOVE_PLANTED
        edges = np.stack([off, off + ON_EDGE_HIGHER], axis=1)
    edges = edges[:, :, None] + rng.normal(0, EDGE_JITTER, (sweeps, 2, cond.seeds))
    return np.log10(np.asarray(lrs, float))[None, None, :, None] > edges[:, :, None, :]


def thresholds(loss, failing, min_effect: float, floor: float = PRECISION) -> np.ndarray:
    """The necessity rule's decision on simulated sweeps: per sweep the LR index of the
    threshold's bracket top (-1: none), by the same functions sweeps.study.rules uses
    (stats.judge_lrs, stats.threshold_index) with the common ceiling computed as it does."""
    d = loss[:, 0] - loss[:, 1]
    ceiling = failing.all(axis=(1, 3))
    a, _, judged = stats.judge_lrs(d, failing[:, 0], failing[:, 1], ceiling, floor)
    return stats.decide(a, judged, min_effect)


def false_thresholds(cond: Condition, sweeps: int, seed: int = 1) -> float:
    """The share of null sweeps (identical arms) with a threshold."""
    loss, failing, _, _ = draw(cond, np.random.default_rng(seed), sweeps)
    return float(np.mean(thresholds(loss, failing, cond.min_effect) >= 0))


def planted_indices(cond: Condition) -> tuple[int, int, int]:
    """The three planted LR indices every condition is tested at: low, middle, high."""
    return 2, cond.n_lr // 2, cond.n_lr - 3 - cond.ceiling


def recovery(cond: Condition, sweeps: int, planted: int, seed: int = 2) -> float:
    """The share of sweeps whose threshold lies within one grid step of the planted LR
    index (the bracket's top: planted +- 1)."""
    rng = np.random.default_rng(seed)
    at = np.full(sweeps, cond.lrs[planted])
    loss, failing, _, _ = draw(cond, rng, sweeps, planted_lr=at)
    k = thresholds(loss, failing, cond.min_effect)
    return float(np.mean((k >= 0) & (np.abs(k - planted) <= 1)))


def necessary_rate(cond: Condition, sweeps: int, planted: int, seed: int = 2):
    """Per LR, the share of planted sweeps where QK-norm is shown necessary there (the power of
    each LR's test): (at LRs without a plateau seed, at the LR with one; NaN where none). With
    per-LR intervals a bimodal seed costs power only at its own LR."""
    rng = np.random.default_rng(seed)
    loss, failing, _, _ = draw(cond, rng, sweeps, planted_lr=np.full(sweeps, cond.lrs[planted]))
    d = loss[:, 0] - loss[:, 1]
    ceiling = failing.all(axis=(1, 3))
    a, _, judged = stats.judge_lrs(d, failing[:, 0], failing[:, 1], ceiling, PRECISION)
    shown = judged & (np.nan_to_num(a["lower"], nan=-np.inf) > cond.min_effect)
    off = loss[:, 0]
    plateau = ((off >= PLATEAU[0]) & (off <= PLATEAU[1]) & ~failing[:, 0]).any(-1)
    with np.errstate(invalid="ignore"):
        other = (shown & ~plateau).sum(0) / (~plateau).sum(0)
        at = (shown & plateau).sum(0) / plateau.sum(0)
    return other, at


def _cells(loss, failing, diverged, lrs, seeds: int) -> rules.Cells:
    return rules.Cells(
        ("off", "on"),
        tuple(float(x) for x in lrs),
        tuple(range(seeds)),
        loss,
        failing,
        np.full(loss.shape, None, dtype=object),
        diverged,
    )


def _study(cond: Condition) -> rules.Study:
    return rules.Study(
        delta=0.1,
        sensitivity_range=(1e-4, 1.0),
        target_loss=None,
        min_effect=cond.min_effect,
        precision=PRECISION,
    )


# -- the adaptive refinement loop, as the runner runs it ----------------------------------------
def refined_sweep(
    cond: Condition,
    rng,
    planted_lr: float | None,
    edge: float,
    resolution: float = 0.125,
    brackets_of=judge.refinement_brackets,
):
    """One sweep on the condition's grid grown by refinement (sweeps.study.rules, the same
    brackets and midpoints as sweeps.sweep.grid) until every bracket is resolved. Both arms
    fail above a per-(arm, seed) edge (log10 jitter 0.1 decades); on's edge is half a decade
    higher when planted. Returns the final Judgement. brackets_of: the rule that picks the
    brackets (the study's; benchmarks/seed_refinement.py compares it with an earlier one)."""
    offsets = rng.normal(0, cond.offset, (1, 2, cond.seeds))
    edges = np.log10(edge) + rng.normal(0, EDGE_JITTER, (2, cond.seeds))
    if planted_lr is not None:
        edges[1] += ON_EDGE_HIGHER
    study = _study(cond)
    shape = (2, 0, cond.seeds)
    lrs, loss, failing, diverged = [], np.zeros(shape), np.zeros(shape, bool), np.zeros(shape, bool)
    new = list(cond.lrs)
    while new:
        x, f, _, dv = draw(
            cond,
            rng,
            1,
            lrs=new,
            offsets=offsets,
            planted_lr=None if planted_lr is None else [planted_lr],
        )
        above = np.log10(np.asarray(new))[None, :, None] > edges[:, None, :]
        bad, stop = failed_losses(rng, above.shape)
        x = np.where(above & ~f[0], bad, x[0])
        dv = np.where(above & ~f[0], stop, dv[0])
        f = f[0] | above
        lrs += [float(v) for v in new]
        order = np.argsort(lrs)
        loss = np.concatenate([loss, x], axis=1)[:, order]
        failing = np.concatenate([failing, f], axis=1)[:, order]
        diverged = np.concatenate([diverged, dv], axis=1)[:, order]
        lrs = [lrs[i] for i in order]
        cells = _cells(loss, failing, diverged, lrs, cond.seeds)
        brackets = brackets_of(cells, study, ("off", "on"))
        new = list(rules.midpoints(brackets, resolution, set(lrs)))
    return judge.compare(cells, study.primary_comparison, study, influence=False)


def refined_rates(cond: Condition, sweeps: int, seed: int = 3) -> tuple[float, float]:
    """(false thresholds under the null, recovery within one base-grid step of the planted
    LR) with the refinement loop. The planted LR is drawn uniformly (in log) from off's best
    LR (the curve's minimum, 1e-2) to two base-grid steps below the top: the stability
    threshold is searched at and above that best LR (section 13; an effect below it is the
    low-LR effect, its own estimand), the off arm's edge 0.75 decades above the planted LR
    (the null: the same edge)."""
    rng = np.random.default_rng(seed)
    step = 4 / (cond.n_lr - 1)
    false, hits = [], []
    for _ in range(sweeps):
        planted = 10 ** rng.uniform(-2.0, -4 + (cond.n_lr - 3) * step)
        edge = planted * 10**EDGE_ABOVE_PLANTED
        t = refined_sweep(cond, rng, None, edge).necessity.threshold
        false.append(t.kind != "none")
        t = refined_sweep(cond, rng, planted, edge).necessity.threshold
        value = t.bracket[1] if t.inside else t.value
        hits.append(t.kind in ("", "below") and abs(math.log10(value / planted)) <= step * 1.01)
    return float(np.mean(false)), float(np.mean(hits))


# -- H1, H2a, H2b under nulls where both arms fail at the same true LR -------------------------
def null_with_edge(cond: Condition, rng):
    """One null sweep whose arms both fail above the same true edge (drawn between grid
    indices 4 and n - 2) with per-(arm, seed) jitter of 0.15 decades: (loss, failing,
    diverged) [arm, LR, seed]."""
    lrs = cond.lrs
    x, f, _, dv = draw(cond, rng, 1)
    edge = rng.uniform(np.log10(lrs[4]), np.log10(lrs[-2]))
    above = np.log10(lrs)[None, :, None] > edge + rng.normal(0, 0.15, (2, 1, cond.seeds))
    bad, stop = failed_losses(rng, above.shape)
    new = above & ~f[0]
    return np.where(new, bad, x[0]), f[0] | above, np.where(new, stop, dv[0])


def hypothesis_nulls(cond: Condition, sweeps: int, seed: int = 4) -> dict[str, float]:
    """The share of null sweeps (null_with_edge) where H1, H2a or H2b comes out supported, as
    sweeps.study.rules decides them; the sensitivity range is the whole grid."""
    rng = np.random.default_rng(seed)
    study = _study(cond)
    support = {"H1": [], "H2a": [], "H2b": []}
    for _ in range(sweeps):
        cells = _cells(*null_with_edge(cond, rng), cond.lrs, cond.seeds)
        off = rules.critical_lrs(cells, "off")
        h1 = judge_rung(cells, study).h1
        support["H1"].append(h1.verdict == rules.SUPPORTED)
        p, _ = rules.h2a_stats(off, rules.critical_lrs(cells, "on"))
        support["H2a"].append(rules.paired_verdict(p) == rules.SUPPORTED)
        s = {arm: rules.sensitivities(cells, arm, cond.lrs) for arm in ("off", "on")}
        q = rules.h2b_stats(s["off"], s["on"], study.precision)
        support["H2b"].append(rules.paired_verdict(q, study.min_sensitivity) == rules.SUPPORTED)
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
    # new in v4: the noise real sweeps showed (docs/STUDY.md section 7)
    Condition("a bimodal stuck seed near the edge", stuck_seed=True),
    Condition("heavy tails (Student t, 3 df)", tails=3.0),
    Condition("failures clustered at the edges", edge=True, ceiling=1),
    Condition(
        "stuck seed, heavy tails, offset, heteroscedastic",
        stuck_seed=True,
        tails=3.0,
        offset=0.05,
        hetero=3.0,
    ),
]


def with_seeds(cond: Condition, seeds: int) -> Condition:
    return replace(cond, seeds=seeds)


# -- v4's necessity rule, one sweep at a time ------------------------------------------------
def v4_necessity(lrs, d, ceiling, min_effect: float, floor: float = 0.0, fail_b=None, fail_t=None):
    """v4's necessity rule (docs/STUDY.md section 4), one sweep at a time: the reference that
    `thresholds` (vectorised, section 7's tables) is tested against; no report applies it now.
    On per-seed differences d [LR, seed] (NaN: no pair) with the common ceiling mask [LR].
    fail_b, fail_t [LR, seed]: the baseline's and the treatment's run failed (the primary
    failure definition); they decide which pairs an LR's bound rests on and whether the effect
    is continuous across the threshold's bracket. floor: the pre-registered precision floor of
    a paired sd (never pooled over LRs)."""
    lrs = [float(x) for x in lrs]
    d = np.asarray(d, dtype=float)
    d = d.reshape(len(lrs), -1) if d.size else np.full((len(lrs), 1), np.nan)
    ceiling = np.asarray(ceiling, dtype=bool).reshape(len(lrs))
    fail_b = np.zeros(d.shape, bool) if fail_b is None else np.asarray(fail_b, bool)
    fail_t = np.zeros(d.shape, bool) if fail_t is None else np.asarray(fail_t, bool)
    a, used, judged = stats.judge_lrs(d, fail_b, fail_t, ceiling, floor)
    idx = [i for i in range(len(lrs)) if judged[i]]
    paired = [
        stats.Paired(
            int(a["n"][i]),
            *(float(a[k][i]) for k in ("mean", "sd", "sd_used", "lower", "upper", "lower75")),
        )
        for i in idx
    ]
    has = np.isfinite(d)
    aside = [[int(s) for s in np.flatnonzero(has[i] & ~used[i])] for i in idx]
    picked = {key: value[idx] for key, value in a.items()}
    k = int(stats.decide(picked, np.ones(len(idx), bool), min_effect)) if idx else -1
    threshold = stats.NONE
    if k == 0:
        threshold = stats.GridValue(lrs[idx[0]], "below")
    elif k > 0:
        lo, hi = idx[k - 1], idx[k]
        same = _same_failures(fail_b, fail_t, has, lo, hi)
        threshold = _bracketed(
            lrs[lo],
            lrs[hi],
            paired[k - 1].mean - min_effect,
            paired[k].mean - min_effect,
            same.all(),
        )
    seeds = []
    for s in range(d.shape[1]):
        rows = [i for i in range(len(lrs)) if not ceiling[i] and has[i, s]]
        seeds.append(_seed_threshold(lrs, rows, d[:, s] - min_effect, fail_b[:, s], fail_t[:, s]))
    return stats.Necessity(
        [lrs[i] for i in idx],
        paired,
        [st.lower > min_effect for st in paired],
        aside,
        threshold,
        [lr for lr, c in zip(lrs, ceiling) if c],
        seeds,
        float(floor),
    )


def _same_failures(fail_b, fail_t, has, lo: int, hi: int) -> np.ndarray:
    """Per seed: its pair's runs are in the same failure class at LRs lo and hi (the effect is
    continuous there; a change of class is a jump no interpolation can place)."""
    return (fail_b[lo] == fail_b[hi]) & (fail_t[lo] == fail_t[hi]) | ~(has[lo] & has[hi])


def _seed_threshold(lrs, rows: list[int], margin, fail_b, fail_t) -> stats.GridValue:
    """One seed over its LRs `rows` (ascending, no ceiling): the smallest LR with d_s > m there
    and at every higher LR, bracketed by the LR below it."""
    k = None
    for pos in range(len(rows) - 1, -1, -1):
        if not margin[rows[pos]] > 0:
            break
        k = pos
    if k is None:
        return stats.NONE
    if k == 0:
        return stats.GridValue(lrs[rows[0]], "below")
    lo, hi = rows[k - 1], rows[k]
    same = fail_b[lo] == fail_b[hi] and fail_t[lo] == fail_t[hi]
    return _bracketed(lrs[lo], lrs[hi], margin[lo], margin[hi], same)
