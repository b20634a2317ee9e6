"""The token-matched check in words (docs/STUDY.md section 11).

A sweep whose spec has `[token_check]` reruns a depth ladder's deepest rung at the tokens per
parameter of a shallower reference depth. Its report sets the check's stability threshold and
`off`'s median critical LR (primary failure definition) against the ladder's at the reference
depth; sweeps.study.ladders decides. sweeps/analysis/token_check.py reads the ladder and
decides (the typed analysis's `token_check`); this module words it.
"""

from __future__ import annotations

import math

from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.analysis.token_check import NO_CHECK, NO_LADDER
from sweeps.study.ladders import median_span
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from sweeps.study.stats import GridValue, Span

ANSWER = {
    SUPPORTED: "Yes: the depth trend survives matching tokens per parameter",
    NOT_SUPPORTED: "No: the depth trend is a tokens-per-parameter effect",
    INCONCLUSIVE: "Not decided: one of the two moved below the reference depth, the other not",
}
# why a check is not decided, by sweeps.analysis.token_check's code ({ladder}: its name)
UNDECIDED = {
    NO_CHECK: "no values at this sweep's depth yet (both arms need finished runs there)",
    NO_LADDER: "no values at the ladder {ladder}'s depth (is `{ladder}` in the same --runs-dir?)",
}


def lines(entry: m.TokenCheck) -> list[str]:
    """The check in words (the typed analysis's token_check): the answer, then each side's
    numbers."""
    check, ref = entry.check, entry.reference
    if entry.threshold_below is None:
        why = entry.why
        said = UNDECIDED[why].format(ladder=entry.ladder) if why in UNDECIDED else why
        return [f"Not decided: {said}."]
    out = [f"{ANSWER[entry.verdict]}."]
    for side, v in (("this check", check), (f"{entry.ladder}", ref)):
        out.append(f"Depth {v.depth} ({side}{_tokens(v)}): {_values_words(v)}.")
    said = {True: "below", False: "not below"}
    out.append(
        f"The threshold is {said[entry.threshold_below]} depth {ref.depth}'s and the "
        f"critical LR {said[entry.critical_below]} it (below: every LR the grid allows for "
        "the check is under every LR it allows for the reference; overlapping brackets are not)."
    )
    groups: dict[tuple, list[str]] = {}  # runs that move a side to the same place, once
    for f in entry.fragile or []:
        key = (f.depth, f.lr, numbers.bracket(f.threshold), f.verdict)
        groups.setdefault(key, []).append(f"`{f.run_id}`")
    for (depth, lr, moved, verdict), runs in groups.items():
        at = f", LR {numbers.lr(lr)}" if lr is not None else ""
        out.append(
            f"Leaving out one run changes it: without {' or '.join(runs)} (depth {depth}{at}), "
            f'depth {depth}\'s threshold is {moved}, and the answer becomes "{ANSWER[verdict]}".'
        )
    same = entry.same_depth
    if same and same.critical_seeds:
        out.append(
            f"For comparison, not decided on: depth {same.depth} in {entry.ladder} itself"
            f"{_tokens(same)}: {_values_words(same)}."
        )
    out.append(
        "This check's own verdicts below (H1, H2a, H2b) are judged on its few LRs around the "
        "edge (Setup: Grid), not on the ladder's grid: its best LR and LR sensitivity are "
        "not the ladder's."
    )
    return out


def _tokens(v: m.CheckSide) -> str:
    tokens = v.tokens_per_param
    return f", {tokens:.3g} tokens per parameter" if tokens else ""


def _values_words(v: m.CheckSide) -> str:
    seeds = median_span([_grid(x) for x in v.critical_seeds])
    return (
        f"threshold {numbers.bracket(v.threshold)}, off's median critical LR "
        f"{numbers.bracket(v.critical)} (its seeds' brackets put it in {_span_words(seeds)})"
    )


def _span_words(s: Span) -> str:
    """'(0.0562, 0.1]', '[0.05, 0.05]', '(0.1, inf)'; a span that says nothing (a seed's value
    not found: sweeps.study.stats.span) in words."""
    if s.empty or math.isinf(s.lo):
        return "no LR of the grid: a seed's value was not found"
    hi = "inf)" if math.isinf(s.hi) else f"{numbers.lr(s.hi)}]"
    return f"{'(' if s.lo_open else '['}{numbers.lr(s.lo)}, {hi}"


def _grid(value: m.GridPoint) -> GridValue:
    bracket = tuple(value.bracket) if value.bracket else None
    found = value.value  # analysis.json writes a "none" value's NaN as null
    return GridValue(math.nan if found is None else float(found), value.kind, bracket)
