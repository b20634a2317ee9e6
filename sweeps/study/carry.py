"""What carries from a reference report to a new one, by a pre-registered set of predictions:
docs/STUDY.md section 16 (docs/cpu's synthetic corpus to real text, T1..T6) and section 20
(heads of 16 to heads of 32 and 64: T1..T5 and T7..T9, with windows taken from the reference it
names). Each quantity is computed on both reports' runs by section 13's rules and its outcome,
"carries", "differs" or "inconclusive", decided on the new side by the section's table
("carries if" / "counts against if"; otherwise inconclusive). The reference side is shown
beside it (tests/test_carry.py checks that docs/cpu's side is the one section 16 quotes).

The quantities, and how each is computed (one rung, the primary comparison off vs on):

- T1, the pooled stability threshold as a multiple of `off`'s best LR (stability.py via
  rung.judge_rung). Carries when its span (bracket (lo, hi]; "<= best" is (0, 1]) overlaps
  (x1.78, x10]; differs when it lies outside, or when there is no threshold below the top
  evidence LR ("none"). Unjudged (no evidence): inconclusive. The window's ends are grid LRs
  rounded to three digits (1.78 is 10^0.25), so an end that touches the window within
  GRID_TOLERANCE decades does not overlap it.
- T2, `off`'s failure mode at its first failing LR (stuck definition): per seed the run at the
  first failing LR at or above the seed's best LR (the top of rules.critical_lrs' bracket; the
  best LR itself when even it failed) is a stop (stability.STOPPED: the run diverged) or a
  finished-but-stuck run (stability.STUCK_ONLY). Carries when at least 3 of 4 seeds' first
  failure is stuck, differs when at least 2 of 4 are stops (for n seeds: ceil(3n/4) and
  ceil(n/2); the two cannot both hold); inconclusive otherwise or with fewer than 3 seeds.
- T3, H2a (stuck definition) as section 13 decides it (rung.judge_rung): supported carries, not
  supported differs. The value is the ratio of critical LRs on / off, 10^mean of the per-seed
  log10 ratios, with its 90% interval.
- T4, H2b over the base grid's LRs in [3.16e-4, 0.316] (rules.sensitivities, h2b_stats,
  paired_verdict at min_sensitivity): supported carries, not supported differs.
- T5, the low-LR gap off - on at LR 1e-3 with section 13's low-LR effect interval (the
  Bonferroni-adjusted one over the LRs below `off`'s best, the one section 16 quotes for
  docs/cpu: [0.442, 0.553]); when 1e-3 is not below `off`'s best LR, the plain 90% paired
  interval under the same failure model. Carries when the interval lies above 0 and overlaps
  [0.25, 1.0]; differs when its upper end is at or below 0.02, or it lies entirely outside
  [0.25, 1.0].
- T6, the gap's start-temperature share (off-warm - on) / (off - on) at LR 1e-3, paired by seed
  over the seeds all three arms finished, capped losses: the ratio of the two mean
  differences. The interval is Fieller's 90% interval for a ratio of two means of paired
  differences measured on the same seeds: the set of rho for which the per-seed values
  (off-warm - on) - rho (off - on) have a one-sample t interval containing 0 (t with n - 1
  df; each difference's variance floored at the precision floor squared, their covariance as
  measured). It is exact for normal per-seed differences and needs nothing else; it is bounded
  exactly when the gap is shown away from 0 (the denominator's one-sided 95% bound).
  Section 16's rule reads the ratio itself: under 1/3 carries, above 2/3 differs, between is
  inconclusive. Without a gap shown above 0 (off - on's one-sided 95% lower bound, the same
  t and floor) the ratio is no share of anything: inconclusive ("no gap"), whatever its point
  value.

Section 20 adds three, each `off` - `on` (positive: QK-norm finished lower):

- T7, the cost at `off`'s pooled best LR (rules.best_lr): the per-seed capped-loss differences
  there; T8, at each arm's own best LR (effect_curve.best_cost's pairing). Both compare the
  two reports' per-seed values by their *shift*, mean(new) - mean(reference) with Welch's 90%
  interval (`shift`): differs when it excludes 0, carries when it contains 0, inconclusive
  with fewer than 3 seeds on a side.
- T9, the harm window (section 17, judge.compare): carries when the new report has a harm
  window exactly when the reference has one, differs otherwise.

Section 21 (the precision carry: the same configs, seeds and batches in bfloat16 against
float32) adds two and reads T5, T7 and T8 its own way:

- T10, T11: `off`'s and `on`'s failure edge (stuck definition, stability.Edge: the geometric
  mean of the per-seed critical LRs with its 90% interval). Carries when the new interval
  overlaps the reference's widened by `edge_window` decades on each side; differs when it lies
  outside; inconclusive when either side has no interval (a censored seed).
- T5 at the prediction set's `gap_lr` (the grid's lowest LR there, 3.16e-3).
- T7, T8 *paired*: the two sweeps share seeds, init weights and batches, so the shift is the
  per-seed difference new - reference over the seeds both hold, with its paired 90% interval
  (`paired_shift`). Carries when that interval lies inside +-`negligible` nats (TOST: the shift
  is shown negligible); differs when it excludes 0 and reaches beyond +-`negligible`;
  inconclusive otherwise (neither shown).

Borderline fates (section 13): when the new report holds runs within the fate margin of their
cut, every outcome is computed with them all stuck and all trained; an outcome the two
disagree on is inconclusive ("borderline decides").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from sweeps.study import rules, stability
from sweeps.study.cells import STUCK, Cells, both_ways, build_cells
from sweeps.study.rung import Rung, judge_rung
from sweeps.study.stats import CONFIDENCE, Paired, paired, span, t_quantile

CARRIES, DIFFERS, INCONCLUSIVE = "carries", "differs", "inconclusive"
QUANTITIES = ("T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9", "T10", "T11")

# section 16's numbers (written from docs/cpu before any cpu-text run)
BASE_LRS = (3.16e-4, 1e-3, 3.16e-3, 1e-2, 3.16e-2, 0.1, 0.316, 1.0)  # docs/cpu's 8 half-decades
SENSITIVITY_RANGE = (3.16e-4, 0.316)
GAP_LR = 1e-3  # T5 and T6
# T1: multiples of off's best LR, docs/cpu's (x3.16, x5.62] widened by a quarter decade
T1_WINDOW = (1.78, 10.0)
GRID_TOLERANCE = 0.005  # decades: three-digit LRs lie within 0.0022 decades of the grid's points
T5_WINDOW = (0.25, 1.0)  # nats: within a factor 2 of docs/cpu's +0.498
T5_FLOOR = 0.02  # nats: a gap at or below this counts against
T6_CARRIES_BELOW, T6_DIFFERS_ABOVE = 1 / 3, 2 / 3
STUDY = rules.Study(delta=0.1, sensitivity_range=SENSITIVITY_RANGE, target_loss=None)


@dataclass(frozen=True)
class Predictions:
    """One pre-registered set of predictions: the STUDY.md section, the quantities it
    judges, T1's window (multiples of `off`'s best LR), T5's window (nats), the LRs T4's
    sensitivity is read over (with study.sensitivity_range) and the study's settings."""

    section: int
    quantities: tuple[str, ...]
    t1_window: tuple[float, float]
    t5_window: tuple[float, float]
    base_lrs: tuple[float, ...]
    study: rules.Study
    gap_lr: float = GAP_LR  # T5's LR (and T6's)
    paired: bool = False  # T7, T8: seeds paired across the two sweeps (section 21)
    negligible: float = math.nan  # T7, T8 paired: the equivalence bound (nats)
    edge_window: float = 0.25  # T10, T11: decades the reference's interval is widened by
    # T7, T8 paired: each one-sided test's level (section 24 looks a second time: 97%)
    cost_confidence: float = CONFIDENCE


SECTION_16 = Predictions(16, QUANTITIES[:6], T1_WINDOW, T5_WINDOW, BASE_LRS, STUDY)
# section 20, heads of 32 and 64 at width 64 against docs/cpu: T4 over the LRs both grids share
SECTION_20_WIDTH_64 = Predictions(
    20,
    ("T1", "T2", "T3", "T4", "T5", "T7", "T8", "T9"),
    T1_WINDOW,
    T5_WINDOW,
    (1e-3, 3.16e-3, 1e-2, 3.16e-2, 0.1, 0.316),
    rules.Study(delta=0.1, sensitivity_range=(1e-3, 0.316), target_loss=None),
)
# section 20, heads of 64 at width 128 against cpu-width's width 128: (x1, x1.78] and +0.326
# widened as section 16 widened docs/cpu's; its grid measures neither T3 nor T4
SECTION_20_WIDTH_128 = Predictions(
    20, ("T1", "T2", "T5", "T7", "T8", "T9"), (0.562, 3.16), (0.163, 0.652), (), STUDY
)


# section 21, bfloat16 against float32 at one rung of cpu-depth-matched (each its own
# reference): T1's window is the reference's bracket (x5.62, x10] at depths 2 and 4 widened by a
# quarter decade; T5 is read at the grid's lowest LR, 3.16e-3 (+0.143 at depth 2, +0.229 at
# depth 4 on the reference), its window a factor 2 around it; T3 and T4 (over the grid's
# quarter decades 3.16e-3 .. 0.1) carry when their verdict is the reference's
def _section_21(t5_reference: float) -> Predictions:
    return Predictions(
        21,
        ("T1", "T2", "T3", "T4", "T5", "T7", "T8", "T9", "T10", "T11"),
        (3.16, 17.8),
        (round(t5_reference / 2, 3), round(t5_reference * 2, 3)),
        (3.16e-3, 5.62e-3, 1e-2, 1.78e-2, 3.16e-2, 5.62e-2, 0.1),
        rules.Study(delta=0.1, sensitivity_range=(3.16e-3, 0.1), target_loss=None),
        gap_lr=3.16e-3,
        paired=True,
        negligible=0.1,  # the study's delta: the smallest effect it calls material
    )


SECTION_21_DEPTH_2 = _section_21(0.143)
SECTION_21_DEPTH_4 = _section_21(0.229)
# section 24, depth 2 on eight seeds: section 21's depth-2 predictions, T7 and T8's second look
# at 99% each side (the first, at 95%, spent nearly all of 5%)
SECTION_24 = replace(SECTION_21_DEPTH_2, section=24, cost_confidence=0.99)

# T2: the class of `off`'s run at its first failing LR
FIRST_STUCK, FIRST_STOPPED, NO_FAILURE = "stuck", "stopped", "no failure"

# reason codes (figures/carry.py words them)
OVERLAPS, OUTSIDE, NO_THRESHOLD, UNJUDGED = "overlaps", "outside", "no threshold", "unjudged"
MOSTLY_STUCK, STOPS, MIXED = "mostly stuck", "stops", "mixed"
TOO_FEW_SEEDS = "too few seeds"
VERDICT = "verdict"  # T3, T4: the hypothesis's own verdict decides
SAME_VERDICT, OTHER_VERDICT = "the reference's verdict", "not the reference's verdict"
ABOVE_ZERO_IN_WINDOW, AT_OR_BELOW_FLOOR, OUT_OF_WINDOW, STRADDLES = (
    "above 0, overlaps the window",
    "at or below the floor",
    "outside the window",
    "overlaps the window, not above 0",
)
NOT_MEASURED, NO_INTERVAL = "not measured", "no interval"
NEGLIGIBLE, NOT_SHOWN = "negligible", "neither shown"  # T7, T8 paired (section 21)
EDGE_OVERLAPS, EDGE_OUTSIDE, CENSORED = "edge overlaps", "edge outside", "censored"
UNDER, OVER, BETWEEN, NO_GAP = "under 1/3", "above 2/3", "between 1/3 and 2/3", "no gap"
SAME_HARM, HARM_NEW, HARM_GONE = "harm window as the reference", "a harm window", "no harm window"
BORDERLINE_DECIDES = rules.BORDERLINE_DECIDES  # the reason every rule of the study shares


@dataclass(frozen=True)
class Side:
    """One report's value of a quantity. value: T1 the threshold as a multiple of `off`'s best
    LR (interpolated; NaN unjudged), T2 the seeds whose first failure is stuck, T3 the ratio
    of critical LRs on / off, T4 S off - S on (nats), T5 off - on at 1e-3 (nats), T6 the share.
    interval: T1 the span (lo, hi] as multiples (inf: censored above), T3..T6 the interval
    the rule reads (None: none). verdict: T1 the threshold's kind ("" bracketed, below, none,
    unjudged), T3 and T4 the hypothesis's verdict. per_seed: T2 each seed's first failure.
    parts: named numbers behind the value. T7, T8: value the mean off - on, interval its own
    paired 90% interval, values the per-seed differences; T9: value the number of harm
    windows, interval the first one's LRs."""

    value: float = math.nan
    interval: tuple[float, float] | None = None
    verdict: str = ""
    per_seed: tuple[str, ...] = ()
    parts: tuple[tuple[str, float], ...] = ()
    values: tuple[float, ...] = ()  # T7, T8: the per-seed values the shift compares
    seeds: tuple[int, ...] = ()  # T7, T8: whose values they are (a paired shift matches them)

    def part(self, name: str) -> float:
        return dict(self.parts).get(name, math.nan)


@dataclass(frozen=True)
class Carry:
    """One of section 16's quantities on both sides and its outcome (the new report's side
    judged by the rule), with the reason code the outcome rests on."""

    quantity: str
    reference: Side
    new: Side
    outcome: str
    reason: str


# -- the run table -----------------------------------------------------------------------------
def cells_of(rows: Iterable[Mapping], rung: str = "n_layer") -> Cells:
    """One rung's cells from a report's run table (records of runs.parquet): each run's stuck
    cut is its baseline rule's recorded loss (bigram unless the row names another), as
    the committed reports were judged from. A table of several rungs is refused."""
    out = []
    for r in rows:
        r = dict(r)
        r["baseline_loss"] = rules.recorded_baseline(r.get("baseline") or "bigram", r)
        out.append(r)
    by_rung = build_cells(out, rung=rung)
    if len(by_rung) != 1:
        raise ValueError(f"a run table of one {rung} expected, found {sorted(by_rung) or 'none'}")
    return next(iter(by_rung.values()))


# -- each quantity on one side -----------------------------------------------------------------
def t1_side(r: Rung) -> Side:
    v, best = r.threshold.pooled, r.best_lr
    if best is None or v.kind == "unjudged":
        return Side(verdict="unjudged", parts=(("best_lr", best or math.nan),))
    lo, hi, _ = span(v)
    parts = (("best_lr", best), ("threshold_lo", lo), ("threshold_hi", hi))
    value = v.value / best if v.kind in ("", "below") else math.nan
    return Side(value, (lo / best, hi / best), v.kind, (), parts)


def first_failures(cells: Cells, arm: str = "off") -> tuple[str, ...]:
    """Per seed: the class of the arm's run at its first failing LR under the stuck
    definition (the top of rules.critical_lrs' bracket; the seed's best LR when even that run
    failed): FIRST_STOPPED when the run diverged, FIRST_STUCK when it finished worse than its
    cut; NO_FAILURE when the seed does not fail in the grid."""
    if not cells.has(arm):
        return ()
    a = cells.arm(arm)
    stopped = cells.diverged if cells.diverged is not None else np.zeros_like(cells.failing)
    out = []
    for k, crit in enumerate(rules.critical_lrs(cells, arm, STUCK).values()):
        if crit.kind == "":
            j = cells.lrs.index(crit.bracket[1])
        elif crit.kind == "below":
            loss = np.where(cells.finished()[a, :, k], cells.loss[a, :, k], np.inf)
            j = int(np.argmin(loss))
        else:
            out.append(NO_FAILURE)
            continue
        out.append(FIRST_STOPPED if stopped[a, j, k] else FIRST_STUCK)
    return tuple(out)


def t2_side(cells: Cells, r: Rung) -> Side:
    seeds = first_failures(cells)
    parts: list[tuple[str, float]] = []
    for definition in ("stuck", "diverged"):
        e = r.edges.get("off", {}).get(definition)
        if e is not None:
            parts += [(f"{definition}_edge", e.value), (f"{definition}_censored", e.censored)]
            beyond = [v.value for v in e.per_seed if not v.inside]
            parts.append((f"{definition}_beyond", beyond[0] if beyond else math.nan))
    parts += [("stopped", seeds.count(FIRST_STOPPED)), ("seeds", len(seeds))]
    return Side(float(seeds.count(FIRST_STUCK)), None, "", seeds, tuple(parts))


def t3_side(r: Rung) -> Side:
    p = r.h2a_by_definition[rules.PRIMARY_FAILURE].stats
    interval = (10**p.lower, 10**p.upper) if math.isfinite(p.lower) else None
    return Side(10**p.mean if p.n else math.nan, interval, r.h2a, (), (("seeds", p.n),))


def t4_side(r: Rung) -> Side:
    p = r.h2b.stats
    return Side(p.mean, _interval(p), r.h2b.verdict, (), (("seeds", p.n), ("lrs", len(r.h2b.lrs))))


def t5_side(r: Rung, study: rules.Study, gap_lr: float = GAP_LR) -> Side:
    at = [i for i, lr in enumerate(r.low.lrs) if math.isclose(lr, gap_lr)]
    if at:
        i = at[0]
        st = r.low.stats[i]
        parts = (("seeds", st.n), ("family", len(r.low.lrs)))
        return Side(st.mean, (r.low.lower[i], r.low.upper[i]), r.low.verdict, (), parts)
    p = r.judgement.pairs
    j = [i for i, lr in enumerate(p.lrs) if math.isclose(lr, gap_lr)]
    if r.judgement.fates is None or not j:
        return Side(verdict=NOT_MEASURED)
    d = np.asarray(p.d, float).reshape(len(p.lrs), -1)
    _, used, _ = stability.pooled_lr_stats(d, *r.judgement.fates, study.precision)
    st = paired(np.where(used[j[0]], d[j[0]], np.nan), study.precision)
    return Side(st.mean, _interval(st), "", (), (("seeds", st.n), ("family", 1)))


def t6_side(cells: Cells, warm: Cells | None, study: rules.Study) -> Side:
    """(off-warm - on) / (off - on) at 1e-3 over the seeds with all three runs finished; warm:
    the cells holding off-warm (the same report's, or a control report's)."""
    comparison, control = study.primary_comparison, "off-warm"
    warm = warm if warm is not None and warm.has(control) else cells
    off, on = comparison
    w, o, n = (_at(warm, control), _at(cells, off), _at(cells, on))
    seeds = sorted(set(w) & set(o) & set(n))
    if len(seeds) < rules.MIN_SEEDS:
        return Side(verdict=NOT_MEASURED, parts=(("seeds", len(seeds)),))
    a = np.array([w[s] - n[s] for s in seeds])
    b = np.array([o[s] - n[s] for s in seeds])
    ratio = float(a.mean() / b.mean()) if b.mean() != 0 else math.nan
    interval = fieller(a, b, study.precision)
    gap = paired(b, study.precision)
    parts = (
        ("numerator", float(a.mean())),
        ("denominator", float(b.mean())),
        ("denominator_lower", gap.lower),
        ("seeds", len(seeds)),
    )
    return Side(ratio, interval, "", (), parts)


def _seed_side(d, floor: float, parts, seeds=()) -> Side:
    """A cost side from per-seed differences (NaN: no pair); seeds: whose they are."""
    d = np.asarray(d, float)
    st = paired(d, floor)
    ok = np.isfinite(d)
    values = tuple(float(x) for x in d[ok])
    kept = tuple(int(s) for s, k in zip(seeds, ok) if k)
    return Side(st.mean if st.n else math.nan, _interval(st), "", (), parts, values, kept)


def seed_costs(cells: Cells, study: rules.Study, off_lr: float, on_lr: float) -> np.ndarray:
    """The per-seed capped-loss differences off - on, `off` at off_lr and `on` at on_lr (NaN
    where a seed has no pair): what T7 and T8 average, and a cost at any LR both arms hold."""
    off, on = study.primary_comparison
    return (
        cells.loss[cells.arm(off), cells.lrs.index(off_lr)]
        - cells.loss[cells.arm(on), cells.lrs.index(on_lr)]
    )


def t7_side(cells: Cells, study: rules.Study) -> Side:
    off, on = study.primary_comparison
    best = rules.best_lr(cells, off)
    if best is None or not cells.has(on):
        return Side(verdict=NOT_MEASURED)
    d = seed_costs(cells, study, best, best)
    return _seed_side(d, study.precision, (("best_lr", best),), cells.seeds)


def t8_side(cells: Cells, study: rules.Study) -> Side:
    off, on = study.primary_comparison
    if not cells.has(on):
        return Side(verdict=NOT_MEASURED)
    b, t = rules.best_lr(cells, off), rules.best_lr(cells, on)
    if b is None or t is None:
        return Side(verdict=NOT_MEASURED)
    d = seed_costs(cells, study, b, t)
    return _seed_side(d, study.precision, (("off_lr", b), ("on_lr", t)), cells.seeds)


def t9_side(r: Rung) -> Side:
    harm = r.judgement.harm
    return Side(float(len(harm)), harm[0] if harm else None, "", (), ())


def edge_side(r: Rung, arm: str) -> Side:
    """T10, T11: the arm's failure edge (stuck definition) with its 90% interval."""
    e = r.edges.get(arm, {}).get("stuck")
    if e is None:
        return Side(verdict=NOT_MEASURED)
    interval = (e.lower, e.upper) if math.isfinite(e.lower) else None
    parts = (("censored", e.censored), ("seeds", len(e.per_seed)))
    return Side(e.value, interval, "", (), parts)


def _at(cells: Cells, arm: str) -> dict[int, float]:
    """{seed: capped loss} of the arm's finished runs at LR 1e-3."""
    j = [i for i, lr in enumerate(cells.lrs) if math.isclose(lr, GAP_LR)]
    if not cells.has(arm) or not j:
        return {}
    a = cells.arm(arm)
    row = cells.loss[a, j[0]]
    return {int(s): float(x) for s, x in zip(cells.seeds, row) if math.isfinite(x)}


def fieller(a, b, floor: float = 0.0) -> tuple[float, float] | None:
    """Fieller's two-sided 90% interval for mean(a) / mean(b), a and b paired by seed: the rho
    where mean(a - rho b)^2 <= t^2 var(a - rho b) / n (t: one-sided 95%, n - 1 df). Each
    variance is floored at floor^2 (a difference is never known better than the precision
    floor); the covariance is the sample one (the floored matrix stays positive
    semi-definite). None when the set is unbounded: mean(b) not shown away from 0."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    n = len(a)
    if n < rules.MIN_SEEDS or n != len(b):
        return None
    saa = max(float(np.var(a, ddof=1)), floor**2)
    sbb = max(float(np.var(b, ddof=1)), floor**2)
    sab = float(np.cov(a, b, ddof=1)[0, 1])
    q = t_quantile(CONFIDENCE, n - 1) ** 2 / n
    ma, mb = float(a.mean()), float(b.mean())
    A = mb**2 - q * sbb
    B = ma * mb - q * sab
    C = ma**2 - q * saa
    if A <= 0:
        return None
    root = math.sqrt(max(B * B - A * C, 0.0))
    return (B - root) / A, (B + root) / A


@dataclass(frozen=True)
class Shift:
    """new - reference of two independent samples of per-seed values (section 20's cost
    quantities): the difference of means with Welch's two-sided 90% interval (one-sided 95%
    bounds, Welch-Satterthwaite df, each variance floored at the precision floor squared);
    NaN bounds with fewer than MIN_SEEDS values on a side."""

    mean: float
    lower: float
    upper: float
    df: float
    n_reference: int
    n_new: int


def shift(reference, new, floor: float = 0.0) -> Shift:
    """Welch's interval for mean(new) - mean(reference); NaN values are left out. The seeds of
    two sweeps are not paired (another model's init and another arm's fate), so the two
    samples are treated as independent; a positive correlation between them (the same data
    order per seed) only widens the interval beyond what it needs."""
    a = np.asarray(reference, float)
    b = np.asarray(new, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    na, nb = len(a), len(b)
    if min(na, nb) < rules.MIN_SEEDS:
        m = float(b.mean() - a.mean()) if na and nb else math.nan
        return Shift(m, math.nan, math.nan, math.nan, na, nb)
    va = max(float(np.var(a, ddof=1)), floor**2) / na
    vb = max(float(np.var(b, ddof=1)), floor**2) / nb
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    half = t_quantile(CONFIDENCE, df) * math.sqrt(va + vb)
    m = float(b.mean() - a.mean())
    return Shift(m, m - half, m + half, df, na, nb)


def seed_differences(reference: Side, new: Side) -> list[float]:
    """new - reference per seed, over the seeds both sides hold (in seed order)."""
    ref = dict(zip(reference.seeds, reference.values))
    now = dict(zip(new.seeds, new.values))
    return [now[k] - ref[k] for k in sorted(set(ref) & set(now))]


def paired_shift(
    reference: Side, new: Side, floor: float = 0.0, confidence: float = CONFIDENCE
) -> Shift:
    """new - reference per seed over the seeds both sides hold (section 21: the same seeds,
    init weights and batches on both sides), with its paired t interval, each side at the
    one-sided `confidence` (section 21: 95%, the two-sided 90% interval; section 24's second
    look: 97%), sd floored at the precision floor; NaN bounds with fewer than MIN_SEEDS
    common seeds."""
    d = seed_differences(reference, new)
    p = paired(d, floor, confidence)
    if len(d) < rules.MIN_SEEDS:
        return Shift(p.mean, math.nan, math.nan, math.nan, len(reference.seeds), len(new.seeds))
    return Shift(p.mean, p.lower, p.upper, len(d) - 1, len(reference.seeds), len(new.seeds))


def pair_sd(reference: Side, new: Side) -> float:
    """The sd over common seeds of new - reference: what section 21's power rests on (0.03:
    the precisions' runs stay close; 0.09: as unrelated as two seeds)."""
    d = seed_differences(reference, new)
    return float(np.std(d, ddof=1)) if len(d) >= 2 else math.nan


def decide_paired_shift(s: Shift, negligible: float) -> tuple[str, str]:
    """Section 21's rule for a cost quantity: carries when the paired 90% interval lies
    inside +-negligible (shown negligible), differs when it excludes 0 (and so, being outside
    that, reaches beyond +-negligible), inconclusive otherwise: section 20's rule with its
    "contains 0" no longer enough to carry."""
    if math.isfinite(s.lower) and -negligible < s.lower and s.upper < negligible:
        return CARRIES, NEGLIGIBLE
    outcome, reason = decide_shift(s)
    return (INCONCLUSIVE, NOT_SHOWN) if outcome == CARRIES else (outcome, reason)


SMALLER, LARGER, CONTAINS_ZERO = "shifted up", "shifted down", "contains 0"


def decide_shift(s: Shift) -> tuple[str, str]:
    """Section 20's rule for a cost quantity (off - on, so a shift up means QK-norm costs less
    or helps more): differs when Welch's 90% interval of the shift excludes 0, carries when it
    contains 0, inconclusive with too few seeds on a side."""
    if not math.isfinite(s.lower):
        return INCONCLUSIVE, TOO_FEW_SEEDS
    if s.lower > 0:
        return DIFFERS, SMALLER
    if s.upper < 0:
        return DIFFERS, LARGER
    return CARRIES, CONTAINS_ZERO


def _interval(p: Paired) -> tuple[float, float] | None:
    return (p.lower, p.upper) if math.isfinite(p.lower) else None


def sides(
    cells: Cells, predictions: Predictions = SECTION_16, warm: Cells | None = None
) -> dict[str, Side]:
    """Every quantity of a prediction set on one report's cells (warm: where off-warm is,
    when not in these cells)."""
    study = predictions.study
    r = judge_rung(cells, study, base_lrs=predictions.base_lrs)
    make = {
        "T1": lambda: t1_side(r),
        "T2": lambda: t2_side(cells, r),
        "T3": lambda: t3_side(r),
        "T4": lambda: t4_side(r),
        "T5": lambda: t5_side(r, study, predictions.gap_lr),
        "T6": lambda: t6_side(cells, warm, study),
        "T7": lambda: t7_side(cells, study),
        "T8": lambda: t8_side(cells, study),
        "T9": lambda: t9_side(r),
        "T10": lambda: edge_side(r, "off"),
        "T11": lambda: edge_side(r, study.primary_comparison[1]),
    }
    return {q: make[q]() for q in predictions.quantities}


# -- the rules of sections 16 and 20 -----------------------------------------------------------
def decide(
    quantity: str,
    side: Side,
    reference: Side | None = None,
    predictions: Predictions = SECTION_16,
) -> tuple[str, str]:
    """(outcome, reason) of one quantity of the new report by its section's table (T7..T9
    read the reference side too)."""
    return _RULES[quantity](side, reference, predictions)


def _t1(s: Side, _ref, p: Predictions) -> tuple[str, str]:
    if s.verdict == "unjudged":
        return INCONCLUSIVE, UNJUDGED
    if s.verdict == "none":
        return DIFFERS, NO_THRESHOLD
    lo, hi = s.interval
    low, high = (math.log10(x) for x in p.t1_window)
    below_top = lo <= 0 or math.log10(lo) < high - GRID_TOLERANCE
    above_bottom = math.log10(hi) > low + GRID_TOLERANCE
    return (CARRIES, OVERLAPS) if below_top and above_bottom else (DIFFERS, OUTSIDE)


def _t2(s: Side, _ref, _p) -> tuple[str, str]:
    n = len(s.per_seed)
    if n < rules.MIN_SEEDS:
        return INCONCLUSIVE, TOO_FEW_SEEDS
    if s.per_seed.count(FIRST_STUCK) >= math.ceil(3 * n / 4):
        return CARRIES, MOSTLY_STUCK
    if s.per_seed.count(FIRST_STOPPED) >= math.ceil(n / 2):
        return DIFFERS, STOPS
    return INCONCLUSIVE, MIXED


def _verdict(s: Side, ref: Side | None, p: Predictions) -> tuple[str, str]:
    if p.paired and ref is not None:  # section 21: the reference's verdict, whichever it is
        if s.verdict == ref.verdict:
            return CARRIES, SAME_VERDICT
        decisive = {rules.SUPPORTED, rules.NOT_SUPPORTED}
        if {s.verdict, ref.verdict} == decisive:
            return DIFFERS, OTHER_VERDICT
        return INCONCLUSIVE, OTHER_VERDICT
    if s.verdict == rules.SUPPORTED:
        return CARRIES, VERDICT
    if s.verdict == rules.NOT_SUPPORTED:
        return DIFFERS, VERDICT
    return INCONCLUSIVE, VERDICT


def _t5(s: Side, _ref, p: Predictions) -> tuple[str, str]:
    if s.interval is None:
        return INCONCLUSIVE, NO_INTERVAL if math.isfinite(s.value) else NOT_MEASURED
    lo, hi = s.interval
    w_lo, w_hi = p.t5_window
    if hi <= T5_FLOOR:
        return DIFFERS, AT_OR_BELOW_FLOOR
    if hi < w_lo or lo > w_hi:
        return DIFFERS, OUT_OF_WINDOW
    if lo > 0:
        return CARRIES, ABOVE_ZERO_IN_WINDOW
    return INCONCLUSIVE, STRADDLES


def _t6(s: Side, _ref, _p) -> tuple[str, str]:
    if s.verdict == NOT_MEASURED:
        return INCONCLUSIVE, NOT_MEASURED
    if s.interval is None or not math.isfinite(s.value) or not s.part("denominator_lower") > 0:
        return INCONCLUSIVE, NO_GAP
    if s.value < T6_CARRIES_BELOW:
        return CARRIES, UNDER
    if s.value > T6_DIFFERS_ABOVE:
        return DIFFERS, OVER
    return INCONCLUSIVE, BETWEEN


def _cost(s: Side, ref: Side | None, p: Predictions) -> tuple[str, str]:
    if ref is None or s.verdict == NOT_MEASURED or ref.verdict == NOT_MEASURED:
        return INCONCLUSIVE, NOT_MEASURED
    if p.paired:
        moved = paired_shift(ref, s, p.study.precision, p.cost_confidence)
        return decide_paired_shift(moved, p.negligible)
    return decide_shift(shift(ref.values, s.values, p.study.precision))


def _edge(s: Side, ref: Side | None, p: Predictions) -> tuple[str, str]:
    if ref is None or s.verdict == NOT_MEASURED or ref.verdict == NOT_MEASURED:
        return INCONCLUSIVE, NOT_MEASURED
    if s.interval is None or ref.interval is None:
        return INCONCLUSIVE, CENSORED
    widen = 10**p.edge_window
    lo, hi = ref.interval[0] / widen, ref.interval[1] * widen
    if s.interval[1] < lo or s.interval[0] > hi:
        return DIFFERS, EDGE_OUTSIDE
    return CARRIES, EDGE_OVERLAPS


def _t9(s: Side, ref: Side | None, _p) -> tuple[str, str]:
    if ref is None:
        return INCONCLUSIVE, NOT_MEASURED
    if (s.value > 0) == (ref.value > 0):
        return CARRIES, SAME_HARM
    return DIFFERS, HARM_NEW if s.value > 0 else HARM_GONE


_RULES = {
    "T1": _t1,
    "T2": _t2,
    "T3": _verdict,
    "T4": _verdict,
    "T5": _t5,
    "T6": _t6,
    "T7": _cost,
    "T8": _cost,
    "T9": _t9,
    "T10": _edge,
    "T11": _edge,
}


@dataclass(frozen=True)
class LossShift:
    """Section 21's descriptive table: at one (arm, LR), the new sweep's capped loss minus the
    reference's, paired by seed (the same init and batches), with its paired 90% interval."""

    arm: str
    lr: float
    n: int
    mean: float
    lower: float
    upper: float


def loss_shifts(reference: Cells, new: Cells, floor: float = 0.0) -> tuple[LossShift, ...]:
    """new - reference at every (arm, LR) both hold, over the seeds both finished (no verdict
    rests on it: it shows where the precision moves the loss)."""
    out = []
    for arm in (a for a in new.arms if reference.has(a)):
        for lr in (x for x in new.lrs if x in reference.lrs):
            seeds = [s for s in new.seeds if s in reference.seeds]
            d = [
                new.loss[new.arm(arm), new.lrs.index(lr), new.seeds.index(s)]
                - reference.loss[
                    reference.arm(arm), reference.lrs.index(lr), reference.seeds.index(s)
                ]
                for s in seeds
            ]
            p = paired(d, floor)
            out.append(LossShift(arm, lr, p.n, p.mean, p.lower, p.upper))
    return tuple(out)


# -- both sides --------------------------------------------------------------------------------
def carry(
    reference: Iterable[Mapping],
    new: Iterable[Mapping],
    reference_control: Iterable[Mapping] | None = None,
    predictions: Predictions = SECTION_16,
) -> tuple[Carry, ...]:
    """A prediction set's table: each quantity on the reference report's runs
    (reference_control: a report holding the reference's off-warm, e.g. docs/cpu-control) and
    on the new report's (off, on and off-warm in one table), judged on the new side. Run
    tables as records."""
    ref_cells = cells_of(reference)
    warm = cells_of(reference_control) if reference_control is not None else None
    ref = sides(ref_cells, predictions, warm)
    cells = cells_of(new)
    now = sides(cells, predictions)
    ways = both_ways(cells, predictions.study.fate_margin, lambda c: sides(c, predictions))
    out = []
    for q in predictions.quantities:
        outcome, reason = decide(q, now[q], ref[q], predictions)
        if (
            ways is not None
            and len({decide(q, w[q], ref[q], predictions)[0] for w in ways} | {outcome}) > 1
        ):
            outcome, reason = INCONCLUSIVE, BORDERLINE_DECIDES
        out.append(Carry(q, ref[q], now[q], outcome, reason))
    return tuple(out)


__all__ = [
    "CARRIES",
    "DIFFERS",
    "INCONCLUSIVE",
    "QUANTITIES",
    "Side",
    "Carry",
    "Predictions",
    "SECTION_16",
    "SECTION_20_WIDTH_64",
    "SECTION_20_WIDTH_128",
    "SECTION_21_DEPTH_2",
    "SECTION_21_DEPTH_4",
    "SECTION_24",
    "Shift",
    "carry",
    "decide_shift",
    "decide_paired_shift",
    "paired_shift",
    "LossShift",
    "loss_shifts",
    "shift",
    "seed_costs",
    "cells_of",
    "sides",
    "decide",
    "fieller",
    "first_failures",
]
