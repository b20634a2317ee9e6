"""The report's budget check: do the verdicts hold with more tokens?

A spec can run the same comparison at two token budgets (sweeps/specs/cpu-budget.toml: `off`
and `on` at 1x, `off-4x` and `on-4x` at 4x the steps). This section pairs such comparisons
and puts their calls side by side, LR by LR: the paired effect (baseline minus treatment,
nats) with the two-sided 90% interval whose lower end is the one-sided 95% bound that
decides, whether the rule calls the treatment necessary there, and whether that call is the
same at both budgets. It words the typed analysis alone: which comparisons pair, the calls
and where they differ are the analysis's (sweeps/analysis/budget_check.py, in
Analysis.decisions.budget).
"""

from __future__ import annotations

from figures import present
from figures.report.tables import markdown
from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.analysis.adapter import read
from sweeps.study import rules

# the rule's call at one LR (sweeps.study.rules.lr_call's codes) as the table says it
CALL_WORDS = {
    rules.NECESSARY: "necessary",
    rules.NOT_NECESSARY: "not necessary",
    rules.BOTH_FAILED: "not judged (both failed)",
    rules.BOTH_ARMS_FAIL: "not judged (both arms fail)",
    rules.TOO_FEW_PAIRS: "not judged (too few pairs)",
}


def call(entry: m.LrEffect | dict | None) -> str:
    """What the rule said at one LR, in words: necessary, not necessary, or why it could not
    judge; "not run" where the comparison has no entry there."""
    if entry is None:
        return "not run"
    e = entry if isinstance(entry, m.LrEffect) else read(m.LrEffect, entry)
    return CALL_WORDS[e.call]


def summary(a: m.Analysis, rung: str) -> list[str]:
    """One line per budget pair at a rung (the analysis's decisions), for the answer's opening
    and the terminal."""
    depth, lines = a.depths[rung], []
    for p in a.decisions.budget.get(rung, []):
        small, large = depth.comparisons[p.small], depth.comparisons[p.large]
        where = f"; they differ at {numbers.lrs(p.differ)}" if p.differ else ""
        lines.append(
            f"  {present.ladder_of(a).label(rung)}: with {p.factor:.3g}x the tokens "
            f"({large.baseline} vs {large.treatment}) the calls of {small.baseline} vs "
            f"{small.treatment} hold at {len(p.calls) - len(p.differ)} of {len(p.calls)} "
            f"LRs{where}"
        )
    return lines


def section(a: m.Analysis) -> str:
    """The markdown section, or "" when no comparison was run at two budgets."""
    blocks = []
    for name in sorted(a.decisions.budget, key=int):
        for p in a.decisions.budget[name]:
            blocks.append(_pair(present.ladder_of(a).cap(name), a.depths[name], p))
    if not blocks:
        return ""
    return "\n".join(
        [
            "### Budget check: do the calls hold with more tokens?",
            "",
            "The same comparison at two token budgets (arms that differ only in the step "
            "count), LR by LR: the paired effect (baseline minus treatment, nats) with its "
            "two-sided 90% interval, whose ends are the one-sided 95% bounds that decide "
            "(docs/STUDY.md section 4), the rule's call, and whether the call is the same at "
            "both budgets; "
            f"{numbers.FLOORED}: an interval the precision floor widened beyond this LR's "
            "own seed spread. The stability threshold is only as fine as the LRs both budgets "
            "ran.",
            "",
            *blocks,
        ]
    )


def _pair(where: str, depth: m.Rung, p: m.BudgetPair) -> str:
    small, large = depth.comparisons[p.small], depth.comparisons[p.large]
    tokens = [depth.arms[c.baseline].budget for c in (small, large)]
    sizes = [_budget(depth, t) for t in tokens]
    short = [f"{t / tokens[0]:.3g}x" for t in tokens]  # the column labels: 1x, 4x
    at = [{e.lr: e for e in c.per_lr} for c in (small, large)]
    rows = [
        [
            numbers.lr(lr),
            *(f"{_effect(a[lr])}: {CALL_WORDS[c]}" for a, c in zip(at, calls)),
            "**no**" if lr in p.differ else "yes",
        ]
        for lr, calls in sorted(p.calls.items())  # JSON keeps the keys as sorted strings
    ]
    held = len(p.calls) - len(p.differ)
    title = (
        f"{where}: `{small.baseline} vs {small.treatment}` at {short[0]} "
        f"({sizes[0]}) against `{large.baseline} vs {large.treatment}` at {short[1]} "
        f"({sizes[1]}): the calls hold at {held} of {len(p.calls)} LRs."
    )
    outcomes = _outcomes(depth, small, large, sorted(p.calls), short)
    thresholds = (
        f"Stability threshold at {short[0]}: {numbers.threshold_with_interval(small)}; "
        f"at {short[1]}: {numbers.threshold_with_interval(large)}."
    )
    table = markdown(["LR", *(f"{s}: effect [90% CI]: call" for s in short), "holds"], rows)
    return "\n".join([title, "", table, "", thresholds, "", outcomes, ""])


def _outcomes(
    depth: m.Rung, small: m.Comparison, large: m.Comparison, lrs: list, labels: list
) -> str:
    """Each arm's runs at both budgets: outcomes and seed-mean effective loss per LR."""
    rows = []
    for role in ("baseline", "treatment"):
        arms = [getattr(x, role) for x in (small, large)]
        cells = [{c.lr: c for c in depth.arms[x].cells} for x in arms]
        for lr in lrs:
            rows.append(
                [
                    f"{arms[0]} / {arms[1]}",
                    numbers.lr(lr),
                    *(_cell(c.get(lr)) for c in cells),
                ]
            )
    return markdown(["arms", "LR", *(f"{s}: mean loss (runs)" for s in labels)], rows)


def _cell(cell: m.Cell | None) -> str:
    if cell is None:
        return "-"
    counts = ", ".join(f"{n} {o}" for o, n in cell.outcomes.items() if n)
    return f"{numbers.num(cell.loss_mean)} ({counts})"


def _effect(entry: m.LrEffect) -> str:
    return numbers.effect(entry) if entry.judged else numbers.num(entry.mean)


def _budget(depth: m.Rung, tokens: float) -> str:
    per = depth.tokens_per_param.by_budget.get(str(int(tokens)))
    return f"{int(tokens):,} tokens" + (f", {per:.3g} per parameter" if per else "")
