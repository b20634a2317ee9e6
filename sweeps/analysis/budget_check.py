"""The budget check, laid out (docs/STUDY.md section 2: do the calls hold with more tokens?).

A spec can run the same comparison at two token budgets (sweeps/specs/cpu-budget.toml: `off`
and `on` at 1x, `off-4x` and `on-4x` at 4x the steps). Two comparisons are a pair when each
compares arms at one budget, the larger budget is larger, and their arms train the same
recipes (each arm's config apart from the LR, the seed and the step count: Arm.recipe), so the
pairing needs no naming convention. At each LR both budgets ran, the rule's call
(sweeps.study.rules.lr_call) is compared; sweeps.study.rules.budget_held turns the count of
LRs where they differ into the answer figures/report/budget.py words.
"""

from __future__ import annotations

from sweeps.analysis import model as m
from sweeps.study import rules


def pairs(rung: m.Rung) -> list[m.BudgetPair]:
    """Every (comparison, the same comparison at a larger budget) at one rung, smaller first."""
    arms = rung.arms

    def budget(c: m.Comparison) -> float | None:
        a, b = arms[c.baseline].budget, arms[c.treatment].budget
        return a if a == b else None  # a comparison across budgets is not one of these

    def recipe(c: m.Comparison) -> tuple:
        return arms[c.baseline].recipe, arms[c.treatment].recipe

    same_budget = [(k, c) for k, c in rung.comparisons.items() if budget(c) is not None]
    return [
        _pair(small_key, small, large_key, large, budget(large) / budget(small))
        for small_key, small in same_budget
        for large_key, large in sorted(same_budget, key=lambda kc: budget(kc[1]))
        if None not in recipe(small)
        and recipe(large) == recipe(small)
        and budget(large) > budget(small)
    ]


def _pair(
    small_key: str, small: m.Comparison, large_key: str, large: m.Comparison, factor: float
) -> m.BudgetPair:
    at = [{e.lr: _call(e) for e in c.per_lr} for c in (small, large)]
    lrs = sorted(set(at[0]) & set(at[1]))
    calls = {lr: [at[0][lr], at[1][lr]] for lr in lrs}
    differ = [lr for lr in lrs if at[0][lr] != at[1][lr]]
    return m.BudgetPair(
        small_key, large_key, factor, calls, differ, rules.budget_held(len(lrs), len(differ))
    )


def _call(e: m.LrEffect) -> str:
    return rules.lr_call(e.necessary, e.judged, e.ceiling, e.partial_ceiling)
