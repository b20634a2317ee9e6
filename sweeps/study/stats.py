"""The study's statistics, as docs/STUDY.md (section 4) defines them: pure functions of small
numpy arrays (LRs ascending, one row per LR, one column per seed), no pandas, no plotting.

sweeps/study/rules.py applies them to a sweep's runs for both the runner's refinement and the
report; sweeps/study/simulate.py and tests/test_stats.py prove them on simulated sweeps with
known answers before they judge real runs. The necessity rule is vectorised over a leading
batch axis so hundreds of simulated sweeps are judged at once by the same code.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# sha256 of docs/STUDY.md, the rules this code implements (tests/test_stats.py checks it).
STUDY_SHA256 = "c2a5736b3b914340d5df2b9e004beb09bcb8e9cdc984e72a762ae4cdb31308b0"
STUDY_PATH = Path(__file__).resolve().parents[2] / "docs" / "STUDY.md"
CONFIDENCE = 0.95  # one-sided bounds; the two of them are the two-sided 90% interval
SIZE_CONFIDENCE = 0.75  # the effect above a necessity threshold: larger than m at 75%
MIN_PAIRS = 3  # every paired rule needs 3 pairs (docs/STUDY.md section 4)
TIE = 1e-9  # a sample sd at or below this (relative to the values) is a tie


def study_digest(path: Path = STUDY_PATH) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(p, df))


def _t_table(p: float, n_max: int) -> np.ndarray:
    """t quantile by number of pairs n (NaN below MIN_PAIRS), index 0 .. n_max."""
    return np.array(
        [t_quantile(p, n - 1) if n >= MIN_PAIRS else math.nan for n in range(n_max + 1)]
    )


# -- paired differences ----------------------------------------------------------------------
@dataclass(frozen=True)
class Paired:
    """Mean of per-seed differences with its one-sided t bounds; NaN bounds with fewer than
    MIN_PAIRS pairs or a tie no floor covers. sd_used = max(sample sd, floor): the bounds never
    rest on a spread smaller than what the quantity can resolve."""

    n: int
    mean: float
    sd: float
    sd_used: float
    lower: float  # one-sided 95% lower bound: the decision
    upper: float  # one-sided 95% upper bound
    lower75: float  # one-sided 75% lower bound

    @property
    def ci90(self) -> tuple[float, float]:
        """The two-sided 90% interval: the two one-sided 95% bounds."""
        return self.lower, self.upper


def paired_arrays(d, floor=0.0) -> dict[str, np.ndarray]:
    """Paired statistics over the last axis of d (NaN: no pair), for any leading shape.
    floor broadcasts against the leading shape."""
    d = np.asarray(d, dtype=float)
    ok = np.isfinite(d)
    n = ok.sum(axis=-1)
    x = np.where(ok, d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=-1) / n
        var = (np.where(ok, d - mean[..., None], 0.0) ** 2).sum(axis=-1) / (n - 1)
    sd = np.sqrt(var)
    used = np.maximum(np.nan_to_num(sd, nan=0.0), np.asarray(floor, dtype=float))
    tie = used <= TIE * np.maximum(1.0, np.abs(np.nan_to_num(mean)))
    se = np.where(tie | (n < MIN_PAIRS), np.nan, used / np.sqrt(np.maximum(n, 1)))
    width = d.shape[-1]
    one, size = _t_table(CONFIDENCE, width)[n], _t_table(SIZE_CONFIDENCE, width)[n]
    return {
        "n": n,
        "mean": mean,
        "sd": np.where(n >= 2, sd, np.nan),
        "sd_used": used,
        "lower": mean - one * se,
        "upper": mean + one * se,
        "lower75": mean - size * se,
    }


def paired(d, floor: float = 0.0) -> Paired:
    d = np.asarray(d, dtype=float).reshape(-1)
    a = paired_arrays(d[None, :] if d.size else np.full((1, 1), np.nan), floor)
    return Paired(
        int(a["n"][0]),
        *(float(a[k][0]) for k in ("mean", "sd", "sd_used", "lower", "upper", "lower75")),
    )


def noise_floor(d, clean) -> np.ndarray:
    """The seed noise a comparison resolves: the pooled sample sd of d over its clean LRs (no
    run of either arm failed, >= MIN_PAIRS pairs). Noise grows toward the stability edge and
    never shrinks, so no LR's bound rests on a spread below it. d [..., LR, seed], clean
    [..., LR]; 0 where no LR is clean."""
    d = np.asarray(d, dtype=float)
    ok = np.isfinite(d)
    n = ok.sum(axis=-1)
    use = np.asarray(clean, bool) & (n >= MIN_PAIRS)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, d, 0.0).sum(axis=-1) / n
        ss = (np.where(ok, d - mean[..., None], 0.0) ** 2).sum(axis=-1)
        pooled = np.where(use, ss, 0.0).sum(axis=-1) / np.where(use, n - 1, 0).sum(axis=-1)
    return np.sqrt(np.nan_to_num(pooled, nan=0.0))


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


def quantization_sd(crit: GridValue) -> float:
    """The sd (log10) of a critical LR known only to lie in its bracket: uniform over the
    bracket's width w in decades, w / sqrt(12). 0 for a censored value."""
    if not crit.inside:
        return 0.0
    return math.log10(crit.bracket[1] / crit.bracket[0]) / math.sqrt(12)


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
def threshold_index(lower, lower75, judged, min_effect: float) -> np.ndarray:
    """The necessity rule's decision, vectorised over leading axes ([..., LR]): the index of
    the smallest judged LR k with lower[k] > m, lower75[j] > m at every judged j above k, and
    lower > m at the top judged LR (the gate: a threshold claims necessity up to the top, so
    it is tested there first and a null sweep passes it at most 5% of the time, however many
    LRs lie below); -1 where there is none."""
    judged = np.asarray(judged, bool)
    sig = judged & (np.nan_to_num(np.asarray(lower, float), nan=-np.inf) > min_effect)
    size = ~judged | (np.nan_to_num(np.asarray(lower75, float), nan=-np.inf) > min_effect)
    # size_above[k]: every judged LR above k passes the size test
    rev = np.flip(np.cumprod(np.flip(size, -1), axis=-1), -1).astype(bool)
    size_above = np.concatenate([rev[..., 1:], np.ones(rev.shape[:-1] + (1,), bool)], -1)
    n_lr = judged.shape[-1]
    top = np.where(judged.any(-1), n_lr - 1 - np.argmax(np.flip(judged, -1), -1), 0)
    gate = np.take_along_axis(sig, top[..., None], -1)[..., 0] & judged.any(-1)
    candidate = sig & size_above
    first = np.where(candidate.any(-1), np.argmax(candidate, -1), -1)
    return np.where(gate, first, -1)


@dataclass(frozen=True)
class Necessity:
    lrs: list[float]  # the LRs judged (>= MIN_PAIRS pairs, failures not mixed), ascending
    stats: list[Paired]  # per judged LR
    necessary: list[bool]  # lower > m
    threshold: GridValue  # the decision: where lower - m crosses 0 below the LR it picked
    estimate: GridValue  # where the mean effect reaches m (the point estimate)
    ci90: tuple[float | None, float | None]  # where upper, lower cross m; None: below the grid
    ceiling: list[float]  # LRs where every run of both arms failed
    seed_thresholds: list[GridValue]  # one per seed (column of d)
    floor: float  # the noise floor the bounds used


def necessity(lrs, d, ceiling, min_effect: float, clean=None, mixed=None) -> Necessity:
    """The necessity rule on per-seed differences d [LR, seed] (NaN: no pair) with the common
    ceiling mask [LR] (docs/STUDY.md section 4). clean [LR]: LRs where no run of either arm
    failed, for the noise floor (default: none, no floor). mixed [LR]: LRs where failures mix
    (some run failed, but not the baseline in every pair and the treatment in none): not
    judged, like the ceiling, since one failed run swings d by the whole loss at init."""
    lrs = [float(x) for x in lrs]
    d = np.asarray(d, dtype=float)
    d = d.reshape(len(lrs), -1) if d.size else np.full((len(lrs), 1), np.nan)
    ceiling = np.asarray(ceiling, dtype=bool).reshape(len(lrs))
    clean = np.zeros(len(lrs), bool) if clean is None else np.asarray(clean, bool)
    mixed = np.zeros(len(lrs), bool) if mixed is None else np.asarray(mixed, bool)
    floor = float(noise_floor(d, clean & ~ceiling))
    a = paired_arrays(d, floor)
    judged = ~ceiling & ~mixed & (a["n"] >= MIN_PAIRS) & np.isfinite(a["lower"])
    idx = [i for i in range(len(lrs)) if judged[i]]
    stats = [
        Paired(
            int(a["n"][i]),
            *(float(a[k][i]) for k in ("mean", "sd", "sd_used", "lower", "upper", "lower75")),
        )
        for i in idx
    ]
    lrs_j = [lrs[i] for i in idx]
    k = (
        int(
            threshold_index(a["lower"][idx], a["lower75"][idx], np.ones(len(idx), bool), min_effect)
        )
        if idx
        else -1
    )
    threshold, estimate, ci90 = NONE, NONE, (None, None)
    if k >= 0:
        threshold = _crossing(lrs_j, [s.lower - min_effect for s in stats], k)
        estimate = _crossing(lrs_j, [s.mean - min_effect for s in stats], k)
        upper = _crossing(lrs_j, [s.upper - min_effect for s in stats], k)
        ci90 = (None if upper.kind == "below" else upper.value, threshold.value)
    seeds = []
    for column in d.T:
        rows = [
            i for i in range(len(lrs)) if not ceiling[i] and not mixed[i] and np.isfinite(column[i])
        ]
        margin = [column[i] - min_effect for i in rows]
        seeds.append(_seed_threshold([lrs[i] for i in rows], margin))
    return Necessity(
        lrs_j,
        stats,
        [s.lower > min_effect for s in stats],
        threshold,
        estimate,
        ci90,
        [lr for lr, c in zip(lrs, ceiling) if c],
        seeds,
        floor,
    )


def _crossing(lrs: list[float], g: list[float], k: int) -> GridValue:
    """Walking down from index k (where g > 0 or the rule found the threshold): the crossing
    of g = 0 between the highest LR at or below k with g <= 0 and the LR above it; "below"
    when g > 0 down to the lowest LR."""
    j = next((i for i in range(k, -1, -1) if not g[i] > 0), None)
    if j is None:
        return GridValue(lrs[0], "below")
    if j == k:  # the decision's own LR fails g (the bound itself at k is > 0 by the rule)
        return GridValue(lrs[k], "below") if k == 0 else _crossing(lrs, g, k - 1)
    return GridValue(_log_crossing(lrs[j], g[j], lrs[j + 1], g[j + 1]), "", (lrs[j], lrs[j + 1]))


def _seed_threshold(lrs: list[float], margin: list[float]) -> GridValue:
    """One seed: the smallest LR k with d_s > m there and at every higher LR, its crossing
    interpolated from the LR below."""
    k = None
    for i in range(len(lrs) - 1, -1, -1):
        if not margin[i] > 0:
            break
        k = i
    if k is None:
        return NONE
    if k == 0:
        return GridValue(lrs[0], "below")
    return GridValue(
        _log_crossing(lrs[k - 1], margin[k - 1], lrs[k], margin[k]), "", (lrs[k - 1], lrs[k])
    )


# -- trends ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slope:
    n: int
    slope: float
    lower: float  # one-sided 95% bounds (the two-sided 90% interval)
    upper: float


def slope(x, y) -> Slope:
    """Least-squares slope of y on x with its one-sided 95% t bounds (df = n - 2); NaN below
    3 points or without spread in x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    sxx = float(((x - x.mean()) ** 2).sum()) if n else 0.0
    if n < 3 or sxx == 0:
        return Slope(n, math.nan, math.nan, math.nan)
    b = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    resid = y - (y.mean() + b * (x - x.mean()))
    se = math.sqrt(float((resid**2).sum()) / (n - 2) / sxx)
    half = t_quantile(CONFIDENCE, n - 2) * se
    return Slope(n, b, b - half, b + half)
