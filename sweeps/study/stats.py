"""The study's statistics, as docs/STUDY.md (section 4) defines them: pure functions of small
numpy arrays (LRs ascending, one row per LR, one column per seed), no pandas, no plotting.

sweeps/study/rules.py applies them to a sweep's runs for both the runner's refinement and the
report; sweeps/study/simulation/sweep.py and tests/test_stats.py prove them on simulated sweeps with
known answers before they judge real runs. The necessity rule is vectorised over a leading
batch axis so hundreds of simulated sweeps are judged at once by the same code.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

# sha256 of docs/STUDY.md, the rules this code implements (tests/test_stats.py checks it).
STUDY_SHA256 = "de29eac1412e3569d26c82dad7649fd655852dd4564f5dd5ddae028b84ad4d7d"
STUDY_VERSION = "v21"  # its title's version (tests/test_stats.py checks it too)
STUDY_PATH = Path(__file__).resolve().parents[2] / "docs" / "STUDY.md"
CONFIDENCE = 0.95  # one-sided bounds; the two of them are the two-sided 90% interval
TWO_SIDED = 2 * CONFIDENCE - 1  # that interval's level (0.9), for the words
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


def paired_arrays(d, floor=0.0, confidence: float = CONFIDENCE) -> dict[str, np.ndarray]:
    """Paired statistics over the last axis of d (NaN: no pair), for any leading shape.
    floor broadcasts against the leading shape; `confidence`: the one-sided level of lower and
    upper (CONFIDENCE; a rule that looks twice at growing data asks more, section 24)."""
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
    one, size = _t_table(confidence, width)[n], _t_table(SIZE_CONFIDENCE, width)[n]
    return {
        "n": n,
        "mean": mean,
        "sd": np.where(n >= 2, sd, np.nan),
        "sd_used": used,
        "lower": mean - one * se,
        "upper": mean + one * se,
        "lower75": mean - size * se,
    }


def paired(d, floor: float = 0.0, confidence: float = CONFIDENCE) -> Paired:
    d = np.asarray(d, dtype=float).reshape(-1)
    a = paired_arrays(d[None, :] if d.size else np.full((1, 1), np.nan), floor, confidence)
    return Paired(
        int(a["n"][0]),
        *(float(a[k][0]) for k in ("mean", "sd", "sd_used", "lower", "upper", "lower75")),
    )


def equivalent(p: Paired, bound: float) -> bool:
    """TOST at +-bound: both one-sided 95% tests reject an effect as large as the bound, i.e.
    the two-sided 90% interval lies inside (-bound, bound). More noise makes this harder, never
    easier (docs/STUDY.md section 5, H1)."""
    return p.n >= MIN_PAIRS and math.isfinite(p.lower) and -bound < p.lower and p.upper < bound


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
    # inside: the value is interpolated within the bracket (False: the bracket's geometric
    # midpoint, where an interpolation would cross a jump, e.g. a change of failure class)
    interpolated: bool = True

    @property
    def inside(self) -> bool:
        return self.kind == ""


NONE = GridValue(math.nan, "none")


class Span(NamedTuple):
    """The LRs a GridValue allows: lo < x <= hi (lo_open) or lo <= x <= hi; NaN ends: nothing."""

    lo: float
    hi: float
    lo_open: bool

    @property
    def empty(self) -> bool:
        return math.isnan(self.lo)


def span(v: GridValue) -> Span:
    """Where the true LR can lie, given a GridValue: the one reading every rule uses (the
    token-matched check, the pooled threshold against its seeds, the carry and side-by-side
    pages). Inside with a bracket: (lo, hi]; inside without one (a median over seeds whose
    brackets differ): the interpolated point; "below" (at or under the lowest LR): (0, value];
    "above" (beyond the top LR) and "none" (QK-norm never necessary up to where the evidence
    ends, value that LR): (value, inf), since a threshold may lie just past the evidence;
    "none" without a value and "unjudged": nothing (NaN ends), which is never shown below or
    above anything."""
    if v.kind == "" and v.bracket:
        return Span(float(v.bracket[0]), float(v.bracket[1]), True)
    if v.kind == "":
        return Span(v.value, v.value, False)
    if v.kind == "below":
        return Span(0.0, v.value, True)
    if v.kind in ("above", "none") and math.isfinite(v.value):
        return Span(v.value, math.inf, True)
    return Span(math.nan, math.nan, True)


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
def pairs_used(d, fail_b, fail_t) -> tuple[np.ndarray, np.ndarray]:
    """The failure model (docs/STUDY.md section 4): which pairs an LR's bound rests on, over
    [..., LR, seed] (NaN in d: no pair; fail_*: that arm's run failed, primary definition).
    Returns (used [..., LR, seed], judgeable [..., LR]):
    - no run failed: every pair is used;
    - some run failed and at least MIN_PAIRS pairs have no failure: those pairs. The effect is
      then the effect among runs that trained; failures are the critical LR's business (H2a),
      and a bimodal stuck seed is not Gaussian noise that may hide the other seeds' effect;
    - fewer remain and only one arm failed: every pair at its capped loss (the failures are the
      effect: a stuck baseline against a treatment that trained, or the reverse);
    - fewer remain and both arms failed: not judgeable (a partial ceiling: both arms fail too
      often there to compare them)."""
    has = np.isfinite(np.asarray(d, float))
    fb, ft = np.asarray(fail_b, bool) & has, np.asarray(fail_t, bool) & has
    fine = has & ~fb & ~ft
    any_fail = (fb | ft).any(-1)
    enough = fine.sum(-1) >= MIN_PAIRS
    one_arm = ~(fb.any(-1) & ft.any(-1))
    used = np.where((any_fail & enough)[..., None], fine, has)
    return used, ~any_fail | enough | one_arm


def threshold_index(lower, lower75, judged, min_effect: float, full=None) -> np.ndarray:
    """The necessity rule's decision, vectorised over leading axes ([..., LR]): the index of
    the smallest judged LR k with lower[k] > m, lower75[j] > m at every judged j above k, and
    lower > m at the gate LR (a threshold claims necessity up to the top, so it is tested there
    first and a null sweep passes it at most 5% of the time, however many LRs lie below); -1
    where there is none. The gate LR is the top judged LR whose bound rests on every pair, all
    in one failure class (full [..., LR]; none such: the top judged LR): which LR that is
    depends on where runs failed, never on the effects, so it stays one 5% test."""
    judged = np.asarray(judged, bool)
    full = judged if full is None else judged & np.asarray(full, bool)
    full = np.where(full.any(-1, keepdims=True), full, judged)
    sig = judged & (np.nan_to_num(np.asarray(lower, float), nan=-np.inf) > min_effect)
    size = ~judged | (np.nan_to_num(np.asarray(lower75, float), nan=-np.inf) > min_effect)
    # size_above[k]: every judged LR above k passes the size test
    rev = np.flip(np.cumprod(np.flip(size, -1), axis=-1), -1).astype(bool)
    size_above = np.concatenate([rev[..., 1:], np.ones(rev.shape[:-1] + (1,), bool)], -1)
    n_lr = judged.shape[-1]
    top = np.where(full.any(-1), n_lr - 1 - np.argmax(np.flip(full, -1), -1), 0)
    gate = np.take_along_axis(sig, top[..., None], -1)[..., 0] & judged.any(-1)
    candidate = sig & size_above
    first = np.where(candidate.any(-1), np.argmax(candidate, -1), -1)
    return np.where(gate, first, -1)


def judge_lrs(d, fail_b, fail_t, ceiling, floor) -> tuple[dict, np.ndarray, np.ndarray]:
    """Each LR's paired statistics on the pairs it rests on (pairs_used), vectorised over
    [..., LR, seed]: (paired_arrays, used [..., LR, seed], judged [..., LR]). Judged: not a
    common ceiling, judgeable, at least MIN_PAIRS pairs used and a defined bound. The
    statistics carry "full" [..., LR]: the LRs threshold_index's gate may test (_uniform)."""
    d = np.asarray(d, float)
    used, judgeable = pairs_used(d, fail_b, fail_t)
    a = paired_arrays(np.where(used, d, np.nan), floor)
    judged = (
        ~np.asarray(ceiling, bool) & judgeable & (a["n"] >= MIN_PAIRS) & np.isfinite(a["lower"])
    )
    a["full"] = _uniform(d, fail_b, fail_t, used)
    return a, used, judged


def _uniform(d, fail_b, fail_t, used) -> np.ndarray:
    """[..., LR]: every pair is used and all are in one failure class (no run failed; or the
    baseline alone failed in every pair; or the treatment alone in every pair): an LR whose
    bound no outlier seed or mixture of classes weakens, where the gate tests."""
    has = np.isfinite(np.asarray(d, float))
    fb, ft = np.asarray(fail_b, bool) & has, np.asarray(fail_t, bool) & has
    kinds = [~fb & ~ft, fb & ~ft, ft & ~fb]
    one_class = np.any([(k | ~has).all(-1) for k in kinds], axis=0)
    return (used == has).all(-1) & one_class


def decide(a: dict, judged, min_effect: float) -> np.ndarray:
    """threshold_index on judge_lrs' statistics (one call for the report and the simulations)."""
    return threshold_index(a["lower"], a["lower75"], judged, min_effect, a["full"])


@dataclass(frozen=True)
class Necessity:
    lrs: list[float]  # the LRs judged, ascending
    stats: list[Paired]  # per judged LR, over the pairs it rests on
    necessary: list[bool]  # lower > m
    set_aside: list[list[int]]  # per judged LR: seed columns set aside (the baseline alone failed)
    threshold: GridValue  # bracket: (last LR not shown necessary, first from which it stays)
    ceiling: list[float]  # LRs where every run of both arms failed
    seed_thresholds: list[GridValue]  # one per seed (column of d)
    floor: float  # the precision floor the bounds used


def _bracketed(lr_lo: float, lr_hi: float, g_lo: float, g_hi: float, continuous) -> GridValue:
    """A value known to lie in (lr_lo, lr_hi]: where g (the effect minus m) crosses 0, linear in
    log LR, when the effect is continuous across the bracket and g changes sign there; else the
    bracket's geometric midpoint, marked not interpolated."""
    if bool(continuous) and g_lo <= 0 < g_hi:
        return GridValue(_log_crossing(lr_lo, g_lo, lr_hi, g_hi), "", (lr_lo, lr_hi))
    return GridValue(math.sqrt(lr_lo * lr_hi), "", (lr_lo, lr_hi), interpolated=False)


# -- early warning -------------------------------------------------------------------------
EARLY_FRACTION = 0.1  # the early step: the first evaluation at or after 10% of the run
BOOTSTRAP = 2000  # resamples of the AUC's interval (docs/STUDY.md section 4)
AUC_QUANTILES = (0.05, 0.95)  # the ends of the AUC's bootstrap interval: a 90% interval


def auc(positive, negative) -> float:
    """Mann-Whitney AUC: the probability that a positive's score exceeds a negative's, ties
    counting half; NaN when either class is empty."""
    pos, neg = np.asarray(positive, float), np.asarray(negative, float)
    if not len(pos) or not len(neg):
        return math.nan
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def auc_interval(positive, negative, resamples: int = BOOTSTRAP, seed: int = 0):
    """(AUC, lower, upper): the AUC with a 90% bootstrap interval, resampling runs within each
    class; NaNs when a class is empty."""
    pos, neg = np.asarray(positive, float), np.asarray(negative, float)
    value = auc(pos, neg)
    if math.isnan(value):
        return value, math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = [auc(rng.choice(pos, len(pos)), rng.choice(neg, len(neg))) for _ in range(resamples)]
    lo, hi = np.quantile(draws, list(AUC_QUANTILES))
    return value, float(lo), float(hi)


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
    fit = line_fit(x, y)
    if fit is None:
        return Slope(len(x), math.nan, math.nan, math.nan)
    return Slope(fit.n, fit.slope, *fit.slope_bounds())


@dataclass(frozen=True)
class Prediction:
    """A fitted line read at one x: the mean, its 90% interval (the line's uncertainty) and
    the 90% interval of one new point (the line's plus the scatter about it)."""

    x: float
    mean: float
    lower: float  # the mean's one-sided 95% bounds (two-sided 90%)
    upper: float
    point_lower: float  # a new point's
    point_upper: float


@dataclass(frozen=True)
class Line:
    """An ordinary least squares line y = intercept + slope x, with what its intervals need:
    the points' mean x, the spread of x (sum of squared deviations) and the residual sd
    (df = n - 2)."""

    n: int
    slope: float
    intercept: float
    x_mean: float
    sxx: float
    resid_sd: float

    def at(self, x0: float) -> Prediction:
        """The line at x0 (inside the points' range or beyond it: an extrapolation is as
        wide as its distance from the points' mean x makes it), with one-sided 95% t
        bounds."""
        mean = self.intercept + self.slope * x0
        lever = 1 / self.n + (x0 - self.x_mean) ** 2 / self.sxx
        t = t_quantile(CONFIDENCE, self.n - 2)
        half, point = t * self.resid_sd * math.sqrt(lever), t * self.resid_sd * math.sqrt(1 + lever)
        return Prediction(x0, mean, mean - half, mean + half, mean - point, mean + point)

    def slope_bounds(self) -> tuple[float, float]:
        """The slope's one-sided 95% t bounds (two-sided 90%), as `slope` gives them."""
        half = t_quantile(CONFIDENCE, self.n - 2) * self.resid_sd / math.sqrt(self.sxx)
        return self.slope - half, self.slope + half


def line_fit(x, y) -> Line | None:
    """The least-squares line of y on x (the one `slope` bounds), None below 3 points or
    without spread in x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    sxx = float(((x - x.mean()) ** 2).sum()) if n else 0.0
    if n < 3 or sxx == 0:
        return None
    b = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    a = float(y.mean() - b * x.mean())
    resid = y - (a + b * x)
    return Line(n, b, a, float(x.mean()), sxx, math.sqrt(float((resid**2).sum()) / (n - 2)))
