"""Study v5's estimands of one rung (docs/STUDY.md section 13): the stability threshold (where
QK-norm becomes necessary at and above `off`'s best LR, pooled and per seed), the low-LR
effect below that best LR (its own quantity, harm included), and each arm's failure edge
with an interval. Vectorised over leading axes where the simulations need it (the same code
judges thousands of simulated sweeps and one real rung).

What v5 changes from v4's necessity threshold (sections 4-5) and why:
- The threshold is searched only at and above `off`'s best LR. Below it `off` is slow (a cold
  start), not unstable; v4 let that low-LR gap reach past the best LR into the threshold.
- A pair where both arms failed carries no evidence: it neither makes nor breaks a threshold,
  and a seed with no other evidence has no threshold (never one placed at the grid's top).
- A seed's threshold needs its paired effect above m by a noise margin fixed in advance
  (`[study] seed_margin`), so one pair crossing m by chance does not make a threshold.
- Stopped and stuck runs are distinct classes where a failure is measured (the edges, the
  partial ceiling); the gate compares trained vs failed (v9: section 17).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sweeps.study.stats import (
    CONFIDENCE,
    MIN_PAIRS,
    NONE,
    GridValue,
    Paired,
    _bracketed,
    paired,
    paired_arrays,
    quantization_sd,
    span,
    t_quantile,
    threshold_index,
)

# a run's fate class: trained, stuck (finished worse than the cut), stopped; and trained but
# within the fate margin of the cut (borderline): it trained, but not clearly enough to be the
# evidence a pair rests on when the other run failed
BORDERLINE_TRAINED, TRAINED, STUCK_ONLY, STOPPED = -1, 0, 1, 2
FOR, NO_EVIDENCE, AGAINST = 1, 0, -1  # what a seed's pair says at one LR
UNJUDGED = GridValue(math.nan, "unjudged")  # no pair at or above the best LR carries evidence


def fate_classes(failing, stopped, near=None) -> np.ndarray:
    """TRAINED, STUCK_ONLY or STOPPED per run from the primary definition's flag (stuck,
    stopped included) and the stopped flag; BORDERLINE_TRAINED for a run that trained within
    the fate margin of its cut (near)."""
    failing = np.asarray(failing, bool)
    cls = np.where(np.asarray(stopped, bool) & failing, STOPPED, failing.astype(int))
    if near is not None:
        cls = np.where(np.asarray(near, bool) & ~failing, BORDERLINE_TRAINED, cls)
    return cls


# -- the pooled stability threshold ------------------------------------------------------------
def evidence_pairs(d, cls_b, cls_t) -> np.ndarray:
    """[..., LR, seed]: the pair exists and at least one of its runs clearly trained (a pair
    where both arms failed, or one failed and the other trained only within the fate margin of
    the cut, carries no evidence about which arm is more stable)."""
    has = np.isfinite(np.asarray(d, float))
    return has & ((np.asarray(cls_b) == TRAINED) | (np.asarray(cls_t) == TRAINED))


def pooled_lr_stats(d, cls_b, cls_t, floor) -> tuple[dict, np.ndarray, np.ndarray]:
    """Each LR's paired statistics under v5's failure model, vectorised over [..., LR, seed]:
    both-failed pairs dropped; of the rest, when some run failed and at least MIN_PAIRS pairs
    trained in both arms, those pairs (the effect among runs that trained); otherwise, when
    only one arm failed, every remaining pair at its capped loss (one arm's failures are the
    effect); when both arms failed in different pairs, none (a partial ceiling). Returns (stats,
    used [..., LR, seed], evidence [..., LR, seed]); stats["partial_ceiling"] [..., LR]: the
    LRs not judged as a partial ceiling; stats["full"] [..., LR]: the pairs used all
    share one pair of fate classes with stuck and stopped distinct, stats["full_failed"]: with
    the two one class, failed (v9, section 17): the LRs the gate may test. v4 also required
    every pair to be used, so one random failure at the top LRs moved its gate down to an LR
    below the effect; which LR the gate tests still depends on the fates alone)."""
    d = np.asarray(d, float)
    cls_b, cls_t = np.asarray(cls_b), np.asarray(cls_t)
    ev = evidence_pairs(d, cls_b, cls_t)
    fine = ev & (cls_b <= 0) & (cls_t <= 0)
    some_fail = (ev & ~fine).any(-1)
    enough = fine.sum(-1) >= MIN_PAIRS
    used = np.where((some_fail & enough)[..., None], fine, ev)
    # fewer than MIN_PAIRS trained in both arms and both arms failed somewhere: a partial
    # ceiling (v4's rule): the capped losses would mix the two arms' failures into one mean
    mixed = (ev & (cls_b > 0)).any(-1) & (ev & (cls_t > 0)).any(-1) & ~enough
    used = used & ~mixed[..., None]
    a = paired_arrays(np.where(used, d, np.nan), floor)
    a["partial_ceiling"] = mixed
    a["full"] = _one_pattern(used, cls_b, cls_t, kinds=True)
    a["full_failed"] = _one_pattern(used, cls_b, cls_t, kinds=False)
    return a, used, ev


def _one_pattern(used, cls_b, cls_t, kinds: bool) -> np.ndarray:
    """[..., LR]: the used pairs all share one pair of fate classes: stuck and stopped distinct
    (kinds) or one class, failed."""
    top = 2 if kinds else 1
    code = np.where(used, (np.clip(cls_b, 0, top) + 1) * 4 + np.clip(cls_t, 0, top), -1)
    first = np.max(code, axis=-1, keepdims=True)
    return ((code == first) | ~used).all(-1) & used.any(-1)


def pooled_index(a: dict, judged, above_best, min_effect: float) -> np.ndarray:
    """The pooled stability threshold's index over [..., LR] (-1: none): v4's necessity rule
    (QK-norm necessary at the gate LR, the top uniform judged LR; necessary at the threshold
    LR; larger than m with 75% confidence at every judged LR above it) on the judged LRs at
    and above the best LR only."""
    judged = np.asarray(judged, bool) & np.asarray(above_best, bool)
    # v9 (section 17): the gate may also sit where the pairs share one trained/failed pattern,
    # stuck and stopped mixed, so a mix of the two just above `off`'s edge cannot drop it to an
    # LR below its failures; the threshold is the same candidate either way
    kinds = threshold_index(a["lower"], a["lower75"], judged, min_effect, a["full"])
    failed = threshold_index(a["lower"], a["lower75"], judged, min_effect, a["full_failed"])
    return np.maximum(kinds, failed)


def judged_mask(a: dict, ceiling) -> np.ndarray:
    """An LR is judged: not a common ceiling, at least MIN_PAIRS pairs used, a defined bound."""
    return ~np.asarray(ceiling, bool) & (a["n"] >= MIN_PAIRS) & np.isfinite(a["lower"])


# -- the per-seed stability threshold ----------------------------------------------------------
def seed_evidence(d, cls_b, cls_t, cut: float) -> np.ndarray:
    """FOR / AGAINST / NO_EVIDENCE per pair [..., LR, seed]: FOR when `off` failed and `on`
    trained, or both trained and d > cut (m plus the seed margin); AGAINST when `on` failed
    and `off` trained, or both trained and d <= cut; no evidence without a pair or when both
    failed."""
    d = np.asarray(d, float)
    fb, ft = np.asarray(cls_b) > 0, np.asarray(cls_t) > 0
    ev = evidence_pairs(d, cls_b, cls_t)
    both = ev & ~fb & ~ft
    with np.errstate(invalid="ignore"):
        yes = (ev & fb & ~ft) | (both & (d > cut))
    return np.where(yes, FOR, np.where(ev, AGAINST, NO_EVIDENCE))


def seed_index(ev) -> tuple[np.ndarray, np.ndarray]:
    """Per seed over [..., LR, seed] (ev already NO_EVIDENCE below the best LR and at ceilings):
    (k, lo) - k: the smallest LR with FOR there and no AGAINST at any LR above it; -1 when the
    top evidence is AGAINST (not necessary where the evidence ends), -2 with no evidence at
    all. lo: the highest evidence LR below k (the bracket's low end), -1 when k is the lowest
    evidence LR (censored: at or below k)."""
    ev = np.asarray(ev)
    n = ev.shape[-2]
    idx = np.arange(n).reshape((1,) * (ev.ndim - 2) + (n, 1))
    last_against = np.where(ev == AGAINST, idx, -1).max(-2)
    any_ev = (ev != NO_EVIDENCE).any(-2)
    after = (ev == FOR) & (idx > last_against[..., None, :])
    k = np.where(after.any(-2), np.argmax(after, -2), -1)
    k = np.where(any_ev, k, -2)
    below_k = (ev != NO_EVIDENCE) & (idx < k[..., None, :])
    lo = np.where(below_k, idx, -1).max(-2)
    return k, lo


def seed_value(
    lrs, k: int, lo: int, top: float, margin_lo: float, margin_hi: float, same: bool
) -> GridValue:
    """One seed's threshold as a GridValue from seed_index: 'none' (not necessary where the
    evidence ends: censored above `top`, the highest evidence LR), no evidence ('unjudged'),
    at or below the lowest evidence LR ('below'), or bracketed and interpolated where the
    effect is continuous (v4's rule)."""
    if k == -2:
        return UNJUDGED
    if k == -1:
        return GridValue(float(top), "none")
    if lo < 0:
        return GridValue(float(lrs[k]), "below")
    return _bracketed(float(lrs[lo]), float(lrs[k]), margin_lo, margin_hi, same)


def seed_logs(lrs, d, cls_b, cls_t, k, lo, cut: float) -> np.ndarray:
    """Vectorised per-seed values, log10 LR, over [..., seed] from seed_index's (k, lo) on
    [..., LR, seed] arrays: inside a bracket, where d - cut crosses 0 linearly in log LR when
    the pair's fate classes are the same at both ends and it changes sign there, else the
    bracket's geometric midpoint (v4's rule); censored values at their bound (the caller
    knows which from k and lo); NaN without evidence."""
    logs = np.log10(np.asarray(lrs, float))
    d = np.asarray(d, float)
    kk, ll = np.clip(k, 0, None), np.clip(lo, 0, None)

    def at(a, i):
        return np.take_along_axis(np.asarray(a), i[..., None, :], -2)[..., 0, :]

    x_hi, x_lo = logs[kk], logs[ll]
    g_hi, g_lo = at(d, kk) - cut, at(d, ll) - cut
    cb, ct = np.maximum(np.asarray(cls_b), 0), np.maximum(np.asarray(cls_t), 0)
    same = (at(cb, kk) == at(cb, ll)) & (at(ct, kk) == at(ct, ll))
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(g_hi != g_lo, -g_lo / (g_hi - g_lo), 0.5)
        cross = same & (g_lo <= 0) & (g_hi > 0)
        inside = np.where(cross, x_lo + frac * (x_hi - x_lo), (x_lo + x_hi) / 2)
    return np.where(k == -2, np.nan, np.where((k >= 0) & (lo >= 0), inside, x_hi))


# -- one rung, for the report ------------------------------------------------------------------
@dataclass(frozen=True)
class StabilityThreshold:
    """The stability threshold of one rung's primary comparison: `off`'s best LR it is searched
    from, the pooled threshold (v4's necessity rule at and above that LR) and per seed,
    whether the two agree (the pooled bracket meets the per-seed range) and the LRs judged."""

    best_lr: float | None
    pooled: GridValue
    per_seed: tuple[GridValue, ...]
    judged: tuple[float, ...]
    stats: tuple[Paired, ...]
    agree: bool


def stability_threshold(
    lrs, d, cls_b, cls_t, ceiling, best: float | None, min_effect: float, margin: float, floor
) -> StabilityThreshold:
    """One rung: lrs ascending, d [LR, seed] baseline - treatment capped losses (NaN: no pair),
    fate classes of both arms, the common ceiling [LR], `off`'s best LR."""
    lrs = np.asarray(lrs, float)
    d = np.asarray(d, float).reshape(len(lrs), -1)
    if best is None or not len(lrs):
        return StabilityThreshold(best, NONE, (), (), (), True)
    above = lrs >= best * (1 - 1e-9)
    a, used, ev = pooled_lr_stats(d, cls_b, cls_t, floor)
    judged = judged_mask(a, ceiling) & above
    idx = [i for i in range(len(lrs)) if judged[i]]
    stats = tuple(
        Paired(
            int(a["n"][i]),
            *(float(a[k][i]) for k in ("mean", "sd", "sd_used", "lower", "upper", "lower75")),
        )
        for i in idx
    )
    k = int(pooled_index(a, judged, above, min_effect))
    if k < 0:
        pooled = GridValue(float(lrs[idx[-1]]), "none") if idx else UNJUDGED
    elif k == idx[0]:
        pooled = GridValue(float(lrs[k]), "below")
    else:
        lo = idx[idx.index(k) - 1]
        cont = _continuous(cls_b, cls_t, np.isfinite(d), lo, k).all()
        pooled = _bracketed(
            float(lrs[lo]),
            float(lrs[k]),
            a["mean"][lo] - min_effect,
            a["mean"][k] - min_effect,
            cont,
        )
    sev = seed_evidence(d, cls_b, cls_t, min_effect + margin)
    sev = np.where((above & ~np.asarray(ceiling, bool))[:, None], sev, NO_EVIDENCE)
    ks, los = seed_index(sev)
    per_seed = []
    cut = min_effect + margin
    for s in range(d.shape[1]):
        k_s, lo_s = int(ks[s]), int(los[s])
        same = (
            lo_s >= 0 and k_s >= 0 and bool(_continuous(cls_b, cls_t, np.isfinite(d), lo_s, k_s)[s])
        )
        g = (d[lo_s, s] - cut, d[k_s, s] - cut) if lo_s >= 0 and k_s >= 0 else (0.0, 0.0)
        tops = np.flatnonzero(sev[:, s] != NO_EVIDENCE)
        top = lrs[tops[-1]] if len(tops) else math.nan
        per_seed.append(seed_value(lrs, k_s, lo_s, top, *g, same))
    return StabilityThreshold(
        float(best),
        pooled,
        tuple(per_seed),
        tuple(float(lrs[i]) for i in idx),
        stats,
        agrees(pooled, per_seed),
    )


def _continuous(cls_b, cls_t, has, lo: int, hi: int):
    """Per seed: the pair's fate classes are the same at LRs lo and hi (or a pair is missing)."""
    cls_b, cls_t = np.maximum(np.asarray(cls_b), 0), np.maximum(np.asarray(cls_t), 0)
    same = (cls_b[lo] == cls_b[hi]) & (cls_t[lo] == cls_t[hi])
    return same | ~(has[lo] & has[hi])


def agrees(pooled: GridValue, per_seed) -> bool:
    """The pooled threshold's span meets the span of the per-seed values (their lowest low to
    their highest high); True when either has nothing to compare."""
    spans = [s for s in map(span, per_seed) if not s.empty]
    p = span(pooled)
    if not spans or p.empty:
        return True
    lo, hi = min(s.lo for s in spans), max(s.hi for s in spans)
    return p.lo < hi and lo < p.hi


# -- the low-LR effect -------------------------------------------------------------------------
HELPS, HARMS, MIXED, NEGLIGIBLE, UNDECIDED, NO_LOW_LRS = (
    "helps",
    "harms",
    "mixed",
    "negligible",
    "inconclusive",
    "no LR below the best",
)


@dataclass(frozen=True)
class LowLR:
    """The effect of QK-norm below `off`'s best LR (its own quantity, harm included): per LR
    the paired statistics and Bonferroni-adjusted one-sided bounds over the k LRs judged, and
    one verdict: helps (some LR's adjusted lower bound > m, none harms), harms (some LR's
    adjusted upper bound < -m, none helps), mixed (both), negligible (every LR equivalent at
    +-negligible by TOST), inconclusive otherwise."""

    verdict: str
    lrs: tuple[float, ...]
    stats: tuple[Paired, ...]
    lower: tuple[float, ...]  # Bonferroni-adjusted one-sided bounds (family 5% each side)
    upper: tuple[float, ...]


def low_lr_effect(lrs, d, cls_b, cls_t, ceiling, best, min_effect, negligible, floor) -> LowLR:
    lrs = np.asarray(lrs, float)
    d = np.asarray(d, float).reshape(len(lrs), -1)
    if best is None:
        return LowLR(UNDECIDED, (), (), (), ())
    a, used, _ = pooled_lr_stats(d, cls_b, cls_t, floor)
    judged = judged_mask(a, ceiling) & (lrs < best * (1 - 1e-9))
    idx = [i for i in range(len(lrs)) if judged[i]]
    if not idx:
        return LowLR(NO_LOW_LRS, (), (), (), ())
    stats = tuple(paired(np.where(used[i], d[i], np.nan), floor) for i in idx)
    level = 1 - (1 - CONFIDENCE) / len(idx)
    lo, hi = [], []
    for st in stats:
        half = t_quantile(level, st.n - 1) * st.sd_used / math.sqrt(st.n)
        lo.append(st.mean - half)
        hi.append(st.mean + half)
    helps = any(x > min_effect for x in lo)
    harms = any(x < -min_effect for x in hi)
    if helps and harms:
        verdict = MIXED
    elif helps:
        verdict = HELPS
    elif harms:
        verdict = HARMS
    elif all(-negligible < st.lower and st.upper < negligible for st in stats):
        verdict = NEGLIGIBLE
    else:
        verdict = UNDECIDED
    return LowLR(verdict, tuple(float(lrs[i]) for i in idx), stats, tuple(lo), tuple(hi))


# -- failure edges -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Edge:
    """An arm's failure edge under one definition: the per-seed critical LRs (v4's eta_crit,
    interval-censored in their brackets), the geometric mean of the seeds' values with a 90%
    t interval whose sd is floored by the brackets' widths (uniform within a bracket), or,
    when a seed is censored, the bound the censored seeds set."""

    per_seed: tuple[GridValue, ...]
    value: float  # geometric mean over seeds (NaN unless every seed is inside)
    lower: float
    upper: float
    censored: int  # seeds beyond the grid ('above' or 'below')


def failure_edge(per_seed) -> Edge:
    values = tuple(per_seed)
    inside = [v for v in values if v.inside]
    censored = sum(v.kind in ("above", "below") for v in values)
    if len(inside) < MIN_PAIRS or censored or len(inside) < len(values):
        return Edge(values, math.nan, math.nan, math.nan, censored)
    logs = [math.log10(v.value) for v in inside]
    floor = math.sqrt(sum(quantization_sd(v) ** 2 for v in inside) / len(inside))
    p = paired(logs, floor)
    return Edge(values, 10**p.mean, 10**p.lower, 10**p.upper, 0)
