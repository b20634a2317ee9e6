"""The registry of docs/STUDY.md's pre-registered hypotheses, and how each is decided.

One entry per hypothesis: its id, the STUDY.md section that fixes it, the ladders whose sweeps
decide it, and its decision function. A decision reads the typed analysis's per-rung records
(sweeps/analysis/model.py: the quantities sweeps/study computed, as analysis.json holds them,
NaN and Inf as None) by attribute and returns a `Call` per
rung, or one `Call` for the whole sweep (a trend over the rungs): a verdict and a reason code
with the numbers the reason needs, never prose (figures/words/hypotheses.py words the codes).
`decide`
applies the rules every hypothesis shares: per-rung calls combine into one (all that count
agree: that verdict; else inconclusive), and a sweep without a pre-registered [study] decides
nothing. Adding a hypothesis is an entry here, its decision function, and a wording row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sweeps.core.ladder import AXES
from sweeps.study import rules
from sweeps.study.ladders import MIN_RUNGS
from sweeps.study.rules import BORDERLINE_DECIDES, INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

# the typed analysis's records a decision reads (sweeps/analysis/model.py: the layer above,
# which holds this module's Call, so they are named here, not imported)
Analysis = Rung = Comparison = Trend = Paired = H2a = Any

ALL_LADDERS = tuple(AXES)  # every ladder decides a per-rung hypothesis at each of its rungs
NO_RUNG = "no rung"  # the code of a per-rung hypothesis no rung could judge


@dataclass(frozen=True)
class Call:
    """One decision: the verdict, a reason code, the numbers the reason names. counts: False
    for a rung that was not judged at all (H2b on a [rung_lr] subset); it is shown, but does
    not take part in the combined verdict."""

    verdict: str
    why: str
    numbers: dict = field(default_factory=dict)
    counts: bool = True


@dataclass(frozen=True)
class Decided:
    """A hypothesis decided for one sweep: the verdict with its code (`why` is "rungs" when it
    combines per_rung), and preregistered False when the verdict is inconclusive for want of
    a pre-registered [study] whatever the rungs say."""

    verdict: str
    why: str
    numbers: dict
    per_rung: dict[str, Call]
    preregistered: bool = True


# a decision: the typed analysis -> a Call per rung, or one Call for the whole sweep
Decision = Callable[["Analysis"], "dict[str, Call] | Call"]
# the 90% interval a decision rests on: the typed analysis -> {rung: [lower, upper]} ("" for a
# trend's), the records' own `ci90`
Interval = Callable[["Analysis"], "dict[str, list]"]


def no_interval(analysis: Analysis) -> dict[str, list]:
    """A decision resting on no single interval (C1 counts per-LR calls)."""
    return {}


@dataclass(frozen=True)
class Hypothesis:
    id: str
    section: int  # the docs/STUDY.md section that pre-registers it
    decide: Decision
    ladders: tuple[str, ...] = ALL_LADDERS  # the ladder fields (n_layer, n_embd) deciding it
    trend: bool = False  # decided over the ladder's rungs, not at each rung
    interval: Interval = no_interval


def decide(analysis: Analysis, h: Hypothesis) -> Decided:
    """h decided on one analysis, with the rules every hypothesis shares."""
    found = h.decide(analysis)
    if isinstance(found, Call):
        out = Decided(found.verdict, found.why, found.numbers, {})
    else:
        one = combine(found)
        out = Decided(one.verdict, one.why, one.numbers, found)
    if not analysis.settings.preregistered:  # docs/STUDY.md section 6
        out = Decided(INCONCLUSIVE, out.why, out.numbers, out.per_rung, preregistered=False)
    return out


def combine(per_rung: dict[str, Call]) -> Call:
    """Per-rung calls -> one: the verdict all the rungs that count agree on, else inconclusive
    (rungs that disagree, or none that counts); NO_RUNG where no rung was judged."""
    if not per_rung:
        return Call(INCONCLUSIVE, NO_RUNG)
    outcomes = {c.verdict for c in per_rung.values() if c.counts}
    return Call(outcomes.pop() if len(outcomes) == 1 else INCONCLUSIVE, "rungs")


def for_ladder(field_name: str) -> list[Hypothesis]:
    """The hypotheses a sweep on this ladder (n_layer or n_embd) decides, in report order."""
    return [h for h in HYPOTHESES.values() if field_name in h.ladders]


def trends(field_name: str) -> tuple[str, ...]:
    """The ids of the trends over a ladder's rungs (H3 on depth; W1, W2 on width)."""
    return tuple(h.id for h in for_ladder(field_name) if h.trend)


# -- reading the analysis ------------------------------------------------------------------------
def primary(analysis: Analysis, depth: Rung) -> Comparison | None:
    """A rung's primary comparison (reference vs primary arm), None where it lacks an arm."""
    s = analysis.settings
    return depth.comparisons.get(rules.Comparison(s.reference, s.primary).key)


def with_both_arms(analysis: Analysis):
    """(rung, its record) at every rung with the reference and the primary arm."""
    s = analysis.settings
    for name, depth in analysis.depths.items():
        if s.reference in depth.arms and s.primary in depth.arms:
            yield name, depth


def trend_of(analysis: Analysis, name: str) -> Trend | None:
    """The trend a hypothesis names (H3, W1 or W2), None where the analysis has none."""
    return {"H3": analysis.h3, "W1": analysis.w1, "W2": analysis.w2}.get(name)


# -- the paired rules: H2a, H2b ------------------------------------------------------------------
def paired_call(h: H2a | Paired) -> Call:
    """The verdict sweeps.study.rules.paired_verdict gave a paired statistic (h: its record,
    H2a or H2b), with why: "few seeds", "tie" (no floor bounds the spread), "shown", "wrong way"
    (mean <= 0), "under minimum" (the upper bound below the minimum effect), "not shown"."""
    if h.n < rules.MIN_SEEDS:
        return Call(INCONCLUSIVE, "few seeds", {"n": h.n, "needs": rules.MIN_SEEDS})
    if h.lower is None:
        return Call(INCONCLUSIVE, "tie")
    if h.verdict == SUPPORTED:
        return Call(SUPPORTED, "shown")
    if h.verdict == NOT_SUPPORTED:
        return Call(NOT_SUPPORTED, "wrong way" if h.mean <= 0 else "under minimum")
    return Call(INCONCLUSIVE, "not shown")


def h2a_call(h: H2a) -> Call:
    """One failure definition's H2a: censored critical LRs decide nothing ("off above": the
    reference arm does not fail inside the grid in every seed; "below": a critical LR under
    it; "borderline decides": the borderline runs counted failed and trained disagree), else
    the paired rule on the log10 ratios."""
    if h.censored in ("off above", "below", BORDERLINE_DECIDES):
        return Call(INCONCLUSIVE, h.censored)
    return paired_call(h)


def h1(analysis: Analysis) -> dict[str, Call]:
    """H1 as the rulebook decided it at each rung (sweeps.study.rung.h1_at_best: the rung's h1)."""
    return {
        name: Call(depth.h1.verdict, depth.h1.why)
        for name, depth in analysis.depths.items()
        if depth.h1 and primary(analysis, depth) is not None
    }


def h2a(analysis: Analysis) -> dict[str, Call]:
    """H2a on the primary failure definition (the others are shown beside it)."""
    out = {}
    for name, depth in with_both_arms(analysis):
        by_def = depth.h2a_by_definition or {}
        definition = depth.h2a.definition or rules.PRIMARY_FAILURE
        out[name] = h2a_call(by_def.get(definition) or depth.h2a)
    return out


def h2b(analysis: Analysis) -> dict[str, Call]:
    """H2b at each rung: not judged where sweeps.study.rules.h2b_unjudged says so (it does not
    count), "incomplete" where a run of the sensitivity range is missing or failed."""
    s = analysis.settings
    out = {}
    for name, depth in with_both_arms(analysis):
        h, arms = depth.h2b, depth.arms
        off, on = arms[s.reference].sensitivity, arms[s.primary].sensitivity
        if h.why:
            trained = (s.rung_lr or {}).get(name, [])
            left_out = rules.left_out_lrs(off.lrs, trained)
            numbers = {"lrs": trained or off.lrs, "left_out": left_out}
            numbers["range"] = list(s.sensitivity_range)
            out[name] = Call(INCONCLUSIVE, h.why, numbers, counts=False)
        elif not (off.complete and on.complete):
            out[name] = Call(INCONCLUSIVE, "incomplete")
        else:
            out[name] = paired_call(h)
    return out


def paired_interval(of: Callable[[Rung], Paired | None]) -> Interval:
    """The interval of a rung's paired record (of: the rung's record, H1's stats, H2a, H2b)."""

    def found(analysis: Analysis) -> dict[str, list]:
        out = {}
        for name, depth in with_both_arms(analysis):
            record = of(depth)
            if record and record.ci90:
                out[name] = record.ci90
        return out

    return found


def h1_stats(depth: Rung) -> Paired | None:
    return depth.h1.stats if depth.h1 else None


def trend_interval(name: str) -> Interval:
    """A trend's slope interval, its censored thresholds at their bounds (the one that
    decides)."""

    def found(analysis: Analysis) -> dict[str, list]:
        t = trend_of(analysis, name)
        slope = t.at_bound if t else None
        return {"": slope.ci90} if slope and slope.ci90 else {}

    return found


# -- the ladder's trends: H3 (depth), W1 and W2 (width) -----------------------------------------
def trend(name: str) -> Decision:
    """A trend as the rulebook decided it (sweeps.study.trend.robust: analysis.h3, .w1, .w2),
    once the ladder has MIN_RUNGS rungs with both arms ("few rungs"), with the prediction, the
    design's power and the rungs whose removal reverses or changes it."""

    def decided(analysis: Analysis) -> Call:
        n = sum(primary(analysis, d) is not None for d in analysis.depths.values())
        if n < MIN_RUNGS:
            return Call(INCONCLUSIVE, "few rungs", {"n": n, "needs": MIN_RUNGS})
        t = trend_of(analysis, name)
        if t is None:
            return Call(INCONCLUSIVE, "")
        numbers = {
            "prediction": t.prediction,
            "power": t.power,
            "reversed": t.reversed_by or [],
            "fragile": t.fragile or [],
        }
        return Call(t.verdict, t.why or "", {k: v for k, v in numbers.items() if v is not None})

    return decided


def trend_hypothesis(name: str, section: int, field_name: str) -> Hypothesis:
    """A trend over one ladder's rungs, decided and bounded as sweeps.study.ladders decided it."""
    return Hypothesis(
        name,
        section,
        trend(name),
        ladders=(field_name,),
        trend=True,
        interval=trend_interval(name),
    )


# -- C1 ------------------------------------------------------------------------------------------
def c1(analysis: Analysis) -> dict[str, Call] | Call:
    """C1 as sweeps.study.alternatives.c1 decided it per rung (analysis.decisions.C1);
    "no control" where the spec names no start-matched control arm."""
    s = analysis.settings
    if not s.start_control:
        return Call(INCONCLUSIVE, "no control")
    control = rules.Comparison(s.start_control, s.primary).key
    decided = analysis.decisions.C1 or {}
    return {
        name: Call(decided[name].verdict, decided[name].why, {"n": decided[name].n})
        for name, depth in analysis.depths.items()
        if primary(analysis, depth) is not None and control in depth.comparisons and name in decided
    }


# every hypothesis a sweep decides, in report order (docs/STUDY.md sections 5 and 11)
HYPOTHESES: dict[str, Hypothesis] = {
    h.id: h
    for h in (
        Hypothesis("H1", 5, h1, interval=paired_interval(h1_stats)),
        Hypothesis("H2a", 5, h2a, interval=paired_interval(lambda depth: depth.h2a)),
        Hypothesis("H2b", 5, h2b, interval=paired_interval(lambda depth: depth.h2b)),
        trend_hypothesis("H3", 5, "n_layer"),
        trend_hypothesis("W1", 11, "n_embd"),
        trend_hypothesis("W2", 11, "n_embd"),
        Hypothesis("C1", 5, c1),
    )
}
