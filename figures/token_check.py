"""The token-matched check as the report shows it (docs/STUDY.md section 11).

A sweep whose spec has `[token_check]` reruns a depth ladder's deepest rung at the tokens per
parameter of a shallower reference depth. Its report sets the check's necessity threshold and
`off`'s median critical LR (primary failure definition) against the ladder's at the reference
depth; sweeps.study.ladders decides. The ladder's values are read from its analysis (its run
directories beside the check's) and recorded in the check's analysis.json, so that the check's
report can be re-rendered from its own data.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from figures import fmt, present
from sweeps.study.ladders import Span, median_span, token_check
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from sweeps.study.stats import GridValue

ANSWER = {
    SUPPORTED: "Yes: the depth trend survives matching tokens per parameter",
    NOT_SUPPORTED: "No: the depth trend is a tokens-per-parameter effect",
    INCONCLUSIVE: "Not decided: one of the two moved below the reference depth, the other not",
}


def entry(result: dict, check: dict, sweep_dir: Path | None, previous: Path | None) -> dict:
    """analysis.json's "token_check" of a check sweep (result: its analysis; check: its spec's
    [token_check]): the ladder is analysed from its run directories beside the check's
    (sweep_dir's parent); a report re-rendered from its own data (previous: its folder) reads
    them from the ladder's report beside it (previous's parent / ladder / analysis.json), else
    keeps the values its own analysis.json recorded."""
    depths = list(result.get("depths") or {})
    own = values_at(result, int(depths[0])) if len(depths) == 1 else None
    reference, same = _ladder_values(check, own["depth"] if own else None, sweep_dir, previous)
    return {**judge(own, reference, check["ladder"]), "same_depth": same}


def _ladder_values(
    check: dict, depth: int | None, sweep_dir: Path | None, previous: Path | None
) -> tuple[dict | None, dict | None]:
    """The ladder's values at the reference depth and, for comparison, at the check's own
    depth (its tokens per parameter unmatched)."""
    ladder_dir = Path(sweep_dir).parent / check["ladder"] if sweep_dir else None
    if ladder_dir is not None and (ladder_dir / "plan.json").is_file():
        from figures.analysis import analyze  # the ladder read as its own report reads it
        from sweeps.analysis.results import load_curves, load_results

        ladder = load_results(ladder_dir)
        analysis = analyze(ladder, load_curves(ladder.runs))
        same = values_at(analysis, depth) if depth is not None else None
        return values_at(analysis, int(check["reference"])), same
    # a re-rendered report beside the ladder's own report (docs/NAME beside docs/LADDER): the
    # ladder's values as its report now holds them, so a grown ladder does not leave them stale
    beside = Path(previous).parent / check["ladder"] / "analysis.json" if previous else None
    if beside is not None and beside.is_file():
        analysis = json.loads(beside.read_text())
        same = values_at(analysis, depth) if depth is not None else None
        return values_at(analysis, int(check["reference"])), same
    recorded = Path(previous) / "analysis.json" if previous else None
    if recorded is not None and recorded.is_file():
        kept = json.loads(recorded.read_text()).get("token_check") or {}
        return kept.get("reference"), kept.get("same_depth")
    return None, None


def values_at(analysis: dict, depth: int) -> dict | None:
    """What the check compares at one depth of a sweep's analysis: the primary comparison's
    threshold, the reference arm's median critical LR and the tokens per parameter; None where
    the depth or either arm is missing."""
    at = analysis.get("depths", {}).get(str(depth))
    settings = analysis.get("settings", {})
    ref = settings.get("reference", "off")
    comparison = at and at["comparisons"].get(present.primary_key(analysis))
    if not comparison or ref not in at["arms"]:
        return None
    crit = at["arms"][ref]["eta_crit"]
    return {
        "depth": depth,
        "threshold": comparison["threshold"],
        "critical": crit["median"],
        # the median is judged on its seeds' brackets (sweeps.study.ladders.median_span)
        "critical_seeds": list((crit.get("seeds") or {}).values()),
        "definition": crit.get("definition"),
        "tokens_per_param": settings.get("tokens_per_param", {}).get(str(depth)),
        # leave-one-run-out: the runs that alone move the threshold, and where it goes
        "influence": [
            {"run_id": m["run_id"], "lr": m.get("lr"), "threshold": m.get("threshold_without")}
            for m in comparison.get("influence") or []
            if m.get("threshold_without")
        ],
    }


def judge(check: dict, reference: dict | None, ladder: str) -> dict:
    """The check's entry in analysis.json: both sides' values and the decision (a reason in
    place of the decision where either side is missing)."""
    out = {"ladder": ladder, "check": check, "reference": reference}
    if check is None or not check["critical_seeds"]:
        why = "no values at this sweep's depth yet (both arms need finished runs there)"
        return {**out, "verdict": INCONCLUSIVE, "why": why}
    if reference is None or not reference["critical_seeds"]:
        why = f"no values at the ladder {ladder}'s depth (is `{ladder}` in the same --runs-dir?)"
        return {**out, "verdict": INCONCLUSIVE, "why": why}
    t = _decide(check, reference)
    return {**out, **t._asdict(), "fragile": _fragile(check, reference, t.verdict)}


def _decide(check: dict, reference: dict):
    return token_check(
        _grid(reference["threshold"]),
        _grid(check["threshold"]),
        [_grid(v) for v in reference["critical_seeds"]],
        [_grid(v) for v in check["critical_seeds"]],
    )


def _fragile(check: dict, reference: dict, verdict: str) -> list[dict]:
    """Leave-one-run-out on the decision: each run that alone moves either side's threshold,
    where that side's threshold goes without it, and the verdict then, kept where the verdict
    changes (a threshold is a pooled test over seeds, so one run can widen or narrow it)."""
    out = []
    for side, values in (("check", check), ("reference", reference)):
        for m in values.get("influence") or []:
            moved = {**values, "threshold": m["threshold"]}
            pair = (moved, reference) if side == "check" else (check, moved)
            now = _decide(*pair).verdict
            if now != verdict:
                out.append({**m, "side": side, "depth": values["depth"], "verdict": now})
    return out


def lines(entry: dict) -> list[str]:
    """The check in words: the answer, then each side's numbers."""
    check, ref = entry.get("check"), entry.get("reference")
    if "threshold_below" not in entry:
        return [f"Not decided: {entry['why']}."]
    out = [f"{ANSWER[entry['verdict']]}."]
    for side, v in (("this check", check), (f"{entry['ladder']}", ref)):
        out.append(f"Depth {v['depth']} ({side}{_tokens(v)}): {_values_words(v)}.")
    said = {True: "below", False: "not below"}
    out.append(
        f"The threshold is {said[entry['threshold_below']]} depth {ref['depth']}'s and the "
        f"critical LR {said[entry['critical_below']]} it (below: every LR the grid allows for "
        "the check is under every LR it allows for the reference; overlapping brackets are not)."
    )
    groups: dict[tuple, list[str]] = {}  # runs that move a side to the same place, once
    for m in entry.get("fragile") or []:
        key = (m["depth"], m.get("lr"), fmt.bracket(m["threshold"]), m["verdict"])
        groups.setdefault(key, []).append(f"`{m['run_id']}`")
    for (depth, lr, moved, verdict), runs in groups.items():
        at = f", LR {fmt.lr(lr)}" if lr is not None else ""
        out.append(
            f"Leaving out one run changes it: without {' or '.join(runs)} (depth {depth}{at}), "
            f'depth {depth}\'s threshold is {moved}, and the answer becomes "{ANSWER[verdict]}".'
        )
    same = entry.get("same_depth")
    if same and same.get("critical_seeds"):
        out.append(
            f"For comparison, not decided on: depth {same['depth']} in {entry['ladder']} itself"
            f"{_tokens(same)}: {_values_words(same)}."
        )
    out.append(
        "This check's own verdicts below (H1, H2a, H2b) are judged on its few LRs around the "
        "edge (Setup: Grid), not on the ladder's grid: its best LR and LR sensitivity are "
        "not the ladder's."
    )
    return out


def _tokens(v: dict) -> str:
    tokens = v.get("tokens_per_param")
    return f", {tokens:.3g} tokens per parameter" if tokens else ""


def _values_words(v: dict) -> str:
    seeds = median_span([_grid(x) for x in v["critical_seeds"]])
    return (
        f"threshold {fmt.bracket(v['threshold'])}, off's median critical LR "
        f"{fmt.bracket(v['critical'])} (its seeds' brackets put it in {_span_words(seeds)})"
    )


def _span_words(s: Span) -> str:
    """'(0.0562, 0.1]', '[0.05, 0.05]', '(0.1, inf)'."""
    if math.isinf(s.lo):
        return "no LR of the grid: a seed's value was not found"
    hi = "inf)" if math.isinf(s.hi) else f"{fmt.lr(s.hi)}]"
    return f"{'(' if s.lo_open else '['}{fmt.lr(s.lo)}, {hi}"


def _grid(value: dict) -> GridValue:
    bracket = tuple(value["bracket"]) if value.get("bracket") else None
    found = value.get("value")  # analysis.json writes a "none" value's NaN as null
    return GridValue(math.nan if found is None else float(found), value.get("kind", ""), bracket)
