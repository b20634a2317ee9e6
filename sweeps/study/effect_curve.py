"""What QK-norm costs and saves across the LR grid (docs/STUDY.md section 17, v9): the effect
curve (`off` - `on` at every judged LR with its 90% interval), the LRs where QK-norm is
credibly worse (the harm window) or better (helped), and the cost at each arm's own best LR.
Vectorised over leading axes where the simulations need it (the same code judges thousands of
simulated rungs and one real rung).

The per-LR statistics are section 13's failure model (stability.pooled_lr_stats): pairs where
both arms failed are dropped, a partial ceiling is not judged. A positive effect means QK-norm
finished lower.

*Harmed* LR: its one-sided 90% upper bound lies below -m and a judged neighbour in the grid
passes that too, or on its own its upper bound at 1 - 0.05/k (Bonferroni over the k judged LRs)
lies below -m. *Helped* mirrors it (lower bounds above m). Two adjacent LRs are rarely both
wrong by chance, and one LR can still stand alone at the family-wise level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sweeps.study import stability
from sweeps.study.stats import CONFIDENCE, MIN_PAIRS, Paired, paired, t_quantile

HARMED, HELPED = -1, 1  # an LR's mark on the curve (0: no difference shown)


# the one-sided level two adjacent LRs must both pass (v10: section 17's amendment; 95%, as
# first written, found a planted harm in 80-85% of simulated rungs, 90% in 89-97%, with false
# harm windows at most 3.3% under every noise condition)
ADJACENT_CONFIDENCE = 0.90


def _half(a: dict, level) -> np.ndarray:
    """[..., LR] half-width of the one-sided bound at `level` (broadcast against a["n"])."""
    n = np.asarray(a["n"])
    q = np.vectorize(lambda p, df: t_quantile(float(p), int(df)) if df >= 1 else np.nan)(
        np.broadcast_to(level, n.shape), np.maximum(n - 1, 0)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return q * np.asarray(a["sd_used"]) / np.sqrt(np.maximum(n, 1))


def marks(a: dict, judged, min_effect: float) -> np.ndarray:
    """[..., LR]: HARMED, HELPED or 0 at each LR under section 17's rule (a pooled_lr_stats
    dict and the judged mask, both over [..., LR])."""
    judged = np.asarray(judged, bool)
    mean = np.asarray(a["mean"], float)
    k = np.maximum(judged.sum(-1, keepdims=True), 1)
    alone = np.nan_to_num(_half(a, 1 - (1 - CONFIDENCE) / k), nan=np.inf)
    pair = np.nan_to_num(_half(a, ADJACENT_CONFIDENCE), nan=np.inf)
    out = np.zeros(judged.shape, int)
    for sign, code in ((-1, HARMED), (1, HELPED)):
        # sign * (mean - sign * half): the bound on the side of the mark, turned positive
        paired_ok = judged & (sign * mean - pair > min_effect)
        left, right = _judged_neighbours(paired_ok, judged)
        lone = judged & (sign * mean - alone > min_effect)
        out = np.where(lone | (paired_ok & (left | right)), code, out)
    return out


def _judged_neighbours(flag, judged) -> tuple[np.ndarray, np.ndarray]:
    """[..., LR]: whether the nearest judged LR below (left) / above (right) has `flag`
    (neighbours in the grid of judged LRs: an unjudged LR between two judged ones is skipped)."""
    n = flag.shape[-1]
    left = np.zeros(flag.shape, bool)
    right = np.zeros(flag.shape, bool)
    last = np.zeros(flag.shape[:-1], bool)
    seen = np.zeros(flag.shape[:-1], bool)
    for i in range(n):
        left[..., i] = seen & last
        j = judged[..., i]
        last = np.where(j, flag[..., i], last)
        seen = seen | j
    last = np.zeros(flag.shape[:-1], bool)
    seen = np.zeros(flag.shape[:-1], bool)
    for i in reversed(range(n)):
        right[..., i] = seen & last
        j = judged[..., i]
        last = np.where(j, flag[..., i], last)
        seen = seen | j
    return left, right


@dataclass(frozen=True)
class EffectCurve:
    """One rung's curve: the judged LRs, their paired statistics (mean, 90% interval) and
    marks (HARMED, HELPED, 0), and the ranges of adjacent harmed and helped LRs."""

    lrs: tuple[float, ...]
    stats: tuple[Paired, ...]
    marks: tuple[int, ...]
    harm: tuple[tuple[float, float], ...]  # (lowest, highest) LR of each harmed range
    help: tuple[tuple[float, float], ...]


def effect_curve(lrs, d, cls_b, cls_t, ceiling, min_effect: float, floor: float) -> EffectCurve:
    """The curve of one rung's primary comparison (d [LR, seed] baseline - treatment capped
    losses, NaN where no pair; fate classes of both arms; the common ceiling [LR])."""
    lrs = np.asarray(lrs, float)
    if not len(lrs):
        return EffectCurve((), (), (), (), ())
    d = np.asarray(d, float).reshape(len(lrs), -1)
    a, used, _ = stability.pooled_lr_stats(d, cls_b, cls_t, floor)
    judged = stability.judged_mask(a, ceiling)
    m = marks(a, judged, min_effect)
    idx = [i for i in range(len(lrs)) if judged[i]]
    return EffectCurve(
        tuple(float(lrs[i]) for i in idx),
        tuple(paired(np.where(used[i], d[i], np.nan), floor) for i in idx),
        tuple(int(m[i]) for i in idx),
        ranges(lrs, idx, m, HARMED),
        ranges(lrs, idx, m, HELPED),
    )


def ranges(lrs, idx, m, code) -> tuple[tuple[float, float], ...]:
    """Runs of adjacent judged LRs marked `code`, as (lowest, highest) LR."""
    runs: list[list[int]] = []
    for pos, i in enumerate(idx):
        if m[i] != code:
            continue
        if runs and runs[-1][-1] == idx[pos - 1]:
            runs[-1].append(i)
        else:
            runs.append([i])
    return tuple((float(lrs[r[0]]), float(lrs[r[-1]])) for r in runs)


# -- the cost at each arm's own best LR -------------------------------------------------------
@dataclass(frozen=True)
class BestCost:
    """`on` at its own best LR against `off` at its own best (each arm's lowest seed-mean capped
    loss over LRs where every seed finished), paired by seed: mean of off - on (positive: QK-norm
    at its best finished lower) with its 90% interval; None where an arm has no best LR."""

    off_lr: float | None
    on_lr: float | None
    stats: Paired | None


def best_cost(
    lrs, loss_b, loss_t, best_b: float | None, best_t: float | None, floor: float
) -> BestCost:
    """loss_* [LR, seed]: each arm's capped losses (NaN: no run)."""
    if best_b is None or best_t is None:
        return BestCost(best_b, best_t, None)
    lrs = list(np.asarray(lrs, float))
    ib = min(range(len(lrs)), key=lambda i: abs(math.log(lrs[i] / best_b)))
    it = min(range(len(lrs)), key=lambda i: abs(math.log(lrs[i] / best_t)))
    d = np.asarray(loss_b, float)[ib] - np.asarray(loss_t, float)[it]
    if np.isfinite(d).sum() < MIN_PAIRS:
        return BestCost(best_b, best_t, None)
    return BestCost(best_b, best_t, paired(d, floor))
