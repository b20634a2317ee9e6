"""The report's answer: the opening (figures/report/opening.py) with the data it rests on, the
warnings, what the words of the rule mean, and the two headline figures with how to read them;
answer_lines is the same opening as the terminal prints it."""

from __future__ import annotations

from figures import present
from figures.report import opening, what_ran
from figures.report.figure_set import HEADLINE
from figures.words.numbers import ONE_SIDED
from figures.words.view import Said
from sweeps.analysis.results import SweepResults

EFFECTIVE_LOSS = (
    "*Effective loss*: a finished run's final validation loss capped at its loss at "
    "initialization, min(final, L0), as Wortsman et al. count it; only a run that stopped "
    "(diverged) counts at L0. A run *fails* at its LR, for the critical LR and H2a, when it is "
    "*stuck*: it diverged or finished worse than the bigram baseline. The critical LR is also "
    "shown when only a divergence counts (*diverged*) and when a run worse than its seed's best "
    "LR by delta counts (*degraded*)."
)


# the same with the bigram-baseline rule off (train.baseline = none): no run is stuck
EFFECTIVE_LOSS_RULE_OFF = (
    "*Effective loss*: a finished run's final validation loss capped at its loss at "
    "initialization, min(final, L0), as Wortsman et al. count it; only a run that stopped "
    "(diverged) counts at L0. A run *fails* at its LR, for the critical LR and H2a, when it "
    "*diverged*: the bigram-baseline rule is off, so no run counts as stuck. The critical LR is "
    "also shown when a run worse than its seed's best LR by delta counts (*degraded*)."
)


def answer_lines(said: Said) -> list[str]:
    """The answer as the terminal prints it: the report's opening (figures/report/opening.py;
    said: the analysis in words)."""
    return opening.terminal(said)


def answer(results: SweepResults, said: Said, figures: dict, formats) -> str:
    """The opening: what the sweep says, on what data and budget, and the headline figures
    (said: the analysis in words, figures/words/view.py)."""
    a = said.analysis
    s = a.settings
    runs = results.runs
    corpus = ", ".join(sorted(map(str, runs.corpus.dropna().unique()))) if "corpus" in runs else "?"
    tokenizer = (
        ", ".join(sorted(map(str, runs.tokenizer.dropna().unique())))
        if "tokenizer" in runs
        else "?"
    )
    seeds = ", ".join(str(int(x)) for x in sorted(runs.seed.dropna().unique()))
    lines = ["## The answer", "", *opening.markdown(said)]
    lines += [
        f"These runs: corpus {corpus} (tokenizer {tokenizer}), {what_ran.budgets(a)}, seeds "
        f"{seeds}; {len(a.runs)} runs, primary comparison {s.reference} vs "
        f"{s.primary}, minimum effect {s.min_effect:g} nats.",
        "",
    ]
    for warning in said.budget_warnings:  # figures/words/caveats.py
        lines += [f"**Budget warning:** {warning}.", ""]
    for warning in said.refinement_warnings:
        lines += [f"**Refinement warning:** {warning}.", ""]
    lines += [
        (EFFECTIVE_LOSS_RULE_OFF if present.rule_off_of(a) else EFFECTIVE_LOSS)
        + f" QK-norm is *necessary* at an LR when the one-sided {ONE_SIDED} lower "
        f"bound of the paired effect ({s.reference} - {s.primary} effective loss) exceeds "
        f"{s.min_effect:g} nats. The *stability threshold* is the lowest LR, at or above "
        f"{s.reference}'s best, from which QK-norm is necessary and stays larger than "
        f"{s.min_effect:g} nats at every LR judged above it (pairs where both runs failed "
        "carry no evidence; docs/STUDY.md section 13); an arm's *critical LR* is where its "
        "runs start to fail.",
        "",
    ]
    bigram_loss = s.baselines.bigram
    if present.rule_off_of(a):
        lines += [
            "The bigram-baseline rule is **off** for this sweep (train.baseline = none): "
            "runs are unstable only by a loss spike, not by ending worse than the bigram "
            "baseline" + (f" ({bigram_loss:.3f} nats)" if bigram_loss is not None else "") + ".",
            "",
        ]
    image = next((ext for ext in ("png", "svg") if ext in formats), None)
    for name in HEADLINE:
        caption, chart = figures.get(name, ("", None))
        if chart is not None and image:
            lines += [f"![{caption}]({name}.{image})", ""]
    bigram = "; dotted: the bigram baseline" if bigram_loss is not None else ""
    ref, primary, least = s.reference, s.primary, s.min_effect
    lines += [
        "Reading the two figures:",
        "",
        "- *Final loss vs learning rate*: per arm a line, the seed median of the effective "
        "loss, and a band, the range over seeds (a cell whose seeds split shows them, not a "
        "mean no seed had); arms that coincide are set a few pixels apart.",
        "- Each run is a glyph by its fate: circle ok, triangle unstable, "
        + (
            ""
            if present.rule_off_of(a)
            else "square stuck (finished worse than the bigram baseline), "
        )
        + "cross diverged (on the top edge).",
        "- A diamond on the bottom edge is an arm's critical LR, drawn only where its runs "
        f"failed; the bar above the data is the bracket the stability threshold lies in{bigram}.",
        f"- *Where QK-norm is necessary*: one cell per LR, coloured by the paired effect {ref} "
        f"- {primary} (blue: QK-norm better; orange: better without), full colour at the span "
        "its legend gives; larger effects (where runs failed) are clamped to it.",
        f"- A dot: QK-norm is necessary there (the interval's lower end clears {least:g} nats). A "
        "strong colour without a dot: a large mean whose interval still reaches below that (the "
        "seeds disagree).",
        "- Grey: every run of both arms failed, so there is no effect to measure. Light grey "
        "with an x: not judged (too few pairs to test, e.g. where most runs of both arms "
        "failed). The black bar just above a row: that rung's threshold bracket.",
        "",
    ]
    return "\n".join(lines)
