"""The decisions that compare arms beyond the primary comparison, on typed inputs: C1 (the
start-temperature control, docs/STUDY.md section 5) and I1-I4 (QK-norm against the cheaper
fixes, section 9). Each returns a Decision: the verdict, a short reason code the report words
(figures/words/verdicts.py, figures/words/intervention_verdicts.py), and the LRs and the LR whose
numbers
the reason quotes. The per-LR calls come from sweeps.study.rules.lr_calls.
"""

from __future__ import annotations

import math
from typing import NamedTuple, TypeVar

from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, LRCall
from sweeps.study.stats import GridValue

RANK = {"below": -1, "": 0, "above": 1}  # a censored critical LR orders beyond its grid end
MIN_HIGH_LRS = 2  # I2 needs this many judged LRs at or above off's critical LR


class Decision(NamedTuple):
    verdict: str
    why: str  # a code the report words
    lrs: tuple[float, ...] = ()  # the LRs the reason names
    at: float | None = None  # the LR whose numbers the reason quotes
    n: int = 0  # how many LRs the rule looked at


def _judged(calls: list[LRCall]) -> list[LRCall]:
    return [c for c in calls if c.judged]


def _at(calls: list[LRCall], lr: float | None) -> LRCall | None:
    if lr is None:
        return None
    return next((c for c in calls if math.isclose(c.lr, lr)), None)


def above(a: GridValue | None, b: GridValue | None) -> bool:
    """Is critical LR a above b (censored ends order beyond the grid)?"""
    if a is None or b is None or a.kind not in RANK or b.kind not in RANK:
        return False
    return (a.value, RANK[a.kind]) > (b.value, RANK[b.kind])


# -- C1 ----------------------------------------------------------------------------------------
Call = TypeVar("Call")  # a per-LR call: an LRCall, or its typed JSON form (an LrEffect)


def c1_lrs(primary: list[Call], control: list[Call]) -> list[tuple[Call, Call]]:
    """The LRs C1 looks at, as (primary call, control call) in the control's order: both
    judged and QK-norm necessary on the primary comparison (elsewhere there is no gap to
    explain). Each call: anything with `lr`, `judged` and `necessary`."""
    by_lr = {c.lr: c for c in primary if c.judged}
    return [
        (by_lr[c.lr], c) for c in control if c.judged and c.lr in by_lr and by_lr[c.lr].necessary
    ]


def c1(primary: list[LRCall], control: list[LRCall]) -> Decision:
    """At every LR where QK-norm is necessary on the primary comparison and the control's gap
    to `on` is judged (c1_lrs): supported when the gap is equivalent to zero everywhere; not
    supported when the control is itself worse by a necessary margin somewhere; else
    inconclusive."""
    outcomes = [
        NOT_SUPPORTED if c.necessary else SUPPORTED if c.equivalent else ""
        for _, c in c1_lrs(primary, control)
    ]
    if not outcomes:
        return Decision(INCONCLUSIVE, "no gap")
    if NOT_SUPPORTED in outcomes:
        return Decision(NOT_SUPPORTED, "control worse", n=len(outcomes))
    if set(outcomes) == {SUPPORTED}:
        return Decision(SUPPORTED, "start", n=len(outcomes))
    return Decision(INCONCLUSIVE, "neither", n=len(outcomes))


def start_share(gap: float | None, control_gap: float | None) -> float | None:
    """The start-temperature share of a low-LR gap (docs/STUDY.md section 12): the part of
    `off - on` that starting `off` at `on`'s logit scale removes, 1 - (control - on) / (off -
    on), from the mean paired effects. None where there is no positive gap to share out: a
    share of a gap at or below zero says nothing. Below 0 when the control is further from
    `on` than `off` is; above 1 when it overshoots `on`."""
    if gap is None or control_gap is None or not gap > 0:
        return None
    return 1.0 - control_gap / gap


# -- I1-I4 -------------------------------------------------------------------------------------
def i1(threshold: GridValue, crit_x: GridValue | None, crit_off: GridValue | None) -> Decision:
    """X stabilises off: `off vs X` has a stability threshold in the grid (or at its bottom)
    and X's median critical LR is above off's; not supported: no threshold while off fails
    inside the grid."""
    if threshold.kind in ("", "below") and above(crit_x, crit_off):
        return Decision(SUPPORTED, "needed")
    if threshold.kind == "none" and crit_off is not None and crit_off.kind == "":
        return Decision(NOT_SUPPORTED, "not needed")
    return Decision(INCONCLUSIVE, "neither")


def i2(vs_on: list[LRCall], crit_off: GridValue | None) -> Decision:
    """X matches QK-norm where off breaks: over the judged LRs of `X vs on` at or above off's
    median critical LR, supported when QK-norm is necessary over X at none, not supported at
    any, inconclusive below MIN_HIGH_LRS such LRs."""
    if crit_off is None or crit_off.kind not in ("", "below"):
        return Decision(INCONCLUSIVE, "off does not break")
    high = [c for c in _judged(vs_on) if crit_off.kind == "below" or c.lr >= crit_off.value]
    needed = [c for c in high if c.necessary]
    if needed:
        worst = max(needed, key=lambda c: c.stat.mean)
        return Decision(
            NOT_SUPPORTED, "necessary", tuple(c.lr for c in needed), worst.lr, len(high)
        )
    if len(high) < MIN_HIGH_LRS:
        return Decision(INCONCLUSIVE, "too few", n=len(high))
    return Decision(SUPPORTED, "matches", n=len(high))


def i3(
    primary: list[LRCall], vs_on: list[LRCall], lowest: float | None, min_effect: float
) -> Decision:
    """X closes the low-LR gap: only where QK-norm is necessary at the lowest base LR on the
    primary comparison; there `X vs on` equivalent to zero (or X shown better: upper bound
    below -m) supports, QK-norm necessary over X does not."""
    at = _at(primary, lowest)
    if at is None or not at.judged:
        return Decision(INCONCLUSIVE, "primary not judged", at=lowest)
    if not at.necessary:
        return Decision(INCONCLUSIVE, "no gap", at=lowest)
    gap = _at(vs_on, lowest)
    if gap is None or not gap.judged:
        return Decision(INCONCLUSIVE, "not judged", at=lowest)
    if gap.necessary:
        return Decision(NOT_SUPPORTED, "necessary", at=lowest)
    if gap.equivalent or gap.stat.upper < -min_effect:
        return Decision(SUPPORTED, "closes", at=lowest)
    return Decision(INCONCLUSIVE, "neither", at=lowest)


def i4(vs_on: list[LRCall], min_effect: float) -> Decision:
    """X adds to QK-norm (d = L(X) - L(on)): supported when the upper bound of d is below -m
    at some judged LR and the lower bound <= m at every one; not supported when it hurts
    somewhere (lower bound > m) or helps nowhere."""
    judged = _judged(vs_on)
    if not judged:
        return Decision(INCONCLUSIVE, "none judged")
    hurts = [c for c in judged if c.stat.lower > min_effect]
    helps = [c for c in judged if c.stat.upper < -min_effect]
    if hurts:
        worst = max(hurts, key=lambda c: c.stat.mean)
        return Decision(NOT_SUPPORTED, "hurts", tuple(c.lr for c in hurts), worst.lr, len(judged))
    if helps:
        best = min(helps, key=lambda c: c.stat.mean)
        return Decision(SUPPORTED, "helps", tuple(c.lr for c in helps), best.lr, len(judged))
    return Decision(NOT_SUPPORTED, "no help", n=len(judged))


def intervention_arms(
    arms: list[str],
    comparisons: set[tuple[str, str]],
    values: dict[str, dict | None],
    qk_norm: dict[str, str | None],
    reference: str,
    primary: str,
) -> list[str]:
    """The arms I1-I4 judge, in spec order: other than reference and primary, compared with
    both, and switching an intervention of sweeps/core/interventions.py on or changing it (its
    values differ from its base arm's: the primary when it shares the primary's qk_norm, else
    the reference). A start-temperature control (`off-warm`, `on-cool`) changes none: it is no
    intervention, and I1-I4 do not judge it."""

    def switches(arm: str) -> bool:
        base = primary if qk_norm.get(arm) == qk_norm.get(primary) else reference
        mine, theirs = values.get(arm), values.get(base)
        return mine is not None and theirs is not None and mine != theirs

    return [
        a
        for a in arms
        if a not in (reference, primary)
        and (reference, a) in comparisons
        and (a, primary) in comparisons
        and switches(a)
    ]


def builds_on_primary(arm: str, qk_norm: dict[str, str | None], primary: str) -> bool:
    """An intervention arm built on the primary (its qk_norm): judged by I4, else by I1-I3."""
    return qk_norm.get(arm) == qk_norm.get(primary)
