"""The study's rules applied to a sweep's runs, in one place for the runner (refinement) and
the report (figures/): the pre-registration as a `Study`, each run's outcome class, capped
loss and failure under each definition, the (arm, LR, seed) table of one depth, paired
differences with their common ceiling, the necessity rule with a leave-one-run-out check,
the critical LRs, the brackets refinement bisects, and the decisions of H1, H2a and H2b
(docs/STUDY.md sections 3-6).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from sweeps.study.cells import (
    DEGRADED,
    DIVERGED,
    FAILURE_DEFINITIONS,
    PRIMARY_FAILURE,
    STUCK,
    Cells,
    build_cells,
    effective_loss,
    fails,
    is_stuck,
    outcome_class,
    plateau_cut,
    recorded_baseline,
)
from sweeps.study.stability import StabilityThreshold
from sweeps.study.stats import (
    NONE,
    GridValue,
    Necessity,
    Paired,
    critical_lr,
    equivalent,
    paired,
    quantization_sd,
    sensitivity,
)

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not supported", "inconclusive"
# the reason of any verdict the borderline runs' fates decide: counted failed and counted
# trained (docs/STUDY.md section 13), they disagree
BORDERLINE_DECIDES = "borderline decides"
MIN_SEEDS = 3  # every rule needs 3 paired seeds (docs/STUDY.md section 2)
STUDY_SEEDS = 4  # the seed count the study's rules are proven for (docs/STUDY.md section 7)
# Below this many training tokens per parameter a run's "failure" may be only a run that has not
# yet learned (not yet below the bigram baseline): the plan and the report warn (STUDY.md 3).
MIN_TOKENS_PER_PARAM = 5.0
RESOLUTION_SLACK = 1.01


class Comparison(NamedTuple):
    """A paired comparison, baseline minus treatment; "a vs b" is only its display key."""

    baseline: str
    treatment: str

    @property
    def key(self) -> str:
        return f"{self.baseline} vs {self.treatment}"


@dataclass(frozen=True)
class Study:
    """[study] of a spec (docs/STUDY.md section 6), as the runner and the report use it."""

    delta: float
    sensitivity_range: tuple[float, float]
    target_loss: float | None
    reference: str = "off"
    primary: str = "on"
    start_control: str | None = None
    comparisons: tuple[Comparison, ...] = ()
    min_effect: float = 0.02
    negligible: float = 0.05
    min_sensitivity: float = 0.05
    precision: float = 0.01  # the floor of a paired sd, nats (STUDY.md section 4)
    # v5 (STUDY.md section 13): a seed's pair is evidence of necessity above m + seed_margin;
    # a run within fate_margin of its stuck cut is borderline (its fate shown both ways).
    # [study] fields (section 17); to_dict records them only where a spec sets other values,
    # so every record written before them stays as it was
    seed_margin: float = 0.1
    fate_margin: float = 0.01
    # section 22: rungs (depths, or widths) the spec trains beside the ladder but sets apart
    # from its trend verdict; the report gives the trend with them added beside it
    set_apart: tuple[int, ...] = ()
    # section 23: above the reference arm's best LR a run that finished less than this many
    # nats under its stuck cut counts as stuck (a plateau); 0: the cut as recorded
    plateau_margin: float = 0.0

    @property
    def primary_comparison(self) -> Comparison:
        return Comparison(self.reference, self.primary)

    @property
    def control_comparison(self) -> Comparison | None:
        return Comparison(self.start_control, self.primary) if self.start_control else None

    def all_comparisons(self) -> list[Comparison]:
        """The primary comparison first, then the start control's, then the listed ones."""
        out = [self.primary_comparison]
        if self.start_control:
            out.append(self.control_comparison)
        return list(dict.fromkeys(out + [Comparison(*c) for c in self.comparisons]))

    def to_dict(self) -> dict:
        return {
            "reference": self.reference,
            "primary": self.primary,
            "start_control": self.start_control,
            "comparisons": [list(c) for c in self.comparisons],
            "delta": self.delta,
            "sensitivity_range": list(self.sensitivity_range),
            "min_effect": self.min_effect,
            "negligible": self.negligible,
            "min_sensitivity": self.min_sensitivity,
            "precision": self.precision,
            "target_loss": self.target_loss,
            **{
                k: getattr(self, k)
                for k in ("seed_margin", "fate_margin", "plateau_margin")
                if getattr(self, k) != type(self).__dataclass_fields__[k].default
            },
            **({"set_apart": list(self.set_apart)} if self.set_apart else {}),
        }

    @classmethod
    def from_dict(cls, raw: dict | None, lrs: list[float]) -> Study:
        """The study a plan recorded (spec.to_dict), defaults for what it lacks: an old plan,
        or none (then sensitivity over the whole grid, delta 0.1)."""
        raw = {k: v for k, v in (raw or {}).items() if v is not None}
        known = {f for f in cls.__dataclass_fields__}
        raw = {k: v for k, v in raw.items() if k in known}
        raw.setdefault("delta", 0.1)
        raw.setdefault("sensitivity_range", [min(lrs), max(lrs)] if lrs else [0.0, 0.0])
        raw.setdefault("target_loss", None)
        raw["sensitivity_range"] = tuple(raw["sensitivity_range"])
        raw["comparisons"] = tuple(Comparison(*c) for c in raw.get("comparisons", ()))
        raw["set_apart"] = tuple(int(x) for x in raw.get("set_apart", ()))
        return cls(**raw)


def round_lr(lr: float) -> float:
    """Three significant digits: readable run ids, and the same value however it is reached."""
    return float(f"{lr:.3g}")


# -- paired differences ------------------------------------------------------------------------
@dataclass(frozen=True)
class Pairs:
    """Baseline minus treatment at the LRs both arms ran: d [LR, seed] (NaN: no pair), which
    run of each pair failed (primary definition) [LR, seed], the common ceiling [LR] (every
    finished run of both arms failed), and the two runs behind each difference."""

    comparison: Comparison
    lrs: list[float]
    seeds: list[int]
    d: np.ndarray
    ceiling: np.ndarray
    fail_b: np.ndarray
    fail_t: np.ndarray
    runs: np.ndarray  # object [LR, seed, 2]: (baseline run id, treatment run id)


def pairs(cells: Cells, comparison: Comparison) -> Pairs:
    b, t = comparison
    if not (cells.has(b) and cells.has(t)):
        return _no_pairs(comparison, list(cells.seeds))
    ib, it = cells.arm(b), cells.arm(t)
    fin = cells.finished()
    shared = [j for j in range(len(cells.lrs)) if fin[ib, j].any() and fin[it, j].any()]
    if not shared:
        return _no_pairs(comparison, list(cells.seeds))
    d = cells.loss[ib, shared] - cells.loss[it, shared]
    both = fin[[ib, it]][:, shared]  # [2, LR, seed]
    fails = cells.failing[[ib, it]][:, shared] & both
    ceiling = ((fails | ~both).all(axis=(0, 2))) & both.any(axis=(0, 2))
    runs = np.stack([cells.run_ids[ib, shared], cells.run_ids[it, shared]], axis=-1)
    return Pairs(
        comparison,
        [cells.lrs[j] for j in shared],
        list(cells.seeds),
        d,
        ceiling,
        fails[0],
        fails[1],
        runs,
    )


def _no_pairs(comparison: Comparison, seeds: list[int]) -> Pairs:
    n = len(seeds)
    empty = np.zeros((0, n), bool)
    return Pairs(
        comparison,
        [],
        seeds,
        np.zeros((0, n)),
        np.zeros(0, bool),
        empty,
        empty,
        np.zeros((0, n, 2), dtype=object),
    )


@dataclass(frozen=True)
class Judgement:
    """A comparison at one rung as the rulebook judged it (sweeps.study.judge.compare): its
    pairs, the per-LR statistics with the stability threshold (a Necessity), the runs whose
    removal alone moves the threshold (leave-one-run-out): (run id, threshold without it), the
    baseline arm's best LR, each judged LR's effect-curve mark (effect_curve.HARMED, HELPED, 0)
    and the harmed and helped ranges of LRs; the stability threshold's search from the baseline
    arm's best LR (stability.StabilityThreshold) and each arm's fate classes [LR, seed] at the
    pairs' LRs (None without any)."""

    pairs: Pairs
    necessity: Necessity
    influence: list[tuple[str, GridValue]]
    best_lr: float | None = None
    marks: list[int] = field(default_factory=list)
    harm: tuple[tuple[float, float], ...] = ()
    help: tuple[tuple[float, float], ...] = ()
    search: StabilityThreshold | None = None
    partial_ceiling: tuple[bool, ...] = ()  # per LR of the pairs: not judged, a partial ceiling
    fates: tuple[np.ndarray, np.ndarray] | None = None


class LRCall(NamedTuple):
    """What the necessity rule said at one LR of a comparison: judged (not a ceiling, enough
    pairs), necessary (lower bound > m), equivalent (TOST at +-negligible), and the paired
    statistics over the pairs it rested on (None where not judged)."""

    lr: float
    judged: bool
    necessary: bool
    equivalent: bool
    stat: Paired | None


def lr_calls(judgement: Judgement, study: Study) -> list[LRCall]:
    """Every LR both arms ran, in order, with the rule's call there."""
    n = judgement.necessity
    at = {lr: k for k, lr in enumerate(n.lrs)}
    out = []
    for lr in judgement.pairs.lrs:
        k = at.get(lr)
        stat = n.stats[k] if k is not None else None
        out.append(
            LRCall(
                lr,
                stat is not None,
                bool(k is not None and n.necessary[k]),
                bool(stat is not None and negligible(stat, study.negligible)),
                stat,
            )
        )
    return out


# -- stability ---------------------------------------------------------------------------------
def failed_under(cells: Cells, arm: str, definition: str, delta: float) -> np.ndarray:
    """[LR, seed] of one arm: the run failed under a named definition (docs/STUDY.md section
    3); only meaningful where a run finished. degraded: diverged, or a capped loss worse than
    the seed's best over the arm's LRs by more than delta."""
    a = cells.arm(arm)
    diverged = np.zeros_like(cells.failing[a]) if cells.diverged is None else cells.diverged[a]
    if definition == DIVERGED:
        return diverged.copy()
    if definition == STUCK:
        return cells.failing[a].copy()
    if definition == DEGRADED:
        loss = cells.loss[a]
        with np.errstate(invalid="ignore"):
            best = np.nanmin(np.where(np.isfinite(loss), loss, np.inf), axis=0)
            return diverged | (loss > best[None, :] + delta)
    raise ValueError(f"unknown failure definition {definition!r}")


def critical_lrs(
    cells: Cells, arm: str, definition: str = PRIMARY_FAILURE, delta: float = 0.1
) -> dict[int, GridValue]:
    """eta_crit per seed of one arm over every LR it finished, under a failure definition."""
    if not cells.has(arm):
        return {}
    a = cells.arm(arm)
    fin = cells.finished()
    failed = failed_under(cells, arm, definition, delta)
    out = {}
    for k, seed in enumerate(cells.seeds):
        flags = [bool(failed[j, k]) if fin[a, j, k] else None for j in range(len(cells.lrs))]
        out[seed] = critical_lr(cells.lrs, flags, cells.loss[a, :, k])
    return out


def worst_losses(cells: Cells, arm: str) -> tuple[list[float], list[float]]:
    """W(eta) of eta_max (docs/STUDY.md section 4): per LR the arm finished runs at, the worst
    seed's capped loss, NaN unless every seed of the arm finished there."""
    if not cells.has(arm):
        return [], []
    a = cells.arm(arm)
    fin = cells.finished()[a]  # [LR, seed]
    seeds = fin.any(axis=0)
    lrs = [j for j in range(len(cells.lrs)) if fin[j].any()]
    worst = [float(cells.loss[a, j, seeds].max()) if fin[j, seeds].all() else math.nan for j in lrs]
    return [cells.lrs[j] for j in lrs], worst


def best_lr(cells: Cells, arm: str) -> float | None:
    """The arm's best LR: the lowest seed-mean capped loss among LRs where every seed of the
    arm finished (H1 is judged there; the practitioner's rule counts multiples of it)."""
    if not cells.has(arm):
        return None
    a = cells.arm(arm)
    fin = cells.finished()[a]
    seeds = fin.any(axis=0)
    full = [j for j in range(len(cells.lrs)) if seeds.any() and fin[j, seeds].all()]
    if not full:
        return None
    return float(cells.lrs[min(full, key=lambda j: (cells.loss[a, j, seeds].mean(), j))])


def plateaus_read(cells: Cells, study: Study) -> Cells:
    """One rung's cells with section 23's plateau reading (Study.plateau_margin): above the
    reference arm's best LR the stuck cut moves the margin down, in both arms, for every rule
    that reads a fate (the stability threshold, the failure edges, the ceiling). The cells as
    they are with a margin of 0, no best LR or no recorded cut."""
    best = best_lr(cells, study.reference)
    if study.plateau_margin <= 0 or best is None or cells.cut_gap is None:
        return cells
    above = (np.asarray(cells.lrs, float) > best)[None, :, None]
    failing, gap = plateau_cut(cells.failing, cells.cut_gap, above, study.plateau_margin)
    return replace(cells, failing=failing, cut_gap=gap)


def study_cells(rows: Iterable[dict], study: Study, rung: str = "n_layer") -> dict[int, Cells]:
    """build_cells per rung, each read as the study's [study] fixes (plateaus_read)."""
    return {value: plateaus_read(c, study) for value, c in build_cells(rows, rung=rung).items()}


def read_as_stuck(raw: dict[int, Cells], read: dict[int, Cells]) -> dict[str, list[str]]:
    """Per rung (as a string), the run ids a study's reading counts stuck that finished under
    their recorded cut (study_cells against build_cells); rungs without any left out."""
    out = {}
    for value, cells in read.items():
        moved = cells.failing & ~raw[value].failing
        if moved.any():
            out[str(value)] = sorted(str(r) for r in cells.run_ids[moved])
    return out


def median_grid(values: list[GridValue]) -> tuple[GridValue, GridValue, GridValue] | None:
    """(median, lowest, highest) over seeds; censored values order beyond the grid ends; an
    even count's median is the geometric mean of the middle two when both are inside."""
    if not values:
        return None
    key = {"below": -1, "": 0, "above": 1, "none": 2}
    ordered = sorted(values, key=lambda v: (key[v.kind], v.value if v.kind == "" else 0))
    if len(ordered) % 2:
        mid = ordered[(len(ordered) - 1) // 2]
    else:
        a, b = ordered[len(ordered) // 2 - 1], ordered[len(ordered) // 2]
        mid = (
            GridValue(math.sqrt(a.value * b.value))
            if a.inside and b.inside
            else (b if not b.inside else a)
        )
    return mid, ordered[0], ordered[-1]


def common_top(medians: Iterable[GridValue | None]) -> float | None:
    """The grid's top LR when every median critical LR given (one per arm) is censored above
    it at that one LR: no arm's runs failed inside the grid. None otherwise: an arm without a
    median, one that failed inside the grid, tops that differ between arms, or none given.
    Each median: anything with `value` and `kind` (a GridValue or its typed JSON form)."""
    medians = list(medians)
    tops = {x.value for x in medians if x and x.kind == "above"}
    if len(tops) == 1 and all(x and x.kind == "above" for x in medians):
        return tops.pop()
    return None


def failed_seeds(eta_crit) -> int:
    """How many seeds of an arm's critical LRs (anything with `seeds`: seed -> a value with
    `kind`) failed inside the grid: their critical LR not censored above it."""
    return sum(1 for x in eta_crit.seeds.values() if x is not None and x.kind in ("", "below"))


def median_hides_failures(eta_crit) -> bool:
    """The median critical LR lies above the grid while some seed failed inside it: 'no
    failure' would be said of the median, and the seeds do not all agree."""
    median = eta_crit.median
    return bool(median and median.kind == "above" and failed_seeds(eta_crit))


# The budget check: does a comparison's per-LR call hold at a larger token budget?
CALLS_HOLD, CALLS_PARTLY, CALLS_CHANGE = "hold", "partly", "change"
# what the necessity rule said at one LR, as the budget check compares the two budgets' calls
NECESSARY, NOT_NECESSARY = "necessary", "not necessary"
BOTH_FAILED, BOTH_ARMS_FAIL, TOO_FEW_PAIRS = "both failed", "both arms fail", "too few pairs"


def lr_call(necessary: bool, judged: bool, ceiling: bool, partial_ceiling: bool) -> str:
    """The rule's call at one LR as a code: necessary, not necessary, or why it was not judged
    (every run of both arms failed; too few pairs without a failure; too few pairs)."""
    if necessary:
        return NECESSARY
    if judged:
        return NOT_NECESSARY
    if ceiling:
        return BOTH_FAILED
    return BOTH_ARMS_FAIL if partial_ceiling else TOO_FEW_PAIRS


def budget_held(lrs: int, differ: int) -> str:
    """A budget pair's answer from the LRs both budgets ran (`lrs`) and those where the rule's
    call differs between them (`differ`): CALLS_CHANGE where it differs at every one (also
    where there is none: no call held), CALLS_PARTLY where at some, CALLS_HOLD where at none."""
    if differ == lrs:
        return CALLS_CHANGE
    return CALLS_PARTLY if differ else CALLS_HOLD


def best_mean_loss(cells: Cells, arms: Iterable[str]) -> float | None:
    """L* of eta_max (docs/STUDY.md section 4): the best seed-mean capped loss over the given
    arms (one token budget) and their LRs where every seed of the arm finished."""
    best = math.inf
    fin = cells.finished()
    for arm in arms:
        if not cells.has(arm):
            continue
        a = cells.arm(arm)
        seeds = fin[a].any(axis=0)
        for j in range(len(cells.lrs)):
            if seeds.any() and fin[a, j, seeds].all():
                best = min(best, float(cells.loss[a, j, seeds].mean()))
    return best if math.isfinite(best) else None


class BaselineCheck(NamedTuple):
    """Whether the sweep's runs learned more than counting does: each arm's best run (the
    lowest capped loss of its finished runs, over every rung, LR and seed) against the data's
    bigram baseline. beaten: some arm's best run ends below it; False: no arm beats it, so
    the sweep demonstrates the harness (a toy) and says nothing about QK-norm; None: no
    baseline, or no finished run, to compare."""

    baseline: float | None
    best: dict[str, float]
    beaten: bool | None


def baseline_check(cells: Iterable[Cells], baseline: float | None) -> BaselineCheck:
    """The BaselineCheck of a sweep from its rungs' tables (build_cells' values)."""
    best: dict[str, float] = {}
    for c in cells:
        finished = c.finished()
        for i, arm in enumerate(c.arms):
            if finished[i].any():
                best[arm] = min(best.get(arm, math.inf), float(np.nanmin(c.loss[i])))
    if baseline is None or not math.isfinite(baseline) or not best:
        return BaselineCheck(baseline, best, None)
    return BaselineCheck(float(baseline), best, any(v < baseline for v in best.values()))


def steps_to(steps, losses, target: float | None) -> float:
    """Steps to target (docs/STUDY.md section 4): the step where the losses (at ascending
    steps) first reach target, linearly interpolated between the two evaluations around the
    crossing; NaN when never or without a target."""
    step, loss = np.asarray(steps, float), np.asarray(losses, float)
    if target is None or not len(loss):
        return math.nan
    below = np.flatnonzero(loss <= target)
    if not len(below):
        return math.nan
    i = below[0]
    if i == 0:
        return float(step[0])
    frac = (loss[i - 1] - target) / (loss[i - 1] - loss[i])
    return float(step[i - 1] + frac * (step[i] - step[i - 1]))


class Rule(NamedTuple):
    """The practitioner's rule at one depth (docs/STUDY.md section 5): the threshold's kind and
    bracket, the reference arm's best LR, the LRs below it where QK-norm was also necessary
    (the low-LR effect), the top LR judged, and whether the best LR is the lowest LR the arm
    ran (a grid's edge: the best may lie lower, and every multiple of it is then a lower
    bound)."""

    kind: str
    best_lr: float | None
    bracket: tuple[float, float] | None
    low_lrs: tuple[float, ...]
    top_lr: float | None
    best_at_bottom: bool = False


def practitioner_rule(
    calls: list[LRCall], n: Necessity, best: float | None, lowest: float | None
) -> Rule:
    """lowest: the lowest LR the reference arm has a finished run at (lowest_lr)."""
    judged = [c for c in calls if c.judged]
    low = tuple(
        c.lr for c in judged if best is not None and c.lr < best * (1 - 1e-9) and c.necessary
    )
    t = n.threshold
    at_bottom = best is not None and lowest is not None and best <= lowest * (1 + 1e-9)
    return Rule(t.kind, best, t.bracket, low, judged[-1].lr if judged else None, at_bottom)


def lowest_lr(cells: Cells, arm: str) -> float | None:
    """The lowest LR at which the arm has a finished run."""
    if not cells.has(arm):
        return None
    ran = cells.finished()[cells.arm(arm)].any(axis=1)
    return float(np.asarray(cells.lrs)[ran][0]) if ran.any() else None


# -- LR sensitivity ----------------------------------------------------------------------------
def sensitivity_lrs(base_lrs, sensitivity_range) -> list[float]:
    """The base-grid LRs inside the pre-registered range (the same for every arm and depth;
    extension and refinement LRs never enter)."""
    low, high = sensitivity_range
    return [float(lr) for lr in base_lrs if low * (1 - 1e-9) <= lr <= high * (1 + 1e-9)]


def sensitivities(cells: Cells, arm: str, lrs) -> dict[int, float]:
    """S per seed of one arm over `lrs` (stats.sensitivity); NaN (incomplete) where a run is
    missing or failed as a process."""
    if not cells.has(arm):
        return {}
    a = cells.arm(arm)
    at = {lr: j for j, lr in enumerate(cells.lrs)}
    return {
        seed: sensitivity([cells.loss[a, at[lr], k] if lr in at else math.nan for lr in lrs])
        for k, seed in enumerate(cells.seeds)
    }


def trained_lrs(cells: Cells, arms, lrs) -> list[float]:
    """The LRs of `lrs` at which every seed of each of `arms` has a finished run and none
    failed (the primary definition: stuck or diverged): where H2b's robustness check measures
    LR sensitivity among runs that trained, so that a lower sensitivity is not only the other
    arm's failures (descriptive, not pre-registered)."""
    at = {lr: j for j, lr in enumerate(cells.lrs)}
    finished = cells.finished()
    out = []
    for lr in lrs:
        j = at.get(lr)
        if j is not None and all(
            cells.has(a)
            and finished[cells.arm(a), j].all()
            and not cells.failing[cells.arm(a), j].any()
            for a in arms
        ):
            out.append(float(lr))
    return out


def h2b_trained(
    cells: Cells, ref: str, primary: str, range_lrs, floor: float
) -> tuple[list[float], Paired | None]:
    """H2b's robustness check (descriptive): S ref - S primary per seed over trained_lrs of
    the range alone, as h2b_stats pairs it; None with fewer than two such LRs (mean - min over
    one LR is 0)."""
    among = trained_lrs(cells, (ref, primary), range_lrs)
    if len(among) < 2:
        return among, None
    s_ref, s_on = sensitivities(cells, ref, among), sensitivities(cells, primary, among)
    return among, h2b_stats(s_ref, s_on, floor)


# -- refinement --------------------------------------------------------------------------------
class Bracket(NamedTuple):
    """A bracket refinement bisects: the last LR that held (lo) and the first that did not
    (hi) of one arm's seed (its critical LR); with arm None, the primary comparison's stability
    threshold: pooled (seed None) or one seed's (section 25)."""

    lo: float
    hi: float
    arm: str | None = None
    seed: int | None = None


def midpoints(brackets, resolution: float, planned) -> dict[float, list[Bracket]]:
    """New LRs: the rounded geometric midpoint of every bracket wider than the resolution
    (1% slack absorbs the three-digit rounding: sqrt(10) becomes 3.16, 0.5003 decades), each
    with the brackets it bisects."""
    mids: dict[float, list[Bracket]] = {}
    for b in brackets:
        lo, hi = b.lo, b.hi
        if math.log10(hi / lo) <= resolution * RESOLUTION_SLACK:
            continue
        mid = round_lr(math.sqrt(lo * hi))
        if lo < mid < hi and mid not in planned:
            mids.setdefault(mid, []).append(b)
    return dict(sorted(mids.items()))


# -- the paired verdicts of H2a and H2b -------------------------------------------------------
def h2a_stats(off: dict[int, GridValue], on: dict[int, GridValue]) -> tuple[Paired, list]:
    """r_s = log10(eta_crit on / off) over seeds where both are inside or censored above;
    the sd floor is the grid's resolution: each critical LR is known only within its bracket
    (uniform, w / sqrt(12) per arm), so r_s is never more precise than that."""
    seeds = sorted(set(off) & set(on))
    use = [k for k in seeds if off[k].kind in ("", "above") and on[k].kind in ("", "above")]
    r = [math.log10(on[k].value / off[k].value) for k in use]
    q = [quantization_sd(off[k]) ** 2 + quantization_sd(on[k]) ** 2 for k in use]
    floor = math.sqrt(sum(q) / len(q)) if q else 0.0
    return paired(r, floor), r


def h2b_stats(off: dict[int, float], on: dict[int, float], floor: float) -> Paired:
    """D_s = S off - S on over seeds with both; floor: the precision floor (S's min term is one
    run's loss, so D is no more precise than one paired difference)."""
    seeds = sorted(set(off) & set(on))
    return paired([off[k] - on[k] for k in seeds], floor)


# H2b's reason codes when a rung is not judged at all (figures/words/hypotheses.py words them)
H2B_RUNG_SUBSET = "rung lr subset"
H2B_SHORT = "grid short of range"


def h2b_unjudged(
    in_range: Iterable[float],
    trained: Iterable[float] | None,
    sensitivity_range: tuple[float, float] | None = None,
) -> str:
    """Why H2b does not judge a rung, or "" when it does: "grid short of range" when the grid's
    LRs inside the pre-registered sensitivity range (in_range, sensitivity_lrs) do not reach
    both its ends (an ad-hoc grid of 0.01-0.1 against [3.16e-4, 0.316]: S over the range was
    never measured); "rung lr subset" when the rung trains an LR subset of the grid
    ([rung_lr]; trained: its LRs, None for the whole grid) that leaves out a grid LR of the
    range. Either way the rung is not judged (inconclusive), not counted incomplete."""
    lrs = [float(x) for x in in_range]
    if sensitivity_range is not None and not spans(lrs, sensitivity_range):
        return H2B_SHORT
    return H2B_RUNG_SUBSET if left_out_lrs(lrs, trained) else ""


def spans(lrs: list[float], sensitivity_range: tuple[float, float]) -> bool:
    """The LRs reach both ends of the range (within rounding)."""
    low, high = sensitivity_range
    return bool(lrs) and min(lrs) <= low * (1 + 1e-6) and max(lrs) >= high * (1 - 1e-6)


def left_out_lrs(in_range: Iterable[float], trained: Iterable[float] | None) -> list[float]:
    """The LRs of in_range that a rung on an LR subset (trained; None: the whole grid) does
    not train."""
    if trained is None:
        return []
    have = [float(x) for x in trained]
    return [float(lr) for lr in in_range if not any(math.isclose(lr, x) for x in have)]


def paired_verdict(p: Paired, min_effect: float = 0.0) -> str:
    """Supported: the one-sided 95% lower bound above the minimum effect; not supported: the
    mean at or below 0, or the upper bound below the minimum effect; else inconclusive (also
    with fewer than MIN_SEEDS pairs or a tie no floor covers)."""
    if p.n < MIN_SEEDS or not math.isfinite(p.lower):
        return INCONCLUSIVE
    if p.lower > min_effect:
        return SUPPORTED
    if p.mean <= 0 or p.upper < min_effect:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def harms(upper: float | None, min_effect: float) -> bool:
    """The treatment is shown worse at an LR: the one-sided 95% upper bound of baseline -
    treatment (the upper end of the two-sided 90% interval) below -min_effect; never without a
    bound (None or NaN)."""
    return upper is not None and upper < -min_effect


def negligible(p: Paired, bound: float) -> bool:
    """H1 / C1: the effect is shown smaller than the bound in both directions (TOST: the 90%
    interval inside (-bound, bound)); a wide interval is never negligible."""
    return equivalent(p, bound)


__all__ = [
    "NONE",
    "outcome_class",
    "fails",
    "Comparison",
    "Study",
    "Cells",
    "Pairs",
    "build_cells",
    "pairs",
    "critical_lrs",
    "failed_under",
    "best_lr",
    "is_stuck",
    "recorded_baseline",
    "LRCall",
    "lr_calls",
    "median_grid",
    "common_top",
    "budget_held",
    "lr_call",
    "best_mean_loss",
    "BaselineCheck",
    "baseline_check",
    "steps_to",
    "Rule",
    "practitioner_rule",
    "FAILURE_DEFINITIONS",
    "PRIMARY_FAILURE",
    "effective_loss",
    "worst_losses",
    "sensitivity_lrs",
    "sensitivities",
    "trained_lrs",
    "h2b_trained",
    "Bracket",
    "midpoints",
    "h2a_stats",
    "h2b_stats",
    "h2b_unjudged",
    "left_out_lrs",
    "H2B_RUNG_SUBSET",
    "H2B_SHORT",
    "paired_verdict",
    "harms",
    "negligible",
    "round_lr",
]
