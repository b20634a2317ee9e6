"""One rung judged under study v5 (docs/STUDY.md section 13): the stability threshold (pooled
and per seed), the low-LR effect, H1 at `off`'s best LR, H2a, each arm's failure edge under
each failure definition, and the borderline runs, with every verdict they could flip computed
both ways (all borderline runs stuck, all trained). A verdict the two ways disagree on is
inconclusive ("borderline decides"): a fate within measurement precision of the cut must not
decide a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sweeps.study import judge, rules, stability
from sweeps.study.cells import FAILURE_DEFINITIONS, Cells, borderline, with_borderline_as
from sweeps.study.rules import BORDERLINE_DECIDES
from sweeps.study.stats import GridValue, Paired, equivalent


@dataclass(frozen=True)
class H1v5:
    """H1 at `off`'s best LR: the verdict, a reason code ('no best lr', 'not judged',
    'necessary', 'harms', 'no threshold', 'negligible', 'off never fails',
    'neither', BORDERLINE_DECIDES) and the statistics there."""

    verdict: str
    why: str
    stats: Paired | None


@dataclass(frozen=True)
class Rung:
    """Everything v5 decides at one rung (no prose)."""

    comparison: rules.Comparison
    best_lr: float | None
    threshold: stability.StabilityThreshold
    low: stability.LowLR
    h1: H1v5
    h2a: str
    h2a_ratio: Paired
    edges: dict[str, dict[str, stability.Edge]]  # arm -> definition -> edge
    borderline: tuple[str, ...]  # run ids within the fate margin of their cut
    both_ways: dict[
        str, tuple[str, str]
    ]  # verdict -> (borderline stuck, trained) where they differ


def primary_arrays(cells: Cells, comparison: rules.Comparison, fate_margin: float = 0.0):
    """(LRs both arms ran, d [LR, seed] baseline - treatment, fate classes of each arm, the
    common ceiling [LR]) of a comparison at one rung: rules.pairs' differences and ceiling,
    with each run's fate class (judge.fate_arrays)."""
    p = rules.pairs(cells, comparison)
    cls_b, cls_t = judge.fate_arrays(cells, p, fate_margin)
    return np.asarray(p.lrs, float), p.d, cls_b, cls_t, p.ceiling


def h1_v5(th: stability.StabilityThreshold, off_fails: bool, study: rules.Study) -> H1v5:
    """Supported: QK-norm's effect at `off`'s best LR is equivalent to zero (TOST at
    +-negligible) and the stability threshold lies above it. Not supported: necessary there,
    harmful there, or no threshold although `off` fails above its best LR."""
    if th.best_lr is None:
        return H1v5(rules.INCONCLUSIVE, "no best lr", None)
    at = next((s for lr, s in zip(th.judged, th.stats) if math.isclose(lr, th.best_lr)), None)
    if at is None:
        return H1v5(rules.INCONCLUSIVE, "not judged", None)
    if at.lower > study.min_effect:
        return H1v5(rules.NOT_SUPPORTED, "necessary", at)
    if at.upper < -study.min_effect:
        return H1v5(rules.NOT_SUPPORTED, "harms", at)
    kind = th.pooled.kind
    if kind == "none" and off_fails:
        return H1v5(rules.NOT_SUPPORTED, "no threshold", at)
    if equivalent(at, study.negligible) and kind == "":
        return H1v5(rules.SUPPORTED, "negligible", at)
    if kind == "none":
        return H1v5(rules.INCONCLUSIVE, "off never fails", at)
    return H1v5(rules.INCONCLUSIVE, "neither", at)


def _one_way(cells: Cells, study: rules.Study):
    comparison = study.primary_comparison
    lrs, d, cb, ct, ceiling = primary_arrays(cells, comparison, study.fate_margin)
    best = rules.best_lr(cells, comparison.baseline)
    if cb is None:
        th = stability.stability_threshold(lrs, d, cb, ct, ceiling, None, 0, 0, 0)
        low = stability.LowLR(rules.INCONCLUSIVE, (), (), (), ())
    else:
        th = stability.stability_threshold(
            lrs, d, cb, ct, ceiling, best, study.min_effect, study.seed_margin, study.precision
        )
        low = stability.low_lr_effect(
            lrs, d, cb, ct, ceiling, best, study.min_effect, study.negligible, study.precision
        )
    crit = {arm: rules.critical_lrs(cells, arm) for arm in comparison}
    off_fails = any(v.kind in ("", "below") for v in crit[comparison.baseline].values())
    h1 = h1_v5(th, off_fails, study)
    ratio, _ = rules.h2a_stats(crit[comparison.baseline], crit[comparison.treatment])
    h2a = rules.paired_verdict(ratio)
    if any(not v.inside for v in crit[comparison.baseline].values()):
        h2a = rules.INCONCLUSIVE if h2a == rules.SUPPORTED else h2a
    edges = {
        arm: {
            definition: stability.failure_edge(
                list(rules.critical_lrs(cells, arm, definition, study.delta).values())
            )
            for definition in FAILURE_DEFINITIONS
        }
        for arm in comparison
        if cells.has(arm)
    }
    return th, low, h1, h2a, ratio, edges


def _kind(v: GridValue) -> str:
    return f"{v.kind or 'inside'} {v.bracket or v.value}"


def judge_rung(cells: Cells, study: rules.Study) -> Rung:
    """v5 at one rung, with the borderline runs' fates both ways."""
    th, low, h1, h2a, ratio, edges = _one_way(cells, study)
    flags = borderline(cells, study.fate_margin)
    runs = tuple(sorted(str(r) for r in cells.run_ids[flags & cells.finished()] if r is not None))
    both: dict[str, tuple[str, str]] = {}
    if runs:
        ways = [
            _one_way(with_borderline_as(cells, study.fate_margin, f), study) for f in (True, False)
        ]
        pairs = {
            "threshold": tuple(_kind(w[0].pooled) for w in ways),
            "low": tuple(w[1].verdict for w in ways),
            "H1": tuple(w[2].verdict for w in ways),
            "H2a": tuple(w[3] for w in ways),
        }
        for arm, by_definition in edges.items():
            for definition in by_definition:
                pairs[f"{arm} {definition} edge"] = tuple(
                    _edge_text(w[5][arm][definition]) for w in ways
                )
        both = {k: v for k, v in pairs.items() if v[0] != v[1]}
        if "H1" in both:
            h1 = H1v5(rules.INCONCLUSIVE, BORDERLINE_DECIDES, h1.stats)
        if "H2a" in both:
            h2a = rules.INCONCLUSIVE
        if "low" in both:
            low = stability.LowLR(rules.INCONCLUSIVE, low.lrs, low.stats, low.lower, low.upper)
    best = rules.best_lr(cells, study.reference)
    return Rung(study.primary_comparison, best, th, low, h1, h2a, ratio, edges, runs, both)


def _edge_text(e: stability.Edge) -> str:
    """An edge as the two ways compare it: each seed's bracket, '(0.0562, 0.1]', or its
    censored bound, '> 1'."""

    def seed(v: GridValue) -> str:
        if v.bracket:
            return f"({v.bracket[0]:.3g}, {v.bracket[1]:.3g}]"
        return {"above": "> ", "below": "<= "}.get(v.kind, f"{v.kind} ") + f"{v.value:.3g}"

    return ", ".join(seed(v) for v in e.per_seed)
