"""What an analysis is, typed: frozen dataclasses for the sweep's settings, a rung (a depth or a
width), an arm at a rung, a comparison of two arms, the trends over the ladder, the decisions
and the Analysis that holds them, with no prose in any of them.

Field names are analysis.json's keys (schema 5), so `Rung.arms["off"].eta_crit.median` is
`analysis["depths"]["4"]["arms"]["off"]["eta_crit"]["median"]`. Where the JSON leaves a key out
rather than writing null, the field carries `OMIT` (left out when None) or `omit_with(name)`
(left out when that other field is None). sweeps/analysis/adapter.py reads and writes the JSON
(schema 5, and schema 4, which had no `decided` or `caveats` and held figures/'s words).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sweeps.study.alternatives import Decision as AltDecision
from sweeps.study.hypotheses import Call
from sweeps.study.ladders import falls
from sweeps.study.rules import BaselineCheck, Bracket, Rule, lr_call

OMIT = {"omit": True}  # a key the JSON leaves out when its value is None


def omit_with(other: str) -> dict:
    """A key the JSON writes (null or not) exactly when `other` is written."""
    return {"omit": other}


def maybe(**kw):
    """A field the JSON leaves out when None."""
    return field(default=None, metadata=OMIT, **kw)


# -- values on the LR grid and paired statistics ---
@dataclass(frozen=True)
class GridPoint:
    """A quantity on the LR grid (sweeps.study.stats.GridValue): its value, `kind` ("" inside the
    grid; "below", "above" or "none" where censored), the bracket it lies in, and whether the
    value was interpolated inside it."""

    value: float | None
    kind: str
    bracket: list[float] | None
    interpolated: bool


@dataclass(frozen=True)
class Paired:
    """A paired statistic over seeds: the one-sided 95% bound that decides (`lower`), the
    two-sided 90% interval (`ci90`, the two one-sided 95% bounds) and the 75% lower bound."""

    n: int
    mean: float | None
    sd: float | None
    sd_used: float | None
    lower: float | None
    upper: float | None
    ci90: list[float | None]
    lower75: float | None


# -- an arm at a rung ---
@dataclass(frozen=True)
class CriticalLRs:
    """An arm's critical LR under one failure definition: per seed, and their median and range
    (None without a seed), with the kinds of censoring among them; `definition` only on the
    primary one (`eta_crit`)."""

    seeds: dict[int, GridPoint]
    median: GridPoint | None
    min: GridPoint | None
    max: GridPoint | None
    censored: list[str]
    definition: str | None = maybe()


@dataclass(frozen=True)
class EtaMaxPoint:
    """eta_max(delta): the largest LR whose worst seed stays within delta of L*."""

    delta: float
    value: float | None
    kind: str
    bracket: list[float] | None
    interpolated: bool


@dataclass(frozen=True)
class EtaMax(EtaMaxPoint):
    l_star: float | None = None  # the rung's best mean loss at the arm's budget


@dataclass(frozen=True)
class Sensitivity:
    """LR sensitivity S per seed over the pre-registered range's LRs (H2b), complete when no
    seed lacks a run there."""

    seeds: dict[int, float | None]
    lrs: list[float]
    complete: bool
    mean: float | None
    sd: float | None


@dataclass(frozen=True)
class Cell:
    """One arm at one LR over its seeds."""

    lr: float
    n: int
    outcomes: dict[str, int]
    final_mean: float | None
    final_sd: float | None
    loss_mean: float | None
    loss_sd: float | None
    perplexity: float | None
    steps_to_target: float | None
    steps_to_baseline: float | None


@dataclass(frozen=True)
class Arm:
    """An arm at a rung: its LRs and seeds, token budget, recipe hash, intervention values, best
    LR, critical LRs (primary definition and each), eta_max, sensitivity and cells per LR."""

    lrs: list[float]
    seeds: list[int]
    budget: float
    recipe: str | None
    interventions: dict[str, float] | None
    best_lr: float | None
    eta_crit: CriticalLRs
    eta_crit_by_definition: dict[str, CriticalLRs]
    eta_max: EtaMax
    eta_max_curve: list[EtaMaxPoint]
    sensitivity: Sensitivity
    cells: list[Cell]
    init_logit_std: float | None


# -- a comparison of two arms at a rung ---
@dataclass(frozen=True)
class LrEffect(Paired):
    """Baseline minus treatment at one LR: the paired statistic (its mean alone where the rule
    did not judge it), and what the necessity rule made of it."""

    lr: float = 0.0
    judged: bool = False
    ceiling: bool = False
    partial_ceiling: bool = False
    set_aside: list[int] = field(default_factory=list)
    fails: dict[str, int] = field(default_factory=dict)
    necessary: bool = False
    equivalent: bool = False
    seeds: list[float | None] = field(default_factory=list)
    speedup: float | None = None
    # the effect curve's mark (docs/STUDY.md section 17): "harmed" (QK-norm credibly worse by
    # more than m), "helped" (credibly better), "" (neither shown, or not judged)
    mark: str = ""

    @property
    def call(self) -> str:
        """The rule's call at this LR (sweeps.study.rules.lr_call's code)."""
        return lr_call(self.necessary, self.judged, self.ceiling, self.partial_ceiling)


@dataclass(frozen=True)
class Influence:
    """The threshold with one run left out (the leave-one-run-out check)."""

    run_id: str
    lr: float | None
    threshold_without: GridPoint


@dataclass(frozen=True)
class Ratio:
    delta: float
    ratio: float | None


@dataclass(frozen=True)
class Comparison:
    """The paired analysis of baseline minus treatment at one rung (docs/STUDY.md section 4):
    per LR, the stability threshold and its bracket, each seed's threshold, the ceilings,
    the precision floor, the eta_max ratio per delta, and the leave-one-run-out thresholds."""

    baseline: str
    treatment: str
    per_lr: list[LrEffect]
    threshold: GridPoint
    threshold_bracket: list[float] | None
    seed_thresholds: dict[int, GridPoint]
    ceiling: list[float]
    partial_ceiling: list[float]
    precision_floor: float | None
    eta_max_ratio: list[Ratio]
    influence: list[Influence]
    # section 17: the baseline arm's best LR the threshold is searched from, and the ranges of
    # adjacent LRs where the treatment is credibly worse (harm) or better (help), [lowest, highest]
    best_lr: float | None = None
    harm: list[list[float]] = field(default_factory=list)
    help: list[list[float]] = field(default_factory=list)


# -- the paired hypotheses at a rung ---
@dataclass(frozen=True)
class H1:
    verdict: str
    why: str
    lr: float | None
    stats: Paired | None
    off_fails: bool


@dataclass(frozen=True)
class H2a(Paired):
    """H2a under one failure definition: the per-seed log10 ratios of critical LRs."""

    log10_ratios: list[float] = field(default_factory=list)
    verdict: str = ""
    censored: str = ""
    definition: str | None = maybe()  # on the primary definition's entry ("h2a") only


@dataclass(frozen=True)
class H2b(Paired):
    """H2b: the per-seed sensitivity differences; `why` only where the rung is not judged."""

    min_effect: float = 0.0
    verdict: str = ""
    why: str | None = maybe()
    # descriptive, not pre-registered: the same difference over the range's LRs where every
    # run of both arms trained (rules.trained_lrs), so a reader sees how much of it is the
    # reference arm's failures; None with fewer than two such LRs
    trained_lrs: list[float] = field(default_factory=list)
    trained: Paired | None = maybe()


@dataclass(frozen=True)
class Edge:
    """An arm's failure edge under one definition (docs/STUDY.md section 13): the geometric
    mean of the seeds' critical LRs with its 90% interval (None where a seed is censored or
    missing), and how many seeds lie beyond the grid."""

    value: float | None
    lower: float | None
    upper: float | None
    censored: int
    seeds: int


@dataclass(frozen=True)
class LowLr:
    """The effect below the reference arm's best LR (section 13, its own estimand): one verdict
    (helps, harms, mixed, negligible, inconclusive) and per LR the mean with Bonferroni-adjusted
    one-sided 95% bounds over the LRs judged."""

    verdict: str
    lrs: list[float]
    means: list[float]
    lower: list[float]
    upper: list[float]


@dataclass(frozen=True)
class BestCost:
    """The primary comparison at each arm's own best LR (docs/STUDY.md section 17): the
    reference arm at its best minus the primary arm at its best, paired by seed (positive: the
    primary arm at its best finished lower); stats None where an arm has no best LR."""

    off_lr: float | None
    on_lr: float | None
    stats: Paired | None


@dataclass(frozen=True)
class TokensPerParam:
    params: int
    non_embedding: int
    by_budget: dict[str, float]


@dataclass(frozen=True)
class Rung:
    """One rung of the ladder (analysis.json's "depths" entry: a depth or a width): its arms, its
    comparisons, L* per budget, tokens per parameter, and H1/H2a/H2b where it has both the
    reference and the primary arm."""

    arms: dict[str, Arm]
    comparisons: dict[str, Comparison]
    l_star: dict[str, float]
    tokens_per_param: TokensPerParam
    h1: H1 | None = maybe()
    h2a: H2a | None = maybe()
    h2a_by_definition: dict[str, H2a] | None = maybe()
    h2b: H2b | None = maybe()
    best_cost: BestCost | None = maybe()
    edges: dict[str, dict[str, Edge]] | None = maybe()  # arm -> failure definition -> edge
    low_lr: LowLr | None = maybe()
    # the runs within the fate margin of their cut, and each verdict or edge they move:
    # name -> [with them stuck, with them trained] (docs/STUDY.md section 13)
    borderline: list[str] | None = maybe()
    both_ways: dict[str, list[str]] | None = maybe()


# -- the trends over the ladder's rungs ---
@dataclass(frozen=True)
class Slope:
    n: int
    value: float
    lower: float | None
    upper: float | None
    ci90: list[float | None]

    @property
    def shows_fall(self) -> bool:
        """The slope shows a fall (sweeps.study.ladders.falls: its upper bound below 0)."""
        return falls(self)


@dataclass(frozen=True)
class Line:
    slope: float
    intercept: float


@dataclass(frozen=True)
class Uncensored(Slope):
    line: Line | None = None


@dataclass(frozen=True)
class TrendPoint:
    rung: int
    lr: float
    beyond: float
    censored: bool


@dataclass(frozen=True)
class Prediction:
    """A line of log10 LR read at the core width: the value, the 90% interval of the line there
    and of one new point, and the points it was fitted to."""

    log10: float
    value: float
    ci90: list[float]
    point90: list[float]
    n: int


@dataclass(frozen=True)
class CriticalLine:
    """An arm's per-seed critical LRs on log2 width read at the core width, with the slope per
    doubling; only `value` None, `n` and `censored` where every value is a bound."""

    value: float | None
    n: int
    censored: int
    log10: float | None = maybe()
    ci90: list[float] | None = maybe()
    point90: list[float] | None = maybe()
    slope: float | None = maybe()
    slope90: list[float] | None = maybe()


@dataclass(frozen=True)
class CriticalLines:
    definition: str
    arms: dict[str, CriticalLine]


@dataclass(frozen=True)
class GapLine:
    """The low-LR gap (reference - primary, nats) at one of the two lowest grid LRs on log2
    width, read at the core width, with its slope per doubling."""

    lr: float
    of: str
    value: float
    ci90: list[float]
    point90: list[float]
    n: int
    slope: float
    slope90: list[float]


@dataclass(frozen=True)
class ThresholdLines:
    at_bound: Prediction | None
    beyond: Prediction | None


@dataclass(frozen=True)
class Extrapolation:
    """W1's lines read at the core width (docs/STUDY.md section 11, an extrapolation): the
    threshold's, each arm's critical LR's under every failure definition, the low-LR gap's."""

    width: int
    doublings: float
    grid: list[float] | None
    threshold: ThresholdLines
    critical_lr: CriticalLines
    critical_lr_by_definition: dict[str, dict[str, CriticalLine]]
    low_lr_gap: list[GapLine]


@dataclass(frozen=True)
class GapShrink:
    """A width ladder's low-LR gap (reference - primary, nats) at one of the gap's LRs, at the
    narrowest and the widest rung, and their ratio (wide / narrow; docs/STUDY.md section 11
    predicts at most sweeps.study.ladders.GAP_SHRINK; descriptive, a ratio of means)."""

    lr: float
    narrow_rung: str
    wide_rung: str
    narrow: float
    wide: float
    ratio: float


@dataclass(frozen=True)
class RungValue:
    """One rung's value in a trend: the geometric mean over its seeds of their thresholds (W2:
    as a multiple of the reference arm's best LR), censored ones at their bound and moved
    beyond it, with how many seeds it rests on and how many are censored."""

    rung: int
    lr: float
    beyond: float
    seeds: int
    censored: int


@dataclass(frozen=True)
class AddedRungs:
    """The trend with the rungs the spec sets apart added back (docs/STUDY.md section 22): its
    verdict and slope, and that design's power at the prediction per rung sd."""

    rungs: list[int]
    verdict: str
    slope: Slope | None
    powers: dict[str, float] | None = maybe()


@dataclass(frozen=True)
class LeftOutRung:
    """The trend refitted without one rung: its verdict and slope, and the rung's influence
    (that slope minus the slope over every rung), decades per doubling."""

    rung: int
    verdict: str
    slope: Slope | None
    influence: float | None
    # the design without this rung: its power at the prediction per rung sd (Trend.powers)
    powers: dict[str, float] | None = maybe()


@dataclass(frozen=True)
class Trend:
    """H3 (depth) or W1/W2 (width) as sweeps.study.ladders decided it: the verdict and its code,
    the slopes with censored thresholds at and beyond their bounds, the rungs fitted over;
    the points and line once decided; the uncensored slope where some were censored; W1's
    extrapolation to the core width; W2's bound and each seed's best LR."""

    verdict: str
    why: str
    at_bound: Slope | None
    beyond: Slope | None
    censored: int
    short: list
    depths: list[int]
    points: list[TrendPoint] | None = maybe()
    line: Line | None = field(default=None, metadata=omit_with("points"))
    uncensored: Uncensored | None = maybe()
    extrapolation: Extrapolation | None = maybe()
    bound: float | None = maybe()
    seed_best: dict[str, list[float]] | None = maybe()
    # section 13: the prediction (H3, W1) and the design's power at it (W2: its chance to show
    # a multiple that truly carries); each rung's value; section 17: the trend with each rung
    # left out, the rungs whose removal reverses the verdict and those that change it
    prediction: float | None = maybe()
    power: float | None = maybe()
    # section 18: the power at the prediction at each rung sd it names ("0.15": P, ...; H3, W1)
    powers: dict[str, float] | None = maybe()
    rung_values: list[RungValue] | None = maybe()
    left_out: list[LeftOutRung] | None = maybe()
    reversed_by: list[int] | None = maybe()
    fragile: list[int] | None = maybe()
    # section 22: the slope with the borderline runs counted trained (as recorded), where it
    # differs from at_bound's (borderline runs stuck)
    as_recorded: Slope | None = maybe()
    # section 22: the seed scatter (decades) the powers were simulated at (None: analytic)
    seed_scatter: float | None = maybe()
    # section 22: the trend with the spec's set-apart rungs added (not in `depths`)
    with_apart: AddedRungs | None = maybe()


@dataclass(frozen=True)
class SensitivityLine:
    n: int
    value: float
    ci90: list[float | None]


@dataclass(frozen=True)
class SensitivityTrend:
    """A descriptive line per doubling of the rung, by name: LR sensitivity per arm
    (Analysis.sensitivity_trend) or QK-norm's cost at the best LR (Analysis.cost_trend)."""

    sizes: list[int]
    lines: dict[str, SensitivityLine]


# -- the sweep ---
@dataclass(frozen=True)
class Baselines:
    bigram: float | None
    unigram: float | None
    unit: str
    tokenizer: str | None


@dataclass(frozen=True)
class LadderAxis:
    field: str  # n_layer (depth) or n_embd (width)
    name: str


@dataclass(frozen=True)
class Settings:
    """The pre-registration as the analysis read it (sweeps.study.rules.Study's fields), whether
    it was pre-registered, the failure definitions, the grid, the arms, the data's baselines,
    the ladder and the tokens per parameter of each rung."""

    reference: str
    primary: str
    start_control: str | None
    comparisons: list[list[str]]
    delta: float
    sensitivity_range: list[float]
    min_effect: float
    negligible: float
    min_sensitivity: float
    precision: float
    target_loss: float | None
    preregistered: bool
    failure_definitions: list[str]
    primary_failure: str
    base_lrs: list[float]
    arms: list[str]
    subset_arms: list[str]
    all_comparisons: list[list[str]]
    baselines: Baselines
    baseline_rule: str | None
    ladder: LadderAxis
    tokens_per_param: dict[str, float | None]
    rung_lr: dict[str, list[float]] | None = maybe()
    # [study] fields recorded only where a spec sets them (rules.Study.to_dict)
    seed_margin: float | None = maybe()
    fate_margin: float | None = maybe()
    set_apart: list[int] | None = maybe()
    plateau_margin: float | None = maybe()  # section 23's, where a spec sets one


@dataclass(frozen=True)
class Run:
    """One run as the analysis counted it (the runs table's record)."""

    run_id: str
    arm: Any
    qk_norm: Any
    n_layer: Any
    n_embd: Any
    lr: Any
    seed: Any
    status: Any
    outcome: Any
    unstable_reasons: Any
    init_loss: Any
    final_val_loss: Any
    loss: Any
    steps_run: Any
    diverged_at: Any
    tokens_seen: Any
    wall_time_s: Any
    device: Any
    init_logit_std: Any


@dataclass(frozen=True)
class Problem:
    """A run not in the statistics: failed, unfinished, corrupt, or planned but missing."""

    run_id: str
    status: Any
    arm: Any
    n_layer: Any
    n_embd: Any
    lr: Any
    seed: Any
    error: str


@dataclass(frozen=True)
class Compute:
    device_hours: dict[str, float]
    tokens: float
    flops: float
    runs: int


@dataclass(frozen=True)
class Auc:
    """An early predictor's AUC at ~10% of the run (descriptive)."""

    auc: float | None
    ci90: list[float | None]
    n_fail: int
    n_ok: int
    step_fraction: float | None


@dataclass(frozen=True)
class BudgetPair:
    """One comparison run at two token budgets at a rung (sweeps/analysis/budget_check.py): the
    comparison's key at the smaller budget and at the larger, the larger budget as a multiple
    of the smaller, the rule's call at each LR both ran (sweeps.study.rules.lr_call's codes,
    smaller budget first), the LRs where the two calls differ, and the answer
    (sweeps.study.rules.budget_held: the calls hold, partly hold, or change)."""

    small: str
    large: str
    factor: float
    calls: dict[float, list[str]]
    differ: list[float]
    answer: str


@dataclass(frozen=True)
class Decisions:
    """What sweeps/study decides beyond the registry's per-rung records, per rung: C1, I1-I4 per
    intervention arm, the practitioner's rule, and the budget check's pairs (a rung without a
    comparison at two budgets has none)."""

    C1: dict[str, AltDecision]
    interventions: dict[str, dict[str, dict[str, AltDecision]]]
    rules: dict[str, Rule]
    budget: dict[str, list[BudgetPair]] = field(default_factory=dict)  # none in schema 4


# -- what may keep the runs from answering (worded by figures/words/caveats.py) ---
@dataclass(frozen=True)
class ShortBudget:
    """A rung under MIN_TOKENS_PER_PARAM tokens per parameter at one token budget."""

    rung: str
    budget: str
    tokens_per_param: float


@dataclass(frozen=True)
class StuckRuns:
    """Runs of an arm stuck at or below its best LR: too short a budget for those LRs."""

    rung: str
    arm: str
    n: int
    lrs: list[float]
    best_lr: float


@dataclass(frozen=True)
class Unrefined:
    """A rung whose grid the refinement rule would still grow: the LRs it would add, each with
    the brackets it would bisect (sweeps.study.judge.refinement_brackets)."""

    rung: str
    resolution: float
    lrs: dict[float, list[Bracket]]


@dataclass(frozen=True)
class Caveats:
    budget: list[ShortBudget | StuckRuns]  # per rung: short budgets, then stuck arms
    unrefined: list[Unrefined]


@dataclass(frozen=True)
class Decision:
    """A registered hypothesis decided for the sweep (sweeps.study.hypotheses.decide): the
    STUDY.md section it applies, the verdict with its reason code and numbers, and the Call
    at each rung (empty for a trend), and the 90% interval each rung's call rests on ("" for a
    trend's; none for C1)."""

    hypothesis: str
    section: int
    verdict: str
    why: str
    numbers: dict
    per_rung: dict[str, Call]
    preregistered: bool
    intervals: dict[str, list[float | None]]


# -- the token-matched check (docs/STUDY.md section 11; sweeps/analysis/token_check.py) ---
@dataclass(frozen=True)
class Moved:
    """A run that alone moves a threshold (leave-one-run-out), its LR, and the threshold
    without it."""

    run_id: str
    lr: float | None
    threshold: GridPoint


@dataclass(frozen=True)
class CheckSide:
    """What the check compares at one depth of a sweep: the primary comparison's threshold, the
    reference arm's median critical LR (primary failure definition) with its per-seed values
    (the median is judged on their brackets), the tokens per parameter, and the runs that alone
    move the threshold."""

    depth: int
    threshold: GridPoint
    critical: GridPoint | None
    critical_seeds: list[GridPoint]
    definition: str | None
    tokens_per_param: float | None
    influence: list[Moved]


@dataclass(frozen=True)
class Fragile(Moved):
    """A run whose leaving out changes the check's verdict: the side (check or reference) and
    depth it is on, and the verdict without it."""

    side: str = ""
    depth: int = 0
    verdict: str = ""


@dataclass(frozen=True)
class TokenCheck:
    """A token-matched check sweep against its depth ladder (analysis.json's "token_check"):
    the check's values at its own depth, the ladder's at the reference depth and, for
    comparison only, at the check's depth; the verdict of sweeps.study.ladders.token_check
    with its reason code (a code for a missing side too), and where decided, both comparisons
    and the runs that alone change the verdict."""

    ladder: str
    check: CheckSide | None
    reference: CheckSide | None
    same_depth: CheckSide | None
    verdict: str
    why: str
    threshold_below: bool | None = maybe()
    critical_below: bool | None = maybe()
    fragile: list[Fragile] | None = maybe()


@dataclass(frozen=True)
class Crossing:
    """One rung's LR at which the reference arm's max attention logit at the measured step first
    reaches a level: the geometric mean over the seeds that cross inside the grid (None when
    none does), with how many seeds cross below the lowest LR and how many never cross."""

    lr: float | None
    seeds: int
    below: int
    above: int


@dataclass(frozen=True)
class LogitGrowth:
    """A depth ladder's mechanism beside its threshold (docs/STUDY.md section 18, descriptive):
    per rung and level ("30", "50", "100") the crossing LR, and per level the slope of log10 of
    the rung values on log2 rung with its 90% interval (None below 3 rungs with a value)."""

    step: int
    arm: str
    rungs: dict[str, dict[str, Crossing]]
    slopes: dict[str, Slope | None]


@dataclass(frozen=True)
class Analysis:
    """Every number and decision of a sweep's analysis under docs/STUDY.md's rules
    (analysis.json, schema 5), with no prose: figures/ words the verdicts, rules, interventions
    and caveats from it when it renders the report. `depths` is keyed by the rung value of
    settings.ladder (depths or widths); the trend is `h3` on a depth ladder, `w1` and `w2` on a
    width ladder; `token_check` on a sweep whose spec has [token_check]
    (sweeps/analysis/token_check.py); `decided`: each registered hypothesis's decision
    (sweeps/study/hypotheses.py). Complete when analyze returns: nothing is added to it."""

    schema: int
    study_sha256: str
    sweep: str
    settings: Settings
    runs: list[Run]
    depths: dict[str, Rung]
    problems: list[Problem]
    compute: Compute
    baseline_check: BaselineCheck
    decisions: Decisions
    early_warning: dict[str, dict[str, dict[str, Auc]]]
    h3: Trend | None = maybe()
    w1: Trend | None = maybe()
    w2: Trend | None = maybe()
    sensitivity_trend: SensitivityTrend | None = maybe()
    token_check: TokenCheck | None = maybe()  # a check sweep's (its spec's [token_check])
    gap_shrink: list[GapShrink] | None = maybe()  # a width ladder's (trends.gap_shrink)
    # a ladder's cost at the best LR per doubling of the rung (trends.cost_trend; descriptive)
    cost_trend: SensitivityTrend | None = maybe()
    logit_growth: LogitGrowth | None = maybe()  # a depth ladder's (sweeps/analysis/logit_growth.py)
    caveats: Caveats | None = maybe()  # None only when read from schema 4, which lacked it
    decided: dict[str, Decision] = field(default_factory=dict)  # {} when read from schema 4
    # "v16": docs/STUDY.md's version that judged it (sweeps.study.protocol.judged_under keeps an
    # earlier version while the live rules give the same numbers); None in an analysis.json
    # written before versions were recorded
    study_version: str | None = maybe()
    # section 23: per rung, the runs the spec's plateau reading counted stuck though they
    # finished under their recorded cut (None: no spec reading, or no such run)
    plateau_stuck: dict[str, list[str]] | None = maybe()
