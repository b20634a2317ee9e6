"""Study v5's trend verdicts (docs/STUDY.md section 13): how a rung's stability threshold
moves with size, with the rung as the unit of replication.

v4 fitted one line through every (seed, rung) value and took its residual df from the seeds:
seeds then count as independent replicates of a rung-level deviation they all share (the three
`cpu-depth` rungs do not lie on a line: lack of fit F(1, 7) = 18.5), so its interval was too
narrow and its rule found its own predicted slope only about a third of the time. v5 averages
each rung's per-seed log10 thresholds into one value and fits the rung values: df = rungs - 2,
and the residual sd carries both the rung-level deviation and the seeds' scatter.

Three outcomes, none from a point estimate's sign: *supported* (the slope's 90% interval lies
below 0: the threshold falls), *ruled out* (the interval lies above the pre-registered
prediction: a fall that steep is ruled out at this scale), *inconclusive* otherwise, always with
the design's power at the prediction. A censored per-seed value is placed at its bound and
moved CENSOR_SHIFT decades beyond it; a verdict must hold under both placements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

# W2's bound and the rungs a trend needs, declared once (sections 5 and 11)
from sweeps.study.ladders import CARRY_BOUND, CENSOR_SHIFT, MIN_RUNGS
from sweeps.study.rules import BORDERLINE_DECIDES, INCONCLUSIVE, SUPPORTED
from sweeps.study.stats import CONFIDENCE, GridValue, Slope, line_fit, t_quantile

RULED_OUT = "ruled out"
# the pre-registered falls (decades of threshold per doubling, section 13): H3 on depth, W1 on
# width; a verdict rules a fall this steep out or shows a fall
PREDICTIONS = {"H3": -0.25, "W1": -0.3}
MIN_SEEDS_PER_RUNG = 2
# Pre-registered for the power each verdict states (section 13): the sd of a rung's deviation
# from the line (decades; cpu-depth's three rungs: about 0.25 from their lack of fit) and of a
# seed's threshold about its rung (decades; the committed ladders: 0.1-0.25).
RUNG_SD = 0.25
SEED_SD = 0.2
# Section 18: a trend verdict states its power at three rung sds: the one section 14 sized the
# ladders for, the pre-registered RUNG_SD, and the upper end of what cpu-depth measured.
POWER_RUNG_SDS = (0.15, RUNG_SD, 0.3)
# Section 18: a rung that may differ in kind, whose trend without it the report gives beside
# the verdict with its power (a one-layer model cannot compose attention heads), per ladder.
SET_APART = {"n_layer": 1}


@dataclass(frozen=True)
class RungValue:
    """One rung's value: log10 threshold averaged over its seeds, with censored seeds at their
    bound (at_bound) and moved beyond it (beyond), how many seeds it rests on and how many of
    them are censored."""

    x: float  # log2 size
    at_bound: float
    beyond: float
    seeds: int
    censored: int
    direction: int  # -1: every censored seed lies below the grid, +1: above, 0: none or both
    mean_var: float  # the seeds' variance about their mean / their count: the rung value's
    # variance from seed scatter alone (NaN with one seed)
    none: int = 0  # seeds that found no threshold where their evidence ends ('none')
    # section 25: the rung's pooled stability threshold was found (bracketed, or at or below
    # `off`'s best LR); True where the caller judged no pooled threshold (per-seed values only)
    pooled: bool = True

    @property
    def has_threshold(self) -> bool:
        """At least half of the rung's seeds found a threshold (bracketed, or at or below
        `off`'s best LR: section 22) and so did the seeds pooled (section 25): on a fine grid
        the arms' failure edges jitter across several LRs, and a seed whose `on` run happens to
        outlast `off`'s finds a threshold where QK-norm does nothing; the pooled paired test
        needs the effect in most seeds at once."""
        return 2 * self.none <= self.seeds and self.pooled


@dataclass(frozen=True)
class Trend:
    verdict: str  # supported | ruled out | inconclusive
    why: str  # 'falls', 'steep fall ruled out', 'not shown', 'censoring decides',
    # 'too few rungs', 'censored alike', NO_THRESHOLD
    prediction: float
    at_bound: Slope | None
    beyond: Slope | None
    rungs: tuple[RungValue, ...]
    dropped: tuple[int, ...]  # sizes with fewer than MIN_SEEDS_PER_RUNG values
    power: float  # P(supported) at the prediction for this design (RUNG_SD, SEED_SD)
    # section 17 (v9): the trend with each rung left out, the rungs whose removal reverses a
    # decisive verdict (it is then inconclusive, 'one rung decides') and those whose removal
    # leaves it undecided or changes it (fragile); empty until judged (robust())
    left_out: tuple[LeftOut, ...] = ()
    reversed_by: tuple[int, ...] = ()
    fragile: tuple[int, ...] = ()
    # section 18: P(supported) at the prediction at each of POWER_RUNG_SDS (H3, W1; empty for W2)
    powers: tuple[float, ...] = ()
    # section 22: the slope (censored values at their bounds) with every borderline run counted
    # trained, as the runs recorded them, where it differs from at_bound's (borderline stuck)
    recorded: Slope | None = None
    # section 22: the seed scatter (decades) the powers were simulated at; None: analytic powers
    seed_scatter: float | None = None


@dataclass(frozen=True)
class LeftOut:
    """The trend without one rung: its size, verdict and slope (censored values at their
    bound), and the rung's influence (that slope minus the slope with every rung)."""

    size: int
    verdict: str
    slope: Slope | None
    influence: float
    powers: tuple[float, ...] = ()  # the design without this rung, at each of POWER_RUNG_SDS


def seed_log(v: GridValue) -> tuple[float, float, int] | None:
    """(at bound, beyond, direction) of one per-seed threshold in log10; None when it says
    nothing about where the threshold is (no evidence, or a 'none' without a value)."""
    if not (v.value > 0 and math.isfinite(v.value)):
        return None
    y = math.log10(v.value)
    if v.kind == "":
        return y, y, 0
    if v.kind == "below":
        return y, y - CENSOR_SHIFT, -1
    if v.kind in ("above", "none"):
        return y, y + CENSOR_SHIFT, 1
    return None


def pooled_found(v: GridValue) -> bool:
    """A rung's pooled stability threshold was found: bracketed, or at or below `off`'s best
    LR (not 'none', not unjudged)."""
    return v.kind in ("", "below")


def rung_values(
    per_rung: Mapping[int, Sequence[GridValue]],
    unit: Mapping[int, float] | None = None,
    pooled: Mapping[int, GridValue] | None = None,
) -> tuple[list[RungValue], list[int]]:
    """Each rung's mean log10 per-seed threshold (relative to unit[size] when given: W2's
    multiple of `off`'s best LR), whether its pooled threshold (pooled[size], where given) was
    found, and the sizes dropped for too few seeds."""
    out, dropped = [], []
    for size, values in sorted(per_rung.items()):
        base = math.log10(unit[size]) if unit and unit.get(size) else 0.0
        logs = [s for s in (seed_log(v) for v in values) if s is not None]
        if len(logs) < MIN_SEEDS_PER_RUNG:
            dropped.append(size)
            continue
        directions = {d for _, _, d in logs if d}
        out.append(
            RungValue(
                math.log2(size),
                float(np.mean([a for a, _, _ in logs])) - base,
                float(np.mean([b for _, b, _ in logs])) - base,
                len(logs),
                sum(d != 0 for _, _, d in logs),
                directions.pop() if len(directions) == 1 else 0,
                float(np.var([a for a, _, _ in logs], ddof=1) / len(logs)),
                sum(v.kind == "none" for v in values if seed_log(v) is not None),
                pooled_found(pooled[size]) if pooled is not None else True,
            )
        )
    return out, dropped


def seed_floor(rungs: Sequence[RungValue]) -> float:
    """The sd a rung value has from its seeds' scatter alone (root mean of the rungs' variance
    of the mean): the residual sd of the line over the rungs is never taken below it. With
    three rungs the residual sd rests on one degree of freedom, and three rung values that
    happen to lie on a line would otherwise give an interval narrower than the seeds allow."""
    v = [r.mean_var for r in rungs if math.isfinite(r.mean_var)]
    return math.sqrt(sum(v) / len(v)) if v else 0.0


def floored_slope(x, y, floor: float) -> Slope:
    """Least-squares slope with its one-sided 95% t bounds (df = n - 2), the residual sd
    floored (seed_floor)."""
    fit = line_fit(x, y)
    if fit is None:
        return Slope(len(x), math.nan, math.nan, math.nan)
    half = t_quantile(CONFIDENCE, fit.n - 2) * max(fit.resid_sd, floor) / math.sqrt(fit.sxx)
    return Slope(fit.n, fit.slope, fit.slope - half, fit.slope + half)


def _censored_alike(rungs: Sequence[RungValue]) -> bool:
    """Every seed of every rung censored beyond the same end of the grid: both placements move
    all values alike and the slope measures nothing (section 12's rule, kept)."""
    return (
        bool(rungs)
        and all(r.censored == r.seeds for r in rungs)
        and len({r.direction for r in rungs}) == 1
        and rungs[0].direction != 0
    )


NO_THRESHOLD = "no threshold at most rungs"


def most_without_threshold(rungs: Sequence[RungValue]) -> bool:
    """More than half the rungs have no threshold (section 22): their values sit where each
    seed's evidence ends, which follows the failure edge both arms share, so a slope through
    them says how that edge moves, not where QK-norm becomes necessary."""
    return 2 * sum(not r.has_threshold for r in rungs) > len(rungs)


def power(sizes: Sequence[float], seeds: int, prediction: float, rung_sd=RUNG_SD, seed_sd=SEED_SD):
    """P(the slope's 90% interval lies below 0) when the true slope is `prediction`, for rungs
    at `sizes` with `seeds` seeds each: a noncentral t with df = rungs - 2 and the rung value's
    sd sqrt(rung_sd^2 + seed_sd^2 / seeds). Ignores grid quantization and censoring (the
    simulation of section 13 measures those)."""
    from scipy.stats import nct

    x = np.log2(np.asarray(sizes, float))
    if len(x) < MIN_RUNGS:
        return math.nan
    sxx = float(((x - x.mean()) ** 2).sum())
    se = math.sqrt((rung_sd**2 + seed_sd**2 / seeds) / sxx)
    df = len(x) - 2
    return float(nct.cdf(-t_quantile(CONFIDENCE, df), df, prediction / se))


def decide(
    per_rung: Mapping[int, Sequence[GridValue]],
    prediction: float,
    seeds: int = 4,
    unit: Mapping[int, float] | None = None,
    pooled: Mapping[int, GridValue] | None = None,
) -> Trend:
    """H3 / W1 (and W2 through unit) under v5; pooled: each rung's pooled stability threshold
    (section 25's guard)."""
    rungs, dropped = rung_values(per_rung, unit, pooled)
    sizes = [2**r.x for r in rungs] or list(per_rung)
    at_sds = tuple(power(sizes, seeds, prediction, rung_sd=sd) for sd in POWER_RUNG_SDS)
    pw = at_sds[POWER_RUNG_SDS.index(RUNG_SD)]
    if len(rungs) < MIN_RUNGS:
        return Trend(
            INCONCLUSIVE,
            "too few rungs",
            prediction,
            None,
            None,
            tuple(rungs),
            tuple(dropped),
            pw,
            powers=at_sds,
        )
    x, floor = [r.x for r in rungs], seed_floor(rungs)
    a = floored_slope(x, [r.at_bound for r in rungs], floor)
    b = floored_slope(x, [r.beyond for r in rungs], floor)
    if _censored_alike(rungs) or most_without_threshold(rungs):
        return Trend(
            INCONCLUSIVE,
            "censored alike" if _censored_alike(rungs) else NO_THRESHOLD,
            prediction,
            a,
            b,
            tuple(rungs),
            tuple(dropped),
            pw,
            powers=at_sds,
        )
    verdict, why = both_placements(
        a,
        b,
        (lambda s: s.upper < 0, SUPPORTED, "falls"),
        (lambda s: s.lower > prediction, RULED_OUT, "steep fall ruled out"),
    )
    return Trend(verdict, why, prediction, a, b, tuple(rungs), tuple(dropped), pw, powers=at_sds)


def both_placements(a: Slope, b: Slope, *outcomes) -> tuple[str, str]:
    """The first outcome (test, verdict, why) whose test holds for the slope with censored
    values at their bound (a) and moved beyond (b); 'censoring decides' when some test holds
    for one placement only; else 'not shown'. Inconclusive both ways."""
    for test, verdict, why in outcomes:
        if test(a) and test(b):
            return verdict, why
    if any(test(a) or test(b) for test, _, _ in outcomes):
        return INCONCLUSIVE, "censoring decides"
    return INCONCLUSIVE, "not shown"


CARRIES, MOVES = "supported", "not supported"
ONE_RUNG_DECIDES = "one rung decides"
# a decisive verdict and the one a single rung must not reverse it into (H3/W1; W2)
OPPOSITE = {SUPPORTED: RULED_OUT, RULED_OUT: SUPPORTED}
CARRY_OPPOSITE = {CARRIES: MOVES, MOVES: CARRIES}


def robust(
    ways: Sequence[Mapping[int, Sequence[GridValue]]],
    rule: Callable[..., Trend],
    opposite: Mapping[str, str],
    *args,
    pooled: Sequence[Mapping[int, GridValue]] | None = None,
    **kwargs,
) -> Trend:
    """A trend verdict under section 17: `rule` (decide or carry, with *args) on the per-seed
    values of every rung, once per way the borderline runs can go (`ways`: one mapping, or two:
    borderline stuck, trained; a verdict they disagree on is inconclusive, 'borderline
    decides'), then refitted with each rung left out (both ways again): a decisive verdict that
    leaving out one rung turns into its opposite is inconclusive ('one rung decides'), and the
    rungs whose removal changes a decisive verdict are named as fragile (section 22). pooled:
    each way's rung -> pooled stability threshold (section 25's guard), beside `ways`."""
    trend = _both_ways(ways, pooled, rule, *args, **kwargs)
    if len(trend.rungs) < MIN_RUNGS:  # no trend to take a rung from
        return trend
    sizes = [s for s in sorted(ways[0]) if s not in trend.dropped]
    base = trend.at_bound.slope if trend.at_bound else math.nan
    left = []
    for size in sizes:
        t = _both_ways(
            [_without(w, size) for w in ways],
            None if pooled is None else [_without(p, size) for p in pooled],
            rule,
            *args,
            **kwargs,
        )
        slope = t.at_bound
        influence = (slope.slope if slope else math.nan) - base
        left.append(LeftOut(size, t.verdict, slope, influence, t.powers))
    # section 22's one definition: only a decisive verdict is fragile (some rung's removal
    # makes it anything else) or reversed (makes it the opposite); an inconclusive one is
    # neither, whatever a rung's removal would make it
    against = opposite.get(trend.verdict)
    reversed_by = tuple(lo.size for lo in left if against and lo.verdict == against)
    fragile = tuple(lo.size for lo in left if against and lo.verdict != trend.verdict)
    out = replace(trend, left_out=tuple(left), reversed_by=reversed_by, fragile=fragile)
    if reversed_by:
        out = replace(out, verdict=INCONCLUSIVE, why=ONE_RUNG_DECIDES)
    return out


def judged_trends(
    ways: Sequence[Mapping[int, Sequence[GridValue]]],
    name: str,
    seeds: int,
    best: Mapping[int, float] | None = None,
    pooled: Sequence[Mapping[int, GridValue]] | None = None,
) -> dict[str, Trend]:
    """The trends a ladder decides under section 17 from its per-seed stability thresholds both
    ways (ways: borderline runs stuck, trained; pooled: each way's pooled thresholds): H3 on
    depth, W1 on width with W2 (the threshold as a multiple of `best`, each rung's `off` best
    LR) beside it."""
    out = {name: robust(ways, decide, OPPOSITE, PREDICTIONS[name], seeds, pooled=pooled)}
    if best is not None:
        out["W2"] = robust(ways, carry, CARRY_OPPOSITE, best, seeds, pooled=pooled)
    return out


def _without(by_rung: Mapping, size: int) -> dict:
    return {k: v for k, v in by_rung.items() if k != size}


def _both_ways(ways, pooled, rule, *args, **kwargs) -> Trend:
    """The trend with the borderline runs stuck (ways[0]), its slope as recorded (ways[1])
    beside it where the two differ; inconclusive where their verdicts do."""
    pooled = pooled if pooled is not None else [None] * len(ways)
    trends = [rule(w, *args, pooled=p, **kwargs) for w, p in zip(ways, pooled)]
    other = trends[-1].at_bound
    first = trends[0]
    if len(trends) > 1 and not _same_slope(other, first.at_bound):
        first = replace(first, recorded=other)
    if any(t.verdict != trends[0].verdict for t in trends[1:]):
        return replace(first, verdict=INCONCLUSIVE, why=BORDERLINE_DECIDES)
    return first


def _same_slope(a: Slope | None, b: Slope | None) -> bool:
    if a is None or b is None:
        return a is b
    return bool(
        np.allclose([a.slope, a.lower, a.upper], [b.slope, b.lower, b.upper], equal_nan=True)
    )


def carry(
    per_rung: Mapping[int, Sequence[GridValue]],
    best: Mapping[int, float],
    seeds: int = 4,
    bound: float = CARRY_BOUND,
    pooled: Mapping[int, GridValue] | None = None,
) -> Trend:
    """W2 under v5: the threshold as a multiple of `off`'s best LR, rung values on log2 size;
    supported (carries) when the slope's 90% interval lies inside +-bound under both
    placements (TOST), not supported (moves) when it lies wholly outside under both, else
    inconclusive. `power` here is P(carries) when the true slope is 0."""
    rungs, dropped = rung_values(per_rung, best, pooled)
    sizes = [2**r.x for r in rungs]
    if len(rungs) < MIN_RUNGS:
        return Trend(
            INCONCLUSIVE, "too few rungs", 0.0, None, None, tuple(rungs), tuple(dropped), math.nan
        )
    x, floor = [r.x for r in rungs], seed_floor(rungs)
    a = floored_slope(x, [r.at_bound for r in rungs], floor)
    b = floored_slope(x, [r.beyond for r in rungs], floor)
    pw = equivalence_power(sizes, seeds, bound)
    if _censored_alike(rungs) or most_without_threshold(rungs):
        why = "censored alike" if _censored_alike(rungs) else NO_THRESHOLD
        return Trend(INCONCLUSIVE, why, 0.0, a, b, tuple(rungs), tuple(dropped), pw)
    verdict, why = both_placements(
        a,
        b,
        (lambda s: -bound < s.lower and s.upper < bound, CARRIES, "carries"),
        (lambda s: s.lower > bound or s.upper < -bound, MOVES, "moves"),
    )
    return Trend(verdict, why, 0.0, a, b, tuple(rungs), tuple(dropped), pw)


def equivalence_power(sizes, seeds: int, bound: float, draws: int = 20000, seed: int = 0) -> float:
    """P(the 90% interval of the slope lies inside +-bound) at a true slope of 0 (Monte Carlo
    over the t statistic's pieces, same sd model as `power`)."""
    x = np.log2(np.asarray(sizes, float))
    if len(x) < MIN_RUNGS:
        return math.nan
    sxx = float(((x - x.mean()) ** 2).sum())
    df = len(x) - 2
    sd = math.sqrt(RUNG_SD**2 + SEED_SD**2 / seeds)
    rng = np.random.default_rng(seed)
    b = rng.normal(0, sd / math.sqrt(sxx), draws)
    s = sd * np.sqrt(rng.chisquare(df, draws) / df) / math.sqrt(sxx)
    half = t_quantile(CONFIDENCE, df) * s
    return float(((b - half > -bound) & (b + half < bound)).mean())
