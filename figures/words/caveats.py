"""What may keep a report's runs from answering its question, in words beside its answer: the
facts sweeps/analysis/caveats.py finds (a budget too short for the rules, docs/STUDY.md
section 2; a grid coarser than its own refinement rule asks, section 6), one line each."""

from __future__ import annotations

import pandas as pd

from sweeps.analysis import caveats
from sweeps.analysis import model as m
from sweeps.core.ladder import Ladder
from sweeps.study import rules
from sweeps.sweep.grid import bisected  # the runner's words for the same brackets


def unrefined_lines(found: list[m.Unrefined], rung: Ladder) -> list[str]:
    """One line per rung whose grid the refinement rule would still grow: its LRs, and why."""
    out = []
    for u in found:
        reasons = "; ".join(bisected(b) for bs in u.lrs.values() for b in bs)
        lrs = ", ".join(f"{lr:g}" for lr in u.lrs)
        out.append(
            f"{rung.label(u.rung)}: not refined to {u.resolution:g} decades; the refinement "
            f"rule would add LR {lrs} ({reasons}), so its critical LRs and threshold are "
            "read from wider brackets than a fully refined rung's"
        )
    return out


def unrefined(
    cells: dict[int, rules.Cells],
    settings: dict,
    spec: dict,
    missing: pd.DataFrame,
    rung: Ladder,
) -> list[str]:
    """The refinement lines of a ladder's rungs (sweeps.analysis.caveats.unrefined, worded)."""
    return unrefined_lines(caveats.unrefined(cells, settings, spec, missing, rung.field), rung)


def budget_lines(found: list[m.ShortBudget | m.StuckRuns], rung: Ladder) -> list[str]:
    """Why the runs may be too short for the rules, one line per fact, in the facts' order."""
    out = []
    for f in found:
        if isinstance(f, m.ShortBudget):
            out.append(
                f"{rung.label(f.rung)}: {f.tokens_per_param:.3g} tokens per parameter "
                f"({int(f.budget):,} tokens), under {rules.MIN_TOKENS_PER_PARAM:g}: a run's "
                "failure may be a run that has not yet learned"
            )
        else:
            lrs = ", ".join(f"{x:g}" for x in f.lrs)
            out.append(
                f"{rung.label(f.rung)}: {f.n} {f.arm} run(s) at LR {lrs}"
                f", at or below the arm's best LR {f.best_lr:g}, finished worse than the "
                "baseline: too short a budget for those LRs (they count at their capped "
                "loss, not as unstable)"
            )
    return out
