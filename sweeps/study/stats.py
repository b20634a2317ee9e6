"""The study's statistics, as docs/STUDY.md (section 4) defines them: pure functions of small
numpy arrays (LRs ascending, one row per LR, one column per seed), no pandas, no plotting.

The runner uses them to refine the LR grid where the answer is decided; figures/analysis.py
uses them to build every number of the report. tests/test_stats.py proves them on simulated
sweeps with known answers before they judge real runs.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# sha256 of docs/STUDY.md, the rules this code implements (tests/test_stats.py checks it).
STUDY_SHA256 = "3980ee98e685d24fb456c2056beefed5d2eed6ac43c9a84cd87523a8b1d93fd2"
STUDY_PATH = Path(__file__).resolve().parents[2] / "docs" / "STUDY.md"
CONFIDENCE = 0.95  # one-sided bounds; two-sided intervals are 95% too
SIZE_CONFIDENCE = 0.75  # the effect above a necessity threshold: larger than m at 75%


def study_digest(path: Path = STUDY_PATH) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(p, df))


# -- paired differences ----------------------------------------------------------------------
@dataclass(frozen=True)
class Paired:
    """Mean of per-seed differences with its t bounds (NaN bounds with fewer than 2 pairs)."""
    n: int
    mean: float
    sd: float
    lb: float  # one-sided 95% lower bound
    ub: float  # one-sided 95% upper bound
    lo: float  # two-sided 95% interval
    hi: float
    lb75: float  # one-sided 75% lower bound


def paired(d) -> Paired:
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    n = len(d)
    if n < 2:
        mean = float(d.mean()) if n else math.nan
        return Paired(n, mean, *[math.nan] * 6)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    one, two = t_quantile(CONFIDENCE, n - 1), t_quantile(1 - (1 - CONFIDENCE) / 2, n - 1)
    return Paired(n, mean, sd, mean - one * se, mean + one * se, mean - two * se,
                  mean + two * se, mean - t_quantile(SIZE_CONFIDENCE, n - 1) * se)


# -- a value on the LR grid that may lie beyond it -------------------------------------------
@dataclass(frozen=True)
class GridValue:
    """An LR found on the grid. kind: "" (inside, value interpolated), "above" (beyond the
    top LR: value is that LR, a lower bound), "below" (at or below the lowest LR: value is
    that LR, an upper bound) or "none" (not found: value NaN). bracket: the two grid LRs the
    value lies between (for refinement), when inside."""
    value: float
    kind: str = ""
    bracket: tuple[float, float] | None = None

    @property
    def inside(self) -> bool:
        return self.kind == ""


NONE = GridValue(math.nan, "none")


def _log_crossing(lr_lo: float, g_lo: float, lr_hi: float, g_hi: float) -> float:
    """The LR where g crosses 0, g linear in log LR between (lr_lo, g_lo <= 0) and
    (lr_hi, g_hi > 0)."""
    frac = -g_lo / (g_hi - g_lo) if g_hi != g_lo else 0.5
    return float(math.exp(math.log(lr_lo) + frac * (math.log(lr_hi) - math.log(lr_lo))))


# -- stability ---------------------------------------------------------------------------------
def critical_lr(lrs, failed, losses) -> GridValue:
    """eta_crit of one seed: the stability edge above the seed's best LR (the LR of its lowest
    effective loss): the geometric midpoint of the largest ok LR below the first failing LR
    above the best and that LR. Failures below the best LR are a budget too short for a small
    LR (worse than the bigram baseline, say), not instability, and do not count.
    failed: per LR True (diverged or unstable), False (ok) or None (no run: skipped); losses:
    the effective losses, NaN where there is no run."""
    known = [(lr, f, x) for lr, f, x in zip(lrs, failed, losses) if f is not None]
    if not known:
        return NONE
    best = min(range(len(known)), key=lambda i: (known[i][2], i))
    if known[best][1]:
        return GridValue(known[0][0], "below")  # even its best LR fails: no ok LR anchors it
    first = next((i for i in range(best + 1, len(known)) if known[i][1]), None)
    if first is None:
        return GridValue(known[-1][0], "above")
    ok, fail = known[first - 1][0], known[first][0]
    return GridValue(math.sqrt(ok * fail), "", (ok, fail))


def eta_max(lrs, worst, target: float) -> GridValue:
    """The largest LR whose worst-seed effective loss is <= target, log-interpolated towards
    the next LR up (where it is above). worst: per LR, NaN where not every seed ran."""
    points = [(lr, w) for lr, w in zip(lrs, worst) if np.isfinite(w)]
    within = [i for i, (_, w) in enumerate(points) if w <= target]
    if not within:
        return NONE
    k = within[-1]
    if k == len(points) - 1:
        return GridValue(points[k][0], "above")
    (lr_a, w_a), (lr_b, w_b) = points[k], points[k + 1]
    # W - target: <= 0 at lr_a, > 0 at lr_b
    return GridValue(_log_crossing(lr_a, w_a - target, lr_b, w_b - target), "", (lr_a, lr_b))


def sensitivity(losses) -> float:
    """Wortsman et al.'s LR sensitivity of one seed over a fixed set of LRs: mean minus min of
    the effective losses; NaN (incomplete) when any is missing."""
    losses = np.asarray(losses, dtype=float)
    if losses.size == 0 or not np.isfinite(losses).all():
        return math.nan
    return float(losses.mean() - losses.min())


# -- necessity ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Necessity:
    lrs: list[float]  # the LRs judged: >= 2 pairs and not a common ceiling, ascending
    stats: list[Paired]  # per judged LR
    necessary: list[bool]
    threshold: GridValue  # eta_nec; kind "below": necessary from the lowest judged LR on
    ceiling: list[float]  # LRs where every run of both arms failed
    seed_thresholds: list[GridValue]  # one per seed (column of d)


def necessity(lrs, d, ceiling, min_effect: float) -> Necessity:
    """The necessity rule on per-seed differences d [LR, seed] (NaN: no pair) with the common
    ceiling mask [LR] (docs/STUDY.md section 4)."""
    d = np.asarray(d, dtype=float).reshape(len(lrs), -1)
    ceiling = np.asarray(ceiling, dtype=bool)
    judged = [i for i in range(len(lrs)) if not ceiling[i] and np.isfinite(d[i]).sum() >= 2]
    stats = [paired(d[i]) for i in judged]
    necessary = [s.lb > min_effect for s in stats]
    lrs_j = [float(lrs[i]) for i in judged]
    threshold = _threshold(lrs_j, [s.lb - min_effect for s in stats],
                           [s.lb75 - min_effect for s in stats])
    seeds = []
    for column in d.T:
        rows = [i for i in range(len(lrs)) if not ceiling[i] and np.isfinite(column[i])]
        margin = [column[i] - min_effect for i in rows]
        seeds.append(_threshold([float(lrs[i]) for i in rows], margin, margin))
    return Necessity(lrs_j, stats, necessary, threshold,
                     [float(lr) for lr, c in zip(lrs, ceiling) if c], seeds)


def _threshold(lrs: list[float], significant: list[float], size: list[float]) -> GridValue:
    """The smallest LR k with significant[k] > 0 and size[j] > 0 at every higher j, its
    crossing of significant = 0 interpolated from the LR below."""
    found, above_ok = None, True
    for k in range(len(lrs) - 1, -1, -1):
        if significant[k] > 0 and above_ok:
            found = k
        above_ok = above_ok and size[k] > 0
        if not above_ok:
            break
    if found is None:
        return NONE
    if found == 0:
        return GridValue(lrs[0], "below")
    lo, hi = found - 1, found
    value = _log_crossing(lrs[lo], significant[lo], lrs[hi], significant[hi])
    return GridValue(value, "", (lrs[lo], lrs[hi]))


# -- trends ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slope:
    n: int
    slope: float
    lo: float  # two-sided 95% interval
    hi: float


def slope(x, y) -> Slope:
    """Least-squares slope of y on x with its 95% t interval (df = n - 2); NaN below 3 points
    or without spread in x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    sxx = float(((x - x.mean()) ** 2).sum()) if n else 0.0
    if n < 3 or sxx == 0:
        return Slope(n, math.nan, math.nan, math.nan)
    b = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    resid = y - (y.mean() + b * (x - x.mean()))
    se = math.sqrt(float((resid ** 2).sum()) / (n - 2) / sxx)
    half = t_quantile(1 - (1 - CONFIDENCE) / 2, n - 2) * se
    return Slope(n, b, b - half, b + half)
