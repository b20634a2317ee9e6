"""The verdicts in words: each hypothesis sweeps/study/hypotheses.py registers (H1, H2a, H2b,
the ladder's trend: H3 on a depth ladder, W1 and W2 on a width ladder, and the control C1), as
the registry decided it (the typed analysis's `decided`: sweeps.analysis.model.Decision), with
its reason (figures/words/hypotheses.py's text of each code) and the numbers behind it (the
practitioner's rule per rung: figures/words/practitioner.py).

It reads the typed Analysis by attribute, as analysis.json holds it (read back: NaN and Inf
as None), and returns the "verdicts" dict of figures/words/view.py's worded view. The
formatters of figures/words/numbers.py read the typed records; h2a_words words one H2a
entry (the opening uses it too).

Each hypothesis is judged per rung (a depth or a width: sweeps/core/ladder.py); the registry
combines
the rungs, and the reason names each one. The JSON keys keep their names ("per_depth"): their
keys are the rungs. Nothing here decides or raises on odd data: what cannot be decided is
inconclusive, and says why.
"""

from __future__ import annotations

import math
from dataclasses import replace

from figures import present
from figures.words import numbers
from figures.words.extrapolation import extrapolation_head, extrapolation_lines
from figures.words.hypotheses import PAIRED, UNREGISTERED, WORDING, reason
from figures.words.said import Verdict, Worded
from sweeps.analysis import model as m
from sweeps.analysis.adapter import record
from sweeps.study import hypotheses, ladders, rules
from sweeps.study import trend as trend_rules
from sweeps.study.alternatives import start_share
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED  # noqa: F401 (tests import)


def judge(analysis: m.Analysis) -> dict[str, Verdict]:
    """Every verdict the sweep decides (the hypotheses its ladder registers, in order), each as
    sweeps.study.hypotheses decided it (analysis.decided), in words."""
    verdicts = {}
    for h in hypotheses.for_ladder(analysis.settings.ladder.field):
        decided = analysis.decided[h.id]
        v = SAY.get(h.id, _said)(analysis, h.id, decided)
        if not decided.preregistered:
            v = replace(v, verdict=decided.verdict, reason=f"{UNREGISTERED}; {v.reason}")
        verdicts[h.id] = v
    return verdicts


def _verdict(
    analysis: m.Analysis, name: str, decided: m.Decision, per_depth: dict, evidence: list[str]
) -> Verdict:
    """The verdict: each rung's (verdict, reason) named in the reason, or why no rung was
    judged."""
    rung = present.ladder_of(analysis)
    reasons = "; ".join(f"{rung.label(d)}: {v} ({why})" for d, (v, why) in per_depth.items())
    return Verdict(
        hypothesis=name,
        claim=claim(analysis, name),
        test=test(analysis, name),
        verdict=decided.verdict,
        reason=reasons if per_depth else reason(name, decided.why, rung=rung.name),
        evidence=evidence,
        per_depth={d: Worded(v, why) for d, (v, why) in per_depth.items()},
    )


def _said(analysis: m.Analysis, name: str, decided: m.Decision) -> Verdict:
    """A hypothesis without evidence of its own to show: its reasons, worded from their codes."""
    rung = present.ladder_of(analysis)
    if not decided.per_rung and decided.why != hypotheses.NO_RUNG:  # decided once
        return replace(
            _verdict(analysis, name, decided, {}, []),
            reason=reason(name, decided.why, rung=rung.name, **decided.numbers),
        )
    per_depth = {
        d: (c.verdict, reason(name, c.why, rung=rung.name, **c.numbers))
        for d, c in decided.per_rung.items()
    }
    return _verdict(analysis, name, decided, per_depth, [])


def claim(analysis: m.Analysis, name: str) -> str:
    return WORDING[name].claim.format(rung=present.ladder_of(analysis).name)


def test(analysis: m.Analysis, name: str) -> str:
    words = WORDING[name]
    rule_off = present.rule_off_of(analysis)
    text = words.test_rule_off if words.test_rule_off and rule_off else words.test
    return text.format(
        rung=present.ladder_of(analysis).name,
        bound=numbers.num(ladders.CARRY_BOUND, 2),
        rungs=ladders.MIN_RUNGS,
    )


def _judged(comparison: m.Comparison) -> list[m.LrEffect]:
    """The LRs the necessity rule judged (sweeps.study.rules: enough pairs, not a common or
    partial ceiling)."""
    return [e for e in comparison.per_lr if e.judged]


# -- H1 ------------------------------------------------------------------------------------------
def h1(analysis: m.Analysis, name: str, decided: m.Decision) -> Verdict:
    """H1 as the rulebook decided it per rung (sweeps.study.rung.h1_at_best: the rung's h1)."""
    s, rung = analysis.settings, present.ladder_of(analysis)
    per_depth, evidence = {}, []
    for d, call in decided.per_rung.items():
        depth = analysis.depths[d]
        h, c = depth.h1, hypotheses.primary(analysis, depth)
        if h.stats:
            evidence.append(
                f"{rung.label(d)}: at {s.reference}'s best LR {numbers.lr(h.lr)} "
                f"{s.reference} - {s.primary} = {numbers.pm_interval(h.stats)} (90% "
                f"interval); {numbers.threshold_bracket(c)}"
            )
        why = reason(
            name,
            call.why,
            ref=s.reference,
            lr=numbers.lr(h.lr),
            bound=numbers.num(s.negligible, 2),
            threshold=numbers.threshold_bracket(c),
        )
        per_depth[d] = (call.verdict, why)
    return _verdict(analysis, name, decided, per_depth, evidence)


# -- H2a, H2b --------------------------------------------------------------------------------
DEFINITION_WORDS = {
    "diverged": "a run fails when it stops (diverges)",
    "stuck": "a run fails when it diverges or finishes worse than the bigram baseline",
    "degraded": "a run fails when it diverges or finishes worse than its seed's best LR by "
    "more than delta",
}


def h2a(analysis: m.Analysis, name: str, decided: m.Decision) -> Verdict:
    """H2a decided on the primary failure definition; the others are printed beside it and the
    reason says when they would decide differently."""
    per_depth, evidence = {}, []
    s, rung = analysis.settings, present.ladder_of(analysis)
    names = present.failures_of(analysis)  # the baseline rule off: stuck shown as diverged
    for d, call in decided.per_rung.items():
        depth = analysis.depths[d]
        words = {}
        for definition, h in (depth.h2a_by_definition or {}).items():
            off = depth.arms[s.reference].eta_crit_by_definition[definition]
            on = depth.arms[s.primary].eta_crit_by_definition[definition]
            words[definition] = h2a_words(h, s.reference)
            if definition not in names:
                continue
            shown = names[definition]
            evidence.append(
                f"{rung.label(d)}, {shown} ({DEFINITION_WORDS[shown]}): critical "
                f"LR off {numbers.median_range(off)}, "
                f"on {numbers.median_range(on)}; "
                f"ratio on/off {numbers.ratio(h)} (90% interval) over {h.n} paired seeds: "
                f"{words[definition][0]}"
            )
        decides = depth.h2a.definition or rules.PRIMARY_FAILURE
        why = words[decides][1] if decides in words else h2a_words(depth.h2a, s.reference)[1]
        others = [
            f"{names[k]}: {v}"
            for k, (v, _) in words.items()
            if k != decides and k in names and v != call.verdict
        ]
        if others:
            why += f" (under the other failure definitions: {'; '.join(others)})"
        per_depth[d] = (call.verdict, why)
    return _verdict(analysis, name, decided, per_depth, evidence)


def h2a_words(h: m.H2a, ref: str) -> tuple[str, str]:
    """One definition's H2a verdict (sweeps.study.hypotheses.h2a_call) with its reason (ref:
    the reference arm)."""
    call = hypotheses.h2a_call(h)
    if call.why in ("off above", "below"):
        return call.verdict, reason("H2a", call.why, ref=ref)
    return call.verdict, _paired_words("H2a", call, _values(h), lambda x: f"x{10**x:.2f}")


def h2b(analysis: m.Analysis, name: str, decided: m.Decision) -> Verdict:
    per_depth, evidence = {}, []
    s, rung = analysis.settings, present.ladder_of(analysis)
    least = s.min_sensitivity
    for d, call in decided.per_rung.items():
        h, arms = analysis.depths[d].h2b, analysis.depths[d].arms
        off, on = arms[s.reference].sensitivity, arms[s.primary].sensitivity
        evidence.append(
            f"{rung.label(d)}: LR sensitivity {s.reference} "
            f"{numbers.pm(off.mean, off.sd)}, {s.primary} {numbers.pm(on.mean, on.sd)} "
            f"nats; {present.primary_effect(s)} "
            f"{numbers.pm_interval(h)} (90% interval; minimum effect {numbers.num(least)})"
            + (
                f"; over the LRs where every run of both arms trained "
                f"({numbers.lrs(h.trained_lrs)}; descriptive): "
                f"{numbers.pm_interval(h.trained)}"
                if h.trained is not None and len(h.trained_lrs) < len(off.lrs)
                else ""
            )
        )
        if call.why in WORDING[name].reasons and call.why not in PAIRED:
            lrs = {k: ", ".join(numbers.lr(x) for x in v) for k, v in call.numbers.items()}
            why = reason(name, call.why, rung=rung.name, **lrs)
        else:
            why = _paired_words(name, call, _values(h), m=least)
        per_depth[d] = (call.verdict, why)
    return _verdict(analysis, name, decided, per_depth, evidence)


def _values(h: m.Paired) -> dict:
    """The bounds and mean a paired call's reason names."""
    return {"lower": h.lower, "upper": h.upper, "mean": h.mean}


def _paired_words(
    name: str, call: hypotheses.Call, values: dict, show=numbers.num, m: float = 0.0
) -> str:
    """The reason of a paired call (sweeps.study.hypotheses.paired_call), from the bounds and
    mean of its statistic (values). show: how a value reads (a log10 ratio reads as a ratio, 0
    as x1.00)."""
    shown = {k: "n/a" if v is None else show(v) for k, v in values.items()}
    return reason(name, call.why, m=show(m), zero=show(0.0), **shown, **call.numbers)


# -- the ladder's trend: H3 (depth), W1 and W2 (width) ---------------------------------------
# what each trend's slope is of, per doubling of the rung
TREND_OF = {
    "H3": "log10 threshold",
    "W1": "log10 threshold",
    "W2": "log10(threshold bracket top / {ref}'s best LR)",
}
SPECS = {"n_layer": "sweeps/specs/cpu-depth.toml", "n_embd": "sweeps/specs/cpu-width.toml"}


def _shipped_rungs(field: str) -> int:
    """How many rungs the shipped ladder spec of this axis runs (read, not written down)."""
    from pathlib import Path

    from sweeps.sweep.spec import load_spec

    return len(getattr(load_spec(Path(SPECS[field]).stem), field))


def _threshold_words(c: m.Comparison) -> str:
    """A rung's stability threshold, with its interval when the grid places it."""
    if c.threshold.kind == "":
        return f"stability threshold {numbers.threshold_with_interval(c)}"
    return numbers.threshold(c.threshold)


def trend(analysis: m.Analysis, name: str, decided: m.Decision) -> Verdict:
    """A ladder's trend verdict (H3 and W1: sweeps.study.trend.decide; W2: carry; both under
    robust), as the analysis decided it (analysis.h3, .w1, .w2): the threshold per rung, each
    rung's value, the slopes with their 90% intervals, the design's power, the trend with each
    rung left out, and W1's extrapolation to the core width."""
    rung, s = present.ladder_of(analysis), analysis.settings
    depths = {int(n): hypotheses.primary(analysis, d) for n, d in analysis.depths.items()}
    depths = {k: v for k, v in sorted(depths.items()) if v is not None}
    evidence = [
        f"{rung.label(k)}: {_threshold_words(c)}; per seed: "
        f"{numbers.seed_brackets(c.seed_thresholds)}"
        for k, c in depths.items()
    ]
    t = hypotheses.trend_of(analysis, name)
    if name == "W2" and t and t.seed_best:
        evidence += [
            f"{rung.label(k)}: {s.reference}'s best LR per seed {numbers.seed_lrs(v)}"
            for k, v in sorted(t.seed_best.items(), key=lambda kv: int(kv[0]))
        ]
    base = Verdict(
        hypothesis=name,
        claim=claim(analysis, name),
        test=test(analysis, name),
        evidence=evidence,
        verdict=decided.verdict,
        reason="",
    )
    if decided.why == "few rungs":
        # the rungs with both arms, as sweeps.study.hypotheses.trend counted them (numbers: n)
        rungs = rung.name if len(depths) == 1 else rung.plural
        shipped = _shipped_rungs(rung.field)
        spec = SPECS[rung.field]
        n = decided.numbers
        return replace(
            base, reason=reason(name, "few rungs", rungs=rungs, spec=spec, shipped=shipped, **n)
        )
    a, b = (t.at_bound, t.beyond) if t else (None, None)
    if t and t.rung_values:
        evidence.append(
            f"each {rung.name}'s value (geometric mean of its seeds' thresholds, censored ones at "
            "their bounds): "
            + ", ".join(f"{rung.label(v.rung)} {numbers.lr(v.lr)}" for v in t.rung_values)
        )
    of = TREND_OF[name].format(ref=s.reference)
    recorded = t.as_recorded if t else None
    # section 22: each slope names the borderline reading it uses
    reading = "borderline runs stuck" if recorded else "borderline runs stuck or trained alike"
    slopes = (
        (f"censored values at their bounds, {reading}", a),
        (f"moved beyond them, {reading}", b),
        ("censored values at their bounds, borderline runs trained (as recorded)", recorded),
    )
    for label, sl in slopes:
        if sl:
            evidence.append(
                f"slope of {of} per doubling of {rung.name}, {label}: "
                f"{numbers.num(sl.value)} (90% interval {numbers.num(sl.lower)} to "
                f"{numbers.num(sl.upper)}, {sl.n} {rung.plural}' values, {t.censored} "
                f"per-seed thresholds censored); x{numbers.num(10**sl.value, 2)} per doubling"
            )
    if t and name != "W2":
        evidence += estimate_lines(t, rung, depths, s.reference)
    evidence += left_out_lines(t, rung) if t else []
    if t and t.power is not None:
        evidence.append(
            f"this design's chance of showing the predicted {numbers.num(t.prediction, 2)} "
            f"decades per doubling ({power_source(t, rung)}): {power_words(t.powers, t.power)}"
            if name != "W2"
            else f"this design's chance of showing a multiple that truly carries: "
            f"{100 * t.power:.0f}%"
        )
    apart = set_apart(t, rung) if t and name != "W2" else None
    if apart:
        evidence.append(set_apart_words(apart, rung, t.prediction))
    if t and t.with_apart and name != "W2":
        evidence.append(with_apart_words(t.with_apart, rung, t.prediction))
    if t and t.extrapolation:
        e = record(t.extrapolation)
        evidence.append(f"{extrapolation_head(e)}: {'; '.join(extrapolation_lines(e))}")
    if name != "W2" and a and b and decided.why == "censoring decides":
        why = censoring_words(a, b)
    elif decided.why in WORDING[name].reasons:
        bound = numbers.num(t.bound if t and t.bound is not None else ladders.CARRY_BOUND, 2)
        why = reason(
            name,
            decided.why,
            rung=rung.name,
            bound=bound,
            prediction=numbers.num(t.prediction, 2) if t and t.prediction is not None else "",
            reversed=" and ".join(str(x) for x in (t.reversed_by if t else []) or []),
        )
    else:
        why = "not decided"
    return replace(base, reason=why)


def estimate_lines(t: m.Trend, rung, comparisons: dict, reference: str) -> list[str]:
    """The trend as an estimate (docs/STUDY.md section 22): how far the threshold moves per
    doubling, from the slope's 90% interval (censored values at their bounds, borderline runs
    stuck), which of 0 and the prediction that interval excludes, and the fitted threshold at
    each rung as a multiple of the reference arm's best LR there."""
    sl = t.at_bound
    if not sl or not (math.isfinite(sl.lower) and math.isfinite(sl.upper)):
        return []
    lo, hi, num = sl.lower, sl.upper, numbers.num
    if hi < 0:
        moves = f"falls by {num(-hi)} to {num(-lo)} decades"
    elif lo > 0:
        moves = f"rises by {num(lo)} to {num(hi)} decades"
    else:
        moves = (
            f"moves by {lo:+.3f} to {hi:+.3f} decades, a fall of at most {num(-lo)} or a rise "
            f"of at most {num(hi)}"
        )
    marks = {"0": 0.0}
    if t.prediction is not None:
        marks[f"the predicted {num(t.prediction, 2)}"] = t.prediction
    out_of = [label for label, x in marks.items() if not lo <= x <= hi]
    inside = [label for label, x in marks.items() if lo <= x <= hi]
    if not out_of:
        said = "it excludes neither " + " nor ".join(inside)
    else:
        said = "it excludes " + " and ".join(out_of) + (f", not {inside[0]}" if inside else "")
    lines = [
        f"estimate (the slope's 90% interval; censored values at their bounds, borderline runs "
        f"stuck): per doubling of {rung.name} the stability threshold {moves}; {said}"
    ]
    if t.line:
        fitted = []
        for k, c in comparisons.items():
            at = 10 ** (t.line.intercept + t.line.slope * math.log2(k))
            best = c.best_lr
            multiple = (
                f" (x{num(at / best, 2)} {reference}'s best LR {numbers.lr(best)})" if best else ""
            )
            fitted.append(f"{rung.label(k)} {numbers.lr(at)}{multiple}")
        lines.append("the fitted line's threshold per " + rung.name + ": " + ", ".join(fitted))
    return lines


def power_source(t: m.Trend, rung) -> str:
    """How a trend's stated power was found: simulated at the ladder's own seed scatter
    (section 22), or analytic (an analysis written before it recorded the scatter)."""
    if t.seed_scatter is None:
        return "analytic"
    return (
        f"simulated under the reversal rule at the seed scatter its {rung.plural} show, "
        f"{numbers.num(t.seed_scatter, 2)} decades"
    )


def power_words(powers: dict[str, float] | None, power: float) -> str:
    """A design's power at its prediction: at the pre-registered rung sd and, in brackets, at
    the others section 18 names ("54% at a rung sd of 0.25, 82% at 0.15 and 44% at 0.3"); the
    one figure alone for an analysis written before it recorded the others."""
    main = f"{trend_rules.RUNG_SD:g}"
    if not powers or main not in powers:
        return f"{100 * power:.0f}% (rung sd {main})"
    others = [f"{100 * p:.0f}% at {sd}" for sd, p in powers.items() if sd != main]
    tail = ", ".join(others[:-1]) + (" and " if len(others) > 1 else "") + (others[-1:] or [""])[0]
    return f"{100 * powers[main]:.0f}% at a rung sd of {main}" + (f", {tail}" if tail else "")


def set_apart(t: m.Trend, rung) -> m.LeftOutRung | None:
    """The trend without the rung section 18 sets apart on this ladder (depth 1), where the
    ladder has it; None otherwise."""
    size = trend_rules.SET_APART.get(rung.field)
    return next((lo for lo in t.left_out or [] if lo.rung == size), None)


def set_apart_words(lo: m.LeftOutRung, rung, prediction: float, slope: bool = True) -> str:
    """'without depth 1 (why): supported, -0.172 (-0.294 to -0.049); the other depths show the
    predicted -0.25 with probability 31% at a rung sd of 0.25, ...'; slope=False: 'without
    depth 1, the other depths show ...' (where the text already gave that slope)."""
    text = f"without {rung.label(lo.rung)}"
    if slope:
        text += f" ({SET_APART_WHY[rung.field]}): {lo.verdict}"
        if lo.slope:
            text += (
                f", {numbers.num(lo.slope.value)} ({numbers.num(lo.slope.lower)} to "
                f"{numbers.num(lo.slope.upper)})"
            )
    if not lo.powers:
        return text if slope else ""
    return text + (
        f"{';' if slope else ','} the other {rung.plural} show the predicted "
        f"{numbers.num(prediction, 2)} with probability {power_words(lo.powers, math.nan)}"
    )


def with_apart_words(added: m.AddedRungs, rung, prediction: float) -> str:
    """'with depth 1 added (set apart by the spec, docs/STUDY.md section 22: why): verdict,
    slope (lower to upper); that design shows the predicted -0.25 with probability ...'."""
    named = " and ".join(rung.label(x) for x in added.rungs)
    why = SET_APART_WHY.get(rung.field) if added.rungs == [1] else None
    text = (
        f"with {named} added (set apart by the spec, docs/STUDY.md section 22"
        + (f": {why.split(';')[0]}" if why else "")
        + f"): {added.verdict}"
    )
    if added.slope:
        s = added.slope
        text += f", {numbers.num(s.value)} ({numbers.num(s.lower)} to {numbers.num(s.upper)})"
    if added.powers:
        text += (
            f"; that design shows the predicted {numbers.num(prediction, 2)} with probability "
            f"{power_words(added.powers, math.nan)}"
        )
    return text


SET_APART_WHY = {
    "n_layer": "a one-layer model cannot compose attention heads; docs/STUDY.md section 18"
}


def left_out_lines(t: m.Trend, rung) -> list[str]:
    """The trend refitted with each rung left out (docs/STUDY.md section 17): its verdict,
    slope and the rung's influence on the slope; the fragile rungs named."""
    if not t.left_out:
        return []
    parts = [
        f"without {rung.label(lo.rung)}: {lo.verdict}"
        + (
            f", {numbers.num(lo.slope.value)} ({numbers.num(lo.slope.lower)} to "
            f"{numbers.num(lo.slope.upper)})"
            if lo.slope
            else ""
        )
        + (f", influence {lo.influence:+.3f}" if lo.influence is not None else "")
        for lo in t.left_out
    ]
    out = ["each " + rung.name + " left out: " + "; ".join(parts)]
    if t.fragile and not t.reversed_by:
        named = ", ".join(rung.label(x) for x in t.fragile)
        out.append(f"fragile: without {named} the verdict is not reached")
    return out


def censoring_words(at_bound: m.Slope, beyond: m.Slope) -> str:
    """What the censored per-seed thresholds decide in H3 or W1 (at_bound, beyond: the two
    slopes, each with its one-sided 95% upper bound): whether the fall is shown (one
    placement's upper bound below 0, the other's not), or only the slope's sign, with the fall
    shown under neither placement."""
    placed = {"at their bounds": at_bound, "moved beyond them": beyond}
    shown = [k for k, v in placed.items() if v.shows_fall]
    if len(shown) == 1:
        other = next(k for k in placed if k not in shown)
        return (
            f"the fall is shown with the censored per-seed thresholds {shown[0]} but not "
            f"{other}: where they lie decides"
        )
    return (
        "the fall is shown neither way: the slope's one-sided 95% upper bound is above 0 with "
        "the censored per-seed thresholds at their bounds and moved beyond them; where they lie "
        "decides only whether the slope is negative (inconclusive) or not (not supported)"
    )


# -- C1 ------------------------------------------------------------------------------------------
def share_text(gap: float | None, control_gap: float | None) -> str:
    """'; start-temperature share 0.56' (docs/STUDY.md section 12), or nothing without a gap."""
    share = start_share(gap, control_gap)
    return "" if share is None else f"; start-temperature share {share:.2f}"


def c1(analysis: m.Analysis, name: str, decided: m.Decision) -> Verdict:
    """C1 as sweeps.study.alternatives.c1 decided it per depth, with the evidence per LR."""
    s = analysis.settings
    if not s.start_control:
        return replace(_verdict(analysis, name, decided, {}, []), reason=reason(name, decided.why))
    per_depth, evidence = {}, []
    rung = present.ladder_of(analysis)
    for d, call in decided.per_rung.items():
        depth = analysis.depths[d]
        control = depth.comparisons[rules.Comparison(s.start_control, s.primary).key]
        by_lr = {e.lr: e for e in _judged(hypotheses.primary(analysis, depth))}
        for e in _judged(control):
            p = by_lr.get(e.lr)
            if p is not None:
                evidence.append(
                    f"{rung.label(d)}, LR {numbers.lr(e.lr)}: {present.primary_effect(s)} "
                    f"{numbers.pm_interval(p)}; {s.start_control} - {s.primary} "
                    f"{numbers.pm_interval(e)}{share_text(p.mean, e.mean)}"
                )
        per_depth[d] = (call.verdict, reason(name, call.why, **call.numbers))
    return _verdict(analysis, name, decided, per_depth, evidence)


# the words and evidence of each hypothesis that shows its numbers; any other reads its codes
SAY = {"H1": h1, "H2a": h2a, "H2b": h2b, "H3": trend, "W1": trend, "W2": trend, "C1": c1}
