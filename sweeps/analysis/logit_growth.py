"""A mechanism beside a depth ladder's threshold, descriptive (docs/STUDY.md section 18; no
verdict rests on it): the LR at which the reference arm's max attention logit at step 120 (the
end of warmup, the same LR schedule at every rung) first exceeds 30, 50 and 100, per seed
interpolated in log LR between the two LRs around the crossing (log logit on log LR), the
rung's geometric mean over its seeds, and the slope of those rung values on log2 rung with its
90% interval (the rung as the unit, as section 13's trends). Wortsman et al. (2023) tie the
instability QK-norm prevents to attention logits growing with the LR; a crossing LR that falls
with depth is their mechanism, whatever the threshold does.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sweeps.analysis import model as m
from sweeps.study.stats import line_fit

STEP = 120  # the end of warmup at every rung of the ladders (section 18)
LEVELS = (30.0, 50.0, 100.0)


def crossing(lrs, logits, level: float) -> tuple[float | None, str]:
    """(LR, kind) where the logits (ascending LRs) first reach `level`: "" inside the grid,
    interpolated on log logit vs log LR; "below" when the lowest LR already does (its LR
    returned as the bound); "above" when no LR does (None)."""
    pairs = [(float(a), float(b)) for a, b in zip(lrs, logits) if b is not None and b > 0]
    for i, (lr, value) in enumerate(pairs):
        if value >= level:
            if i == 0:
                return lr, "below"
            lr0, v0 = pairs[i - 1]
            frac = (math.log(level) - math.log(v0)) / (math.log(value) - math.log(v0))
            return math.exp(math.log(lr0) + frac * (math.log(lr) - math.log(lr0))), ""
    return None, "above"


def logit_growth(curves: pd.DataFrame, arm: str, field: str) -> m.LogitGrowth | None:
    """The measure over a ladder's rungs from the training curves (None without two rungs
    that logged the logit at STEP for the arm)."""
    need = {"step", "max_attn_logit", "arm", "lr", "seed", field}
    if curves.empty or not need <= set(curves.columns):
        return None
    at = curves[(curves.step == STEP) & (curves.arm == arm)].dropna(subset=["max_attn_logit"])
    if at[field].nunique() < 2:
        return None
    rungs: dict[str, dict[str, m.Crossing]] = {}
    for size, part in at.groupby(field):
        per_level = {}
        for level in LEVELS:
            found = []
            for _, seed in part.sort_values("lr").groupby("seed"):
                by_lr = seed.groupby("lr").max_attn_logit.max()
                found.append(crossing(by_lr.index, by_lr.values, level))
            inside = [lr for lr, kind in found if kind == ""]
            per_level[f"{level:g}"] = m.Crossing(
                lr=float(np.exp(np.mean(np.log(inside)))) if inside else None,
                seeds=len(found),
                below=sum(kind == "below" for _, kind in found),
                above=sum(kind == "above" for _, kind in found),
            )
        rungs[str(int(size))] = per_level
    slopes = {}
    for level in LEVELS:
        key = f"{level:g}"
        points = [(int(s), c[key].lr) for s, c in rungs.items() if c[key].lr is not None]
        fit = line_fit([math.log2(s) for s, _ in points], [math.log10(lr) for _, lr in points])
        if fit is None or len(points) < 3:
            slopes[key] = None
            continue
        lower, upper = fit.slope_bounds()
        slopes[key] = m.Slope(
            n=fit.n, value=fit.slope, lower=lower, upper=upper, ci90=[lower, upper]
        )
    return m.LogitGrowth(step=STEP, arm=arm, rungs=rungs, slopes=slopes)
