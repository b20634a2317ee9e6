"""Section 20's head-width page as typed records (docs/STUDY.md section 20; figures/head_width.py
words and draws them): each carry page's two sides, read from its carry.json (T1's bracket as a
multiple of `off`'s best LR, T7's and T8's costs), and the robustness checks the carry rule
judges beside the section:

- the reference trained again (retrained): the rule on the repeat against the reference (a
  measured null), then on each head-width sweep against the repeat;
- each new seed left out (seed_drops): T7's and T8's shift and outcome without it;
- the LR grids (lr_grid): the cost at every LR both sweeps hold, and T7 and T8 against the
  reference grown by another report's runs of its own configuration at the LRs it lacked.

Every decision here is sweeps.study.carry's; this module only chooses what it is applied to and
keeps the answer typed. `record` turns each record into head_width.json's numbers and codes.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sweeps.analysis.carry_page import Page, page_of, plan_for
from sweeps.study import carry as c
from sweeps.study import rules

SECTION = 20


# -- the pages' sides ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """A value with its interval (None where there is none)."""

    value: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class CurvesFrom:
    """Where a reference side's curves were read when it kept none: `runs` of its `of` runs
    trained again in the report `source`."""

    source: str
    runs: int
    of: int


@dataclass(frozen=True)
class Side:
    """One (model width, head width) of the page: a carry page's new side, or its reference."""

    width: int
    head_width: int
    source: str  # the report it was read from
    best_lr: float | None  # `off`'s best LR there (T1's unit)
    threshold: Estimate  # T1: the pooled threshold's bracket as multiples of best_lr
    threshold_kind: str  # T1's kind: "" bracketed, below, none, unjudged
    cost: Estimate  # T7: off - on at `off`'s best LR
    cost_own_best: Estimate  # T8: off - on at each arm's own best LR
    curves_from: CurvesFrom | None = None
    unfinished: dict | None = None  # the new sweep's unfinished counts (still training)


def _finite(x) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _estimate(s: c.Side) -> Estimate:
    lo, hi = s.interval or (None, None)
    return Estimate(_finite(s.value), _finite(lo), _finite(hi))


def read_page(page: Path) -> Page:
    """A head-width carry page (section 20's), typed; ValueError for any other page."""
    doc = json.loads((page / "carry.json").read_text())
    if (doc.get("predictions") or {}).get("section") != SECTION:
        raise ValueError(f"{page}/carry.json is not section 20's (run figures.carry on it)")
    return page_of(doc)


def head_width(runs: pd.DataFrame) -> tuple[int, int]:
    """(model width, head width) of a run table that holds one of each."""
    shapes = {(int(w), int(w) // int(h)) for w, h in zip(runs.n_embd, runs.n_head)}
    if len(shapes) != 1:
        raise ValueError(f"one width and head width expected, found {sorted(shapes)}")
    return shapes.pop()


def side(page: Page, which: str, shape: tuple[int, int], **extra) -> Side:
    """One side ("reference" or "new") of a page as a Side of the given (width, head width)."""
    got = {q.quantity: getattr(q, which) for q in page.quantities}
    t1 = got.get("T1") or c.Side()
    return Side(
        *shape,
        source=page.reference if which == "reference" else page.report,
        best_lr=_finite(t1.part("best_lr")),
        threshold=_estimate(t1),
        threshold_kind=t1.verdict,
        cost=_estimate(got.get("T7") or c.Side()),
        cost_own_best=_estimate(got.get("T8") or c.Side()),
        **extra,
    )


def reference_runs(docs: Path, page: Page, reference: str | None = None) -> pd.DataFrame:
    """A page's reference runs (or `reference`'s, read with the page's row filter): the report's
    run table, only the rows the page compared with (its reference_rows: cpu-width's width
    128)."""
    runs = pd.read_parquet(docs / (reference or page.reference) / "runs.parquet")
    for column, value in page.reference_rows.items():
        runs = runs[runs[column] == value]
    return runs


def reference_shape(page: Page, runs: pd.DataFrame, plan_head_width: int | None) -> tuple[int, int]:
    """The reference side's (width, head width); an older run table has no n_head, and then
    the page's plan names the reference's heads."""
    if "n_head" in runs:
        return head_width(runs)
    return int(runs.n_embd.iloc[0]), int(plan_head_width)


def _canonical(config_json: str) -> str:
    return json.dumps(json.loads(config_json), sort_keys=True)


def same_configs(reference: pd.DataFrame, source: pd.DataFrame) -> set[str]:
    """The run ids of `source` whose whole configuration (arm, seed and LR included) equals a
    run's of `reference`: the same run trained again."""
    wanted = set(reference.config_json.map(_canonical))
    return set(source.run_id[source.config_json.map(_canonical).isin(wanted)])


# -- the reference trained again -----------------------------------------------------------------
@dataclass(frozen=True)
class Retrained:
    """Section 20's rule on one comparison the repeat allows: `new` against `reference`, either
    of which may be the repeat (the report `repeat` holds the reference's runs trained again).
    outcomes: each quantity's; shifts: T7's and T8's new - reference (mean, lower, upper),
    Welch's 90% interval."""

    new: str
    reference: str
    repeat: str
    outcomes: dict[str, str]
    shifts: dict[str, tuple[float, float, float]] = field(default_factory=dict)

    @property
    def new_is_repeat(self) -> bool:
        return self.new == self.repeat

    @property
    def reference_is_repeat(self) -> bool:
        return self.reference == self.repeat


def retrained(pages: list[Path], docs: Path, curves_from: dict) -> list[Retrained]:
    """The robustness check a reference trained again allows (curves_from {REF: SOURCE}, whose
    runs of REF's configurations are REF's runs repeated later, on the machine and code the
    head-width sweeps trained on): section 20's rule applied (1) to the repeat against REF, a
    measured null where every quantity should carry, and (2) to each head-width sweep against
    the repeat instead of REF."""
    out, seen = [], set()
    for folder in pages:
        page = read_page(folder)
        source = curves_from.get(page.reference)
        if source is None:
            continue
        predictions = plan_for(folder).predictions
        ref = reference_runs(docs, page)
        repeat = pd.read_parquet(docs / source / "runs.parquet")
        repeat = repeat[repeat.run_id.isin(same_configs(ref, repeat))]
        pairs = [] if source in seen else [(source, page.reference, ref, repeat)]
        seen.add(source)
        pairs.append((page.report, source, repeat, pd.read_parquet(folder / "runs.parquet")))
        for new, against, a, b in pairs:
            outcomes, shifts = {}, {}
            for x in c.carry(a.to_dict("records"), b.to_dict("records"), None, predictions):
                outcomes[x.quantity] = x.outcome
                if x.quantity in ("T7", "T8") and x.reference.values and x.new.values:
                    s = c.shift(x.reference.values, x.new.values, predictions.study.precision)
                    shifts[x.quantity] = (s.mean, s.lower, s.upper)
            out.append(Retrained(new, against, source, outcomes, shifts))
    return out


# -- each seed left out --------------------------------------------------------------------------
@dataclass(frozen=True)
class SeedDrop:
    """T7's or T8's rule with each of the new sweep's seeds left out in turn: its outcome with
    every seed, how many of the `drops` say the same, and the range of their shifts."""

    report: str
    quantity: str
    outcome: str
    same: int
    drops: int
    shifts: tuple[float, float]


def seed_drops(pages: list[Path]) -> list[SeedDrop]:
    """The other robustness check a 4-seed cost verdict needs, from the per-seed values each
    carry.json holds (Welch's shift against the page's reference)."""
    out = []
    for folder in pages:
        page = read_page(folder)
        floor = plan_for(folder).predictions.study.precision
        for q in page.quantities:
            ref, new = list(q.reference.values), list(q.new.values)
            if q.quantity not in ("T7", "T8") or len(new) <= 3 or len(ref) < 3:
                continue  # left out, fewer than 3 seeds would remain: no interval
            drops = [c.shift(ref, new[:i] + new[i + 1 :], floor) for i in range(len(new))]
            outcomes = [c.decide_shift(d)[0] for d in drops]
            out.append(
                SeedDrop(
                    page.report,
                    q.quantity,
                    q.outcome,
                    sum(o == q.outcome for o in outcomes),
                    len(drops),
                    (min(d.mean for d in drops), max(d.mean for d in drops)),
                )
            )
    return out


# -- the LR grids ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CostAtLR:
    """The cost off - on at one LR both run tables hold: each side's mean over seeds (capped
    losses), the shift new - reference (mean, lower, upper; Welch's 90%) and section 20's
    outcome for it; `best`: the sides whose `off` is best at this LR."""

    lr: float
    reference: float
    new: float
    shift: tuple[float, float, float]
    outcome: str
    best: tuple[str, ...]


@dataclass(frozen=True)
class GrownQuantity:
    """One quantity judged against a grown reference: its outcome; T7 and T8 also the shift
    and the LRs each side read; T9 each side's first harm window (lowest, highest LR)."""

    outcome: str
    shift: tuple[float, float, float] | None = None
    reference_lrs: dict[str, float] | None = None
    new_lrs: dict[str, float] | None = None
    reference_harm: tuple[float, float] | None = None
    new_harm: tuple[float, float] | None = None
    harm_judged: bool = False  # T9: the harm windows are part of the answer


@dataclass(frozen=True)
class LRGrid:
    """The LR-grid check of one page: the cost at each shared LR, and, with a report that grew
    the reference (`grown_by`), every quantity judged against the grown reference."""

    report: str
    reference: str
    costs: tuple[CostAtLR, ...]
    grown_by: str | None = None
    grown: dict[str, GrownQuantity] | None = None


def _without_lr(config_json: str) -> str:
    config = json.loads(config_json)
    config.get("train", {}).pop("lr", None)
    return json.dumps(config, sort_keys=True)


def _holds(lrs: pd.Series, lr: float) -> bool:
    return bool(np.isclose(lrs.to_numpy(float), lr, rtol=1e-9).any())


def grown_reference(reference: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """The reference's runs and `source`'s runs at the LRs the reference lacks. Each added run
    must equal one of the reference's runs in everything but the LR (arm, seed and model
    included), else ValueError: a grown reference is the same experiment at more LRs."""
    extra = source[[not _holds(reference.lr, lr) for lr in source.lr]]
    if extra.empty:
        return reference
    allowed = set(reference.config_json.map(_without_lr))
    foreign = extra[~extra.config_json.map(_without_lr).isin(allowed)]
    if len(foreign):
        raise ValueError(
            f"{len(foreign)} of the runs that would grow the reference differ from its "
            f"configuration beyond the LR (e.g. {foreign.run_id.iloc[0]}); grow a reference "
            "only with its own configuration at other LRs"
        )
    return pd.concat([reference, extra], ignore_index=True)


def costs_by_lr(reference: pd.DataFrame, new: pd.DataFrame, study: rules.Study) -> list[CostAtLR]:
    """Per LR both run tables hold: each side's mean cost and the shift with section 20's
    outcome for it."""
    a = c.cells_of(reference.to_dict("records"))
    b = c.cells_of(new.to_dict("records"))
    off = study.primary_comparison[0]
    best = {"reference": rules.best_lr(a, off), "new": rules.best_lr(b, off)}
    rows = []
    for lr in a.lrs:
        match = [x for x in b.lrs if math.isclose(x, lr, rel_tol=1e-9)]
        if not match:
            continue
        ra, rb = c.seed_costs(a, study, lr, lr), c.seed_costs(b, study, match[0], match[0])
        s = c.shift(ra, rb, study.precision)
        rows.append(
            CostAtLR(
                float(lr),
                float(np.nanmean(ra)) if np.isfinite(ra).any() else math.nan,
                float(np.nanmean(rb)) if np.isfinite(rb).any() else math.nan,
                (s.mean, s.lower, s.upper),
                c.decide_shift(s)[0],
                tuple(k for k, v in best.items() if v is not None and math.isclose(v, lr)),
            )
        )
    return rows


def judged(
    reference: pd.DataFrame, new: pd.DataFrame, predictions: c.Predictions
) -> dict[str, GrownQuantity]:
    """Section 20's rule against this reference, every quantity. T1's, T2's and T5's windows
    are fixed in section 20, so only T7, T8 and T9 can move with the reference's runs."""
    out = {}
    for x in c.carry(reference.to_dict("records"), new.to_dict("records"), None, predictions):
        if x.quantity in ("T7", "T8"):
            s = c.shift(x.reference.values, x.new.values, predictions.study.precision)
            out[x.quantity] = GrownQuantity(
                x.outcome, (s.mean, s.lower, s.upper), dict(x.reference.parts), dict(x.new.parts)
            )
        elif x.quantity == "T9":
            out[x.quantity] = GrownQuantity(
                x.outcome,
                reference_harm=x.reference.interval,
                new_harm=x.new.interval,
                harm_judged=True,
            )
        else:
            out[x.quantity] = GrownQuantity(x.outcome)
    return out


def lr_grids(pages: list[Path], docs: Path, grown_from: dict) -> list[LRGrid]:
    """Per page, the cost at every LR it shares with its reference, and with grown_from
    {REF: REPORT}, every quantity against REF grown by REPORT's runs at the LRs REF lacks."""
    out = []
    for folder in pages:
        page = read_page(folder)
        predictions = plan_for(folder).predictions
        ref = reference_runs(docs, page)
        new = pd.read_parquet(folder / "runs.parquet")
        source = grown_from.get(page.reference)
        grown = None
        if source is not None:
            ref = grown_reference(ref, reference_runs(docs, page, source))
            grown = judged(ref, new, predictions)
        costs = tuple(costs_by_lr(ref, new, predictions.study))
        out.append(LRGrid(page.report, page.reference, costs, source, grown))
    return out


# -- head_width.json -------------------------------------------------------------------------------
def record(x) -> dict:
    """A record of this module as head_width.json keeps it (numbers and codes, no prose)."""
    if isinstance(x, GrownQuantity):
        keep = {"outcome": x.outcome}
        if x.shift is not None:
            keep |= {"shift": x.shift, "reference_lrs": x.reference_lrs, "new_lrs": x.new_lrs}
        if x.harm_judged:
            keep |= {"reference_harm": x.reference_harm, "new_harm": x.new_harm}
        return keep
    if isinstance(x, LRGrid):
        out = {"report": x.report, "reference": x.reference, "costs": [record(r) for r in x.costs]}
        if x.grown_by is not None:
            judged_ = {q: record(j) for q, j in (x.grown or {}).items()}
            out["grown"] = {"source": x.grown_by, "judged": judged_}
        return out
    if isinstance(x, CostAtLR):
        return {**asdict(x), "best": list(x.best)}
    return asdict(x)


def side_record(s: Side) -> dict:
    """A Side as head_width.json's row keeps it (the mechanism's numbers are added beside)."""
    return {
        "width": s.width,
        "head_width": s.head_width,
        "source": s.source,
        "best_lr": s.best_lr,
        "T1": s.threshold.value,
        "T1_lo": s.threshold.lo,
        "T1_hi": s.threshold.hi,
        "T1_kind": s.threshold_kind,
        "T7": s.cost.value,
        "T7_lo": s.cost.lo,
        "T7_hi": s.cost.hi,
        "T8": s.cost_own_best.value,
        "T8_lo": s.cost_own_best.lo,
        "T8_hi": s.cost_own_best.hi,
        "curves_from": None if s.curves_from is None else asdict(s.curves_from),
        "unfinished": s.unfinished,
    }
