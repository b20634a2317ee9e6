"""The practitioner's rule per rung, in words: where QK-norm becomes necessary as a multiple of
the best LR without it, where each arm starts to fail, and which single runs the threshold
rests on (leave-one-run-out), from the typed analysis's decisions (sweeps/study/rules.py)."""

from __future__ import annotations

import math

from figures import present
from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.analysis.run_table import left_out_below
from sweeps.study import hypotheses, rules
from sweeps.study.rules import Rule
from sweeps.study.stats import MIN_PAIRS


def practitioner_rules(a: m.Analysis) -> dict[str, str]:
    """Per rung, the rule a practitioner can use, in short sentences (the runs whose removal
    alone moves the threshold are the comparison's `influence`)."""
    out = {}
    for name, depth in a.depths.items():
        c = hypotheses.primary(a, depth)
        if c is None:
            continue
        rule = a.decisions.rules.get(name)
        if rule is None:
            continue
        lost = left_out_below(a, name, a.settings.reference, rule.best_lr)
        text = _rule_text(present.ladder_of(a).label(name), depth, c, a.settings, rule, lost)
        out[name] = text
    return out


def _rule_text(
    where: str, depth: m.Rung, c: m.Comparison, s: m.Settings, rule: Rule, lost=()
) -> str:
    """The rule sweeps.study.rules.practitioner_rule decided, in short sentences."""
    ref = depth.arms[s.reference]
    # the budget of the compared arms (a budget spec also runs arms with more tokens)
    tokens = depth.tokens_per_param.by_budget.get(str(int(ref.budget)), math.nan)
    parts = rule_parts(depth, c, s, rule, lost)
    text = " ".join(p for p in parts.values() if p)
    return f"At {where} ({numbers.num(tokens, 2)} tokens/parameter): {text[0].lower()}{text[1:]}"


def rule_parts(
    depth: m.Rung, c: m.Comparison, s: m.Settings, rule: Rule, lost=()
) -> dict[str, str]:
    """The practitioner's rule as short sentences, by what each says (figures/report/opening.py
    shows them as bullets): "head" (the best LR without QK-norm), "threshold" (where QK-norm
    is necessary, in absolute LRs and in multiples of that best LR), "seeds" (the threshold
    per seed), "failing" (where the reference arm's runs start to fail), "low" (the low-LR
    effect, named apart from the high-LR stability effect) and "fragile" (runs that alone move
    the threshold); "" where a part has nothing to say. lost: the LRs below the best at which
    the reference arm's runs were left out (sweeps.analysis.run_table.left_out_below)."""
    ref = depth.arms[s.reference]
    best, low = rule.best_lr, list(rule.low_lrs)
    times = (lambda x: f"{x / best:.3g}x") if best else (lambda x: "n/a")
    edge = (
        f", the lowest LR with finished runs (its runs at {numbers.lrs(lost)} are left out: "
        "named in the report): its best may lie lower, so each multiple of it below is a "
        "lower bound"
        if rule.best_at_bottom and lost
        else ", the lowest LR it ran: its best may lie lower, so each multiple of it below is a "
        "lower bound"
        if rule.best_at_bottom
        else ""
    )
    head = (
        f"Without QK-norm the best LR is {numbers.lr(best)}{edge}."
        if best
        else "No best LR was found."
    )
    seeds = ""
    if rule.kind == "":
        lo, hi = rule.bracket
        threshold = (
            f"QK-norm is necessary from LR {numbers.lr(hi)} up ({times(hi)} that best LR); at "
            f"{numbers.lr(lo)} ({times(lo)}) it was not shown necessary. The threshold lies in "
            f"({numbers.lr(lo)}, {numbers.lr(hi)}]"
            + (
                f", at ~{numbers.lr(c.threshold.value)} interpolated"
                if c.threshold.interpolated
                else ""
            )
            + "."
        )
        seeds = f"Per seed: {numbers.seed_brackets(c.seed_thresholds)}."
    elif rule.kind == "below":
        threshold = (
            f"QK-norm was necessary already at the lowest LR judged "
            f"({numbers.lr(c.threshold.value)}) and at every LR above: keep it at every LR "
            "of this grid."
        )
    elif rule.top_lr is None:
        # a sweep still training (or one seed short): say so, not "up to n/a"
        threshold = (
            f"No LR could be judged yet: the rule needs at least {MIN_PAIRS} seeds with both "
            "arms' runs finished at an LR (a sweep still training); rerun `figures` when more "
            "have finished."
        )
    else:
        top = rule.top_lr
        threshold = (
            f"QK-norm was not shown necessary at any LR up to {numbers.lr(top)} (the top LR "
            f"judged; {times(top)} that best LR)."
        )
    control = (
        "The start-temperature control tests that (C1)."
        if s.start_control
        else "This sweep has no control arm to tell."
    )
    movers = {str(x.run_id) for x in c.influence}
    at = sorted({x.lr for x in c.influence if x.lr is not None})
    return {
        "head": head,
        "threshold": threshold,
        "seeds": seeds,
        "failing": _failing(ref.eta_crit, s) + ".",
        "low": (
            f"Separately, QK-norm also helped below that best LR: at {numbers.lrs(low)}. This "
            f"low-LR effect may be the start temperature, not stability. {control}"
            if low and rule.kind != "below"
            else ""
        ),
        "fragile": (
            f"{_runs(len(movers))}"
            + (f" at LR {numbers.lrs(at)}" if at else "")
            + (" moves" if len(movers) == 1 else " each move")
            + f" the threshold when left out, to {numbers.moved_to(c.influence)} "
            "(leave-one-run-out; named in the thresholds table)."
            if movers
            else ""
        ),
    }


def _runs(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def _failing(crit: m.CriticalLRs, s: m.Settings) -> str:
    """Where the reference arm's runs start to fail (its median critical LR), censoring said
    in words: a critical LR above the grid in every seed means its runs did not fail at all;
    above it in the median only, that some seeds failed. With the bigram-baseline rule off
    (settings s) no run is stuck: they fail by diverging."""
    median = crit.median
    if not median or median.kind == "none":
        return "Without QK-norm no critical LR could be found"
    if rules.median_hides_failures(crit):
        return (
            f"Without QK-norm runs failed in {rules.failed_seeds(crit)} of {len(crit.seeds)} "
            f"seeds inside the grid (from LR {numbers.grid(crit.min)}); the median critical LR "
            f"is above LR {numbers.lr(median.value)}, the grid's top"
        )
    if median.kind == "above":
        top = numbers.lr(median.value)
        return f"Without QK-norm runs did not fail up to LR {top}, the grid's top"
    if median.kind == "below":
        return f"Without QK-norm runs fail already at the lowest LR, {numbers.lr(median.value)}"
    how = "diverged" if s.baseline_rule == "none" else "stuck or diverged"
    return f"Without QK-norm runs fail ({how}) from LR ~{numbers.grid(median)}"
