"""The opening's sentence for each pre-registered hypothesis at one rung (H1, H2a, H2b, C1) and
for a ladder's trend (H3, W1, W2): the number that decided it with its interval, or the
reason in words where there is none (figures/report/opening.py puts them in order)."""

from __future__ import annotations

from figures import present
from figures.words import numbers
from figures.words.hypotheses import WORDING
from figures.words.said import Verdict
from figures.words.verdicts import (
    h2a_words,
    power_source,
    power_words,
    set_apart,
    set_apart_words,
    with_apart_words,
)
from sweeps.analysis import model as m
from sweeps.study import alternatives, hypotheses, ladders
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Comparison
from sweeps.study.trend import RULED_OUT

ANSWER = {SUPPORTED: "Yes", NOT_SUPPORTED: "No", INCONCLUSIVE: "Not decided", RULED_OUT: "No"}


def c1_says(
    a: m.Analysis, verdicts: dict[str, Verdict], name: str, depth: m.Rung | None = None
) -> str:
    """C1 at one rung in words, with the largest gap of the control to the primary arm
    (verdicts: unused, as _verdicts calls each hypothesis's words alike)."""
    s = a.settings
    control, primary = s.start_control, s.primary
    why = a.decisions.C1[name].why
    rows = c1_rows(depth or a.depths[name], s)
    if why == "no gap" or not rows:
        return f"QK-norm is necessary at no LR that {control} ran"
    lr, _, worst = max(rows, key=lambda r: r[2].mean)
    largest = f"largest gap {nats(worst)}, at LR {numbers.lr(lr)}"
    if why == "control worse":
        worse = [x for x, _, c in rows if c.necessary]
        return (
            f"{control} is still worse than {primary} by more than {s.min_effect:g} nats at "
            f"{numbers.lrs(worse)}; {largest}"
        )
    if why == "start":
        return (
            f"{control} - {primary} lies inside ±{s.negligible:g} nats at all {len(rows)} LRs "
            f"where QK-norm is necessary; {largest}"
        )
    return (
        f"{control} - {primary} is neither inside ±{s.negligible:g} nats nor above "
        f"{s.min_effect:g} at some LR where QK-norm is necessary; {largest}"
    )


def nats(entry: m.Paired) -> str:
    """A paired effect with its 90% interval, in nats: '0.274 [0.211, 0.337] nats'."""
    lo, hi = entry.ci90 or (None, None)
    if lo is None:
        return f"{numbers.num(entry.mean)} nats"
    return f"{numbers.num(entry.mean)} [{numbers.num(lo)}, {numbers.num(hi)}] nats"


def c1_rows(depth: m.Rung, s: m.Settings) -> list[tuple[float, m.LrEffect, m.LrEffect]]:
    """(LR, primary entry, control entry) where C1 looked: both judged, QK-norm necessary."""
    primary = depth.comparisons[Comparison(s.reference, s.primary).key].per_lr
    control = depth.comparisons.get(Comparison(s.start_control, s.primary).key)
    looked = alternatives.c1_lrs(primary, control.per_lr if control else [])
    return [(c.lr, p, c) for p, c in looked]


WHEN = {  # the failure definitions (docs/STUDY.md section 3) as a clause
    "stuck": "when a run that diverged or ended worse than the bigram baseline counts",
    "diverged": "when only a divergence counts",
    "degraded": "when a run worse than its seed's best LR by delta ({delta:g} nats) counts too",
}


# -- the verdicts in words -----------------------------------------------------------------------
def question(name: str, ref: str) -> str:
    """What the opening asks of a hypothesis (figures/words/hypotheses.py)."""
    return WORDING[name].question.format(ref=ref)


def h1_says(
    a: m.Analysis, verdicts: dict[str, Verdict], name: str, depth: m.Rung, at: bool = True
) -> str:
    """H1 at one rung: the effect at the reference arm's best LR (named unless `at` is
    False) and what it shows (the rung's reason from verdicts, where there are no numbers)."""
    s = a.settings
    ref, primary = s.reference, s.primary
    h = depth.h1
    reason = rung_reason(verdicts, "H1", name)
    if not (h and h.stats):
        return reason or "not judged"
    effect = f"{ref} - {primary} = {nats(h.stats)}"
    effect = f"at LR {numbers.lr(h.lr)}, {effect}" if at else f"{effect} (90% interval)"
    bound = f"{s.negligible:g}"
    c = hypotheses.primary(a, depth)
    return {
        "negligible": f"{effect}, inside ±{bound} (negligible); "
        f"{numbers.threshold_bracket(c) if c else 'no threshold'}",
        "necessary": f"{effect}: QK-norm already matters there",
        "harms": f"{effect}: QK-norm harms there",
        "neither": f"{effect}: neither negligible (inside ±{bound}) nor shown to matter "
        f"(above {s.min_effect:g})",
    }.get(h.why, f"{effect}; {reason or ''}".rstrip("; "))


def rung_reason(verdicts: dict[str, Verdict], h: str, rung: str) -> str | None:
    """A hypothesis's reason at one rung, in words; None where it has none there."""
    said = verdicts[h].per_depth.get(rung) if h in verdicts else None
    return said.reason if said else None


def h2a_says(a: m.Analysis, verdicts: dict[str, Verdict], name: str, depth: m.Rung) -> str:
    """H2a at one rung: the ratio of critical LRs (primary / reference) with its interval,
    under the definition that decides and, as verdicts.py judges them, under the others
    (verdicts: unused, as _verdicts calls each hypothesis's words alike)."""
    s = a.settings
    ref, primary = s.reference, s.primary
    h = depth.h2a
    if not h:
        return "not judged"
    definition = h.definition if h.definition is not None else s.primary_failure
    said = h2a_definition_says(h, ref, primary)
    text = said
    by = depth.h2a_by_definition or {}
    for other in present.failures_of(a):  # with the baseline rule off: not diverged
        if other == definition or other not in by:
            continue
        again = h2a_definition_says(by[other], ref, primary, short=True)
        same = again == h2a_definition_says(h, ref, primary, short=True)
        when = WHEN[other].format(delta=s.delta)
        text += f". {when[0].upper()}{when[1:]}: " + ("the same" if same else again)
    return text


def h2a_definition_says(h: m.H2a, ref: str, primary: str, short: bool = False) -> str:
    """One definition's H2a: the ratio with its interval (short: and its verdict), or why
    there is none."""
    verdict, why = h2a_words(h, ref)
    if h.censored or h.lower is None:
        return why
    if short:
        return f"{numbers.ratio(h)}, {verdict}"
    return f"{primary}'s critical LR is {numbers.ratio(h)} {ref}'s"


H2B_SAYS = {
    SUPPORTED: "its lower end above the minimum effect {m:g}",
    NOT_SUPPORTED: "not above the minimum effect {m:g}",
    INCONCLUSIVE: "its lower end not above the minimum effect {m:g}",
}


def h2b_says(a: m.Analysis, verdicts: dict[str, Verdict], name: str, depth: m.Rung) -> str:
    """H2b at one rung: the paired difference of LR sensitivity with its interval (the rung's
    verdict and reason from verdicts, in words)."""
    s = a.settings
    h = depth.h2b
    said = verdicts["H2b"].per_depth.get(name) if "H2b" in verdicts else None
    # the registry's reason code says whether a run of the range is missing (not the words)
    call = hypotheses.h2b(a).get(name)
    if h is None or h.lower is None or h.why or (call is not None and call.why == "incomplete"):
        return said.reason if said else "not judged"
    says = H2B_SAYS[said.verdict if said else h.verdict].format(m=s.min_sensitivity)
    return f"LR sensitivity {s.reference} - {s.primary} = {nats(h)}, {says}" + h2b_trained_says(
        h, depth.arms[s.reference].sensitivity.lrs
    )


def h2b_trained_says(h: m.H2b, range_lrs: list[float]) -> str:
    """H2b's robustness check as a sentence to follow it: the difference among runs that
    trained (h.trained, descriptive); "" where no run of the range failed (the same number) or
    fewer than two LRs had every run train."""
    if h.trained is None or len(h.trained_lrs) >= len(range_lrs):
        return ""
    return (
        f". Among runs that trained, at {numbers.lrs(h.trained_lrs)}, where no run of either "
        f"arm failed (descriptive): {nats(h.trained)}"
    )


def trend_says(a: m.Analysis, verdicts: dict[str, Verdict], name: str = "H3") -> str:
    """A ladder's trend (H3, W1, W2): the slope per doubling of the rung with its 90%
    interval, censored per-seed thresholds at their bounds (and moved beyond them, where that
    differs); W2 against its bound. verdicts: the verdicts in words, whose reason is said where
    there is no slope."""
    rung = present.ladder_of(a)
    t = hypotheses.trend_of(a, name)
    at, beyond = (t.at_bound, t.beyond) if t else (None, None)
    if not at or t.why == "censored alike":  # no slope worth printing
        return verdicts[name].reason if name in verdicts else "not decided"
    of = (
        f"the threshold's bracket top as a multiple of {a.settings.reference}'s best LR"
        if name == "W2"
        else "the threshold"
    )
    text = (
        f"{of} changes x{10**at.value:.2f} per doubling of {rung.name} (slope "
        f"{at.value:.3f} decades per doubling, 90% interval {at.lower:.3f} to "
        f"{at.upper:.3f}; over {at.n} {rung.plural}' values, {t.censored} per-seed thresholds "
        "censored)"
    )
    if beyond and (beyond.lower, beyond.upper) != (at.lower, at.upper):
        text += (
            f"; with the censored ones moved beyond their bounds: {beyond.value:.3f} "
            f"({beyond.lower:.3f} to {beyond.upper:.3f})"
        )
    if t.verdict == RULED_OUT:
        text += f". A fall of {-t.prediction:.2f} decades per doubling is ruled out at this scale"
    for size in t.reversed_by or []:
        lo = next(x for x in t.left_out if x.rung == size)
        text += (
            f". Without {rung.label(size)} it is {lo.slope.value:.3f} ({lo.slope.lower:.3f} to "
            f"{lo.slope.upper:.3f}), {lo.verdict}: one {rung.name} decides, so no verdict "
            f"(docs/STUDY.md section 17; its influence on the slope {lo.influence:+.3f})"
        )
    if t.fragile and not t.reversed_by:
        named = ", ".join(rung.label(x) for x in t.fragile)
        text += f". Fragile: without {named} the verdict is not reached"
    if t.power is not None and name != "W2":
        text += (
            f". This design shows the predicted {t.prediction:+.2f} with probability "
            f"{power_words(t.powers, t.power)} ({power_source(t, rung)})"
        )
    apart = set_apart(t, rung) if name != "W2" else None
    if apart:  # its slope is said above when it reverses the verdict
        said = set_apart_words(apart, rung, t.prediction, apart.rung not in t.reversed_by)
        text += f". {said[0].upper()}{said[1:]}" if said else ""
    if t.with_apart and name != "W2":
        said = with_apart_words(t.with_apart, rung, t.prediction)
        text += f". {said[0].upper()}{said[1:]}"
    u = t.uncensored
    if u:  # descriptive: what the values inside the grid alone say (not the rule)
        text += (
            f"; without the censored ones (descriptive, not the rule): {u.value:.3f} "
            f"({u.lower:.3f} to {u.upper:.3f}, {u.n} thresholds)"
        )
    if name == "W2":
        bound = t.bound if t.bound is not None else ladders.CARRY_BOUND
        text += f"; it carries when the interval lies inside ±{bound:g}"
    return text
