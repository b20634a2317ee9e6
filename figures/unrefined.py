"""Where a report's grid is coarser than its own refinement rule asks (docs/STUDY.md section 6).

A sweep with `extend.refine` bisects each arm's and seed's critical-LR bracket and the
necessity threshold's bracket down to `extend.resolution` decades. A rung whose brackets are
still wider (the sweep was stopped early, or its runner refined other brackets) reads its
critical LRs and threshold from wider brackets than the other rungs: a ladder comparing them
would report the grids' difference as a trend. The report names such rungs and the LRs the
rule would add; LRs already planned but not yet trained are left to the missing-runs list.

Read from the finished runs with the study's own rule (sweeps.study.rules.refinement_brackets,
the code the runner grows the grid with), so the report and the runner cannot disagree.
"""

from __future__ import annotations

import pandas as pd

from figures.ladder import Ladder
from sweeps.study import rules


def unrefined(
    cells: dict[int, rules.Cells], settings: dict, spec: dict, missing: pd.DataFrame, rung: Ladder
) -> list[str]:
    """One line per rung whose grid the refinement rule would still grow: its LRs, and why."""
    extend = spec.get("extend") or {}
    if not extend.get("refine"):
        return []
    resolution = float(extend.get("resolution", 0.25))
    study = rules.Study.from_dict(spec.get("study"), settings["base_lrs"])
    full = [a for a in settings["arms"] if a not in settings.get("subset_arms", [])]
    out = []
    for value, at_rung in sorted(cells.items()):
        planned = set(at_rung.lrs)
        if rung.field in missing and not missing.empty:
            planned |= set(missing.loc[missing[rung.field] == value, "lr"].astype(float))
        arms = [a for a in full if at_rung.has(a)]
        mids = rules.midpoints(rules.refinement_brackets(at_rung, study, arms), resolution, planned)
        if mids:
            reasons = "; ".join(r for rs in mids.values() for r in rs)
            lrs = ", ".join(f"{lr:g}" for lr in mids)
            out.append(
                f"{rung.label(value)}: not refined to {resolution:g} decades; the refinement "
                f"rule would add LR {lrs} ({reasons}), so its critical LRs and threshold are "
                "read from wider brackets than a fully refined rung's"
            )
    return out
