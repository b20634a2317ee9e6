"""The rules figures/report/opening.py words but does not decide (issue 48: figures/ decides
nothing): the budget check's pairs, calls and answer, whether no arm's runs failed inside the
grid, the LRs C1 looks at, and W2's bound, each on small hand-made input with its edge cases."""

import dataclasses
import inspect
from typing import NamedTuple

from sweeps.analysis import model as m
from sweeps.study import alternatives, ladders, rules, trend
from sweeps.study.rules import LRCall
from sweeps.study.stats import GridValue


def test_the_budget_check_holds_partly_or_changes_by_the_lrs_whose_call_differs():
    assert rules.budget_held(5, 0) == rules.CALLS_HOLD
    assert rules.budget_held(5, 2) == rules.CALLS_PARTLY
    assert rules.budget_held(5, 5) == rules.CALLS_CHANGE
    assert rules.budget_held(1, 1) == rules.CALLS_CHANGE
    # no LR run at both budgets: no call held
    assert rules.budget_held(0, 0) == rules.CALLS_CHANGE
    assert len({rules.CALLS_HOLD, rules.CALLS_PARTLY, rules.CALLS_CHANGE}) == 3


def test_the_call_at_one_lr_is_necessary_not_necessary_or_why_not_judged():
    assert rules.lr_call(True, True, False, False) == rules.NECESSARY
    assert rules.lr_call(False, True, False, False) == rules.NOT_NECESSARY
    assert rules.lr_call(False, False, True, False) == rules.BOTH_FAILED
    assert rules.lr_call(False, False, False, True) == rules.BOTH_ARMS_FAIL
    assert rules.lr_call(False, False, False, False) == rules.TOO_FEW_PAIRS


def _effect(lr, necessary, judged=True):
    return m.LrEffect(
        n=4, mean=0.1, sd=0.1, sd_used=0.1, lower=0.0, upper=0.2, ci90=[0.0, 0.2], lower75=0.0,
        lr=lr, judged=judged, necessary=necessary,
    )  # fmt: skip


def _arm(budget, recipe):
    fields = {f.name: None for f in dataclasses.fields(m.Arm)}
    return m.Arm(**fields | {"budget": budget, "recipe": recipe})


def _comparison(baseline, treatment, per_lr):
    fields = {f.name: None for f in dataclasses.fields(m.Comparison)}
    return m.Comparison(**fields | {"baseline": baseline, "treatment": treatment, "per_lr": per_lr})


def test_the_budget_check_pairs_the_same_recipes_at_two_budgets_and_finds_where_calls_differ():
    from sweeps.analysis import budget_check

    arms = {
        "off": _arm(1e6, "a"), "on": _arm(1e6, "b"),
        "off-4x": _arm(4e6, "a"), "on-4x": _arm(4e6, "b"),
        "x": _arm(1e6, None),  # no recipe: pairs with nothing
    }  # fmt: skip
    small = _comparison("off", "on", [_effect(1e-2, True), _effect(1e-1, True)])
    large = _comparison("off-4x", "on-4x", [_effect(1e-2, False), _effect(1e-1, True)])
    across = _comparison("off", "off-4x", [_effect(1e-2, False)])  # two budgets: not a pair
    other = _comparison("x", "on", [_effect(1e-2, False, judged=False)])
    comparisons = {"off vs on": small, "off-4x vs on-4x": large, "off vs off-4x": across}
    rung = m.Rung(arms, comparisons | {"x vs on": other}, {}, None)
    (pair,) = budget_check.pairs(rung)
    assert (pair.small, pair.large, pair.factor) == ("off vs on", "off-4x vs on-4x", 4.0)
    assert pair.calls == {1e-2: [rules.NECESSARY, rules.NOT_NECESSARY], 1e-1: ["necessary"] * 2}
    assert pair.differ == [1e-2] and pair.answer == rules.CALLS_PARTLY
    assert budget_check.pairs(m.Rung(arms, {"off vs on": small}, {}, None)) == []


def test_no_arm_failed_only_where_every_median_is_above_the_same_top():
    top = GridValue(1e-2, "above")
    assert rules.common_top([top, GridValue(1e-2, "above")]) == 1e-2
    assert rules.common_top([top]) == 1e-2
    # the typed analysis's GridPoint reads alike
    assert rules.common_top([m.GridPoint(3e-3, "above", None, False)] * 2) == 3e-3
    assert rules.common_top([top, GridValue(3e-3)]) is None  # one arm failed inside the grid
    assert rules.common_top([top, GridValue(3e-2, "above")]) is None  # tops differ
    assert rules.common_top([top, None]) is None  # an arm without a median
    assert rules.common_top([top, GridValue(1e-4, "below")]) is None
    assert rules.common_top([]) is None


def _call(lr, judged=True, necessary=False, equivalent=False):
    return LRCall(lr, judged, necessary, equivalent, None)


def test_c1_looks_where_both_are_judged_and_qk_norm_is_necessary():
    primary = [
        _call(1e-4, necessary=True),
        _call(3e-4, necessary=True),
        _call(1e-3),  # not necessary: no gap to explain
        _call(3e-3, judged=False, necessary=True),  # not judged
        _call(1e-2, necessary=True),  # the control did not run it
    ]
    control = [
        _call(3e-4, equivalent=True),
        _call(1e-4, necessary=True),
        _call(1e-3, equivalent=True),
        _call(3e-3, equivalent=True),
        _call(3e-2, equivalent=True),  # the primary did not run it
    ]
    got = alternatives.c1_lrs(primary, control)
    assert [(p.lr, c.lr) for p, c in got] == [(3e-4, 3e-4), (1e-4, 1e-4)]  # control's order
    assert got[0] == (primary[1], control[0])
    assert alternatives.c1_lrs(primary, []) == [] and alternatives.c1_lrs([], control) == []
    assert alternatives.c1_lrs(primary, [_call(1e-4, judged=False)]) == []  # control not judged
    assert alternatives.c1(primary, control).why == "control worse"
    assert alternatives.c1(primary, control[:1]).why == "start"
    assert alternatives.c1(primary, control[2:]).why == "no gap"


class _Effect(NamedTuple):  # the fields of the typed analysis's LrEffect C1 reads
    lr: float
    judged: bool
    necessary: bool


def test_c1_lrs_reads_any_call_with_lr_judged_and_necessary():
    primary = [_Effect(1e-4, True, True), _Effect(3e-4, True, False)]
    control = [_Effect(3e-4, True, False), _Effect(1e-4, True, False)]
    assert alternatives.c1_lrs(primary, control) == [(primary[0], control[1])]


def test_w2s_bound_is_the_one_the_carry_decision_uses_by_default():
    assert ladders.CARRY_BOUND == 0.15
    assert inspect.signature(trend.carry).parameters["bound"].default == ladders.CARRY_BOUND
