"""A ladder's report beside another's (docs/STUDY.md section 18): each quantity at each rung both
hold, under both budgets, with section 18's outcome, and the machine check on the configs both
trained. Writes <report>/side_by_side.md and side_by_side.json.

    python -m figures.side_by_side docs/cpu-depth-matched --reference docs/cpu-depth \
        [--check docs/cpu-depth-tokens]

--check adds a report whose runs only enter the machine check (e.g. depth 8 at 2200 steps).
sweeps/analysis/side_by_side.py computes and decides everything; this module only words it.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

from figures.report.what_ran import unfinished_words
from sweeps.analysis import caveats
from sweeps.analysis import side_by_side as sbs
from sweeps.analysis.adapter import from_json
from sweeps.core.files import clean_json, write_atomic, write_json_atomic
from sweeps.study.protocol import earlier_json, judged_under, live_stamp, stamp_words

USAGE = "usage: python -m figures.side_by_side REPORT --reference DIR [--check DIR]"


def _g(x) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.3g}"


def span_text(value, span, unit: str = "lr") -> str:
    """An LR as three digits, a loss difference or slope signed to three decimals; a bracket
    (lo, hi], an interval [lo, hi]."""

    def num(x) -> str:
        if x is None or not math.isfinite(x):
            return "inf" if x is not None and x > 0 else "n/a"
        return _g(x) if unit == "lr" else f"{x:+.3f}"

    if span is None:
        return num(value) if value is not None else "n/a"
    lo, hi, closed = span
    if not closed:
        return f"({num(lo)}, {num(hi)}]"
    return f"{num(value)} [{num(lo)}, {num(hi)}]"


def _tokens(a, key: str) -> str:
    t = a.depths[key].tokens_per_param
    values = sorted({round(v, 2) for v in t.by_budget.values()})
    return "/".join(f"{v:g}" for v in values)


# the cost lines' names (sweeps.analysis.trends.COSTS) as a row says them
COST_NAMES = {
    "at the reference's best LR": "at off's best LR",
    "each at its own best LR": "own best LRs",
}


def quantity_words(r: sbs.Row) -> str:
    """What a row shows (its code and particulars, sweeps.analysis.side_by_side), in words."""
    a = r.about
    return {
        sbs.BEST_LR: lambda: f"{a[0]}'s best LR",
        sbs.THRESHOLD: lambda: "stability threshold",
        sbs.EDGE: lambda: f"{a[0]}'s {a[1]} edge",
        sbs.COST_AT_BEST: lambda: "cost at off's best LR (off - on)",
        sbs.COST_AT_OWN_BEST: lambda: "cost at each arm's own best LR (off - on)",
        sbs.LOW_LR_EFFECT: lambda: f"low-LR effect at {a[0]:g} (off - on)",
        sbs.H3_SLOPE: lambda: "H3 slope (decades per doubling)",
        sbs.H3_WITHOUT: lambda: f"H3 slope without depth {a[0]}",
        sbs.COST_PER_DOUBLING: lambda: f"cost per doubling ({COST_NAMES.get(a[0], a[0])}, nats)",
        sbs.LOGIT_CROSSING: lambda: f"off's logit-{a[0]} crossing LR, slope per doubling",
    }[r.quantity]()


def note_words(n: sbs.Note) -> str:
    """Why a side has no span, in words ("" when it has one)."""
    if n.kind == sbs.CENSORED:
        return f"beyond the grid in {n.censored} of {n.seeds} seeds"
    return n.kind


def build(report: Path, reference: Path, checks: list[Path]) -> dict:
    def load(p: Path):
        return from_json(json.loads((p / "analysis.json").read_text()))

    new, ref = load(report), load(reference)
    rows, own = sbs.side_by_side(ref, new)
    machine = [(reference.name, x) for x in own] + [
        (extra.name, x) for extra in checks for x in sbs.machine_check(load(extra), new)
    ]
    shared = sorted(set(ref.depths) & set(new.depths), key=int)
    return clean_json(
        {
            "report": report.name,
            "reference": reference.name,
            **live_stamp(),
            "tokens_per_param": {
                k: {"reference": _tokens(ref, k), "new": _tokens(new, k)} for k in shared
            },
            # a ladder still training is set beside another: its page says so first
            "unfinished": {
                p.name: {**counts, "sweep": a.sweep}
                for p, a in ((report, new), (reference, ref))
                if (counts := caveats.unfinished(a))
            },
            "rows": [asdict(r) for r in rows],
            "machine_check": [{"against": name, **asdict(x)} for name, x in machine],
        }
    )


def render(page: sbs.Page) -> str:
    ref, new = page.reference, page.report
    counts = {o: sum(r.outcome == o for r in page.rows) for o in (sbs.DIFFERS, sbs.CARRIES)}
    # the command that rebuilds this page names every --check report its machine check used
    checks = dict.fromkeys(against for against, _ in page.machine_check if against != ref)
    check_args = "".join(f" --check docs/{name}" for name in checks)
    lines = [
        f"# {new} beside {ref}",
        "",
        *(f"> `{name}`: {unfinished_words(c)}\n" for name, c in page.unfinished.items()),
        f"docs/STUDY.md section 18's side-by-side ({stamp_words(page.stamp)}): each "
        f"quantity under both budgets; *carries* where {new}'s bracket or 90% interval overlaps "
        f"{ref}'s, *differs* where it does not, *inconclusive* where either has none (a censored "
        f"edge, an unjudged threshold). {counts[sbs.DIFFERS]} differ, {counts[sbs.CARRIES]} "
        f"carry. Regenerate with `python -m figures.side_by_side docs/{new} --reference "
        f"docs/{ref}{check_args}`.",
        "",
        "Tokens per parameter by rung: "
        + "; ".join(
            f"{k}: {a} ({ref}) vs {b} ({new})" for k, (a, b) in page.tokens_per_param.items()
        )
        + ".",
        "",
        f"| rung | quantity | {ref} | {new} | outcome |",
        "|---|---|---|---|---|",
    ]
    for r in page.rows:
        rung = "all" if r.rung is None else str(r.rung)
        outcome = f"**{r.outcome}**" if r.outcome else "(shown)"
        lines.append(
            f"| {rung} | {quantity_words(r)} | "
            f"{note_words(r.notes[0]) or span_text(r.reference, r.reference_span, r.unit)} | "
            f"{note_words(r.notes[1]) or span_text(r.new, r.new_span, r.unit)} | {outcome} |"
        )
    lines += [
        "",
        "## Machine check: the same configs trained twice",
        "",
        "| against | rung | configs in both | same fate | final loss, largest gap | mean gap |",
        "|---|---|---|---|---|---|",
    ]
    for against, x in page.machine_check:
        lines.append(
            f"| {against} | {x.rung} | {x.runs} | {x.same_fate} | "
            f"{_g(x.max_abs_diff)} | {_g(x.mean_abs_diff)} |"
        )
    if not page.machine_check:
        lines.append("| (none) | | 0 | | | |")
    return "\n".join(lines) + "\n"


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    args, reference, checks = [], None, []
    it = iter(argv)
    for a in it:
        if a in ("--reference", "--check"):
            value = next(it, None)
            if value is None:
                return _error(f"{a} needs a folder; {USAGE}")
            if a == "--reference":
                reference = Path(value)
            else:
                checks.append(Path(value))
        elif a.startswith("-"):
            return _error(f"unknown option {a}; {USAGE}")
        else:
            args.append(Path(a))
    if len(args) != 1 or reference is None:
        return _error(f"one report folder and --reference expected; {USAGE}")
    for folder in (args[0], reference, *checks):
        if not (folder / "analysis.json").is_file():
            return _error(
                f"{folder} holds no analysis.json; give a report folder that `figures` wrote"
            )
    doc = build(args[0], reference, checks)
    doc = judged_under(doc, earlier_json(args[0] / "side_by_side.json"))  # its rules keep naming it
    write_json_atomic(args[0] / "side_by_side.json", doc)
    page = sbs.page_of(doc)
    write_atomic(args[0] / "side_by_side.md", render(page))
    differ = sum(r.outcome == sbs.DIFFERS for r in page.rows)
    print(f"{args[0]}/side_by_side.md: {len(page.rows)} rows, {differ} differ")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
