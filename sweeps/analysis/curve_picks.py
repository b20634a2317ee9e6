"""Which LRs a report's training-dynamics charts show, chosen from the typed analysis so the
report only draws them: the training curves' columns (CURVE_LRS spread evenly over the grid,
with the LR where the arms differ most always among them) and the one LR the attention chart
shows (the largest where every run of the primary arm is ok). Descriptive choices of what to
draw, not decisions of the study."""

from __future__ import annotations

import numpy as np

from sweeps.analysis import model as m
from sweeps.study.rules import Comparison

CURVE_LRS = 4  # training-curve columns: this many LRs spread evenly over the grid


def curve_lrs(a: m.Analysis) -> list[float]:
    """The training curves' LRs: CURVE_LRS spread evenly over the finished runs' LRs, the one
    nearest the most different LR replaced by it where it is not already among them."""
    lrs = sorted({r.lr for r in a.runs if r.outcome})
    if not lrs:
        return []
    spread = np.linspace(0, len(lrs) - 1, min(CURVE_LRS, len(lrs))).round().astype(int)
    picks = sorted({lrs[i] for i in spread})
    differ = most_different_lr(a)
    if differ is not None and differ not in picks:  # where the arms differ most, always
        nearest = min(picks, key=lambda lr: abs(np.log(lr) - np.log(differ)))
        picks = sorted({*picks, differ} - ({nearest} if len(picks) >= CURVE_LRS else set()))
    return picks


def most_different_lr(a: m.Analysis) -> float | None:
    """The LR where the primary comparison's paired effect is largest in size (any rung), among
    the LRs with a pair and not a common ceiling; None without one."""
    key = Comparison(a.settings.reference, a.settings.primary).key
    best, size = None, -1.0
    for d in a.depths.values():
        c = d.comparisons.get(key)
        for e in c.per_lr if c else []:
            if e.n >= 1 and not e.ceiling and e.mean is not None and abs(e.mean) > size:
                best, size = e.lr, abs(e.mean)
    return best


def high_stable_lr(a: m.Analysis) -> float:
    """The largest LR at which every finished run of the primary arm is ok, at every rung:
    where it still trains and the reference arm's trouble, if any, shows; the middle of the
    finished runs' LRs when there is none."""
    finished = [r for r in a.runs if r.outcome]
    ok: dict[float, bool] = {}
    for r in finished:
        if r.arm == a.settings.primary:
            ok[r.lr] = ok.get(r.lr, True) and r.outcome == "ok"
    calm = [lr for lr, every in ok.items() if every]
    lrs = sorted({r.lr for r in finished})
    return float(max(calm)) if calm else float(lrs[len(lrs) // 2])
