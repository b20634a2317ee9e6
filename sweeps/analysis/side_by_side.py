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
from sweeps.study.stats import span

CARRIES, DIFFERS, INCONCLUSIVE = "carries", "differs", "inconclusive"
Span = tuple[float, float, bool]  # (lo, hi, closed): a bracket (lo, hi] or an interval [lo, hi]


# what a row shows (figures/side_by_side.py words each, with the row's `about`)
BEST_LR = "best LR"  # about: (arm,)
THRESHOLD = "stability threshold"
EDGE = "edge"  # about: (arm, failure definition)
COST_AT_BEST = "cost at off's best LR"
COST_AT_OWN_BEST = "cost at each arm's best LR"
LOW_LR_EFFECT = "low-LR effect"  # about: (LR,)
H3_SLOPE = "H3 slope"
H3_WITHOUT = "H3 slope without a rung"  # about: (rung,)
COST_PER_DOUBLING = "cost per doubling"  # about: (the cost line's name in cost_trend,)
LOGIT_CROSSING = "logit crossing slope"  # about: (the logit level,)
# why a side has no span: its edge was not measured, or some seed's lies beyond the grid
NOT_MEASURED, CENSORED = "not measured", "censored"


@dataclass(frozen=True)
class Note:
    """Why one side of a row has no span: NOT_MEASURED, or CENSORED in `censored` of `seeds`
    seeds; kind "" when it has one."""

    kind: str = ""
    censored: int = 0
    seeds: int = 0


@dataclass(frozen=True)
class Row:
    rung: int | None  # None: the whole ladder
    quantity: str  # one of the codes above
    reference: float | None
    reference_span: Span | None
    new: float | None
    new_span: Span | None
    outcome: str  # "" for a quantity shown without a rule
    unit: str = "lr"  # lr | nats | slope (decades per doubling of depth)
    notes: tuple[Note, Note] = (Note(), Note())  # the reference's and the new side's
    about: tuple = ()  # the quantity's particulars (an arm, a definition, an LR, a rung)


@dataclass(frozen=True)
class MachineCheck:
    rung: int
    runs: int  # configs both reports trained
    same_fate: int
    max_abs_diff: float | None  # final loss, nats, over runs both finished
    mean_abs_diff: float | None


def row_of(d: dict) -> Row:
    """A row as side_by_side.json holds it, read back typed."""

    def span(x) -> Span | None:
        return None if x is None else (float(x[0]), float(x[1]), bool(x[2]))

    return Row(
        rung=d["rung"],
        quantity=d["quantity"],
        reference=d["reference"],
        reference_span=span(d["reference_span"]),
        new=d["new"],
        new_span=span(d["new_span"]),
        outcome=d["outcome"],
        unit=d["unit"],
        notes=tuple(Note(**n) for n in d["notes"]),
        about=tuple(d.get("about", ())),
    )


@dataclass(frozen=True)
class Page:
    """side_by_side.json read back typed (figures/side_by_side.py words it): the two reports,
    their tokens per parameter by rung (reference, new), each still-training sweep's unfinished
    counts, the rows, each machine check with the report it compared against, and the stamp of
    the rules that judged it."""

    report: str
    reference: str
    tokens_per_param: dict[str, tuple[float | None, float | None]]
    unfinished: dict[str, dict]
    rows: tuple[Row, ...]
    machine_check: tuple[tuple[str, MachineCheck], ...]
    stamp: dict[str, str]


def page_of(doc: dict) -> Page:
    """A side_by_side.json document as a typed Page."""
    checks = tuple(
        (x["against"], MachineCheck(**{k: v for k, v in x.items() if k != "against"}))
        for x in doc["machine_check"]
    )
    return Page(
        report=doc["report"],
        reference=doc["reference"],
        tokens_per_param={
            k: (v["reference"], v["new"]) for k, v in doc["tokens_per_param"].items()
        },
        unfinished=dict(doc.get("unfinished") or {}),
        rows=tuple(row_of(r) for r in doc["rows"]),
        machine_check=checks,
        stamp={k: doc[k] for k in ("study_sha256", "study_version") if k in doc},
    )


def overlap(a: Span | None, b: Span | None) -> str:
    """Section 18's rule on two spans: carries when they share a point, differs when not,
    inconclusive when either is missing. A bracket (lo, hi] leaves out lo."""
    if a is None or b is None:
        return INCONCLUSIVE
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    touching_ok = (a[2] or a[0] != lo) and (b[2] or b[0] != lo)
    return CARRIES if lo < hi or (lo == hi and touching_ok) else DIFFERS


def threshold_span(t: m.GridPoint | None) -> Span | None:
    """The pooled threshold as a bracket (sweeps.study.stats.span's reading): (lo, hi] inside the
    grid, (0, best] below it, (top evidence LR, inf) when none lies below the top."""
    if t is None or t.value is None or t.kind == "unjudged":
        return None
    s = span(t)
    return None if s.empty else (s.lo, s.hi, False)


def interval(lower, upper) -> Span | None:
    if lower is None or upper is None or not (math.isfinite(lower) and math.isfinite(upper)):
        return None
    return (float(lower), float(upper), True)


def _row(
    rung,
    quantity,
    ref_value,
    ref_span,
    new_value,
    new_span,
    rule=True,
    unit="lr",
    notes=(Note(), Note()),
    about=(),
) -> Row:
    outcome = overlap(ref_span, new_span) if rule else ""
    return Row(
        rung, quantity, ref_value, ref_span, new_value, new_span, outcome, unit, notes, about
    )


def _censored(e: m.Edge | None) -> Note:
    if e is None:
        return Note(NOT_MEASURED)
    return Note(CENSORED, e.censored, e.seeds) if e.censored else Note()


def _effect_at(c: m.Comparison, lr: float | None) -> m.LrEffect | None:
    if lr is None:
        return None
    return next((e for e in c.per_lr if e.judged and math.isclose(e.lr, lr)), None)


def rung_rows(depth: int, ref: m.Rung, new: m.Rung, comparison: str) -> list[Row]:
    rc, nc = ref.comparisons[comparison], new.comparisons[comparison]
    out = []
    for arm in (rc.baseline, rc.treatment):
        out.append(
            _row(depth, BEST_LR, ref.arms[arm].best_lr, None,
                 new.arms[arm].best_lr, None, rule=False, about=(arm,))
        )  # fmt: skip
    out.append(
        _row(depth, THRESHOLD, rc.threshold.value, threshold_span(rc.threshold),
             nc.threshold.value, threshold_span(nc.threshold))
    )  # fmt: skip
    for arm in (rc.baseline, rc.treatment):
        for definition in ("stuck", "diverged"):
            e_ref = (ref.edges or {}).get(arm, {}).get(definition)
            e_new = (new.edges or {}).get(arm, {}).get(definition)
            out.append(
                _row(depth, EDGE,
                     e_ref.value if e_ref else None, interval(*_bounds(e_ref)),
                     e_new.value if e_new else None, interval(*_bounds(e_new)),
                     notes=(_censored(e_ref), _censored(e_new)), about=(arm, definition))
            )  # fmt: skip
    at_ref, at_new = _effect_at(rc, rc.best_lr), _effect_at(nc, nc.best_lr)
    out.append(
        _row(depth, COST_AT_BEST,
             at_ref.mean if at_ref else None, interval(*_bounds(at_ref)),
             at_new.mean if at_new else None, interval(*_bounds(at_new)), unit="nats")
    )  # fmt: skip
    b_ref = ref.best_cost.stats if ref.best_cost else None
    b_new = new.best_cost.stats if new.best_cost else None
    out.append(
        _row(depth, COST_AT_OWN_BEST,
             b_ref.mean if b_ref else None, interval(*_bounds(b_ref)),
             b_new.mean if b_new else None, interval(*_bounds(b_new)), unit="nats")
    )  # fmt: skip
    if ref.low_lr and new.low_lr:
        for i, lr in enumerate(ref.low_lr.lrs):
            j = next((k for k, x in enumerate(new.low_lr.lrs) if math.isclose(x, lr)), None)
            if j is None:
                continue
            out.append(
                _row(depth, LOW_LR_EFFECT, ref.low_lr.means[i],
                     interval(ref.low_lr.lower[i], ref.low_lr.upper[i]), new.low_lr.means[j],
                     interval(new.low_lr.lower[j], new.low_lr.upper[j]), unit="nats",
                     about=(lr,))
            )  # fmt: skip
    return out


def _bounds(x) -> tuple[float | None, float | None]:
    """(lower, upper) of an edge or a paired statistic; (None, None) without one or when an
    edge is censored (some seed beyond the grid: its interval is open-ended)."""
    if x is None or getattr(x, "censored", 0):
        return None, None
    return x.lower, x.upper


def ladder_rows(ref: m.Analysis, new: m.Analysis, left_out: tuple[int, ...] = (1,)) -> list[Row]:
    out = []
    t_ref, t_new = ref.h3, new.h3
    if t_ref is not None and t_new is not None and t_ref.at_bound and t_new.at_bound:
        a, b = t_ref.at_bound, t_new.at_bound
        out.append(
            _row(None, H3_SLOPE, a.value, interval(a.lower, a.upper),
                 b.value, interval(b.lower, b.upper), unit="slope")
        )  # fmt: skip
        for rung in left_out:
            x = next((r for r in t_ref.left_out or [] if r.rung == rung), None)
            y = next((r for r in t_new.left_out or [] if r.rung == rung), None)
            if x and y and x.slope and y.slope:
                out.append(
                    _row(None, H3_WITHOUT, x.slope.value,
                         interval(x.slope.lower, x.slope.upper), y.slope.value,
                         interval(y.slope.lower, y.slope.upper), about=(rung,))
                )  # fmt: skip
    if ref.cost_trend and new.cost_trend:  # QK-norm's cost per doubling (trends.cost_trend)
        for name, a in ref.cost_trend.lines.items():
            b = new.cost_trend.lines.get(name)
            if b is not None:
                out.append(
                    _row(None, COST_PER_DOUBLING, a.value, interval(*a.ci90), b.value,
                         interval(*b.ci90), unit="slope", about=(name,))
                )  # fmt: skip
    if ref.logit_growth and new.logit_growth:
        for level, a in sorted(ref.logit_growth.slopes.items(), key=lambda kv: float(kv[0])):
            b = new.logit_growth.slopes.get(level)
            if b is not None:
                out.append(
                    _row(None, LOGIT_CROSSING, a.value, interval(a.lower, a.upper), b.value,
                         interval(b.lower, b.upper), unit="slope", about=(level,))
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
