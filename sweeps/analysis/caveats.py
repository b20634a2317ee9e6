"""What may keep a sweep's runs from answering its question, as facts (figures/words/caveats.py
words
them beside the answer): a budget too short for the rules (docs/STUDY.md section 2), and a grid
coarser than its own refinement rule asks (section 6).

Budget: a rung under MIN_TOKENS_PER_PARAM tokens per parameter, or runs stuck at or below
their arm's best LR, may "fail" only because they have not yet learned.

Refinement: a sweep with `extend.refine` bisects each arm's and seed's critical-LR bracket and
the stability threshold's bracket down to `extend.resolution` decades. A rung whose brackets
are still wider reads its critical LRs and threshold from wider brackets than the other rungs:
a ladder comparing them would report the grids' difference as a trend. The rung and the LRs
the rule would add are read with the study's own rule (sweeps.study.judge.refinement_brackets,
the code the runner grows the grid with), so the report and the runner cannot disagree; LRs
already planned but not yet trained are left to the missing-runs list.
"""

from __future__ import annotations

import pandas as pd

from sweeps.analysis import model as m
from sweeps.analysis.run_table import optional_float
from sweeps.study import judge, rules


def unrefined(
    cells: dict[int, rules.Cells],
    settings: dict,
    spec: dict,
    missing: pd.DataFrame,
    field: str,
) -> list[m.Unrefined]:
    """Each rung (field: the ladder's) whose grid the refinement rule would still grow."""
    extend = spec.get("extend") or {}
    if not extend.get("refine"):
        return []
    resolution = float(extend.get("resolution", 0.25))
    study = rules.Study.from_dict(spec.get("study"), settings["base_lrs"])
    full = [a for a in settings["arms"] if a not in settings.get("subset_arms", [])]
    out = []
    for value, at_rung in sorted(cells.items()):
        planned = set(at_rung.lrs)
        if field in missing and not missing.empty:
            planned |= set(missing.loc[missing[field] == value, "lr"].astype(float))
        arms = [a for a in full if at_rung.has(a)]
        mids = rules.midpoints(judge.refinement_brackets(at_rung, study, arms), resolution, planned)
        if mids:
            out.append(m.Unrefined(str(int(value)), resolution, mids))
    return out


def budget(
    settings: dict, depths: dict[str, m.Rung], runs: pd.DataFrame
) -> list[m.ShortBudget | m.StuckRuns]:
    """Why the runs may be too short for the rules (docs/STUDY.md section 2), per rung: a
    budget under MIN_TOKENS_PER_PARAM tokens per parameter, and runs of the reference or primary
    arm stuck (worse than the baseline) at or below their arm's best LR: runs that have not yet
    learned, not unstable ones."""
    field = settings["ladder"]["field"]
    out: list[m.ShortBudget | m.StuckRuns] = []
    # without a baseline rule (smoke) only a divergence fails a run: no run is "not yet
    # learned", so there is nothing to warn about (the plan's warning skips them too)
    judged_by_baseline = runs.baseline_loss.notna().any() if "baseline_loss" in runs else False
    for name, depth in depths.items():
        for size, per in depth.tokens_per_param.by_budget.items():
            if judged_by_baseline and per < rules.MIN_TOKENS_PER_PARAM:
                out.append(m.ShortBudget(name, size, per))
        for arm in (settings["reference"], settings["primary"]):
            a = depth.arms.get(arm)
            if not a or a.best_lr is None:
                continue
            part = runs[(runs[field] == int(name)) & (runs.arm == arm) & runs.outcome.notna()]
            slow = part[part.lr <= a.best_lr * (1 + 1e-9)]
            stuck = [
                r.run_id
                for r in slow.itertuples()
                if r.status != "diverged"
                and rules.is_stuck(r.status, optional_float(r.final_val_loss), r.baseline_loss)
            ]
            if stuck:
                lrs = sorted(set(slow[slow.run_id.isin(stuck)].lr))
                out.append(m.StuckRuns(name, arm, len(stuck), lrs, a.best_lr))
    return out


# runs of the plan that have not finished training: the sweep is still going (or stopped)
UNFINISHED = ("missing", "incomplete")


def unfinished(analysis: m.Analysis) -> dict[str, int] | None:
    """The plan's runs that have not finished training, by kind ("missing": not started,
    "incomplete": part-trained), with the plan's size ("planned"); None when every planned run
    has an outcome. A report drawn while a sweep trains must say so first."""
    missing = sum(p.status == "missing" for p in analysis.problems)
    incomplete = sum(p.status == "incomplete" for p in analysis.problems)
    if not missing + incomplete:
        return None
    return {
        "planned": len(analysis.runs) + missing,
        "missing": missing,
        "incomplete": incomplete,
    }
