"""One rung decided once (docs/STUDY.md sections 13, 17 and 25): the primary comparison judged
(judge.compare: per-LR effects and marks, the stability threshold pooled and per seed, harm and
help ranges, leave-one-run-out where asked), the low-LR effect, H1 at `off`'s best LR, H2a,
each arm's failure edge under each failure definition, the cost at each arm's best LR, and the
borderline runs, with every verdict they could flip computed both ways (all borderline runs
stuck, all trained; cells.both_ways). A verdict the two ways disagree on is inconclusive
("borderline decides"): a fate within measurement precision of the cut must not decide a
number.

sweeps/analysis/compute.py maps a Rung into the analysis, sweeps/analysis/trends.py reads each
rung's two readings from it, and the carry tables (sweeps/study/carry.py) its sides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sweeps.study import effect_curve, judge, rules, stability
from sweeps.study.cells import FAILURE_DEFINITIONS, Cells, borderline, both_ways
from sweeps.study.rules import BORDERLINE_DECIDES
from sweeps.study.stats import GridValue, Paired, equivalent


@dataclass(frozen=True)
class H1:
    """H1 at `off`'s best LR: the verdict, a reason code ('no best lr', 'not judged',
    'necessary', 'harms', 'no threshold', 'negligible', 'off never fails',
    'neither', BORDERLINE_DECIDES) and the statistics there."""

    verdict: str
    why: str
    stats: Paired | None


@dataclass(frozen=True)
class H2a:
    """H2a under one failure definition (docs/STUDY.md section 5): the paired statistics of
    r_s = log10(on's critical LR / off's) and the r_s, the paired rule's verdict on them, and
    why the critical LRs decide nothing ("off above": `off` does not fail inside the grid in
    some seed; "below": a critical LR of either arm under the grid, or none; "" when they
    decide)."""

    stats: Paired
    log10_ratios: list[float]
    paired_verdict: str
    censored: str

    @property
    def verdict(self) -> str:
        return rules.INCONCLUSIVE if self.censored else self.paired_verdict


def h2a_censoring(off: dict, on: dict) -> str:
    """Why H2a cannot decide under a definition, or "" (H2a.censored)."""
    seeds = sorted(set(off) & set(on))
    if any(off[k].kind == "above" for k in seeds):
        return "off above"
    if any(v.kind in ("below", "none") for k in seeds for v in (off[k], on[k])):
        return "below"
    return ""


def h2a(off: dict, on: dict) -> H2a:
    """H2a on both arms' critical LRs per seed under one definition."""
    p, r = rules.h2a_stats(off, on)
    return H2a(p, r, rules.paired_verdict(p), h2a_censoring(off, on))


@dataclass(frozen=True)
class H2b:
    """H2b (docs/STUDY.md section 5): D_s = S off - S on per seed over the base grid's LRs in
    the sensitivity range (`lrs`), its verdict against the minimum effect, why the rung is not
    judged ("" where it is; rules.H2B_SHORT, H2B_RUNG_SUBSET), and the robustness check over
    the LRs of the range where every run trained (descriptive; None without two such LRs or
    without a bound to qualify)."""

    stats: Paired
    verdict: str
    why: str
    lrs: tuple[float, ...]
    trained_lrs: tuple[float, ...]
    trained: Paired | None


def h2b(cells: Cells, study: rules.Study, base_lrs, rung_lrs=None) -> H2b:
    """H2b at a rung: base_lrs the grid the sensitivity is read over (extension and refinement
    LRs never enter), rung_lrs the rung's [rung_lr] subset (None: the whole grid)."""
    off, on = study.primary_comparison
    lrs = rules.sensitivity_lrs(base_lrs, study.sensitivity_range)
    s = {arm: rules.sensitivities(cells, arm, lrs) for arm in (off, on)}
    q = rules.h2b_stats(s[off], s[on], study.precision)
    why = rules.h2b_unjudged(lrs, rung_lrs, tuple(study.sensitivity_range))
    # the robustness check, only where H2b itself has a bound to qualify
    among, trained = (
        rules.h2b_trained(cells, off, on, lrs, study.precision)
        if not why and math.isfinite(q.lower)
        else ([], None)
    )
    verdict = rules.INCONCLUSIVE if why else rules.paired_verdict(q, study.min_sensitivity)
    return H2b(q, verdict, why, tuple(lrs), tuple(among), trained)


@dataclass(frozen=True)
class Way:
    """The rung under one reading of its borderline runs: the primary comparison judged, the
    stability threshold's search from `off`'s best LR, the low-LR effect, H1, H2a's verdict on
    the primary failure definition and H2a under each definition, and each arm's failure edges
    (arm -> failure definition -> edge); off_fails: some seed of the reference arm fails inside
    or below the grid (the primary failure definition)."""

    judgement: rules.Judgement
    threshold: stability.StabilityThreshold
    low: stability.LowLR
    off_fails: bool
    h1: H1
    h2a: str
    h2a_by_definition: dict[str, H2a]
    edges: dict[str, dict[str, stability.Edge]]


@dataclass(frozen=True)
class Rung(Way):
    """Everything the rulebook decides at one rung (no prose): the recorded reading (Way's
    fields), with any decision the borderline runs flip made inconclusive; the reference arm's
    best LR and the cost at each arm's best LR; `ways` the rung with every borderline run
    stuck and trained (the recorded reading twice when none is borderline); `both_ways` each
    decision the two readings differ on."""

    comparison: rules.Comparison
    best_lr: float | None
    best_cost: effect_curve.BestCost
    h2b: H2b
    borderline: tuple[str, ...]  # run ids within the fate margin of their cut
    # decision -> (borderline stuck, trained) where the two readings differ
    both_ways: dict[str, tuple[str, str]]
    ways: tuple[Way, Way]


def h1_at_best(th: stability.StabilityThreshold, off_fails: bool, study: rules.Study) -> H1:
    """Supported: QK-norm's effect at `off`'s best LR is equivalent to zero (TOST at
    +-negligible) and the stability threshold lies above it. Not supported: necessary there,
    harmful there, or no threshold although `off` fails above its best LR."""
    if th.best_lr is None:
        return H1(rules.INCONCLUSIVE, "no best lr", None)
    at = next((s for lr, s in zip(th.judged, th.stats) if math.isclose(lr, th.best_lr)), None)
    if at is None:
        return H1(rules.INCONCLUSIVE, "not judged", None)
    if at.lower > study.min_effect:
        return H1(rules.NOT_SUPPORTED, "necessary", at)
    if at.upper < -study.min_effect:
        return H1(rules.NOT_SUPPORTED, "harms", at)
    kind = th.pooled.kind
    if kind == "none" and off_fails:
        return H1(rules.NOT_SUPPORTED, "no threshold", at)
    if equivalent(at, study.negligible) and kind == "":
        return H1(rules.SUPPORTED, "negligible", at)
    if kind == "none":
        return H1(rules.INCONCLUSIVE, "off never fails", at)
    return H1(rules.INCONCLUSIVE, "neither", at)


def low_lr(j: rules.Judgement, study: rules.Study) -> stability.LowLR:
    """The low-LR effect (section 17) of a judged primary comparison: the LRs below `off`'s
    best."""
    p = j.pairs
    if j.fates is None:
        return stability.LowLR(rules.INCONCLUSIVE, (), (), (), ())
    return stability.low_lr_effect(
        p.lrs,
        p.d,
        *j.fates,
        p.ceiling,
        j.best_lr,
        study.min_effect,
        study.negligible,
        study.precision,
    )


def judge_way(cells: Cells, study: rules.Study, influence: bool = False) -> Way:
    """The rung under the fates its table holds (leave-one-run-out only where asked)."""
    comparison = study.primary_comparison
    j = judge.compare(cells, comparison, study, influence)
    present = [arm for arm in comparison if cells.has(arm)]
    # each arm's critical LR per seed under each failure definition, read once
    crit = {
        (arm, definition): rules.critical_lrs(cells, arm, definition, study.delta)
        for arm in comparison
        for definition in FAILURE_DEFINITIONS
    }
    off, on = comparison
    primary = rules.PRIMARY_FAILURE
    off_fails = any(v.kind in ("", "below") for v in crit[off, primary].values())
    by_definition = {d: h2a(crit[off, d], crit[on, d]) for d in FAILURE_DEFINITIONS}
    edges = {
        arm: {d: stability.failure_edge(list(crit[arm, d].values())) for d in FAILURE_DEFINITIONS}
        for arm in present
    }
    th = j.search
    h1 = h1_at_best(th, off_fails, study)
    decided = by_definition[primary].verdict
    return Way(j, th, low_lr(j, study), off_fails, h1, decided, by_definition, edges)


def judge_rung(
    cells: Cells,
    study: rules.Study,
    influence: bool = False,
    base_lrs=None,
    rung_lrs=None,
) -> Rung:
    """The rung decided once: its recorded reading (with the leave-one-run-out check where
    asked), both readings of its borderline runs, and the decisions they flip made
    inconclusive. base_lrs: the grid H2b reads sensitivity over (default: the LRs the table
    holds); rung_lrs: the rung's [rung_lr] subset, None for the whole grid."""
    main = judge_way(cells, study, influence)
    ways = both_ways(cells, study.fate_margin, lambda c: judge_way(c, study))
    flags = borderline(cells, study.fate_margin)
    runs = tuple(sorted(str(r) for r in cells.run_ids[flags & cells.finished()] if r is not None))
    h1, h2a_verdict, low = main.h1, main.h2a, main.low
    both: dict[str, tuple[str, str]] = {}
    if ways is not None:
        decisions = {
            "threshold": tuple(_kind(w.threshold.pooled) for w in ways),
            "low": tuple(w.low.verdict for w in ways),
            "H1": tuple(w.h1.verdict for w in ways),
            "H2a": tuple(w.h2a for w in ways),
        }
        for arm, by_definition in main.edges.items():
            for definition in by_definition:
                decisions[f"{arm} {definition} edge"] = tuple(
                    _edge_text(w.edges[arm][definition]) for w in ways
                )
        both = {k: v for k, v in decisions.items() if v[0] != v[1]}
        if "H1" in both:
            h1 = H1(rules.INCONCLUSIVE, BORDERLINE_DECIDES, h1.stats)
        if "H2a" in both:
            h2a_verdict = rules.INCONCLUSIVE
        if "low" in both:
            low = replace(low, verdict=rules.INCONCLUSIVE)
    ref, primary = study.reference, study.primary
    best = rules.best_lr(cells, ref)
    cost = effect_curve.best_cost(
        cells.lrs,
        cells.loss[cells.arm(ref)],
        cells.loss[cells.arm(primary)],
        best,
        rules.best_lr(cells, primary),
        study.precision,
    )
    return Rung(
        comparison=study.primary_comparison,
        best_lr=best,
        judgement=main.judgement,
        threshold=main.threshold,
        low=low,
        off_fails=main.off_fails,
        h1=h1,
        h2a=h2a_verdict,
        h2a_by_definition=main.h2a_by_definition,
        edges=main.edges,
        best_cost=cost,
        h2b=h2b(cells, study, cells.lrs if base_lrs is None else base_lrs, rung_lrs),
        borderline=runs,
        both_ways=both,
        ways=ways if ways is not None else (main, main),
    )


def _kind(v: GridValue) -> str:
    return f"{v.kind or 'inside'} {v.bracket or v.value}"


def _edge_text(e: stability.Edge) -> str:
    """An edge as the two ways compare it: each seed's bracket, '(0.0562, 0.1]', or its
    censored bound, '> 1'."""

    def seed(v: GridValue) -> str:
        if v.bracket:
            return f"({v.bracket[0]:.3g}, {v.bracket[1]:.3g}]"
        return {"above": "> ", "below": "<= "}.get(v.kind, f"{v.kind} ") + f"{v.value:.3g}"

    return ", ".join(seed(v) for v in e.per_seed)
