"""The report's budget check: do the verdicts hold with more tokens?

A spec can run the same comparison at two token budgets (sweeps/specs/cpu-budget.toml: `off`
and `on` at 1x, `off-4x` and `on-4x` at 4x the steps). This section pairs such comparisons
and puts their calls side by side, LR by LR: the paired effect (baseline minus treatment,
nats) with the two-sided 90% interval whose lower end is the one-sided 95% bound that
decides, whether the rule calls the treatment necessary there, and whether that call is the
same at both budgets. It reads the typed analysis alone (sweeps/analysis/model.py): two arms are
"the same recipe" when their configs agree in everything but the LR, the seed and the step
count (each arm's `recipe` there), so the pairing needs no naming convention.
"""

from __future__ import annotations

from figures import ladder, present
from figures.report.tables import markdown
from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.analysis.adapter import read, record

Pair = tuple[m.Comparison, m.Comparison]


def pairs(depth: m.Rung | dict) -> list[tuple]:
    """(comparison, the same comparison at a larger budget) at one rung, smaller first; in the
    form given: typed for a typed rung, each comparison's JSON form for a rung's JSON form (as
    figures/report/opening.py hands it)."""
    found = _pairs(_typed(m.Rung, depth))
    return found if isinstance(depth, m.Rung) else [(record(a), record(b)) for a, b in found]


def _pairs(depth: m.Rung) -> list[Pair]:
    arms = depth.arms

    def budget(c: m.Comparison) -> float | None:
        a, b = arms[c.baseline].budget, arms[c.treatment].budget
        return a if a == b else None  # a comparison across budgets is not one of these

    def recipe(c: m.Comparison) -> tuple:
        return arms[c.baseline].recipe, arms[c.treatment].recipe

    same_budget = [c for c in depth.comparisons.values() if budget(c) is not None]
    return [
        (small, large)
        for small in same_budget
        for large in sorted(same_budget, key=budget)
        if None not in recipe(small)
        and recipe(large) == recipe(small)
        and budget(large) > budget(small)
    ]


def call(entry: m.LrEffect | dict | None) -> str:
    """What the rule said at one LR: necessary, not necessary, or why it could not judge."""
    if entry is None:
        return "not run"
    entry = _typed(m.LrEffect, entry)
    if entry.necessary:
        return "necessary"
    if entry.judged:
        return "not necessary"
    if entry.ceiling:
        return "not judged (both failed)"
    if entry.partial_ceiling:
        return "not judged (both arms fail)"
    return "not judged (too few pairs)"


def held(small: m.Comparison | dict, large: m.Comparison | dict) -> tuple[list[float], list[float]]:
    """(LRs both budgets ran, those where the call differs)."""
    at = [_per_lr(_typed(m.Comparison, c)) for c in (small, large)]
    lrs = sorted(set(at[0]) & set(at[1]))
    return lrs, [lr for lr in lrs if call(at[0][lr]) != call(at[1][lr])]


def summary(rung: str, depth: m.Rung | dict) -> list[str]:
    """One line per budget pair, for the answer's opening and the terminal (rung: how the
    rung reads, 'depth 4')."""
    depth = _typed(m.Rung, depth)
    lines = []
    for small, large in _pairs(depth):
        lrs, differ = held(small, large)
        factor = depth.arms[large.baseline].budget / depth.arms[small.baseline].budget
        where = f"; they differ at {numbers.lrs(differ)}" if differ else ""
        lines.append(
            f"  {rung}: with {factor:.3g}x the tokens ({large.baseline} vs "
            f"{large.treatment}) the calls of {small.baseline} vs {small.treatment} "
            f"hold at {len(lrs) - len(differ)} of {len(lrs)} LRs{where}"
        )
    return lines


def section(result: m.Analysis | dict) -> str:
    """The markdown section, or "" when no comparison was run at two budgets."""
    a = present.typed(result)
    blocks = []
    for name in sorted(a.depths, key=int):
        depth = a.depths[name]
        for small, large in _pairs(depth):
            blocks.append(_pair(ladder.of_analysis(a).cap(name), depth, small, large))
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
            "own seed spread. The necessity threshold is only as fine as the LRs both budgets "
            "ran.",
            "",
            *blocks,
        ]
    )


def _typed(cls, x):
    """x as the typed record cls: as given, or read from its JSON form."""
    return x if isinstance(x, cls) else read(cls, x)


def _per_lr(c: m.Comparison) -> dict[float, m.LrEffect]:
    return {e.lr: e for e in c.per_lr}


def _pair(where: str, depth: m.Rung, small: m.Comparison, large: m.Comparison) -> str:
    tokens = [depth.arms[c.baseline].budget for c in (small, large)]
    sizes = [_budget(depth, t) for t in tokens]
    short = [f"{t / tokens[0]:.3g}x" for t in tokens]  # the column labels: 1x, 4x
    at = [_per_lr(c) for c in (small, large)]
    lrs, differ = held(small, large)
    rows = []
    for lr in lrs:
        calls = [call(a.get(lr)) for a in at]
        rows.append(
            [
                numbers.lr(lr),
                *(f"{_effect(a[lr])}: {c}" for a, c in zip(at, calls)),
                "yes" if calls[0] == calls[1] else "**no**",
            ]
        )
    title = (
        f"{where}: `{small.baseline} vs {small.treatment}` at {short[0]} "
        f"({sizes[0]}) against `{large.baseline} vs {large.treatment}` at {short[1]} "
        f"({sizes[1]}): the calls hold at {len(lrs) - len(differ)} of {len(lrs)} LRs."
    )
    outcomes = _outcomes(depth, small, large, lrs, short)
    thresholds = (
        f"Necessity threshold at {short[0]}: {numbers.threshold_with_interval(record(small))}; at "
        f"{short[1]}: {numbers.threshold_with_interval(record(large))}."
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
    return numbers.effect(record(entry)) if entry.judged else numbers.num(entry.mean)


def _budget(depth: m.Rung, tokens: float) -> str:
    per = depth.tokens_per_param.by_budget.get(str(int(tokens)))
    return f"{int(tokens):,} tokens" + (f", {per:.3g} per parameter" if per else "")
