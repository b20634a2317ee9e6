"""The answer a practitioner reads first: the report's opening, and what `figures` prints.

It answers what the sweep was built to ask before anything else: QK-norm against each cheaper
fix (a spec with intervention arms: I1-I4), the start temperature (a start-matched control:
C1), the trend along a ladder (with depth: H3; with width: W1, W2 and the line carried to the
core width), whether the calls hold with more tokens (a budget check); then where QK-norm is
necessary against no QK-norm at each rung (depth or width, sweeps/core/ladder.py); last every
verdict with what it means and the interval that decided it. Short sentences, one point each. It
words the analysis and decides nothing: every number comes from there.

Its entry points (`blocks`, `terminal`, `markdown`) take the analysis in words (a `Said`,
figures/words/view.py: the typed Analysis with its verdicts and the interventions' verdicts in
words), as figures/report/assemble.py and figures/cli.py hand it. The shared formatters
(figures/words/numbers.py, budget.py, practitioner.rule_parts, token_check.lines,
extrapolation.py, present.crit_interval) still read a record's JSON form
(sweeps.analysis.adapter.record).
"""

from __future__ import annotations

from figures import present
from figures.report import budget
from figures.report.opening_costs import costs, logit_growth
from figures.report.opening_lines import (
    WHEN,
    c1_rows,
    c1_says,
    h1_says,
    h2a_says,
    h2b_says,
    nats,
    question,
    trend_says,
)
from figures.words import numbers, token_check
from figures.words.extrapolation import extrapolation_head, extrapolation_lines
from figures.words.hypotheses import UNREGISTERED
from figures.words.practitioner import rule_parts
from figures.words.said import Verdict
from figures.words.verdicts import share_text
from figures.words.view import Said
from sweeps.analysis import model as m
from sweeps.analysis.adapter import record
from sweeps.analysis.run_table import left_out_below
from sweeps.core.ladder import Ladder
from sweeps.study import hypotheses, rules
from sweeps.study.hypotheses import HYPOTHESES
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from sweeps.study.trend import RULED_OUT

ANSWER = {SUPPORTED: "Yes", NOT_SUPPORTED: "No", INCONCLUSIVE: "Not decided", RULED_OUT: "No"}

# A bullet: its text, or its text with sub-bullets (the numbers behind it).
Item = str | tuple[str, list[str]]
Block = tuple[str, list[Item]]  # a title and its bullets


def blocks(said: Said) -> list[Block]:
    """The opening, question by question (none before any run finished). said: the analysis in
    words (figures/words/view.py)."""
    a = said.analysis
    if not a.depths:
        return []
    verdicts = said.verdicts  # figures/words/verdicts.py's
    judged = said.interventions  # figures/words/intervention_verdicts.py's
    found = [
        _toy(a),
        _interventions(a, judged),
        _control(a),
        _trend(a, verdicts),
        _token_check(a),
        _budget(a),
        _off_on(a, verdicts),
        costs(a),
        _verdicts(a, verdicts),
    ]
    return [b for b in found if b and b[1]]


def terminal(said: Said) -> list[str]:
    """The opening as the terminal prints it: titles, then indented bullets."""
    lines = []
    for title, items in blocks(said):
        lines.append(title)
        for item in items:
            text, subs = (item, []) if isinstance(item, str) else item
            lines += [f"  - {text}", *(f"    - {s}" for s in subs)]
    return lines


def markdown(said: Said) -> list[str]:
    """The opening as report.md shows it: bold titles, then bullet lists."""
    lines = []
    for title, items in blocks(said):
        lines += [f"**{title}**", ""]
        for item in items:
            text, subs = (item, []) if isinstance(item, str) else item
            lines += [f"- {text}", *(f"  - {s}" for s in subs)]
        lines.append("")
    return lines


# -- whether the runs say anything at all -------------------------------------------------------
def _toy(a: m.Analysis) -> Block | None:
    """A sweep none of whose arms beats the bigram baseline (the analysis's baseline_check,
    decided by sweeps.study.rules.baseline_check): it demonstrates the harness, and says so
    before anything it computed."""
    check = a.baseline_check
    if check.beaten is not False:
        return None
    best = check.best
    arms = [x for x in a.settings.arms if x in best] + sorted(set(best) - set(a.settings.arms))
    each = ", ".join(f"{arm} {best[arm]:.3f}" for arm in arms)
    return (
        "A harness demonstration, not an answer: no arm beats the bigram baseline, so nothing "
        "below is about QK-norm",
        [
            f"Every arm's best run (its lowest final loss at any LR and seed) ends worse than "
            f"the corpus's bigram baseline, {check.baseline:.3f} nats: {each}. These runs "
            "have not learned what counting pairs of tokens gives, so what follows only shows "
            "the harness running end to end; QK-norm's effect on them is no evidence either "
            "way."
        ],
    )


# -- what the sweep was built to ask -------------------------------------------------------------
I_QUESTION = {
    "I1": "Does it stabilise {ref}? (I1: necessary against {ref} somewhere, and its runs fail "
    "at a higher LR than {ref}'s)",
    "I2": "Does it match QK-norm where {ref} breaks? (I2: {primary} necessary over it at no LR "
    "from {ref}'s critical LR up)",
    "I3": "Does it close the low-LR gap? (I3: {primary} no longer necessary over it at the "
    "lowest LR)",
    "I4": "Does it add to QK-norm? (I4: better than {primary} somewhere, worse nowhere)",
}


def _intervention_arms(a: m.Analysis) -> list[str]:
    """The arms I1-I4 judged, in spec order
    (figures.words.intervention_verdicts.intervention_arms)."""
    judged = set()
    for arms in a.decisions.interventions.values():
        judged |= set(arms)
    return [x for x in a.settings.arms if x in judged]


def _interventions(a: m.Analysis, judged: dict) -> Block | None:
    """QK-norm against each cheaper fix (I1-I4): per question the arms it holds for and not,
    then each arm's reason with the interval that decided it (one depth), or where to find
    them (several). judged: {rung: {arm: {"I1": its verdict and reason}}}
    (figures/words/intervention_verdicts.py's words)."""
    if not judged:
        return None
    s = a.settings
    ref, primary = s.reference, s.primary
    order = _intervention_arms(a)
    rung = present.ladder_of(a)
    depths = sorted(judged, key=int)
    items: list[Item] = []
    for h in ("I1", "I2", "I3", "I4"):
        calls = {
            (arm, d): judged[d][arm][h]
            for d in depths
            for arm in sorted(judged[d], key=order.index)
            if h in judged[d][arm]
        }
        if not calls:
            continue
        question = I_QUESTION[h].format(ref=ref, primary=primary)
        said = []
        for verdict in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE):
            arms = _arms_with(calls, verdict, depths, rung)
            if arms:
                said.append(f"{ANSWER[verdict].lower()}: {arms}")
        subs = [f"{arm}: {v.reason}" for (arm, _), v in calls.items()] if len(depths) == 1 else []
        answer = "; ".join(said)
        items.append((f"{question} {answer[0].upper()}{answer[1:]}.", subs))
    if len(depths) > 1:
        items.append(
            f"Each arm's reasons and numbers per {rung.name}: Interventions, under Tables."
        )
    where = f", {rung.label(depths[0])}" if len(depths) == 1 else ""
    return (
        f"Would a cheaper fix do instead of QK-norm? ({', '.join(order)}{where}; I1-I4, "
        "docs/STUDY.md section 9)",
        items,
    )


def _arms_with(calls: dict, verdict: str, depths: list[str], rung: Ladder) -> str:
    """The arms with this verdict, each naming its rungs unless it has it at every rung
    (calls: the interventions' verdicts in words)."""
    by_arm: dict[str, list[str]] = {}
    for (arm, d), v in calls.items():
        if v.verdict == verdict:
            by_arm.setdefault(arm, []).append(d)
    every = len(depths)
    return ", ".join(
        arm if len(ds) == every else f"{arm} ({rung.name} {', '.join(ds)})"
        for arm, ds in by_arm.items()
    )


def _control(a: m.Analysis) -> Block | None:
    """The start temperature (C1): does off started at on's attention-logit scale close the
    low-LR gap? The answer, then the gaps at each LR where QK-norm is necessary."""
    s = a.settings
    control, ref, primary = s.start_control, s.reference, s.primary
    decided = a.decisions.C1
    if not control or not decided:
        return None
    items: list[Item] = []
    for name in sorted(decided, key=int):
        prefix = f"{present.ladder_of(a).cap(name)}: " if len(decided) > 1 else ""
        answer = ANSWER[decided[name].verdict]
        subs = [
            f"LR {numbers.lr(lr)}: {ref} - {primary} {nats(p)}; {control} - {primary} {nats(c)}"
            + share_text(p.mean, c.mean)
            for lr, p, c in c1_rows(a.depths[name], s)
        ]
        items.append((f"{prefix}{answer}: {c1_says(a, {}, name)}.", subs))
    return (
        f"Is the low-LR gap between {ref} and {primary} the start temperature? (C1: {control} "
        f"is {ref} started at {primary}'s attention-logit scale; [a, b]: 90% interval)",
        items,
    )


def _trend(a: m.Analysis, verdicts: dict[str, Verdict]) -> Block | None:
    """A ladder (several rungs): the trend it was built to ask. With depth: does the
    stability threshold fall as depth grows (H3)? With width: does it fall (W1), does the
    rule's multiple of the best LR carry (W2), and what the line says at the core width,
    marked as the extrapolation it is. verdicts: the verdicts in words."""
    rung = present.ladder_of(a)
    depths = [n for n, d in a.depths.items() if hypotheses.primary(a, d) is not None]
    if len(depths) < 2:
        return None
    items: list[Item] = []
    for name in present.trends(rung):
        v = verdicts.get(name)
        answer = ANSWER.get(v.verdict, "Not decided") if v else "Not decided"
        asked = question(name, a.settings.reference)
        text = f"{answer}: {trend_says(a, verdicts, name)}."
        items.append(text if len(present.trends(rung)) == 1 else f"{asked} ({name}) {text}")
    e = a.w1.extrapolation if a.w1 else None
    if rung.is_width and e:
        head = extrapolation_head(record(e))
        items.append((f"At {head}:", extrapolation_lines(record(e))))
    growth = logit_growth(a, rung)
    if growth:
        items.append(growth)
    rungs = ", ".join(sorted(depths, key=int))
    if rung.is_width:
        title = f"How do the threshold and the rule move with width? (W1, W2; widths {rungs})"
    else:
        title = f"{question('H3', '')} (H3, depths {rungs})"
    return title, items


def _token_check(a: m.Analysis) -> Block | None:
    """A depth ladder's token-matched check: does the fall with depth survive matching the
    tokens per parameter (docs/STUDY.md section 11)?"""
    e = a.token_check
    if not e:
        return None
    depth = e.check.depth if e.check else None
    ref = e.reference.depth if e.reference else None
    at = f"depth {depth} at depth {ref}'s tokens per parameter" if depth and ref else "the check"
    title = (
        f"Does the depth trend survive matching tokens per parameter? ({at}, against {e.ladder})"
    )
    return title, list(token_check.lines(e))


HELD = {rules.CALLS_HOLD: "Yes", rules.CALLS_PARTLY: "Partly", rules.CALLS_CHANGE: "No"}


def _budget(a: m.Analysis) -> Block | None:
    """A budget check: do the calls hold with more tokens? (the analysis's budget pairs)"""
    items: list[Item] = []
    for name in sorted(a.decisions.budget, key=int):
        comparisons = a.depths[name].comparisons
        lines = budget.summary(a, name)
        for p, line in zip(a.decisions.budget[name], lines):
            at = [numbers.threshold_with_interval(comparisons[k]) for k in (p.small, p.large)]
            where = (
                f"{at[0]} at both budgets"
                if at[0] == at[1]
                else f"{at[0]} at the smaller budget, {at[1]} at the larger"
            )
            items.append(
                f"{HELD[p.answer]}: {line.strip()}. Stability threshold: {where} (Budget check, "
                "under Tables)."
            )
    return ("Do the calls hold with more tokens?", items) if items else None


# -- QK-norm against no QK-norm ------------------------------------------------------------------
def _off_on(a: m.Analysis, verdicts: dict[str, Verdict]) -> Block | None:
    """Where QK-norm is necessary, per rung: at one rung each point its own bullet (the
    threshold in absolute LRs and in multiples of the best LR without QK-norm, the effect at
    that best LR, where each arm's runs start to fail, the low-LR effect apart, the runs the
    threshold hangs on); at several rungs one bullet each. practitioner.rule_parts reads the
    JSON form of the rung, its comparison, the settings and the rule."""
    s = a.settings
    rules = a.decisions.rules
    names = [n for n in sorted(a.depths, key=int) if n in rules]
    if not names:
        return None
    ref, primary, rung = s.reference, s.primary, present.ladder_of(a)
    if len(names) > 1:
        items: list[Item] = []
        for name in names:
            d = a.depths[name]
            c = hypotheses.primary(a, d)
            lost = left_out_below(a, name, ref, rules[name].best_lr)
            p = rule_parts(d, c, s, rules[name], lost)
            items.append(
                f"{rung.cap(name)}: {p['head'][0].lower()}{p['head'][1:]} {p['threshold']} "
                f"Critical LR: {_crit(d, [ref, primary])}."
            )
        return f"Where is QK-norm necessary? ({ref} vs {primary}, per {rung.name})", items
    name = names[0]
    d = a.depths[name]
    c = hypotheses.primary(a, d)
    p = rule_parts(d, c, s, rules[name], left_out_below(a, name, ref, rules[name].best_lr))
    others = [x for x in d.arms if x not in (ref, primary) and x not in s.subset_arms]
    items = [
        f"{p['head']} {p['threshold']} {p['seeds']}".strip(),
        f"At that best LR (H1): {h1_says(a, verdicts, name, d, at=False)}.",
        _failing(a, d, [ref, primary], others),
        p["low"],
        p["fragile"],
    ]
    tokens = d.tokens_per_param.by_budget.get(str(int(d.arms[ref].budget)), float("nan"))
    return (
        f"Where is QK-norm necessary? ({ref} vs {primary} at {rung.label(name)}, "
        f"{numbers.num(tokens, 2)} tokens/parameter)",
        [i for i in items if i],
    )


def _crit(depth: m.Rung, arms: list[str]) -> str:
    """Each arm's median critical LR, with its seed range where the seeds differ."""
    out = []
    for name in arms:
        arm = depth.arms.get(name)
        median = arm.eta_crit.median if arm else None
        if not median:
            continue
        lo, hi, label = present.crit_interval(arm.eta_crit)
        span = (
            f" ({label} {numbers.lr(lo)} to {numbers.lr(hi)})"
            if median.kind == "" and lo is not None and lo != hi
            else f" ({label} {numbers.grid(arm.eta_crit.min)} to {numbers.grid(median)})"
            if rules.median_hides_failures(arm.eta_crit)
            else ""
        )
        out.append(f"{name} {numbers.grid(median)}{span}")
    return ", ".join(out) or "n/a"


def _failing(a: m.Analysis, depth: m.Rung, main: list[str], others: list[str]) -> str:
    """Where runs start to fail: the compared arms, the other arms, the other definitions;
    'no run failed' where no arm's runs failed inside the grid."""
    s = a.settings
    names = present.failures_of(a)
    definition = next(iter(names))  # the one that decides, as the report names it
    said = names[definition] + (
        "; the bigram-baseline rule is off" if present.rule_off_of(a) else ""
    )
    # no run failed only where every seed of every arm held to the top (the lowest seed's
    # critical LR above it), not where the median did while a seed failed inside the grid
    lowest = [depth.arms[x].eta_crit.min if x in depth.arms else None for x in main]
    lowest += [depth.arms[x].eta_crit.min for x in others]
    top = rules.common_top(lowest)
    if top is not None:
        text = (
            f"No arm's runs failed ({said}) up to LR {numbers.lr(top)}, the grid's top "
            "(critical LR above it)."
        )
    else:
        text = f"Runs start to fail (critical LR, {said}): {_crit(depth, main)}."
        if others:
            text += f" Other arms: {_crit(depth, others)}."
    for other in names:
        if other == definition:
            continue
        values = []
        for name in main:
            by = (depth.arms[name].eta_crit_by_definition if name in depth.arms else {}) or {}
            found = by.get(other)
            if found and found.median:
                values.append(f"{name} {numbers.grid(found.median)}")
        if values:
            when = WHEN[other].format(delta=s.delta)
            text += f" {when[0].upper()}{when[1:]}: {', '.join(values)}."
    return text


def _verdicts(a: m.Analysis, verdicts: dict[str, Verdict]) -> Block | None:
    """Every pre-registered verdict: what it asks, its answer, the interval that decided it;
    at several rungs one sub-bullet per rung (verdicts: figures/words/verdicts.py's)."""
    if not verdicts:
        return None
    s, rung = a.settings, present.ladder_of(a)
    says = {"H1": h1_says, "H2a": h2a_says, "H2b": h2b_says, "C1": c1_says}
    # a question the sweep was built to ask is answered first, with its numbers: not again
    above = {
        "H1": len(a.decisions.rules) == 1,  # _off_on's bullet
        **dict.fromkeys(present.trends(rung), _trend(a, verdicts) is not None),
        "C1": _control(a) is not None,
    }
    items: list[Item] = []
    for h in HYPOTHESES:
        if h not in verdicts:
            continue
        v = verdicts[h]
        answer = ANSWER[v.verdict]
        head = f"{h} {v.verdict}. {question(h, s.reference)}"
        if h == "C1":
            names = sorted(a.decisions.C1, key=int)
        else:
            names = sorted(v.per_depth, key=int)
        if not s.preregistered:
            why = [UNREGISTERED]
        elif h == "C1" and not s.start_control:
            answer, why = "Not assessed", ["this sweep has no start-matched control arm"]
        elif h in present.trends(rung) or not names:
            why = [trend_says(a, verdicts, h) if h in present.trends(rung) else v.reason]
        elif h in says:
            why = [says[h](a, verdicts, name, a.depths[name]) for name in names]
        else:  # no numbers of its own to say: each rung's reason
            why = [v.per_depth[name].reason for name in names]
        if above.get(h) and s.preregistered:
            items.append(f"{head} {_as_above(a, h, v, answer)}")
        elif len(why) == 1:
            items.append(f"{head} {answer}: {why[0]}.")
        else:
            items.append(
                (
                    f"{head} {answer}:",
                    [f"{rung.label(n)}: {w}" for n, w in zip(names, why, strict=True)],
                )
            )
    sections = "sections 5 and 11" if rung.is_width else "section 5"  # W1, W2: section 11
    return (
        f"Verdicts (pre-registered in docs/STUDY.md {sections}; [a, b]: the 90% interval that "
        "decided; the report's Verdicts section gives each test):",
        items,
    )


def _as_above(a: m.Analysis, h: str, v: Verdict, answer: str) -> str:
    """A verdict whose numbers the opening gave above, as its answer and what the verdict
    found, so the line reads as meant: a bare "No" to H1's "does QK-norm matter only above
    off's best LR?" would read as "it matters below it too" where it matters nowhere
    (docs/STUDY.md section 5: not supported is necessary at the best LR, harmful there, or no
    threshold although off fails). Not decided: the block above says why. v: the verdict in
    words."""
    if v.verdict == INCONCLUSIVE:
        return f"{answer}, as above."
    per = v.per_depth
    rung = present.ladder_of(a)
    if h in present.trends(rung) or not per:
        found = v.reason
    else:
        reasons = {r.reason for r in per.values()}
        found = (
            reasons.pop()
            if len(reasons) == 1
            else "; ".join(f"{rung.label(n)}: {per[n].reason}" for n in sorted(per, key=int))
        )
    return f"{answer}: {found}, as above."
