"""H1, H2a, H2b, the ladder's trend (H3 on a depth ladder; W1 and W2 on a width ladder) and
the control C1, decided from the analysis dict exactly as docs/STUDY.md sections 5 and 11
pre-register them (the practitioner's rule per rung: figures/practitioner.py).

A verdict is supported, not supported or inconclusive, with its reason and the numbers behind
it. Each hypothesis is judged per rung (a depth or a width: figures/ladder.py); rungs that
agree give that verdict, rungs that disagree give inconclusive naming each one. The JSON keys
keep their names ("per_depth"): their keys are the rungs. Nothing here raises on odd data:
what cannot be decided is inconclusive, and says why.
"""

from __future__ import annotations

from figures import fmt, ladder, present
from figures.extrapolation import extrapolation_head, extrapolation_lines
from sweeps.study import ladders, rules
from sweeps.study.alternatives import start_share
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

MIN_DEPTHS = 3  # rungs a trend needs (H3, W1, W2)
# {rung}: the ladder's name (depth or width); a depth ladder's words are those of before ladders
CLAIMS = {
    "H1": "The effect of QK-norm is learning-rate-conditional: negligible (or slightly negative) "
    "at low LR, decisive at high LR.",
    "H2a": "QK-norm raises the critical learning rate (the max stable LR).",
    "H2b": "QK-norm lowers LR sensitivity.",
    "H3": "The necessity threshold falls as depth grows.",
    "W1": "The necessity threshold falls as width grows.",
    "W2": "The practitioner's rule carries across widths: the threshold's bracket top as a "
    "multiple of the best LR without QK-norm stays the same.",
    "C1": "The low-LR gap between QK-norm off and on is a start-temperature effect: it goes "
    "away when QK-norm off starts with on's attention-logit scale.",
}
TESTS = {
    "H1": "Per {rung}, primary comparison, at the reference arm's best LR: negligible by an "
    "equivalence test (TOST: the 90% interval inside +-`negligible`) there, and a necessity "
    "threshold above it.",
    "H2a": "Per {rung}: one-sided 95% t lower bound of mean log10(eta_crit on / eta_crit off) "
    "over paired seeds (sd at least the grid's resolution) above 0, with a run failing when "
    "it is stuck (diverged, or finished worse than the bigram baseline); reported under the "
    "diverged and degraded definitions too.",
    "H2b": "Per {rung}: one-sided 95% t lower bound of mean (S off - S on) over paired seeds "
    "above the pre-registered minimum effect `min_sensitivity`.",
    "H3": "Least squares of log10(per-seed threshold) on log2(n_layer) over >= 3 depths, "
    "censored per-seed thresholds kept at their bounds and moved half a decade beyond: the "
    "one-sided 95% upper bound of the slope below 0 both ways.",
    "W1": "H3's rule on widths: least squares of log10(per-seed threshold) on log2(n_embd) over "
    ">= 3 widths, censored per-seed thresholds kept at their bounds and moved half a decade "
    "beyond: the one-sided 95% upper bound of the slope below 0 both ways. The line read at "
    f"the core width {ladder.CORE_WIDTH} is an extrapolation (docs/STUDY.md section 11).",
    "W2": "Least squares of log10(per-seed threshold bracket top, the first LR called necessary / "
    "that seed's best LR of the reference arm) on log2(n_embd) over >= 3 widths, censored "
    "per-seed thresholds at their bounds and moved "
    "half a decade beyond: the slope's 90% interval inside +-{bound} decades per doubling both "
    "ways (an equivalence test on the slope; docs/STUDY.md section 11).",
    "C1": "At every LR where QK-norm is necessary on the primary comparison, the start-matched "
    "control's gap to QK-norm on is negligible (TOST: its 90% interval inside +-`negligible`).",
}


def judge(analysis: dict) -> dict:
    """Every verdict the sweep decides: H1, H2a, H2b, its ladder's trend (H3, or W1 and W2)
    and C1."""
    settings = analysis["settings"]
    verdicts = {"H1": h1(analysis), "H2a": h2a(analysis), "H2b": h2b(analysis)}
    verdicts.update({name: trend(analysis, name) for name in ladder.of(analysis).trends})
    verdicts["C1"] = c1(analysis)
    if not settings["preregistered"]:
        for v in verdicts.values():
            v.update(
                verdict=INCONCLUSIVE,
                reason="the plan has no pre-registered [study] "
                "(docs/STUDY.md section 6); " + v["reason"],
            )
    return verdicts


def _verdict(
    analysis: dict, name: str, per_depth: dict, evidence: list[str], not_judged=()
) -> dict:
    """Rung verdicts -> one: all agree, or inconclusive naming each rung's outcome. Rungs in
    not_judged (H2b at a [rung_lr] subset) are named but do not count."""
    rung = ladder.of(analysis)
    outcomes = {v for d, (v, _) in per_depth.items() if d not in not_judged}
    reasons = "; ".join(f"{rung.label(d)}: {v} ({why})" for d, (v, why) in per_depth.items())
    verdict = outcomes.pop() if len(outcomes) == 1 else INCONCLUSIVE
    if not per_depth:
        verdict, reasons = INCONCLUSIVE, f"no {rung.name} has both arms of the comparison"
    return {
        "hypothesis": name,
        "claim": claim(analysis, name),
        "test": test(analysis, name),
        "verdict": verdict,
        "reason": reasons,
        "evidence": evidence,
        "per_depth": {d: {"verdict": v, "reason": why} for d, (v, why) in per_depth.items()},
    }


def claim(analysis: dict, name: str) -> str:
    return CLAIMS[name].format(rung=ladder.of(analysis).name)


# H2a's test where the runs had no bigram-baseline rule (train.baseline = none): none is stuck
H2A_TEST_RULE_OFF = (
    "Per {rung}: one-sided 95% t lower bound of mean log10(eta_crit on / eta_crit off) over "
    "paired seeds (sd at least the grid's resolution) above 0, with a run failing when it "
    "diverged (the bigram-baseline rule is off, so no run is stuck); reported under the "
    "degraded definition too."
)


def test(analysis: dict, name: str) -> str:
    text = H2A_TEST_RULE_OFF if name == "H2a" and present.rule_off(analysis) else TESTS[name]
    return text.format(rung=ladder.of(analysis).name, bound=fmt.num(ladders.CARRY_BOUND, 2))


def _primary(analysis: dict, depth: dict) -> dict | None:
    s = analysis["settings"]
    return depth["comparisons"].get(rules.Comparison(s["reference"], s["primary"]).key)


def _judged(comparison: dict) -> list[dict]:
    """The LRs the necessity rule judged (sweeps.study.rules: enough pairs, not a common or
    partial ceiling)."""
    return [e for e in comparison["per_lr"] if e["judged"]]


# -- H1 ------------------------------------------------------------------------------------------
H1_REASONS = {
    "no best lr": "{ref} has no LR where every seed finished",
    "not judged": "the rule cannot judge {ref}'s best LR {lr} (a ceiling, both arms failing "
    "there, or fewer than 3 pairs)",
    "necessary": "QK-norm already matters at {ref}'s best LR {lr}",
    "harms": "QK-norm harms at {ref}'s best LR {lr} (90% interval below -m)",
    "no threshold": "QK-norm is necessary at no LR although {ref} fails inside the grid",
    "negligible": "negligible at {ref}'s best LR {lr} (90% interval inside +-{bound}); {threshold}",
    "off never fails": "{ref} never fails and QK-norm is never necessary: extend the LR grid "
    "upward",
    "neither": "at {ref}'s best LR {lr} the effect is neither shown negligible (90% interval "
    "inside +-{bound}) nor shown to matter",
}


def h1(analysis: dict) -> dict:
    """H1 as sweeps.study.rules.h1_decision decided it per depth (analysis depth["h1"])."""
    s, rung = analysis["settings"], ladder.of(analysis)
    per_depth, evidence = {}, []
    for name, depth in analysis["depths"].items():
        h, c = depth.get("h1"), _primary(analysis, depth)
        if not h or c is None:
            continue
        if h["stats"]:
            evidence.append(
                f"{rung.label(name)}: at {s['reference']}'s best LR {fmt.lr(h['lr'])} "
                f"{s['reference']} - {s['primary']} = {fmt.pm_interval(h['stats'])} (90% "
                f"interval); {fmt.threshold_bracket(c)}"
            )
        why = H1_REASONS[h["why"]].format(
            ref=s["reference"],
            lr=fmt.lr(h["lr"]),
            bound=fmt.num(s["negligible"], 2),
            threshold=fmt.threshold_bracket(c),
        )
        per_depth[name] = (h["verdict"], why)
    return _verdict(analysis, "H1", per_depth, evidence)


# -- H2a, H2b --------------------------------------------------------------------------------
def _arm_pairs(analysis: dict, field: str):
    """(rung, the reference arm's field, the primary arm's field) at every rung with both."""
    s = analysis["settings"]
    for name, depth in analysis["depths"].items():
        arms = depth["arms"]
        if s["reference"] in arms and s["primary"] in arms:
            yield name, arms[s["reference"]][field], arms[s["primary"]][field]


DEFINITION_WORDS = {
    "diverged": "a run fails when it stops (diverges)",
    "stuck": "a run fails when it diverges or finishes worse than the bigram baseline",
    "degraded": "a run fails when it diverges or finishes worse than its seed's best LR by "
    "more than delta",
}


def h2a(analysis: dict) -> dict:
    """H2a decided on the primary failure definition; the others are printed beside it and the
    reason says when they would decide differently."""
    per_depth, evidence = {}, []
    rung = ladder.of(analysis)
    names = present.failure_names(analysis)  # the baseline rule off: stuck shown as diverged
    for name, depth in analysis["depths"].items():
        s = analysis["settings"]
        if not (s["reference"] in depth["arms"] and s["primary"] in depth["arms"]):
            continue
        by_def = depth.get("h2a_by_definition") or {}
        words = {}
        for definition, h in by_def.items():
            off = depth["arms"][s["reference"]]["eta_crit_by_definition"][definition]
            on = depth["arms"][s["primary"]]["eta_crit_by_definition"][definition]
            words[definition] = h2a_call(h, s["reference"])
            if definition not in names:
                continue
            shown = names[definition]
            evidence.append(
                f"{rung.label(name)}, {shown} ({DEFINITION_WORDS[shown]}): critical "
                f"LR off {fmt.median_range(off)}, on {fmt.median_range(on)}; ratio on/off "
                f"{fmt.ratio(h)} (90% interval) over {h['n']} paired seeds: {words[definition][0]}"
            )
        primary = depth["h2a"].get("definition", rules.PRIMARY_FAILURE)
        verdict, why = words.get(primary) or h2a_call(depth["h2a"], s["reference"])
        others = [
            f"{names[d]}: {v}"
            for d, (v, _) in words.items()
            if d != primary and d in names and v != verdict
        ]
        if others:
            why += f" (under the other failure definitions: {'; '.join(others)})"
        per_depth[name] = (verdict, why)
    return _verdict(analysis, "H2a", per_depth, evidence)


def h2a_call(h: dict, ref: str) -> tuple[str, str]:
    """One definition's H2a verdict with its reason (ref: the reference arm)."""
    if h.get("censored") == "off above":
        return INCONCLUSIVE, (
            f"{ref}'s runs do not fail inside the grid in every seed: extend the LR grid upward"
        )
    if h.get("censored") == "below":
        return INCONCLUSIVE, "a critical LR lies below the grid: extend it downward"
    return _paired_verdict(h, "critical LR raised", "not raised", lambda x: f"x{10**x:.2f}")


# why H2b does not judge a rung (sweeps.study.rules.h2b_unjudged's codes)
H2B_REASONS = {
    rules.H2B_RUNG_SUBSET: "not judged: this {rung} trains only [rung_lr] LRs ({lrs}), which "
    "do not span the sensitivity range ({left_out} left out)",
}


def h2b(analysis: dict) -> dict:
    per_depth, evidence = {}, []
    s, rung = analysis["settings"], ladder.of(analysis)
    m = s["min_sensitivity"]
    for name, off, on in _arm_pairs(analysis, "sensitivity"):
        h = analysis["depths"][name]["h2b"]
        evidence.append(
            f"{rung.label(name)}: LR sensitivity {s['reference']} "
            f"{fmt.pm(off['mean'], off['sd'])}, {s['primary']} {fmt.pm(on['mean'], on['sd'])} "
            f"nats; {present.primary_effect(analysis)} "
            f"{fmt.pm_interval(h)} (90% interval; minimum effect {fmt.num(m)})"
        )
        if h.get("why"):  # the rung was not judged (sweeps.study.rules.h2b_unjudged)
            trained = s.get("rung_lr", {}).get(name, [])
            left_out = rules.left_out_lrs(off["lrs"], trained)
            per_depth[name] = (
                INCONCLUSIVE,
                H2B_REASONS[h["why"]].format(
                    rung=rung.name,
                    lrs=", ".join(fmt.lr(x) for x in trained),
                    left_out=", ".join(fmt.lr(x) for x in left_out),
                ),
            )
        elif not (off["complete"] and on["complete"]):
            per_depth[name] = (
                INCONCLUSIVE,
                "incomplete: a run of the sensitivity range is missing or failed",
            )
        else:
            per_depth[name] = _paired_verdict(h, "sensitivity lowered", "not lowered", m=m)
    not_judged = {d for d in per_depth if analysis["depths"][d]["h2b"].get("why")}
    return _verdict(analysis, "H2b", per_depth, evidence, not_judged)


def _paired_verdict(h: dict, yes: str, no: str, show=fmt.num, m: float = 0.0) -> tuple[str, str]:
    """The verdict sweeps.study.rules.paired_verdict decided, with its reason. show: how a
    value reads (a log10 ratio reads as a ratio, 0 as x1.00)."""
    verdict = h["verdict"]
    lower = h.get("lower")
    if h["n"] < rules.MIN_SEEDS:
        return INCONCLUSIVE, f"{h['n']} paired seed(s): at least {rules.MIN_SEEDS} are needed"
    if lower is None:
        return INCONCLUSIVE, "the paired values tie and no floor bounds their spread"
    if verdict == SUPPORTED:
        return SUPPORTED, f"{yes} (one-sided 95% lower bound {show(lower)} > {show(m)})"
    if verdict == NOT_SUPPORTED:
        if h["mean"] <= 0:
            return NOT_SUPPORTED, f"{no} (mean {show(h['mean'])} <= {show(0.0)})"
        return NOT_SUPPORTED, (
            f"{no} by the minimum effect (one-sided 95% upper bound {show(h['upper'])} < {show(m)})"
        )
    return INCONCLUSIVE, (
        f"in the predicted direction (mean {show(h['mean'])}) but the "
        f"one-sided 95% lower bound {show(lower)} does not exceed {show(m)}"
    )


# -- the ladder's trend: H3 (depth), W1 and W2 (width) ---------------------------------------
TREND_REASONS = {
    "falls": "the slope's one-sided 95% upper bound lies below 0, censored values at their "
    "bounds and moved beyond them",
    "does not fall": "the threshold does not fall with {rung} (slope >= 0 both ways)",
    "censoring decides": "the verdict depends on where the censored per-seed thresholds lie",
    "not shown": "the slope is negative but its one-sided 95% upper bound is not below 0",
    "censored alike": "every per-seed threshold lies beyond the same end of the grid (its LRs "
    "place none), so moving them beyond it moves all alike and the slope measures nothing",
    # W2 (sweeps.study.ladders.carry_decision)
    "carries": "the slope's 90% interval lies inside ±{bound} decades per doubling, censored "
    "values at their bounds and moved beyond them",
    "moves": "the slope's 90% interval lies wholly outside ±{bound} decades per doubling both "
    "ways: the multiple moves with {rung}",
}
W2_NOT_SHOWN = "the slope's 90% interval reaches beyond ±{bound} decades per doubling"
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


def trend(analysis: dict, name: str) -> dict:
    """A ladder's trend verdict (H3 and W1: sweeps.study.ladders.trend_decision; W2:
    carry_decision), as the analysis decided it (analysis["h3"], ["w1"], ["w2"]): the
    threshold per rung, the slopes with their 90% intervals, and W1's extrapolation to the
    core width."""
    rung, s = ladder.of(analysis), analysis["settings"]
    depths = {int(n): _primary(analysis, d) for n, d in analysis["depths"].items()}
    depths = {k: v for k, v in sorted(depths.items()) if v is not None}
    evidence = [
        f"{rung.label(k)}: "
        + (
            f"necessity threshold {fmt.threshold_with_interval(c)}"
            if c["threshold"]["kind"] == ""
            else fmt.threshold(c["threshold"])
        )
        + f"; per seed: {fmt.seed_brackets(c['seed_thresholds'])}"
        for k, c in depths.items()
    ]
    t = analysis.get(name.lower()) or {}
    if name == "W2" and t.get("seed_best"):
        evidence += [
            f"{rung.label(k)}: {s['reference']}'s best LR per seed {fmt.seed_lrs(v)}"
            for k, v in sorted(t["seed_best"].items(), key=lambda kv: int(kv[0]))
        ]
    base = {
        "hypothesis": name,
        "claim": claim(analysis, name),
        "test": test(analysis, name),
        "evidence": evidence,
        "per_depth": {},
    }
    if len(depths) < MIN_DEPTHS:
        plural = rung.name if len(depths) == 1 else rung.plural
        return {
            **base,
            "verdict": INCONCLUSIVE,
            "reason": f"{len(depths)} {plural} with both arms; a trend needs at least "
            f"{MIN_DEPTHS} ({SPECS[rung.field]} runs {_shipped_rungs(rung.field)})",
        }
    if t.get("why") == "too few points":
        short = ", ".join(str(d) for d in t["short"])
        return {
            **base,
            "verdict": INCONCLUSIVE,
            "reason": f"{rung.name} {short}: fewer than 2 per-seed thresholds, censored ones "
            "included",
        }
    a, b = t.get("at_bound"), t.get("beyond")
    of = TREND_OF[name].format(ref=s["reference"])
    for label, sl in (("censored values at their bounds", a), ("moved beyond them", b)):
        if sl:
            base["evidence"].append(
                f"slope of {of} per doubling of {rung.name}, {label}: "
                f"{fmt.num(sl['value'])} (90% interval {fmt.num(sl['lower'])} to "
                f"{fmt.num(sl['upper'])}, {sl['n']} per-seed thresholds, {t['censored']} "
                f"censored); x{fmt.num(10 ** sl['value'], 2)} per doubling"
            )
    if t.get("extrapolation"):
        e = t["extrapolation"]
        base["evidence"].append(f"{extrapolation_head(e)}: {'; '.join(extrapolation_lines(e))}")
    if a:
        base["slope"] = a
    words = {
        k: v.format(rung=rung.name, bound=fmt.num(t.get("bound", ladders.CARRY_BOUND), 2))
        for k, v in TREND_REASONS.items()
    }
    if name == "W2":
        words["not shown"] = W2_NOT_SHOWN.format(bound=fmt.num(t.get("bound"), 2))
    elif a and b and t.get("why") == "censoring decides":
        words["censoring decides"] = censoring_words(a, b)
    return {
        **base,
        "verdict": t.get("verdict", INCONCLUSIVE),
        "reason": words.get(t.get("why"), "not decided"),
    }


def censoring_words(at_bound: dict, beyond: dict) -> str:
    """What the censored per-seed thresholds decide in H3 or W1: whether the fall is shown
    (one placement's upper bound below 0, the other's not), or only the slope's sign, with
    the fall shown under neither placement."""
    placed = {"at their bounds": at_bound, "moved beyond them": beyond}
    shown = [k for k, v in placed.items() if v["upper"] < 0]
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
C1_REASONS = {
    "no gap": (INCONCLUSIVE, "QK-norm is necessary at no LR the control ran"),
    "control worse": (NOT_SUPPORTED, "the start-matched control is itself worse than QK-norm on"),
    "start": (SUPPORTED, "the gap vanishes with the start matched at all {n} such LR(s)"),
    "neither": (INCONCLUSIVE, "the control's gap is neither negligible nor necessary at some LR"),
}


def share_text(gap: float | None, control_gap: float | None) -> str:
    """'; start-temperature share 0.56' (docs/STUDY.md section 12), or nothing without a gap."""
    share = start_share(gap, control_gap)
    return "" if share is None else f"; start-temperature share {share:.2f}"


def c1(analysis: dict) -> dict:
    """C1 as sweeps.study.alternatives.c1 decided it per depth, with the evidence per LR."""
    s = analysis["settings"]
    if not s["start_control"]:
        return {
            "hypothesis": "C1",
            "claim": claim(analysis, "C1"),
            "test": test(analysis, "C1"),
            "verdict": INCONCLUSIVE,
            "evidence": [],
            "per_depth": {},
            "reason": "not assessed: the spec names no start-matched control arm",
        }
    per_depth, evidence = {}, []
    rung = ladder.of(analysis)
    decided = (analysis.get("decisions") or {}).get("C1") or {}
    for name, depth in analysis["depths"].items():
        primary = _primary(analysis, depth)
        control = depth["comparisons"].get(rules.Comparison(s["start_control"], s["primary"]).key)
        if primary is None or control is None or name not in decided:
            continue
        by_lr = {e["lr"]: e for e in _judged(primary)}
        for e in _judged(control):
            p = by_lr.get(e["lr"])
            if p is not None:
                evidence.append(
                    f"{rung.label(name)}, LR {fmt.lr(e['lr'])}: {present.primary_effect(analysis)} "
                    f"{fmt.pm_interval(p)}; {s['start_control']} - {s['primary']} "
                    f"{fmt.pm_interval(e)}{share_text(p['mean'], e['mean'])}"
                )
        d = decided[name]
        verdict, why = C1_REASONS[d["why"]]
        per_depth[name] = (verdict, why.format(n=d["n"]))
    return _verdict(analysis, "C1", per_depth, evidence)
