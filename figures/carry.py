"""What carries from a reference report to a new one (docs/STUDY.md sections 16, 20, 21 and 24):
the side-by-side table of the section's quantities, each on both reports with its interval,
the outcome and the rule. Writes <report>/carry.json (sweeps/analysis/carry_page.py: numbers
and reason codes) and carry.md, worded here from it.

    python -m figures.carry docs/cpu-text [--reference docs/cpu] [--control docs/cpu-control]
    python -m figures.carry docs/cpu-head64

The report's folder name picks the pre-registered predictions and their reference
(sweeps.analysis.carry_page.PLANS; any other report gets section 16's, against docs/cpu).
sweeps/study/carry.py computes and decides everything; this module only words it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from figures.report.what_ran import unfinished_words
from sweeps.analysis import carry_page as cp
from sweeps.core.files import write_atomic, write_json_atomic
from sweeps.study import carry as c
from sweeps.study.protocol import earlier_json, judged_under, stamp_words

USAGE = "usage: python -m figures.carry REPORT [--reference DIR] [--control DIR]"


def _lr(x: float) -> str:
    """An LR as section 16 and 20 write it: 3.16e-4, 1e-3, 0.01, 0.316."""
    if x >= 0.01:
        return f"{x:g}"
    mantissa, exponent = f"{x:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def _lrs(lrs) -> str:
    return ", ".join(_lr(x) for x in lrs)


def quantity_text(q: str, p: c.Predictions) -> str:
    lo, hi = p.study.sensitivity_range
    return {
        "T1": "stability threshold, pooled, as a multiple of `off`'s best LR",
        "T2": "`off`'s failure mode at its first failing LR (stuck definition)",
        "T3": "H2a: QK-norm raises the critical LR (stuck definition); ratio on / off",
        "T4": f"H2b: QK-norm lowers LR sensitivity over [{_lr(lo)}, {_lr(hi)}]; S off - S on"
        + ("" if p.base_lrs == c.BASE_LRS else f" (LRs {_lrs(p.base_lrs)})"),
        "T5": f"the low-LR gap, `off` - `on` at LR {_lr(p.gap_lr)}",
        "T6": "the gap's start-temperature share: (`off-warm` - `on`) / (`off` - `on`) at 1e-3",
        "T7": "QK-norm's cost at `off`'s best LR, `off` - `on`",
        "T8": "QK-norm's cost at each arm's own best LR, `off` - `on`",
        "T9": "the harm window: LRs where QK-norm is credibly worse (section 17)",
        "T10": "`off`'s failure edge (stuck definition), with its 90% interval",
        "T11": "`on`'s failure edge (stuck definition): its critical LR, with its 90% interval",
    }[q]


def _window_t1(p: c.Predictions) -> str:
    lo, hi = p.t1_window
    return f"(x{lo:.3g}, x{hi:.3g}]"


def _window_t5(p: c.Predictions) -> str:
    lo, hi = p.t5_window
    return f"[{lo}, {hi}]"


def _level(confidence: float) -> str:
    """A two-sided interval's level from its one-sided bounds' (0.95: "90%", 0.97: "94%")."""
    return f"{round(100 * (2 * confidence - 1))}%"


def rule_text(q: str, p: c.Predictions) -> str:
    shift = (
        f"carries if the paired {_level(p.cost_confidence)} interval of the shift (new - "
        f"reference, by seed) lies "
        f"inside +-{p.negligible:g}; counts against if it excludes 0 and reaches beyond "
        f"+-{p.negligible:g}"
        if p.paired
        else "carries if Welch's 90% interval of the shift (new - reference) contains 0; "
        "counts against if it excludes 0"
    )
    verdict = (
        "carries with the reference's verdict; counts against with the opposite decisive one"
        if p.paired
        else "carries if supported; counts against if not supported"
    )
    edge = (
        f"carries if the interval overlaps the reference's widened {p.edge_window:g} decades "
        "each side; counts against if it lies outside"
    )
    return {
        "T1": f"carries if the pooled bracket overlaps {_window_t1(p)}; counts against if it "
        "lies outside, or no threshold below the top evidence LR",
        "T2": "carries if in at least 3 of 4 seeds the first failing LR is a finished-but-stuck "
        "run; counts against if at least 2 of 4 are divergences",
        "T3": verdict,
        "T4": verdict,
        "T5": f"carries if the interval lies above 0 and overlaps {_window_t5(p)}; counts "
        f"against if it lies at or below 0.02, or entirely outside {_window_t5(p)}",
        "T6": "carries if under 1/3; counts against if above 2/3",
        "T7": shift,
        "T8": shift,
        "T9": "carries if a harm window is found exactly when the reference has one; counts "
        "against otherwise",
        "T10": edge,
        "T11": edge,
    }[q]


def reason_words(reason: str, p: c.Predictions) -> str:
    return {
        c.OVERLAPS: f"the bracket overlaps {_window_t1(p)}",
        c.OUTSIDE: f"the bracket lies outside {_window_t1(p)}",
        c.NO_THRESHOLD: "no threshold below the top evidence LR",
        c.UNJUDGED: "no pair at or above `off`'s best LR carries evidence",
        c.MOSTLY_STUCK: "at least 3 of 4 seeds first fail stuck",
        c.STOPS: "at least 2 of 4 seeds first fail by divergence",
        c.MIXED: "neither 3 of 4 stuck nor 2 of 4 divergences",
        c.TOO_FEW_SEEDS: "fewer than 3 seeds",
        c.ABOVE_ZERO_IN_WINDOW: f"the interval lies above 0 and overlaps {_window_t5(p)}",
        c.AT_OR_BELOW_FLOOR: "the interval lies at or below 0.02",
        c.OUT_OF_WINDOW: f"the interval lies outside {_window_t5(p)}",
        c.STRADDLES: f"the interval overlaps {_window_t5(p)} but reaches 0",
        c.NO_INTERVAL: "no interval (fewer than 3 pairs)",
        c.NOT_MEASURED: "not measured",
        c.UNDER: "under 1/3",
        c.OVER: "above 2/3",
        c.BETWEEN: "between 1/3 and 2/3",
        c.NO_GAP: "no gap shown above 0 to take a share of",
        c.BORDERLINE_DECIDES: "a run within the fate margin of its cut decides",
        c.SMALLER: "the shift's interval lies above 0: QK-norm costs less here",
        c.LARGER: "the shift's interval lies below 0: QK-norm costs more here",
        c.CONTAINS_ZERO: "the shift's interval contains 0",
        c.SAME_HARM: "a harm window here exactly when the reference has one",
        c.HARM_NEW: "a harm window the reference does not have",
        c.HARM_GONE: "no harm window where the reference has one",
        c.NEGLIGIBLE: f"the shift's paired interval lies inside +-{p.negligible:g}",
        c.NOT_SHOWN: f"the shift's paired interval reaches 0 and beyond +-{p.negligible:g}",
        c.SAME_VERDICT: "the reference's verdict",
        c.OTHER_VERDICT: "not the reference's verdict",
        c.EDGE_OVERLAPS: "the interval overlaps the reference's, widened",
        c.EDGE_OUTSIDE: "the interval lies outside the reference's, widened",
        c.CENSORED: "no interval: a seed's edge lies beyond the grid",
    }.get(reason, reason)


def _g(x: float) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.3g}"


def _x(x: float) -> str:
    return "inf" if math.isinf(x) else f"x{x:.3g}"


def value_text(quantity: str, s: c.Side) -> str:
    """One side's value in words, with its interval where the rule has one."""
    iv = s.interval
    if quantity == "T1":
        best = s.part("best_lr")
        if s.verdict == "unjudged":
            return "no evidence"
        if s.verdict == "none":
            top = s.part("threshold_lo")
            return f"none below the top evidence LR {_g(top)} ({_x(iv[0])}; best {_g(best)})"
        if s.verdict == "below":
            return f"<= x1: necessary at `off`'s best LR {_g(best)}"
        lo, hi = s.part("threshold_lo"), s.part("threshold_hi")
        return f"({_x(iv[0])}, {_x(iv[1])}] (best {_g(best)}, threshold ({_g(lo)}, {_g(hi)}])"
    if quantity == "T2":
        n = len(s.per_seed)
        if not n:
            return "not measured"
        parts = [
            f"stuck first in {int(s.value)} of {n} seeds, stopped first in "
            f"{int(s.part('stopped'))} ({', '.join(s.per_seed)})"
        ]
        for d in ("stuck", "diverged"):
            edge, censored = s.part(f"{d}_edge"), s.part(f"{d}_censored")
            if censored and censored > 0:
                beyond = _g(s.part(f"{d}_beyond"))
                parts.append(f"{d} edge above {beyond} in {int(censored)} of {n} seeds")
            elif math.isfinite(edge):
                parts.append(f"{d} edge {_g(edge)}")
        return "; ".join(parts)
    if quantity == "T3":
        ratio = f"x{s.value:.2f}" if math.isfinite(s.value) else "n/a"
        interval = f" [x{iv[0]:.2f}, x{iv[1]:.2f}]" if iv else ""
        return f"{s.verdict}, {ratio}{interval}"
    if quantity == "T4":
        interval = f" [{iv[0]:.3f}, {iv[1]:.3f}]" if iv else ""
        mean = f"{s.value:.3f}" if math.isfinite(s.value) else "n/a"
        return f"{s.verdict}, {mean}{interval} nats"
    if quantity == "T5":
        if not math.isfinite(s.value):
            return "not measured"
        interval = f" [{iv[0]:+.3f}, {iv[1]:+.3f}]" if iv else " (no interval)"
        family = int(s.part("family")) if math.isfinite(s.part("family")) else 1
        how = (
            f" (Bonferroni over the {family} LRs below `off`'s best)"
            if family > 1
            else " (90%, 1e-3 not below `off`'s best)"
            if iv
            else ""
        )
        return f"{s.value:+.3f}{interval} nats{how}"
    if quantity == "T6":
        if s.verdict == c.NOT_MEASURED:
            return "not measured (off-warm, off and on at 1e-3 in 3 seeds needed)"
        head = f"{s.part('numerator'):.3f} / {s.part('denominator'):.3f} = {s.value:.2f}"
        if iv:
            return f"{head} [{iv[0]:.2f}, {iv[1]:.2f}] (Fieller 90%)"
        return f"{head} (no interval: `off` - `on`'s lower bound {s.part('denominator_lower'):.3f})"
    if quantity in ("T7", "T8"):
        if s.verdict == c.NOT_MEASURED or not math.isfinite(s.value):
            return "not measured"
        interval = f" [{iv[0]:+.3f}, {iv[1]:+.3f}]" if iv else " (no interval)"
        where = (
            f"at {_g(s.part('best_lr'))}"
            if quantity == "T7"
            else f"off at {_g(s.part('off_lr'))}, on at {_g(s.part('on_lr'))}"
        )
        return f"{s.value:+.3f}{interval} nats ({where}; {len(s.values)} seeds)"
    if quantity in ("T10", "T11"):
        if s.verdict == c.NOT_MEASURED:
            return "not measured"
        if iv is None:
            return f"censored in {int(s.part('censored'))} of {int(s.part('seeds'))} seeds"
        return f"{_g(s.value)} [{_g(iv[0])}, {_g(iv[1])}]"
    if quantity == "T9":
        if not s.value:
            return "none"
        lo, hi = iv
        more = f" and {int(s.value) - 1} more" if s.value > 1 else ""
        return f"LRs {_g(lo)} to {_g(hi)}{more}"
    raise ValueError(quantity)


def shift_text(shift: cp.CostShift | None) -> str:
    """T7, T8: the shift new - reference the rule read, with its interval and, paired, the
    pairs' sd."""
    if shift is None:
        return ""
    how = "paired shift" if shift.paired else "shift"
    spread = f", pairs' sd {shift.pair_sd:.3f}" if math.isfinite(shift.pair_sd) else ""
    if not math.isfinite(shift.lower):
        return f"; {how} {shift.mean:+.3f} (no interval)"
    return f"; {how} {shift.mean:+.3f} [{shift.lower:+.3f}, {shift.upper:+.3f}]{spread}"


def _pooled_words(page: cp.Page, where: str) -> str:
    """Section 24: the runs each side pools in, seeds paired by seed across them."""
    if not (page.pooled_new or page.pooled_reference):
        return ""
    new = " and ".join(f"{n}'s" for n in page.pooled_new) or "no other report's"
    ref = " and ".join(f"{n}'s{where}" for n in page.pooled_reference) or "no other report's"
    return (
        f" Pooled with them, seeds paired by seed: {new} runs on {page.report}'s side, "
        f"{ref} on {page.reference}'s."
    )


def render(doc: dict) -> str:
    """carry.md from carry.json's document (sweeps/analysis/carry_page.py), read typed."""
    page = cp.page_of(doc)
    p = page.predictions
    ref, new = page.reference, page.report
    where = "".join(f" ({k} {v})" for k, v in page.reference_rows.items())
    control = f" (`off-warm` from {page.control})" if page.control else ""
    unfinished = unfinished_words(page.unfinished)  # its sweep still trains: said first
    lines = [
        f"# What carries from {ref}{where} to {new}",
        "",
        *([f"> `{new}`: {unfinished}", ""] if unfinished else []),
        f"docs/STUDY.md section {p.section}'s predictions ({stamp_words(doc)}), "
        f"judged by section 13's rules on {new}'s runs.parquet; {ref}'s side from its own "
        f"runs.parquet{where}{control}.{_pooled_words(page, where)} Regenerate with "
        f"`python -m figures.carry docs/{new}`.",
        "",
        f"| # | quantity | {ref}{where} | {new} | outcome | rule |",
        "|---|---|---|---|---|---|",
    ]
    for x in page.quantities:
        lines.append(
            f"| {x.quantity} | {quantity_text(x.quantity, p)} "
            f"| {value_text(x.quantity, x.reference)} "
            f"| {value_text(x.quantity, x.new)}{shift_text(x.shift)} "
            f"| **{x.outcome}** ({reason_text(x, p)}) | {rule_text(x.quantity, p)} |"
        )
    keys = [x.quantity for x in page.quantities]
    notes = ["T3 and T4 90% t intervals over paired seeds" if "T3" in keys else ""]
    notes.append(
        "T5 section 13's low-LR effect interval (Bonferroni over the LRs below `off`'s best)"
    )
    if "T6" in keys:
        notes.append(
            "T6 Fieller's 90% interval for a ratio of paired means (the rule reads the ratio "
            "itself)"
        )
    if "T7" in keys and p.paired:
        notes.append(
            "T7 and T8 each side's paired 90% interval; the rule reads the paired shift's "
            f"{_level(p.cost_confidence)} interval (the two sweeps share seeds, init weights "
            "and batches)"
        )
    elif "T7" in keys:
        notes.append(
            "T7 and T8 each side's paired 90% interval; the rule reads the shift's Welch 90% "
            "interval (the two sweeps' seeds are not paired)"
        )
    if "T10" in keys:
        notes.append("T10 and T11 section 13's failure-edge interval (geometric mean over seeds)")
    lines += ["", "Intervals: " + "; ".join(n for n in notes if n) + "."]
    if page.loss_shifts:
        lines += ["", *shift_table(page.loss_shifts, new, ref)]
    return "\n".join(lines) + "\n"


def shift_table(shifts: tuple[c.LossShift, ...], new: str, ref: str) -> list[str]:
    """Section 21's descriptive table: each arm's capped loss on the new side minus the
    reference's at each LR, paired by seed (no verdict rests on it)."""
    arms = list(dict.fromkeys(x.arm for x in shifts))
    lrs = sorted({x.lr for x in shifts})
    at = {(x.arm, x.lr): x for x in shifts}

    def cell(x: c.LossShift | None) -> str:
        if x is None or not x.n:
            return "-"
        if not math.isfinite(x.lower):
            return f"{x.mean:+.3f} (n {x.n})"
        return f"{x.mean:+.3f} [{x.lower:+.3f}, {x.upper:+.3f}]"

    return [
        f"**Where the precision moves the loss** (descriptive): {new} - {ref}, each arm's capped "
        "loss paired by seed (the same init weights and batches), mean and paired 90% interval; "
        "negative: lower loss on the new side.",
        "",
        "| LR | " + " | ".join(arms) + " |",
        "|---|" + "---|" * len(arms),
        *(f"| {_lr(lr)} | " + " | ".join(cell(at.get((a, lr))) for a in arms) + " |" for lr in lrs),
    ]


def reason_text(x: cp.Judged, p: c.Predictions) -> str:
    if x.reason == c.VERDICT:
        return f"{'H2a' if x.quantity == 'T3' else 'H2b'} {x.new.verdict}"
    return reason_words(x.reason, p)


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    args, options = [], {"--reference": None, "--control": None}
    it = iter(argv)
    for a in it:
        if a in options:
            value = next(it, None)
            if value is None:
                return _error(f"{a} needs a folder; {USAGE}")
            options[a] = Path(value)
        elif a.startswith("-"):
            return _error(f"unknown option {a}; {USAGE}")
        else:
            args.append(Path(a))
    if len(args) != 1:
        return _error(f"one report folder expected; {USAGE}")
    report = args[0]
    plan = cp.plan_for(report)
    reference = options["--reference"] or plan.reference
    control = options["--control"] or plan.control
    needs_control = "T6" in plan.predictions.quantities and control is not None
    pooled_in = (*plan.more_reference, *plan.more_new)
    for folder in (report, reference, *([control] if needs_control else []), *pooled_in):
        if not (folder / "runs.parquet").is_file():
            return _error(
                f"{folder} holds no runs.parquet; give a report folder that `figures` wrote "
                "(e.g. `qktorch figures cpu-text --out docs/cpu-text`)"
            )
    try:
        doc = cp.build(report, reference, control if needs_control else None, plan)
    except ValueError as e:
        return _error(f"{report}: {e}")
    doc = judged_under(doc, earlier_json(report / "carry.json"))  # its rules keep naming it
    write_json_atomic(report / "carry.json", doc)
    write_atomic(report / "carry.md", render(doc))
    summary = ", ".join(f"{q['quantity']} {q['outcome']}" for q in doc["quantities"])
    print(f"{report}/carry.md: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
