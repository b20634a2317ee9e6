"""What carries from docs/cpu to a new report (docs/STUDY.md section 16): the side-by-side
table of T1..T6, each quantity on the reference corpus and the new one with its interval, the
outcome and the rule. Writes <report>/carry.md and carry.json.

    python -m figures.carry docs/cpu-text [--reference docs/cpu] [--control docs/cpu-control]

sweeps/study/carry.py computes and decides everything; this module only words it.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict
from pathlib import Path

from sweeps.core.files import clean_json, write_atomic, write_json_atomic
from sweeps.study import carry as c
from sweeps.study.stats import STUDY_SHA256

REFERENCE, CONTROL = Path("docs/cpu"), Path("docs/cpu-control")
USAGE = "usage: python -m figures.carry REPORT [--reference DIR] [--control DIR]"

QUANTITY = {
    "T1": "stability threshold, pooled, as a multiple of `off`'s best LR",
    "T2": "`off`'s failure mode at its first failing LR (stuck definition)",
    "T3": "H2a: QK-norm raises the critical LR (stuck definition); ratio on / off",
    "T4": "H2b: QK-norm lowers LR sensitivity over [3.16e-4, 0.316]; S off - S on",
    "T5": "the low-LR gap, `off` - `on` at LR 1e-3",
    "T6": "the gap's start-temperature share: (`off-warm` - `on`) / (`off` - `on`) at 1e-3",
}
RULE = {
    "T1": "carries if the pooled bracket overlaps (x1.78, x10]; counts against if it lies "
    "outside, or no threshold below the top evidence LR",
    "T2": "carries if in at least 3 of 4 seeds the first failing LR is a finished-but-stuck "
    "run; counts against if at least 2 of 4 are divergences",
    "T3": "carries if supported; counts against if not supported",
    "T4": "carries if supported; counts against if not supported",
    "T5": "carries if the interval lies above 0 and overlaps [0.25, 1.0]; counts against if "
    "it lies at or below 0.02, or entirely outside [0.25, 1.0]",
    "T6": "carries if under 1/3; counts against if above 2/3",
}
REASON = {
    c.OVERLAPS: "the bracket overlaps (x1.78, x10]",
    c.OUTSIDE: "the bracket lies outside (x1.78, x10]",
    c.NO_THRESHOLD: "no threshold below the top evidence LR",
    c.UNJUDGED: "no pair at or above `off`'s best LR carries evidence",
    c.MOSTLY_STUCK: "at least 3 of 4 seeds first fail stuck",
    c.STOPS: "at least 2 of 4 seeds first fail by divergence",
    c.MIXED: "neither 3 of 4 stuck nor 2 of 4 divergences",
    c.TOO_FEW_SEEDS: "fewer than 3 seeds",
    c.ABOVE_ZERO_IN_WINDOW: "the interval lies above 0 and overlaps [0.25, 1.0]",
    c.AT_OR_BELOW_FLOOR: "the interval lies at or below 0.02",
    c.OUT_OF_WINDOW: "the interval lies outside [0.25, 1.0]",
    c.STRADDLES: "the interval overlaps [0.25, 1.0] but reaches 0",
    c.NO_INTERVAL: "no interval (fewer than 3 pairs)",
    c.NOT_MEASURED: "not measured",
    c.UNDER: "under 1/3",
    c.OVER: "above 2/3",
    c.BETWEEN: "between 1/3 and 2/3",
    c.NO_GAP: "no gap shown above 0 to take a share of",
    c.BORDERLINE_DECIDES: "a run within the fate margin of its cut decides",
}


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
    raise ValueError(quantity)


def record(x: c.Carry) -> dict:
    def side(s: c.Side) -> dict:
        d = asdict(s)
        d["parts"] = dict(s.parts)
        return d

    return {
        "quantity": x.quantity,
        "reference": side(x.reference),
        "new": side(x.new),
        "outcome": x.outcome,
        "reason": x.reason,
    }


def build(report: Path, reference: Path = REFERENCE, control: Path = CONTROL) -> dict:
    import pandas as pd

    def runs(p: Path) -> list[dict]:
        return pd.read_parquet(p / "runs.parquet").to_dict("records")

    judged = c.carry(runs(reference), runs(report), runs(control))
    return clean_json(
        {
            "report": report.name,
            "reference": reference.name,
            "control": control.name,
            "study_sha256": STUDY_SHA256,
            "quantities": [record(x) for x in judged],
            "text": {
                x.quantity: {
                    "reference": value_text(x.quantity, x.reference),
                    "new": value_text(x.quantity, x.new),
                }
                for x in judged
            },
        }
    )


def render(doc: dict) -> str:
    ref, new = doc["reference"], doc["report"]
    lines = [
        f"# What carries from {ref} to {new}",
        "",
        f"docs/STUDY.md section 16's predictions (sha256 `{doc['study_sha256'][:16]}`), "
        f"judged by section 13's rules on {new}'s runs.parquet; {ref}'s side from its own "
        f"runs.parquet (`off-warm` from {doc['control']}). Regenerate with "
        f"`python -m figures.carry docs/{new}`.",
        "",
        f"| # | quantity | {ref} | {new} | outcome | rule |",
        "|---|---|---|---|---|---|",
    ]
    for q in doc["quantities"]:
        k = q["quantity"]
        text = doc["text"][k]
        lines.append(
            f"| {k} | {QUANTITY[k]} | {text['reference']} | {text['new']} "
            f"| **{q['outcome']}** ({reason_text(q)}) | {RULE[k]} |"
        )
    lines += [
        "",
        "Intervals: T3 and T4 90% t intervals over paired seeds; T5 section 13's low-LR "
        "effect interval (Bonferroni over the LRs below `off`'s best); T6 Fieller's 90% "
        "interval for a ratio of paired means (the rule reads the ratio itself).",
    ]
    return "\n".join(lines) + "\n"


def reason_text(q: dict) -> str:
    if q["reason"] == c.VERDICT:
        return f"{'H2a' if q['quantity'] == 'T3' else 'H2b'} {q['new']['verdict']}"
    return REASON.get(q["reason"], q["reason"])


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    args, options = [], {"--reference": REFERENCE, "--control": CONTROL}
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
    for folder in (report, options["--reference"], options["--control"]):
        if not (folder / "runs.parquet").is_file():
            return _error(
                f"{folder} holds no runs.parquet; give a report folder that `figures` wrote "
                "(e.g. `qktorch figures cpu-text --out docs/cpu-text`)"
            )
    try:
        doc = build(report, options["--reference"], options["--control"])
    except ValueError as e:
        return _error(f"{report}: {e}")
    write_json_atomic(report / "carry.json", doc)
    write_atomic(report / "carry.md", render(doc))
    summary = ", ".join(f"{q['quantity']} {q['outcome']}" for q in doc["quantities"])
    print(f"{report}/carry.md: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
