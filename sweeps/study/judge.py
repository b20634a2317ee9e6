"""One comparison at one rung judged by the rulebook (docs/STUDY.md sections 13 and 17): the one
judgement the report, its charts, the per-LR calls every later decision reads (C1, the
interventions, the practitioner's rule, the budget check) and the runner's refinement all use.

Per LR, the paired effect baseline - treatment under section 13's failure model (pairs where
both arms failed carry no evidence; a partial ceiling is not judged; the seeds left out at an
LR are `set_aside`), marked harmed or helped by section 17's effect-curve rule; the stability
threshold searched at and above the baseline arm's best LR, pooled and per seed (with the seed
margin); and the runs whose removal alone moves the pooled threshold (leave-one-run-out).
"""

from __future__ import annotations

import math

import numpy as np

from sweeps.study import effect_curve, rules, stability
from sweeps.study.cells import Cells, borderline
from sweeps.study.stats import GridValue, Necessity, paired


def fate_arrays(cells: Cells, p: rules.Pairs, fate_margin: float):
    """Each arm's fate class (stability.fate_classes: trained, trained within the fate margin
    of its cut, stuck, stopped) [LR, seed] at the LRs of the pairs; (None, None) without any."""
    if not p.lrs:
        return None, None
    stopped = cells.diverged if cells.diverged is not None else np.zeros_like(cells.failing)
    cls = stability.fate_classes(cells.failing, stopped, borderline(cells, fate_margin))
    shared = [cells.lrs.index(lr) for lr in p.lrs]
    ib, it = cells.arm(p.comparison.baseline), cells.arm(p.comparison.treatment)
    return cls[ib, shared], cls[it, shared]


def judge_arrays(lrs, d, cls_b, cls_t, ceiling, best: float | None, study: rules.Study):
    """(Necessity, marks per judged LR, harm ranges, help ranges, the stability threshold's
    search, whether each LR is a partial ceiling [LR]) of one comparison from its arrays (lrs
    ascending, d [LR, seed], fate classes, common ceiling [LR])."""
    lrs = np.asarray(lrs, float)
    floor, m = study.precision, study.min_effect
    if not len(lrs):
        empty = Necessity([], [], [], [], stability.NONE, [], [], floor)
        unsearched = stability.StabilityThreshold(None, stability.NONE, (), (), (), True)
        return empty, [], (), (), unsearched, ()
    d = np.asarray(d, float).reshape(len(lrs), -1)
    a, used, _ = stability.pooled_lr_stats(d, cls_b, cls_t, floor)
    judged = stability.judged_mask(a, ceiling)
    idx = [i for i in range(len(lrs)) if judged[i]]
    marks = effect_curve.marks(a, judged, m)
    th = stability.stability_threshold(
        lrs, d, cls_b, cls_t, ceiling, best, m, study.seed_margin, floor
    )
    stats = [paired(np.where(used[i], d[i], np.nan), floor) for i in idx]
    has = np.isfinite(d)
    per_seed = list(th.per_seed) or [stability.NONE] * d.shape[1]
    partial = tuple(bool(x) for x in np.asarray(a["partial_ceiling"]))
    necessity = Necessity(
        lrs=[float(lrs[i]) for i in idx],
        stats=stats,
        necessary=[bool(s.lower > m) for s in stats],
        set_aside=[[int(s) for s in np.flatnonzero(has[i] & ~used[i])] for i in idx],
        threshold=th.pooled,
        ceiling=[float(x) for x, c in zip(lrs, np.asarray(ceiling, bool)) if c],
        seed_thresholds=per_seed,
        floor=floor,
    )
    harm = effect_curve.ranges(lrs, idx, marks, effect_curve.HARMED)
    helped = effect_curve.ranges(lrs, idx, marks, effect_curve.HELPED)
    return necessity, [int(marks[i]) for i in idx], harm, helped, th, partial


def compare(
    cells: Cells, comparison: rules.Comparison, study: rules.Study, influence: bool = True
) -> rules.Judgement:
    """The comparison judged at one rung, with the leave-one-run-out check where asked."""
    p = rules.pairs(cells, comparison)
    best = rules.best_lr(cells, comparison.baseline)
    cls_b, cls_t = fate_arrays(cells, p, study.fate_margin)

    def rule(d):
        return judge_arrays(p.lrs, d, cls_b, cls_t, p.ceiling, best, study)

    result, marks, harm, helped, search, partial = rule(p.d)
    movers = []
    if influence:
        for j, s in zip(*np.nonzero(np.isfinite(p.d))):
            d = p.d.copy()
            d[j, s] = np.nan  # either run of the pair gone removes the pair
            without = rule(d)[0].threshold
            if _moved(result.threshold, without):
                movers += [(rid, without) for rid in p.runs[j, s]]
    return rules.Judgement(
        p,
        result,
        sorted(movers, key=lambda x: str(x[0])),
        best_lr=best,
        marks=marks,
        harm=harm,
        help=helped,
        search=search,
        partial_ceiling=partial,
        fates=None if cls_b is None else (cls_b, cls_t),
    )


def _moved(a: GridValue, b: GridValue) -> bool:
    """The threshold moved: another kind, or another grid bracket."""
    return a.kind != b.kind or (a.inside and a.bracket != b.bracket)


# -- refinement --------------------------------------------------------------------------------
def refinement_brackets(cells: Cells, study: rules.Study, arms) -> list[rules.Bracket]:
    """The brackets adaptive refinement bisects (docs/STUDY.md sections 6, 17 and 25): each
    arm's and seed's critical-LR bracket, the judged stability threshold's bracket, and each
    seed's stability-threshold bracket (section 25: the trend's rung values are seed means,
    so a seed's value read from a wide bracket is as coarse as that bracket)."""
    out = []
    for arm in arms:
        for seed, crit in rules.critical_lrs(cells, arm).items():
            if crit.inside:
                out.append(rules.Bracket(*crit.bracket, arm, int(seed)))
    necessity = compare(cells, study.primary_comparison, study, influence=False).necessity
    t = necessity.threshold
    if t.inside and t.bracket and math.isfinite(t.value):
        out.append(rules.Bracket(*t.bracket))
    for seed, v in zip(cells.seeds, necessity.seed_thresholds):
        if v.inside and v.bracket:
            out.append(rules.Bracket(*v.bracket, None, int(seed)))
    return out
