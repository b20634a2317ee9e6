"""Two reports of one ladder side by side (docs/STUDY.md section 18): each quantity at each rung
both hold, under the reference's budget and the new one's, with the outcome section 18 fixes:
"carries" where the new value's bracket or interval overlaps the reference's, "differs" where
it does not, "inconclusive" where either side has none (a censored edge, an unjudged threshold).
It says which of a fixed-steps ladder's conclusions were its budget's.

Quantities per rung (the primary comparison, off vs on): the stability threshold (pooled
bracket), each arm's failure edges (stuck and diverged, 90% intervals), QK-norm's cost at
`off`'s best LR and at each arm's own best LR (90% intervals), and the low-LR effect at the LRs
both grids judged (its family-wise intervals). Whole ladder: H3's slope over every rung and
without each rung section 18 names (depth 1), and the attention-logit crossings' slopes. `off`'s
and `on`'s best LRs are shown beside them, without an outcome (a point has no interval).

The machine check: runs of the same config in both reports (the same run id) compared run by
run: how many share their fate, and the largest and mean difference of their final loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sweeps.analysis import model as m
from sweeps.study import stability

CARRIES, DIFFERS, INCONCLUSIVE = "carries", "differs", "inconclusive"
Span = tuple[float, float, bool]  # (lo, hi, closed): a bracket (lo, hi] or an interval [lo, hi]


@dataclass(frozen=True)
class Row:
    rung: int | None  # None: the whole ladder
    quantity: str
    reference: float | None
    reference_span: Span | None
    new: float | None
    new_span: Span | None
    outcome: str  # "" for a quantity shown without a rule
    unit: str = "lr"  # lr | nats | slope (decades per doubling of depth)
    notes: tuple[str, str] = ("", "")  # why a side has no span (a censored edge), ref and new


@dataclass(frozen=True)
class MachineCheck:
    rung: int
    runs: int  # configs both reports trained
    same_fate: int
    max_abs_diff: float | None  # final loss, nats, over runs both finished
    mean_abs_diff: float | None


def overlap(a: Span | None, b: Span | None) -> str:
    """Section 18's rule on two spans: carries when they share a point, differs when not,
    inconclusive when either is missing. A bracket (lo, hi] leaves out lo."""
    if a is None or b is None:
        return INCONCLUSIVE
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    touching_ok = (a[2] or a[0] != lo) and (b[2] or b[0] != lo)
    return CARRIES if lo < hi or (lo == hi and touching_ok) else DIFFERS


def threshold_span(t: m.GridPoint | None) -> Span | None:
    """The pooled threshold as a bracket (stability.span_of's reading): (lo, hi] inside the
    grid, (0, best] below it, (top evidence LR, inf) when none lies below the top."""
    if t is None or t.value is None or t.kind == "unjudged":
        return None
    lo, hi = stability.span_of(t)
    return None if math.isnan(lo) else (lo, hi, False)


def interval(lower, upper) -> Span | None:
    if lower is None or upper is None or not (math.isfinite(lower) and math.isfinite(upper)):
        return None
    return (float(lower), float(upper), True)


def _row(
    rung, quantity, ref_value, ref_span, new_value, new_span, rule=True, unit="lr", notes=("", "")
) -> Row:
    outcome = overlap(ref_span, new_span) if rule else ""
    return Row(rung, quantity, ref_value, ref_span, new_value, new_span, outcome, unit, notes)


def _censored(e: m.Edge | None) -> str:
    if e is None:
        return "not measured"
    return f"beyond the grid in {e.censored} of {e.seeds} seeds" if e.censored else ""


def _effect_at(c: m.Comparison, lr: float | None) -> m.LrEffect | None:
    if lr is None:
        return None
    return next((e for e in c.per_lr if e.judged and math.isclose(e.lr, lr)), None)


def rung_rows(depth: int, ref: m.Rung, new: m.Rung, comparison: str) -> list[Row]:
    rc, nc = ref.comparisons[comparison], new.comparisons[comparison]
    out = []
    for arm in (rc.baseline, rc.treatment):
        out.append(
            _row(depth, f"{arm}'s best LR", ref.arms[arm].best_lr, None,
                 new.arms[arm].best_lr, None, rule=False)
        )  # fmt: skip
    out.append(
        _row(depth, "stability threshold", rc.threshold.value, threshold_span(rc.threshold),
             nc.threshold.value, threshold_span(nc.threshold))
    )  # fmt: skip
    for arm in (rc.baseline, rc.treatment):
        for definition in ("stuck", "diverged"):
            e_ref = (ref.edges or {}).get(arm, {}).get(definition)
            e_new = (new.edges or {}).get(arm, {}).get(definition)
            out.append(
                _row(depth, f"{arm}'s {definition} edge",
                     e_ref.value if e_ref else None, interval(*_bounds(e_ref)),
                     e_new.value if e_new else None, interval(*_bounds(e_new)),
                     notes=(_censored(e_ref), _censored(e_new)))
            )  # fmt: skip
    at_ref, at_new = _effect_at(rc, rc.best_lr), _effect_at(nc, nc.best_lr)
    out.append(
        _row(depth, "cost at off's best LR (off - on)",
             at_ref.mean if at_ref else None, interval(*_bounds(at_ref)),
             at_new.mean if at_new else None, interval(*_bounds(at_new)), unit="nats")
    )  # fmt: skip
    b_ref = ref.best_cost.stats if ref.best_cost else None
    b_new = new.best_cost.stats if new.best_cost else None
    out.append(
        _row(depth, "cost at each arm's own best LR (off - on)",
             b_ref.mean if b_ref else None, interval(*_bounds(b_ref)),
             b_new.mean if b_new else None, interval(*_bounds(b_new)), unit="nats")
    )  # fmt: skip
    if ref.low_lr and new.low_lr:
        for i, lr in enumerate(ref.low_lr.lrs):
            j = next((k for k, x in enumerate(new.low_lr.lrs) if math.isclose(x, lr)), None)
            if j is None:
                continue
            out.append(
                _row(depth, f"low-LR effect at {lr:g} (off - on)", ref.low_lr.means[i],
                     interval(ref.low_lr.lower[i], ref.low_lr.upper[i]), new.low_lr.means[j],
                     interval(new.low_lr.lower[j], new.low_lr.upper[j]), unit="nats")
            )  # fmt: skip
    return out


def _bounds(x) -> tuple[float | None, float | None]:
    """(lower, upper) of an edge or a paired statistic; (None, None) without one or when an
    edge is censored (some seed beyond the grid: its interval is open-ended)."""
    if x is None or getattr(x, "censored", 0):
        return None, None
    return x.lower, x.upper


# the cost lines' names (sweeps.analysis.trends.COSTS) as a row says them
COST_NAMES = {
    "at the reference's best LR": "at off's best LR",
    "each at its own best LR": "own best LRs",
}


def ladder_rows(ref: m.Analysis, new: m.Analysis, left_out: tuple[int, ...] = (1,)) -> list[Row]:
    out = []
    t_ref, t_new = ref.h3, new.h3
    if t_ref is not None and t_new is not None and t_ref.at_bound and t_new.at_bound:
        a, b = t_ref.at_bound, t_new.at_bound
        out.append(
            _row(None, "H3 slope (decades per doubling)", a.value, interval(a.lower, a.upper),
                 b.value, interval(b.lower, b.upper), unit="slope")
        )  # fmt: skip
        for rung in left_out:
            x = next((r for r in t_ref.left_out or [] if r.rung == rung), None)
            y = next((r for r in t_new.left_out or [] if r.rung == rung), None)
            if x and y and x.slope and y.slope:
                out.append(
                    _row(None, f"H3 slope without depth {rung}", x.slope.value,
                         interval(x.slope.lower, x.slope.upper), y.slope.value,
                         interval(y.slope.lower, y.slope.upper))
                )  # fmt: skip
    if ref.cost_trend and new.cost_trend:  # QK-norm's cost per doubling (trends.cost_trend)
        for name, a in ref.cost_trend.lines.items():
            b = new.cost_trend.lines.get(name)
            if b is not None:
                out.append(
                    _row(None, f"cost per doubling ({COST_NAMES.get(name, name)}, nats)",
                         a.value, interval(*a.ci90), b.value, interval(*b.ci90), unit="slope")
                )  # fmt: skip
    if ref.logit_growth and new.logit_growth:
        for level, a in sorted(ref.logit_growth.slopes.items(), key=lambda kv: float(kv[0])):
            b = new.logit_growth.slopes.get(level)
            if b is not None:
                out.append(
                    _row(None, f"off's logit-{level} crossing LR, slope per doubling", a.value,
                         interval(a.lower, a.upper), b.value, interval(b.lower, b.upper),
                         unit="slope")
                )  # fmt: skip
    return out


def machine_check(ref: m.Analysis, new: m.Analysis, field: str = "n_layer") -> list[MachineCheck]:
    """Per rung, the runs both reports hold (same run id): fates shared, final-loss gaps."""
    mine = {r.run_id: r for r in ref.runs}
    by_rung: dict[int, list] = {}
    for r in new.runs:
        if r.run_id in mine:
            by_rung.setdefault(int(getattr(r, field)), []).append((mine[r.run_id], r))
    out = []
    for rung, pairs in sorted(by_rung.items()):
        gaps = [
            abs(a.final_val_loss - b.final_val_loss)
            for a, b in pairs
            if a.final_val_loss is not None and b.final_val_loss is not None
        ]
        out.append(
            MachineCheck(
                rung,
                len(pairs),
                sum(a.outcome == b.outcome for a, b in pairs),
                max(gaps) if gaps else None,
                sum(gaps) / len(gaps) if gaps else None,
            )
        )
    return out


def side_by_side(ref: m.Analysis, new: m.Analysis) -> tuple[list[Row], list[MachineCheck]]:
    """Every row at the rungs both reports hold, then the ladder's, and the machine check."""
    comparison = f"{new.settings.reference} vs {new.settings.primary}"
    rows = []
    for key in sorted(set(ref.depths) & set(new.depths), key=int):
        rows += rung_rows(int(key), ref.depths[key], new.depths[key], comparison)
    return rows + ladder_rows(ref, new), machine_check(ref, new)


__all__ = [
    "CARRIES",
    "DIFFERS",
    "INCONCLUSIVE",
    "MachineCheck",
    "Row",
    "machine_check",
    "overlap",
    "side_by_side",
    "threshold_span",
]
