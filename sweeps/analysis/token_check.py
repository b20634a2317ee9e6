"""The token-matched check, typed (docs/STUDY.md section 11): a sweep whose spec has
`[token_check]` reruns a depth ladder's deepest rung at the tokens per parameter of a shallower
reference depth. Its analysis sets the check's stability threshold and the reference arm's
median critical LR (primary failure definition) against the ladder's at the reference depth;
sweeps.study.ladders decides. No prose: figures/words/token_check.py words the record.

The ladder's values are read from its analysis (its run directories beside the check's), or,
for a report re-rendered from its own data, from the ladder's report beside it, else from what
the check's own analysis.json recorded, so that the check's report can be re-rendered from its
own data.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from sweeps.analysis import model as m
from sweeps.analysis.adapter import from_json, read, to_json
from sweeps.analysis.results import SweepResults, load_curves, load_results
from sweeps.study.ladders import token_check
from sweeps.study.rules import INCONCLUSIVE, Comparison
from sweeps.study.stats import GridValue

# why a check is not decided: a side without values (figures/words/token_check.py words them)
NO_CHECK = "no check values"  # the check's own depth lacks finished runs of both arms
NO_LADDER = "no ladder values"  # the ladder's reference depth was not found


# sweeps.analysis.compute.analyze, which calls this module (passed in: no import circle)
Analyze = Callable[[SweepResults, pd.DataFrame], m.Analysis]


def entry(
    analysis: m.Analysis,
    check: dict,
    sweep_dir: Path | None,
    previous: Path | None,
    analyze: Analyze,
) -> m.TokenCheck:
    """The token check of a check sweep (analysis: its analysis as analysis.json holds it, NaN
    and Inf as None; check: its spec's [token_check]): the ladder is analysed (by `analyze`)
    from its run directories beside the check's (sweep_dir's parent); a report re-rendered from
    its own data (previous: its folder) reads them from the ladder's report beside it
    (previous's parent / ladder / analysis.json), else keeps the values its own analysis.json
    recorded."""
    depths = list(analysis.depths)
    own = values_at(analysis, int(depths[0])) if len(depths) == 1 else None
    depth = own.depth if own else None
    reference, same = _ladder_values(check, depth, sweep_dir, previous, analyze)
    return judge(own, reference, check["ladder"], same)


def _ladder_values(
    check: dict,
    depth: int | None,
    sweep_dir: Path | None,
    previous: Path | None,
    analyze: Analyze,
) -> tuple[m.CheckSide | None, m.CheckSide | None]:
    """The ladder's values at the reference depth and, for comparison, at the check's own
    depth (its tokens per parameter unmatched)."""
    ladder_dir = Path(sweep_dir).parent / check["ladder"] if sweep_dir else None
    if ladder_dir is not None and (ladder_dir / "plan.json").is_file():
        # the ladder read as its own report reads it
        ladder = load_results(ladder_dir)
        analysis = from_json(to_json(analyze(ladder, load_curves(ladder.runs))))
        return _at(analysis, check, depth)
    # a re-rendered report beside the ladder's own report (docs/NAME beside docs/LADDER): the
    # ladder's values as its report now holds them, so a grown ladder does not leave them stale
    beside = Path(previous).parent / check["ladder"] / "analysis.json" if previous else None
    if beside is not None and beside.is_file():
        return _at(from_json(json.loads(beside.read_text())), check, depth)
    recorded = Path(previous) / "analysis.json" if previous else None
    if recorded is not None and recorded.is_file():
        kept = json.loads(recorded.read_text()).get("token_check") or {}
        return _side(kept.get("reference")), _side(kept.get("same_depth"))
    return None, None


def _at(
    analysis: m.Analysis, check: dict, depth: int | None
) -> tuple[m.CheckSide | None, m.CheckSide | None]:
    same = values_at(analysis, depth) if depth is not None else None
    return values_at(analysis, int(check["reference"])), same


def _side(data: dict | None) -> m.CheckSide | None:
    return read(m.CheckSide, data) if data is not None else None


def values_at(analysis: m.Analysis, depth: int) -> m.CheckSide | None:
    """What the check compares at one depth of a sweep's analysis (as analysis.json holds it):
    the primary comparison's threshold, the reference arm's median critical LR and the tokens
    per parameter; None where the depth or either arm is missing."""
    at = analysis.depths.get(str(depth))
    s = analysis.settings
    comparison = at and at.comparisons.get(Comparison(s.reference, s.primary).key)
    if not comparison or s.reference not in at.arms:
        return None
    crit = at.arms[s.reference].eta_crit
    return m.CheckSide(
        depth=depth,
        threshold=comparison.threshold,
        critical=crit.median,
        # the median is judged on its seeds' brackets (sweeps.study.ladders.median_span)
        critical_seeds=list(crit.seeds.values()),
        definition=crit.definition,
        tokens_per_param=s.tokens_per_param.get(str(depth)),
        # leave-one-run-out: the runs that alone move the threshold, and where it goes
        influence=[
            m.Moved(run_id=i.run_id, lr=i.lr, threshold=i.threshold_without)
            for i in comparison.influence
            if i.threshold_without is not None
        ],
    )


def judge(
    check: m.CheckSide | None,
    reference: m.CheckSide | None,
    ladder: str,
    same: m.CheckSide | None = None,
) -> m.TokenCheck:
    """Both sides' values and the decision (NO_CHECK or NO_LADDER in place of the decision
    where either side is missing); same: the ladder's values at the check's depth, shown
    beside and not decided on."""
    out = {"ladder": ladder, "check": check, "reference": reference, "same_depth": same}
    if check is None or not check.critical_seeds:
        return m.TokenCheck(**out, verdict=INCONCLUSIVE, why=NO_CHECK)
    if reference is None or not reference.critical_seeds:
        return m.TokenCheck(**out, verdict=INCONCLUSIVE, why=NO_LADDER)
    t = _decide(check, reference)
    return m.TokenCheck(**out, **t._asdict(), fragile=_fragile(check, reference, t.verdict))


def _decide(check: m.CheckSide, reference: m.CheckSide):
    return token_check(
        _grid(reference.threshold),
        _grid(check.threshold),
        [_grid(v) for v in reference.critical_seeds],
        [_grid(v) for v in check.critical_seeds],
    )


def _fragile(check: m.CheckSide, reference: m.CheckSide, verdict: str) -> list[m.Fragile]:
    """Leave-one-run-out on the decision: each run that alone moves either side's threshold,
    where that side's threshold goes without it, and the verdict then, kept where the verdict
    changes (a threshold is a pooled test over seeds, so one run can widen or narrow it)."""
    out = []
    for side, values in (("check", check), ("reference", reference)):
        for moved in values.influence:
            without = dataclasses.replace(values, threshold=moved.threshold)
            pair = (without, reference) if side == "check" else (check, without)
            now = _decide(*pair).verdict
            if now != verdict:
                out.append(
                    m.Fragile(
                        run_id=moved.run_id,
                        lr=moved.lr,
                        threshold=moved.threshold,
                        side=side,
                        depth=values.depth,
                        verdict=now,
                    )
                )
    return out


def _grid(value: m.GridPoint) -> GridValue:
    bracket = tuple(value.bracket) if value.bracket else None
    found = value.value  # analysis.json writes a "none" value's NaN as null
    return GridValue(math.nan if found is None else float(found), value.kind, bracket)
