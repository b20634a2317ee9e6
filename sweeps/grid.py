"""How a sweep's LR grid grows once runs finish: extension to divergence, then refinement.

Pure: from the spec, the planned configs and the statuses of finished runs to the LRs to add.
"""
from __future__ import annotations

import math
from collections import defaultdict

from sweeps.config import RunConfig
from sweeps.spec import SweepSpec, round_lr


def grid_additions(spec: SweepSpec, configs: list[RunConfig], status: dict[str, str | None]
                   ) -> dict[int, tuple[list[float], str]]:
    """LRs to add per depth, with the reason, given the statuses of finished runs.

    Extension: while the runs at a depth's highest LR are all finished and none diverged
    (until="any"; with until="all": not all diverged), add the next LR up, at most
    max_extra_lrs per depth. Refinement (refine=true), once a depth is complete: the
    geometric midpoint between each arm's last stable and first divergent grid LR.
    Failed runs count as unknown.
    """
    ext = spec.extend
    points = [round_lr(spec.lr[-1] * spec.extend_factor ** k)
              for k in range(1, ext.max_extra_lrs + 1)]
    by_depth = defaultdict(list)
    for cfg in configs:
        by_depth[cfg.model.n_layer].append((cfg.model.qk_norm, cfg.train.lr,
                                            status.get(cfg.run_id)))
    out = {}
    for depth, runs in by_depth.items():
        planned = sorted({lr for _, lr, _ in runs})
        top = planned[-1]
        at_top = [s for _, lr, s in runs if lr == top]
        known = [s for s in at_top if s != "failed"]
        if None in at_top or not known:
            continue
        reached = (any if ext.until == "any" else all)(s == "diverged" for s in known)
        if not reached:
            extra = sum(lr in points for lr in planned)
            if extra < len(points):
                which = "no run" if ext.until == "any" else "not every run"
                out[depth] = ([points[extra]], f"{which} at lr {top:g} diverged; extension "
                                               f"{extra + 1} of {len(points)}")
            continue
        if not ext.refine or any(s is None for _, _, s in runs):
            continue
        coarse = [lr for lr in planned if lr in spec.lr or lr in points]
        mids = {}
        for arm in spec.qk_norm:
            arm_runs = [(lr, s) for q, lr, s in runs if q == arm and s not in (None, "failed")]
            diverged = sorted({lr for lr, s in arm_runs if s == "diverged" and lr in coarse})
            if not diverged:
                continue
            first = diverged[0]
            stable = [lr for lr in coarse if lr < first
                      and {s for x, s in arm_runs if x == lr} == {"ok"}]
            if not stable or any(stable[-1] < lr < first for lr in planned):
                continue
            mid = round_lr(math.sqrt(stable[-1] * first))
            if stable[-1] < mid < first:
                mids.setdefault(mid, []).append(f"qk_norm {arm}: {stable[-1]:g} ok, "
                                                f"{first:g} diverged")
        if mids:
            out[depth] = (sorted(mids), "refining between the last stable and first "
                                        "divergent lr (" + "; ".join(sum(mids.values(), [])) + ")")
    return out
