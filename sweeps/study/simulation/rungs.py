"""Study v5's rules on simulated rungs and ladders with known answers (docs/STUDY.md section
13), beside v4's rules on the same draws: the engine behind tests/test_threshold_rules.py and
benchmarks/rung_simulation.py.

A simulated rung is v4's simulated sweep (simulation/sweep.py: U-shaped loss, seed noise, the
noise conditions real sweeps have) with what v4's simulation lacked and the real sweeps
show: a low-LR gap (`off` slower below its best LR: LOW_GAP nats at the grid's bottom, falling
linearly in log LR to 0 at the best LR 1e-2), failures clustered above each arm's edge with
stuck and stopped runs mixed, partial ceilings near LR 1 (both arms failed), and borderline
fates (a stuck run finishing within the fate margin of the cut). Planted thresholds lie at or
above the best LR, where v5 searches; null sweeps keep the low-LR gap and the shared failures.

A simulated ladder: rungs at log2 sizes x, the true log10 threshold of a rung a + b x plus a
rung-level deviation (sd RUNG_SD) and each seed's about it (sd seed_sd); every seed's effect
rises from 0.25 nats at its threshold by 0.5 nats a decade; `off` sticks (or stops) half a
decade above it and `on` a decade higher still. The grid is the half-decade grid below 1e-2
and a 1/8-decade grid from 1e-2 to 1 (what refinement leaves near the edges). Each rung is
judged by the v5 per-seed rule and the trend by the rung-level rule (sweeps/study/trend.py);
v4's per-seed rule and trend (one line through every seed's value) judge the same draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sweeps.study import effect_curve, stability, stats
from sweeps.study.cells import plateau_cut
from sweeps.study.simulation import sweep as sweep_sim  # the draws a rung is built on
from sweeps.study.trend import CENSOR_SHIFT, RUNG_SD

LOW_GAP = 0.4  # nats: `off` minus `on` at the grid's bottom from the cold start (docs: 0.2-0.57)
BEST_LOG = -2.0  # log10 of the curve's best LR
SEED_MARGIN = 0.1
FATE_MARGIN = 0.01
BASELINE = 2.34  # the stuck cut of the simulated data


@dataclass(frozen=True)
class RungCondition:
    """A v4 noise condition (simulation.sweep.Condition) with the v5 features switched on or off."""

    base: sweep_sim.Condition
    low_gap: float = LOW_GAP
    edges: bool = True  # failures clustered above each arm's edge (stuck and stopped mixed)
    borderline: float = 0.0  # share of stuck `off` runs finishing within the fate margin
    # section 22: one seed of `off` on a plateau just under the stuck cut (sweep_sim.PLATEAU) at
    # every LR from the planted threshold up, failing or not (null sweeps: from a random LR of
    # the grid's top half): trained by its fate, an outlier in every pair above the threshold
    plateau_seed: bool = False
    plateau: tuple[float, float] = sweep_sim.PLATEAU  # its final losses, uniform in this range

    @property
    def name(self) -> str:
        return self.base.name


def _gap(lrs) -> np.ndarray:
    logs = np.log10(np.asarray(lrs, float))
    return np.clip((BEST_LOG - logs) / (BEST_LOG - logs.min()), 0, 1)


def draw_rungs(cond: RungCondition, rng, sweeps: int, planted_lr=None):
    """(loss, cls, cut_gap) [sweep, arm, LR, seed]: capped losses, fate classes (0 trained, 1
    stuck, 2 stopped) and final loss minus the cut (NaN for stopped runs)."""
    base = cond.base
    loss, failing, _, stopped = sweep_sim.draw(base, rng, sweeps, planted_lr=planted_lr)
    lrs = base.lrs
    if cond.edges or base.edge:
        above = _edges(base, rng, sweeps, planted_lr)
        bad, stop = sweep_sim.failed_losses(rng, above.shape)
        new = above & ~failing
        loss, stopped = np.where(new, bad, loss), np.where(new, stop, stopped)
        failing = failing | above
    loss[:, 0] += np.where(failing[:, 0], 0.0, cond.low_gap * _gap(lrs)[None, :, None])
    if cond.plateau_seed:
        _plateau(rng, cond, lrs, planted_lr, loss, failing, stopped)
    cls = stability.fate_classes(failing, stopped)
    gap = np.where(cls == stability.STOPPED, np.nan, loss - BASELINE)
    if cond.borderline:
        _borderline(rng, cond.borderline, loss[:, 0], cls[:, 0], gap[:, 0])
    return loss, cls, gap


def _plateau(rng, cond: RungCondition, lrs, planted_lr, loss, failing, stopped) -> None:
    """In place: one `off` seed per sweep on its plateau (cond.plateau) from the planted LR up
    (null: from a random LR of the grid's top half), a trained run at every one of those LRs."""
    base = cond.base
    sweeps = loss.shape[0]
    logs = np.log10(np.asarray(lrs, float))
    if planted_lr is None:
        top_half = np.flatnonzero(logs >= (logs[0] + logs[-1]) / 2)
        start = logs[rng.choice(top_half, sweeps)]
    else:
        start = np.log10(np.broadcast_to(np.asarray(planted_lr, float), (sweeps,)))
    seed = rng.integers(0, base.seeds, sweeps)
    on = (logs[None, :] >= start[:, None] - 1e-9)[:, :, None] & (
        np.arange(base.seeds)[None, None, :] == seed[:, None, None]
    )
    loss[:, 0] = np.where(on, rng.uniform(*cond.plateau, on.shape), loss[:, 0])
    failing[:, 0] &= ~on
    stopped[:, 0] &= ~on


def _borderline(rng, share: float, loss, cls, gap) -> None:
    """In place, on one arm's arrays: a `share` of its stuck runs finish within the fate
    margin of the cut instead (those under it count as trained, borderline)."""
    flip = (cls == stability.STUCK_ONLY) & (rng.random(cls.shape) < share)
    near = rng.uniform(-FATE_MARGIN, FATE_MARGIN, flip.shape)
    loss[...] = np.where(flip, BASELINE + near, loss)
    gap[...] = np.where(flip, near, gap)
    cls[...] = np.where(flip & (near <= 0), stability.BORDERLINE_TRAINED, cls)


def _edges(base: sweep_sim.Condition, rng, sweeps: int, planted_lr) -> np.ndarray:
    """[sweep, arm, LR, seed]: the run lies above its arm's and seed's stability edge. Planted:
    v4's edges (off 0.75 decades above the planted LR, on half a decade higher). Null: one
    edge for both arms drawn between half a decade above the best LR and half a decade below
    the top (v4's null drew it from the grid's 5th LR, below the best LR on a 17-LR grid,
    where `off`'s best LR then sits in the cold-start gap)."""
    if planted_lr is not None:
        return sweep_sim._above_edges(replace(base, edge=True), rng, sweeps, base.lrs, planted_lr)
    edge = rng.uniform(BEST_LOG + 0.5, -0.5, sweeps)[:, None, None]
    edges = edge + rng.normal(0, sweep_sim.EDGE_JITTER, (sweeps, 2, base.seeds))
    return np.log10(base.lrs)[None, None, :, None] > edges[:, :, None, :]


def read_plateaus(cls, gap, best, margin: float) -> np.ndarray:
    """[sweep, arm, LR, seed] fate classes under section 23's plateau reading, by the rule the
    report uses (cells.plateau_cut): above `off`'s best LR (best: its index per sweep) a run
    that trained less than `margin` under the cut is stuck, one within the fate margin of the
    moved cut borderline. The classes as they are with a margin of 0."""
    if margin <= 0:
        return cls
    above = (np.arange(cls.shape[2])[None, :] > np.asarray(best)[:, None])[:, None, :, None]
    failing, moved = plateau_cut(cls > 0, gap, above, margin)
    out = np.where(failing & (cls <= 0), stability.STUCK_ONLY, cls)
    with np.errstate(invalid="ignore"):
        near = ~failing & (moved >= -FATE_MARGIN)
    return np.where(near, stability.BORDERLINE_TRAINED, out)


def best_index(loss, cls) -> np.ndarray:
    """Per sweep: `off`'s best LR index (lowest seed-mean capped loss; every seed finished)."""
    return np.argmin(loss[:, 0].mean(-1), -1)


def v5_pooled(loss, cls, lrs, best, min_effect=0.02, floor=sweep_sim.PRECISION) -> np.ndarray:
    """The pooled stability threshold's index per sweep (-1: none), by the code the report
    uses (stability.pooled_lr_stats, pooled_index); a k at the first judged LR is a censored
    'at or below the best'."""
    d = loss[:, 0] - loss[:, 1]
    ceiling = (cls > 0).all(axis=(1, 3))
    a, _, _ = stability.pooled_lr_stats(d, cls[:, 0], cls[:, 1], floor)
    above = np.arange(len(lrs))[None, :] >= best[:, None]
    judged = stability.judged_mask(a, ceiling)
    return stability.pooled_index(a, judged, above, min_effect)


def v4_pooled(loss, cls, min_effect=0.02) -> np.ndarray:
    """v4's necessity threshold index per sweep (the bracket's top; -1: none)."""
    return sweep_sim.thresholds(loss, cls > 0, min_effect)


def v5_seeds(loss, cls, lrs, best, cut: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sweep and seed: (k, lo, log10 value at the bound) of the v5 per-seed threshold,
    value at the top evidence LR for 'none' (k = -1), NaN without evidence."""
    d = loss[:, 0] - loss[:, 1]
    ceiling = (cls > 0).all(axis=(1, 3))
    ev = stability.seed_evidence(d, cls[:, 0], cls[:, 1], cut)
    idx = np.arange(len(lrs))
    keep = (idx[None, :] >= best[:, None]) & ~ceiling
    ev = np.where(keep[..., None], ev, stability.NO_EVIDENCE)
    k, lo = stability.seed_index(ev)
    y = stability.seed_logs(lrs, d, cls[:, 0], cls[:, 1], k, lo, cut)
    top = np.where(ev != stability.NO_EVIDENCE, idx[None, :, None], -1).max(-2)
    logs = np.log10(np.asarray(lrs, float))
    y = np.where(k == -1, logs[np.clip(top, 0, None)], y)
    return k, lo, y


def v4_seeds(loss, cls, lrs, min_effect=0.02) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """v4's per-seed thresholds (simulation.sweep._seed_threshold, vectorised): (kind code,
    log10 value, bracket top index):
    0 inside (interpolated as v4 does), -1 'at or below the bottom', 1 'none' (placed at the
    top LR judged), 2 no LR at all."""
    d = loss[:, 0] - loss[:, 1]
    ceiling = (cls > 0).all(axis=(1, 3))
    valid = np.isfinite(d) & ~ceiling[..., None]
    n = len(lrs)
    idx = np.arange(n)[None, :, None]
    bad = valid & ~(d - min_effect > 0)
    last_bad = np.where(bad, idx, -1).max(-2)
    after = valid & (idx > last_bad[:, None, :])
    k = np.where(after.any(-2), np.argmax(after, -2), -1)
    lo = np.where(valid & (idx < k[:, None, :]), idx, -1).max(-2)
    logs = np.log10(np.asarray(lrs, float))
    y = stability.seed_logs(lrs, d, cls[:, 0], cls[:, 1], k, lo, min_effect)
    top = np.where(valid, idx, -1).max(-2)
    kind = np.where(k == -1, 1, np.where(lo < 0, -1, 0))
    kind = np.where(top < 0, 2, kind)
    y = np.where(
        kind == 1, logs[np.clip(top, 0, None)], np.where(kind == -1, logs[np.clip(k, 0, None)], y)
    )
    return kind, y, k


# -- rung tables -----------------------------------------------------------------------------
def planted_v5(cond: RungCondition) -> tuple[int, ...]:
    """Planted threshold indices at and above the best LR (1e-2), below the top LRs: the first
    LR above the best, the highest that leaves two LRs and the ceiling above it, and the
    middle between them (as v4's low, middle and high, on the range v5 searches)."""
    n = cond.base.n_lr
    best = int(round((BEST_LOG + 4) / 4 * (n - 1)))
    low, high = best + 1, n - 3 - cond.base.ceiling
    return tuple(sorted({low, (low + high) // 2, high}))


def rung_rates(
    cond: RungCondition,
    sweeps: int,
    seed: int = 11,
    planted: tuple[int, ...] = (),
    plateau_margin: float = 0.0,
) -> dict[str, float]:
    """False thresholds (null) and the worst recovery over the planted LRs (`planted`, grid
    indices; default planted_v5's), pooled and per seed (a seed recovered when its bracket top
    lies within one grid step of the planted LR), under v5 and v4 on the same draws; each
    planted LR's pooled recovery too ('v5 recovery at <lr>'). plateau_margin: v5's fates read
    with section 23's plateau rule (read_plateaus); v4 reads them as drawn."""
    lrs = cond.base.lrs
    out: dict[str, float] = {}
    rng = np.random.default_rng(seed)
    loss, cls4, gap = draw_rungs(cond, rng, sweeps)
    best = best_index(loss, cls4)
    cls = read_plateaus(cls4, gap, best, plateau_margin)
    cut = cond.base.min_effect + SEED_MARGIN
    out["v5 false"] = float(np.mean(v5_pooled(loss, cls, lrs, best) >= 0))
    out["v4 false"] = float(np.mean(v4_pooled(loss, cls4) >= 0))
    k5, _, _ = v5_seeds(loss, cls, lrs, best, cut)
    kind4, _, _ = v4_seeds(loss, cls4, lrs)
    out["v5 seed false"] = float(np.mean(k5 >= 0))
    out["v4 seed false"] = float(np.mean(kind4 <= 0))
    rec = {"v5": [], "v4": [], "v5 seed": [], "v4 seed": []}
    for j, at in enumerate(planted or planted_v5(cond)):
        rng = np.random.default_rng(seed + 1 + j)
        loss, cls4, gap = draw_rungs(cond, rng, sweeps, planted_lr=np.full(sweeps, lrs[at]))
        best = best_index(loss, cls4)
        cls = read_plateaus(cls4, gap, best, plateau_margin)
        k = v5_pooled(loss, cls, lrs, best)
        rec["v5"].append(np.mean((k >= 0) & (np.abs(k - at) <= 1)))
        out[f"v5 recovery at {lrs[at]:.3g}"] = float(rec["v5"][-1])
        k = v4_pooled(loss, cls4)
        rec["v4"].append(np.mean((k >= 0) & (np.abs(k - at) <= 1)))
        k5, _, _ = v5_seeds(loss, cls, lrs, best, cut)
        rec["v5 seed"].append(np.mean((k5 >= 0) & (np.abs(k5 - at) <= 1)))
        kind4, _, k4 = v4_seeds(loss, cls4, lrs)
        rec["v4 seed"].append(np.mean((kind4 <= 0) & (np.abs(k4 - at) <= 1)))
    out.update({f"{k} recovery": float(min(v)) for k, v in rec.items()})
    return out


# -- the harm window (section 17) -----------------------------------------------------------
HARM = 0.1  # nats: QK-norm worse by this from `off`'s best LR to half a decade above it
HARM_SPAN = 0.5  # decades


def curve_marks(loss, cls, min_effect=0.02, floor=sweep_sim.PRECISION) -> np.ndarray:
    """[sweep, LR] effect-curve marks (effect_curve.marks: HARMED, HELPED, 0) by the code the
    report uses."""
    d = loss[:, 0] - loss[:, 1]
    ceiling = (cls > 0).all(axis=(1, 3))
    a, _, _ = stability.pooled_lr_stats(d, cls[:, 0], cls[:, 1], floor)
    return effect_curve.marks(a, stability.judged_mask(a, ceiling), min_effect)


def harm_rates(cond: RungCondition, sweeps: int, seed: int = 31) -> dict[str, float]:
    """A false harm window (some LR harmed where QK-norm is nowhere worse: the null rung, with
    its low-LR gap and shared failures; and a rung with a planted threshold) and a planted harm
    (QK-norm worse by HARM nats where it trained, from the best LR 1e-2 to HARM_SPAN decades
    above, alone and below a planted threshold a decade above the best LR) found: some harmed LR
    inside the planted range and none outside."""
    lrs = cond.base.lrs
    logs = np.log10(lrs)
    window = (logs >= BEST_LOG - 1e-9) & (logs <= BEST_LOG + HARM_SPAN + 1e-9)
    planted_at = 10 ** (BEST_LOG + 1.0)
    out = {}
    for name, planted in (("null", None), ("threshold", planted_at)):
        rng = np.random.default_rng(seed + (planted is not None))
        p = None if planted is None else np.full(sweeps, planted)
        loss, cls, _ = draw_rungs(cond, rng, sweeps, planted_lr=p)
        m = curve_marks(loss, cls)
        out[f"false harm, {name}"] = float((m == effect_curve.HARMED).any(-1).mean())
        rng = np.random.default_rng(seed + 2 + (planted is not None))
        loss, cls, _ = draw_rungs(cond, rng, sweeps, planted_lr=p)
        harmed = window[None, :, None] & (cls[:, 1] == stability.TRAINED)
        loss[:, 1] = np.where(harmed, loss[:, 1] + HARM, loss[:, 1])
        m = curve_marks(loss, cls) == effect_curve.HARMED
        found = (m & window).any(-1) & ~(m & ~window).any(-1)
        out[f"harm found, {name}"] = float(found.mean())
    return out


# Section 22's messier failures, on the quarter-decade grid (17 LRs, 1e-4 .. 1, the top one a
# shared ceiling), each planted at 0.0316, 0.1 and 0.316 (grid indices 10, 12 and 14)
MESSY_PLANTED = (10, 12, 14)
MESSY_CONDITIONS = [
    RungCondition(sweep_sim.Condition("no random failures", n_lr=17, ceiling=1)),
    RungCondition(
        sweep_sim.Condition("10% random failures anywhere", n_lr=17, ceiling=1, fail_anywhere=0.1)
    ),
    RungCondition(
        sweep_sim.Condition("30% random failures anywhere", n_lr=17, ceiling=1, fail_anywhere=0.3)
    ),
    RungCondition(
        sweep_sim.Condition("one off seed on a plateau above its threshold", n_lr=17, ceiling=1),
        plateau_seed=True,
    ),
    # the plateau rule's limit: a plateau deeper than its margin is a trained run, as before
    RungCondition(
        sweep_sim.Condition("one off seed on a deeper plateau (2.05-2.2)", n_lr=17, ceiling=1),
        plateau_seed=True,
        plateau=(2.05, 2.2),
    ),
]
PLATEAU_MARGIN = 0.15  # section 23's [study] plateau_margin, as the specs that use it set it

NOISE = sweep_sim.CONDITIONS
RUNG_CONDITIONS = [
    RungCondition(sweep_sim.BASE),
    RungCondition(sweep_sim.Condition("noise 0.1 (large against m)", noise=0.1)),
    RungCondition(sweep_sim.Condition("heteroscedastic (x4 at the top)", hetero=3.0)),
    RungCondition(sweep_sim.Condition("persistent per-(arm, seed) offset", offset=0.05)),
    RungCondition(
        sweep_sim.Condition("offset, noise 0.1, heteroscedastic", noise=0.1, offset=0.1, hetero=2.0)
    ),
    RungCondition(sweep_sim.Condition("random failures in both arms", fail=0.3, ceiling=1)),
    RungCondition(sweep_sim.Condition("a bimodal stuck seed near the edge", stuck_seed=True)),
    RungCondition(sweep_sim.Condition("heavy tails (Student t, 3 df)", tails=3.0)),
    RungCondition(sweep_sim.Condition("17 LRs", n_lr=17)),
    RungCondition(sweep_sim.Condition("no low-LR gap"), low_gap=0.0),
    RungCondition(sweep_sim.Condition("borderline fates (30% of stuck off runs)"), borderline=0.3),
    RungCondition(
        sweep_sim.Condition(
            "all together: stuck seed, tails, offset, hetero, failures",
            stuck_seed=True,
            tails=3.0,
            offset=0.05,
            hetero=3.0,
            fail=0.3,
            ceiling=1,
        ),
        borderline=0.3,
    ),
]


# -- ladders ---------------------------------------------------------------------------------
def ladder_lrs(step_above: float = 0.125) -> np.ndarray:
    """The half-decade grid below 1e-2 and `step_above` decades from 1e-2 to 1: what
    refinement leaves near the edges at that resolution."""
    above = 10.0 ** np.arange(-2, 1e-9, step_above)
    return np.concatenate([10.0 ** np.array([-4, -3.5, -3, -2.5]), above])


LADDER_LRS = ladder_lrs()
EFFECT_AT = 0.25  # nats: a seed's effect at its threshold
EFFECT_SLOPE = 0.5  # nats per decade above it
OFF_EDGE = 0.5  # decades from a seed's threshold to `off`'s stuck edge
ON_EDGE = 1.0  # decades from `off`'s edge to `on`'s


@dataclass(frozen=True)
class Ladder:
    name: str
    sizes: tuple[float, ...]
    seeds: int = 4
    rung_sd: float = RUNG_SD
    seed_sd: float = 0.15
    noise: float = 0.04  # per-run seed noise at stable LRs, nats
    borderline: float = 0.1  # share of stuck `off` runs within the fate margin of the cut
    centre: float = math.log10(0.0316)  # true log10 threshold at the ladder's mean log2 size
    step_above: float = 0.125  # decades between judged LRs above 1e-2 (refinement's resolution)
    grid: tuple[float, ...] = ()  # the judged LRs when fixed by the design (else ladder_lrs)
    # decades the smallest rung's true threshold sits off the line the others lie on (a first
    # rung that differs in kind, as a one-layer model might)
    first_offset: float = 0.0
    # both arms drawn alike (QK-norm never matters): no effect, no low-LR gap, and `on` fails
    # at `off`'s edge, so every threshold a rule finds is false (section 22's null ladder)
    identical: bool = False

    @property
    def lrs(self) -> np.ndarray:
        return np.asarray(self.grid, float) if self.grid else ladder_lrs(self.step_above)


def draw_ladder(lad: Ladder, rng, ladders: int, slope: float):
    """(loss, cls, gap) [ladder, rung, arm, LR, seed] and the true rung thresholds (log10)."""
    x = np.log2(np.asarray(lad.sizes, float))
    r, s, n = len(x), lad.seeds, len(lad.lrs)
    truth = lad.centre + slope * (x - x.mean())[None, :] + rng.normal(0, lad.rung_sd, (ladders, r))
    truth[:, int(np.argmin(x))] += lad.first_offset
    seed_t = truth[..., None] + rng.normal(0, lad.seed_sd, (ladders, r, s))
    logs = np.log10(lad.lrs)[None, None, :, None]
    t = seed_t[:, :, None, :]
    curve = 0.9 + 0.2 * (logs - BEST_LOG) ** 2
    on = curve + rng.normal(0, lad.noise, (ladders, r, n, s))
    gap = LOW_GAP * np.clip((BEST_LOG - logs) / (BEST_LOG + 4), 0, 1)
    effect = np.where(logs >= t, EFFECT_AT + EFFECT_SLOPE * (logs - t), 0.0)
    if lad.identical:
        gap, effect = 0.0 * gap, 0.0 * effect
    off = curve + gap + effect + rng.normal(0, lad.noise, (ladders, r, n, s))
    off_fail = logs > t + OFF_EDGE + rng.normal(0, 0.1, (ladders, r, 1, s))
    on_edge = 0.0 if lad.identical else ON_EDGE
    on_fail = logs > t + OFF_EDGE + on_edge + rng.normal(0, 0.1, (ladders, r, 1, s))
    fail = np.stack([off_fail, on_fail], 2)
    loss = np.stack([off, on], 2)
    stop = rng.random(loss.shape) < sweep_sim.DIVERGED_SHARE
    bad = np.where(stop, sweep_sim.L0, rng.uniform(*sweep_sim.STUCK, loss.shape))
    loss = np.where(fail, bad, loss)
    cls = np.where(fail, np.where(stop, stability.STOPPED, stability.STUCK_ONLY), stability.TRAINED)
    cut_gap = np.where(cls == stability.STOPPED, np.nan, loss - BASELINE)
    if lad.borderline:
        _borderline(rng, lad.borderline, loss[:, :, 0], cls[:, :, 0], cut_gap[:, :, 0])
    return loss, cls, cut_gap, truth


def _ols(x, y, floor=0.0):
    """Vectorised OLS over the last axis (rungs): (slope, lower, upper) 90% with df = n - 2,
    the residual sd floored (trend.seed_floor); NaN rungs dropped per ladder (needs >= 3)."""
    ok = np.isfinite(y)
    n = ok.sum(-1)
    xb = np.where(ok, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = xb.sum(-1) / n
        ym = np.where(ok, y, 0.0).sum(-1) / n
        dx = np.where(ok, x - xm[..., None], 0.0)
        dy = np.where(ok, y - ym[..., None], 0.0)
        sxx = (dx**2).sum(-1)
        b = (dx * dy).sum(-1) / sxx
        resid = np.where(ok, dy - b[..., None] * dx, 0.0)
        s = np.maximum(np.sqrt((resid**2).sum(-1) / (n - 2)), floor)
        t = np.array(
            [
                stats.t_quantile(stats.CONFIDENCE, int(k) - 2) if k >= 3 else np.nan
                for k in range(x.shape[-1] + 1)
            ]
        )[n]
        half = t * s / np.sqrt(sxx)
    return b, b - half, b + half


def _v5_rung_values(loss, cls, cut, lrs=LADDER_LRS):
    """[ladder, rung] mean log10 per-seed threshold at the bound and moved beyond, each rung
    value's variance from its seeds' scatter alone (trend.seed_floor's pieces), and whether the
    rung has no threshold (more than half its seeds 'none', or no pooled threshold:
    RungValue.has_threshold)."""
    L, R = loss.shape[:2]
    flat_loss = loss.reshape(L * R, *loss.shape[2:])
    flat_cls = cls.reshape(L * R, *cls.shape[2:])
    best = best_index(flat_loss, flat_cls)
    k, lo, y = v5_seeds(flat_loss, flat_cls, lrs, best, cut)
    shift = np.where(k == -1, CENSOR_SHIFT, np.where((k >= 0) & (lo < 0), -CENSOR_SHIFT, 0.0))
    known = np.isfinite(y)
    count = known.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        at = np.where(count >= 2, np.nanmean(np.where(known, y, np.nan), -1), np.nan)
        beyond = np.where(count >= 2, np.nanmean(np.where(known, y + shift, np.nan), -1), np.nan)
        mean_var = np.where(
            count >= 2, np.nanvar(np.where(known, y, np.nan), -1, ddof=1) / count, np.nan
        )
    no_pooled = v5_pooled(flat_loss, flat_cls, lrs, best) < 0
    without = (2 * (known & (k == -1)).sum(-1) > count) | no_pooled
    return at.reshape(L, R), beyond.reshape(L, R), mean_var.reshape(L, R), without.reshape(L, R)


def _floor(mean_var) -> np.ndarray:
    """trend.seed_floor over the last axis (rungs), NaN rungs left out."""
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.sqrt(np.nanmean(mean_var, -1)))


def _v4_trend(loss, cls, x, min_effect=0.02, lrs=LADDER_LRS):
    """v4's H3 on the same draws: one line through every (seed, rung) per-seed threshold,
    censored at the bound and beyond; (supported, not supported) per ladder."""
    L, R = loss.shape[:2]
    kind, y, _ = v4_seeds(
        loss.reshape(L * R, *loss.shape[2:]),
        cls.reshape(L * R, *cls.shape[2:]),
        lrs,
        min_effect,
    )
    kind, y = kind.reshape(L, R, -1), y.reshape(L, R, -1)
    shift = np.where(kind == 1, CENSOR_SHIFT, np.where(kind == -1, -CENSOR_SHIFT, 0.0))
    y = np.where(kind == 2, np.nan, y)
    xs = np.broadcast_to(x[None, :, None], y.shape).reshape(L, -1)
    a = _ols(xs, y.reshape(L, -1))
    b = _ols(xs, (y + shift).reshape(L, -1))
    supported = (a[2] < 0) & (b[2] < 0)
    not_supported = (a[0] >= 0) & (b[0] >= 0)
    return supported, not_supported


SUPPORTED_CODE, RULED_OUT_CODE = 1, -1  # a ladder's verdict as a number (0: inconclusive)


def _verdict_codes(x, rung_draws, prediction: float, keep) -> np.ndarray:
    """[ladder] verdict code on the rungs `keep` (a boolean mask over rungs), borderline runs
    both ways (a verdict they flip is inconclusive), censored values at the bound and beyond;
    inconclusive where most rungs have no threshold (trend.most_without_threshold)."""
    codes = []
    for at, beyond, mean_var, without in rung_draws:
        at, beyond, mean_var = at[:, keep], beyond[:, keep], mean_var[:, keep]
        present = np.isfinite(at)
        no_trend = 2 * (without[:, keep] & present).sum(-1) > present.sum(-1)
        floor = _floor(mean_var)
        xs = np.broadcast_to(x[keep], at.shape)
        a, b = _ols(xs, at, floor), _ols(xs, beyond, floor)
        sup = (a[2] < 0) & (b[2] < 0)
        ruled = (a[1] > prediction) & (b[1] > prediction) & ~sup
        code = np.where(sup, SUPPORTED_CODE, np.where(ruled, RULED_OUT_CODE, 0))
        codes.append(np.where(no_trend, 0, code))
    return np.where(codes[0] == codes[1], codes[0], 0)


def ladder_verdicts(lad: Ladder, ladders: int, slope: float, prediction: float, seed: int):
    """(full, leave_one_out [ladder, rung]) verdict codes of `ladders` ladders drawn at `slope`:
    the trend on every rung, and on every rung but one."""
    x = np.log2(np.asarray(lad.sizes, float))
    rng = np.random.default_rng(seed)
    loss, cls, gap, _ = draw_ladder(lad, rng, ladders, slope)
    near = np.abs(np.nan_to_num(gap, nan=np.inf)) <= FATE_MARGIN
    draws = [
        _v5_rung_values(
            loss,
            np.where(near & (cls != stability.STOPPED), 1 if way else -1, cls),
            0.02 + SEED_MARGIN,
            lad.lrs,
        )
        for way in (True, False)
    ]
    every = np.ones(len(x), bool)
    full = _verdict_codes(x, draws, prediction, every)
    loo = np.stack(
        [
            _verdict_codes(x, draws, prediction, every & (np.arange(len(x)) != i))
            for i in range(len(x))
        ],
        -1,
    )
    return full, loo, (loss, cls)


def unreversed(full, loo) -> np.ndarray:
    """[ladder] verdict codes under section 17's reversal rule: a decisive verdict that leaving
    out one rung turns into its opposite is inconclusive (0)."""
    return np.where((full != 0) & (loo == -full[:, None]).any(-1), 0, full)


def verdict_rates(
    lad: Ladder, ladders: int, slope: float, seed: int, prediction: float = -0.25
) -> tuple[float, float, float]:
    """H3 on `ladders` simulated ladders whose threshold truly moves `slope` decades per
    doubling: (supported, supported under the reversal rule, ruled out under it)."""
    full, loo, _ = ladder_verdicts(lad, ladders, slope, prediction, seed)
    kept = unreversed(full, loo)
    return (
        float((full == SUPPORTED_CODE).mean()),
        float((kept == SUPPORTED_CODE).mean()),
        float((kept == RULED_OUT_CODE).mean()),
    )


DESIGN_LADDERS = 2000  # simulated ladders behind the power a report states (section 22)


def design_power(
    sizes, seeds: int, grid, prediction: float, rung_sds, seed_sd: float, ladders=DESIGN_LADDERS
) -> tuple[float, ...]:
    """The power a ladder report states (section 22): P(supported under the reversal rule) when
    the threshold truly moves by `prediction` decades per doubling, for rungs at `sizes` judged
    on `grid`, with `seeds` seeds scattering `seed_sd` decades about their rung, at each rung-
    level sd of `rung_sds`; NaN with fewer than three rungs. Deterministic (one generator seed)."""
    if len(sizes) < 3:
        return tuple(math.nan for _ in rung_sds)
    out = []
    for sd in rung_sds:
        lad = Ladder("design", tuple(sizes), seeds, sd, seed_sd, grid=tuple(grid))
        full, loo, _ = ladder_verdicts(lad, ladders, prediction, prediction, 23)
        out.append(float((unreversed(full, loo) == SUPPORTED_CODE).mean()))
    return tuple(out)


def ladder_rates(
    lad: Ladder, ladders: int, prediction: float = -0.25, seed: int = 21
) -> dict[str, float]:
    """Under a flat truth (slope 0) and the prediction: the share of ladders where v5 says
    supported and ruled out (borderline runs both ways: a verdict they flip is inconclusive),
    where v4 says supported and not supported; where the verdict is fragile (some rung left out
    changes it) or reversed (some rung left out gives the opposite decisive verdict); and the
    verdicts under the rule that a verdict one rung reverses is inconclusive."""
    x = np.log2(np.asarray(lad.sizes, float))
    out = {}
    for name, true in (("flat", 0.0), ("planted", prediction)):
        full, loo, (loss, cls) = ladder_verdicts(
            lad, ladders, true, prediction, seed + (name == "planted")
        )
        reversed_ = (full != 0) & (loo == -full[:, None]).any(-1)
        kept = unreversed(full, loo)
        s4, n4 = _v4_trend(loss, cls, x, lrs=lad.lrs)
        out[f"{name}: v5 supported"] = float((full == SUPPORTED_CODE).mean())
        out[f"{name}: v5 ruled out"] = float((full == RULED_OUT_CODE).mean())
        out[f"{name}: fragile"] = float(((full != 0) & (loo != full[:, None]).any(-1)).mean())
        out[f"{name}: reversed"] = float(reversed_.mean())
        out[f"{name}: unreversed supported"] = float((kept == SUPPORTED_CODE).mean())
        out[f"{name}: unreversed ruled out"] = float((kept == RULED_OUT_CODE).mean())
        out[f"{name}: v4 supported"] = float(s4.mean())
        out[f"{name}: v4 not supported"] = float(n4.mean())
    return out


LADDERS = [
    Ladder("cpu-depth as run: depths 2, 4, 8", (2, 4, 8)),
    Ladder("depths 2, 4, 8 with 8 seeds", (2, 4, 8), seeds=8),
    Ladder("5 rungs: depths 1, 2, 4, 6, 8", (1, 2, 4, 6, 8)),
    Ladder("6 rungs: depths 1, 2, 3, 4, 6, 8", (1, 2, 3, 4, 6, 8)),
    Ladder("6 rungs: depths 2, 3, 4, 6, 8, 12", (2, 3, 4, 6, 8, 12)),
    Ladder("7 rungs: depths 1, 2, 3, 4, 6, 8, 12", (1, 2, 3, 4, 6, 8, 12)),
]
