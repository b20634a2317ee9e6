"""The words of each hypothesis sweeps/study/hypotheses.py registers, one row per id: the claim,
the test, the question the opening asks, and the text of each reason code its decision returns.
The decisions are made in sweeps/study; this table only says them.

Placeholders, filled where the words are used: {rung} the ladder's name (depth or width; a depth
ladder's words are those of before ladders), {ref} the reference arm, {bound} a trend's bound,
and each Call's numbers by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sweeps.analysis.trends import CORE_WIDTH
from sweeps.study.hypotheses import NO_RUNG
from sweeps.study.rules import BORDERLINE_DECIDES, H2B_RUNG_SUBSET, H2B_SHORT


@dataclass(frozen=True)
class Words:
    claim: str
    test: str
    question: str
    reasons: dict[str, str] = field(default_factory=dict)  # reason code -> its text
    test_rule_off: str = ""  # the test where the runs had no bigram-baseline rule, if it differs


# what every hypothesis may say: no rung to judge, or no pre-registration to judge by
COMMON = {NO_RUNG: "no {rung} has both arms of the comparison"}
UNREGISTERED = "the plan has no pre-registered [study] (docs/STUDY.md section 6)"

# the paired rules' codes (sweeps.study.hypotheses.paired_call); {yes} and {no} are the row's
# words for the effect shown or not, the values are as the row shows them (H2a: as a ratio)
PAIRED = {
    "few seeds": "{n} paired seed(s): at least {needs} are needed",
    "tie": "the paired values tie and no floor bounds their spread",
    "shown": "{yes} (one-sided 95% lower bound {lower} > {m})",
    "wrong way": "{no} (mean {mean} <= {zero})",
    "under minimum": "{no} by the minimum effect (one-sided 95% upper bound {upper} < {m})",
    "not shown": "in the predicted direction (mean {mean}) but the one-sided 95% lower bound "
    "{lower} does not exceed {m}",
}


def _paired(yes: str, no: str) -> dict[str, str]:
    return {k: v.replace("{yes}", yes).replace("{no}", no) for k, v in PAIRED.items()}


# any verdict the borderline runs decide (sweeps.study.rules.BORDERLINE_DECIDES)
BORDERLINE_WORDS = (
    "the verdict differs with the borderline runs (within the fate margin of their cut) counted "
    "failed and counted trained"
)

# the trends' codes (sweeps.study.trend.decide, carry and robust; the registry's counts)
TREND = {
    "few rungs": "{n} {rungs} with both arms; a trend needs at least {needs} ({spec} runs "
    "{shipped})",
    "too few rungs": "fewer than 3 {rung} values rest on 2 or more per-seed thresholds",
    "falls": "the slope's 90% interval lies below 0, censored values at their bounds and moved "
    "beyond them",
    "steep fall ruled out": "the slope's 90% interval lies above the predicted {prediction} "
    "decades per doubling both ways: a fall that steep is ruled out at this scale",
    "censoring decides": "the verdict depends on where the censored per-seed thresholds lie",
    "not shown": "the slope's 90% interval reaches both below 0 and below the predicted "
    "{prediction}: neither a fall nor the predicted fall's absence is shown",
    "censored alike": "every per-seed threshold lies beyond the same end of the grid (its LRs "
    "place none), so moving them beyond it moves all alike and the slope measures nothing",
    "carries": "the slope's 90% interval lies inside ±{bound} decades per doubling, censored "
    "values at their bounds and moved beyond them",
    "moves": "the slope's 90% interval lies wholly outside ±{bound} decades per doubling both "
    "ways: the multiple moves with {rung}",
    "one rung decides": "with {rung} {reversed} left out the verdict is the opposite one "
    "(docs/STUDY.md section 17: a verdict one rung reverses is not a verdict)",
    BORDERLINE_DECIDES: BORDERLINE_WORDS,
}

# the test every trend shares (docs/STUDY.md sections 13 and 17), {what} on {field}
TREND_TEST = (
    "Each {rung}'s value is the mean log10 of its seeds' stability thresholds (censored ones at "
    "their bounds and moved half a decade beyond); least squares of the values on "
    "log2({field}) over >= {rungs} {rung_plural}, the residual sd at least the seeds' scatter: "
    "{what}, both placements, the borderline runs counted failed and trained; refitted with each "
    "{rung} left out (a verdict one {rung} reverses is inconclusive)."
)


WORDING = {
    "H1": Words(
        claim="The effect of QK-norm is learning-rate-conditional: negligible (or slightly "
        "negative) at low LR, decisive at high LR.",
        test="Per {rung}, primary comparison, at the reference arm's best LR: negligible by an "
        "equivalence test (TOST: the 90% interval inside +-`negligible`) there, and a necessity "
        "threshold above it.",
        question="Does QK-norm matter only above {ref}'s best LR?",
        reasons={
            "no best lr": "{ref} has no LR where every seed finished",
            "not judged": "the rule cannot judge {ref}'s best LR {lr} (a ceiling, both arms "
            "failing there, or fewer than 3 pairs)",
            "necessary": "QK-norm already matters at {ref}'s best LR {lr}",
            "harms": "QK-norm harms at {ref}'s best LR {lr} (90% interval below -m)",
            "no threshold": "QK-norm is necessary at no LR although {ref} fails inside the grid",
            "negligible": "negligible at {ref}'s best LR {lr} (90% interval inside +-{bound}); "
            "{threshold}",
            "off never fails": "{ref} never fails and QK-norm is never necessary: extend the LR "
            "grid upward",
            "neither": "at {ref}'s best LR {lr} the effect is neither shown negligible (90% "
            "interval inside +-{bound}) nor shown to matter",
            BORDERLINE_DECIDES: BORDERLINE_WORDS,
        },
    ),
    "H2a": Words(
        claim="QK-norm raises the critical learning rate (the max stable LR).",
        test="Per {rung}: one-sided 95% t lower bound of mean log10(eta_crit on / eta_crit off) "
        "over paired seeds (sd at least the grid's resolution) above 0, with a run failing when "
        "it is stuck (diverged, or finished worse than the bigram baseline); reported under the "
        "diverged and degraded definitions too.",
        question="Does QK-norm raise the LR at which runs start to fail?",
        reasons={
            "off above": "{ref}'s runs do not fail inside the grid in every seed: extend the LR "
            "grid upward",
            "below": "a critical LR lies below the grid: extend it downward",
            BORDERLINE_DECIDES: BORDERLINE_WORDS,
            **_paired("critical LR raised", "not raised"),
        },
        # train.baseline = none: no run is stuck
        test_rule_off="Per {rung}: one-sided 95% t lower bound of mean log10(eta_crit on / "
        "eta_crit off) over paired seeds (sd at least the grid's resolution) above 0, with a run "
        "failing when it diverged (the bigram-baseline rule is off, so no run is stuck); "
        "reported under the degraded definition too.",
    ),
    "H2b": Words(
        claim="QK-norm lowers LR sensitivity.",
        test="Per {rung}: one-sided 95% t lower bound of mean (S off - S on) over paired seeds "
        "above the pre-registered minimum effect `min_sensitivity`.",
        question="Does QK-norm make the loss less sensitive to the LR?",
        reasons={
            H2B_RUNG_SUBSET: "not judged: this {rung} trains only [rung_lr] LRs ({lrs}), which "
            "do not span the sensitivity range ({left_out} left out)",
            H2B_SHORT: "not judged: the grid's LRs inside the sensitivity range [{range}] ({lrs}) "
            "do not reach both its ends",
            "incomplete": "incomplete: a run of the sensitivity range is missing or failed",
            **_paired("sensitivity lowered", "not lowered"),
        },
    ),
    "H3": Words(
        claim="The stability threshold falls as depth grows.",
        test=TREND_TEST.format(
            rung="depth",
            field="n_layer",
            rungs="{rungs}",
            rung_plural="depths",
            what="supported when the slope's 90% interval lies below 0, ruled out when it lies "
            "above the predicted -0.25 decades per doubling",
        ),
        question="Does the stability threshold fall as depth grows?",
        reasons=TREND,
    ),
    "W1": Words(
        claim="The stability threshold falls as width grows.",
        test=TREND_TEST.format(
            rung="width",
            field="n_embd",
            rungs="{rungs}",
            rung_plural="widths",
            what="supported when the slope's 90% interval lies below 0, ruled out when it lies "
            "above the predicted -0.3 decades per doubling",
        )
        + f" The line read at the core width {CORE_WIDTH} is an extrapolation (docs/STUDY.md "
        "section 11).",
        question="Does the stability threshold fall as width grows?",
        reasons=TREND,
    ),
    "W2": Words(
        claim="The practitioner's rule carries across widths: the threshold's bracket top as a "
        "multiple of the best LR without QK-norm stays the same.",
        test=TREND_TEST.format(
            rung="width",
            field="n_embd",
            rungs="{rungs}",
            rung_plural="widths",
            what="the thresholds as multiples of the width's best LR of the reference arm; "
            "supported (carries) when the slope's 90% interval lies inside +-{bound} decades per "
            "doubling (an equivalence test), not supported when it lies wholly outside",
        ),
        question="Does the rule's multiple of {ref}'s best LR carry across widths?",
        reasons={
            **TREND,
            "not shown": "the slope's 90% interval reaches beyond ±{bound} decades per doubling "
            "without lying wholly outside it",
        },
    ),
    "C1": Words(
        claim="The low-LR gap between QK-norm off and on is a start-temperature effect: it goes "
        "away when QK-norm off starts with on's attention-logit scale.",
        test="At every LR where QK-norm is necessary on the primary comparison, the "
        "start-matched control's gap to QK-norm on is negligible (TOST: its 90% interval inside "
        "+-`negligible`).",
        question="Is the low-LR gap the start temperature?",
        reasons={
            "no control": "not assessed: the spec names no start-matched control arm",
            "no gap": "QK-norm is necessary at no LR the control ran",
            "control worse": "the start-matched control is itself worse than QK-norm on",
            "start": "the gap vanishes with the start matched at all {n} such LR(s)",
            "neither": "the control's gap is neither negligible nor necessary at some LR",
        },
    ),
}


def reason(name: str, why: str, **values) -> str:
    """The text of a hypothesis's reason code, its placeholders filled from values."""
    return {**COMMON, **WORDING[name].reasons}[why].format(**values)
