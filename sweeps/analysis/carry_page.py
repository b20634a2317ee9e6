"""A carry page's numbers (docs/STUDY.md sections 16, 20, 21 and 24): which pre-registered
predictions judge a report against which reference (Plan, PLANS), the runs each side pools,
each quantity judged on both sides by sweeps/study/carry.py, and the shift the cost rule read,
as carry.json holds them: numbers and reason codes, no prose. figures/carry.py words them.

The page records the predictions that judged it (`predictions`: their section, windows,
levels and study settings), so the page reads back without knowing which plan made it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from sweeps.analysis import caveats
from sweeps.analysis.adapter import from_json
from sweeps.core.files import clean_json
from sweeps.study import carry as c
from sweeps.study import rules
from sweeps.study.protocol import live_stamp

REFERENCE, CONTROL = Path("docs/cpu"), Path("docs/cpu-control")


@dataclass(frozen=True)
class Plan:
    """Which predictions judge a report, against which reference (and, for a ladder's report,
    which of its rungs: rows with these values)."""

    predictions: c.Predictions
    reference: Path = REFERENCE
    control: Path | None = CONTROL
    reference_rows: tuple[tuple[str, int], ...] = ()
    reference_head_width: int | None = None  # section 20: the reference's heads (16)
    # section 24: more runs pooled into each side, seeds kept apart (report folders; the
    # reference's read with reference_rows)
    more_reference: tuple[Path, ...] = ()
    more_new: tuple[Path, ...] = ()


SECTION_16 = Plan(c.SECTION_16)
PLANS = {
    "cpu-head32": Plan(c.SECTION_20_WIDTH_64, control=None, reference_head_width=16),
    "cpu-head64": Plan(c.SECTION_20_WIDTH_64, control=None, reference_head_width=16),
    "cpu-width128-head64": Plan(
        c.SECTION_20_WIDTH_128, Path("docs/cpu-width"), None, (("n_embd", 128),), 16
    ),
    # section 21: each bfloat16 rung against the same rung of the float32 ladder
    "cpu-bf16-depth2": Plan(
        c.SECTION_21_DEPTH_2, Path("docs/cpu-depth-matched"), None, (("n_layer", 2),)
    ),
    "cpu-bf16-depth4": Plan(
        c.SECTION_21_DEPTH_4, Path("docs/cpu-depth-matched"), None, (("n_layer", 4),)
    ),
    # section 24: depth 2 on eight seeds, seeds 4-7's float32 side from the confirmatory ladder
    "cpu-bf16-depth2-s4": Plan(
        c.SECTION_24,
        Path("docs/cpu-depth-matched"),
        None,
        (("n_layer", 2),),
        more_reference=(Path("docs/cpu-depth-2-12"),),
        more_new=(Path("docs/cpu-bf16-depth2"),),
    ),
}


def plan_for(report: Path) -> Plan:
    """The plan a report folder's name picks: PLANS, else section 16's against docs/cpu."""
    return PLANS.get(Path(report).name, SECTION_16)


# -- the predictions as the page records them ------------------------------------------------
def predictions_record(p: c.Predictions) -> dict:
    return {
        "section": p.section,
        "quantities": list(p.quantities),
        "t1_window": list(p.t1_window),
        "t5_window": list(p.t5_window),
        "base_lrs": list(p.base_lrs),
        "study": p.study.to_dict(),
        "gap_lr": p.gap_lr,
        "paired": p.paired,
        "negligible": p.negligible,
        "edge_window": p.edge_window,
        "cost_confidence": p.cost_confidence,
    }


def predictions_of(d: dict) -> c.Predictions:
    """The predictions a page recorded (predictions_record), read back."""
    negligible = d.get("negligible")
    return c.Predictions(
        section=int(d["section"]),
        quantities=tuple(d["quantities"]),
        t1_window=tuple(d["t1_window"]),
        t5_window=tuple(d["t5_window"]),
        base_lrs=tuple(d["base_lrs"]),
        study=rules.Study.from_dict(d["study"], list(d["base_lrs"])),
        gap_lr=d["gap_lr"],
        paired=bool(d["paired"]),
        negligible=math.nan if negligible is None else negligible,
        edge_window=d["edge_window"],
        cost_confidence=d["cost_confidence"],
    )


# -- one quantity --------------------------------------------------------------------------------
def side_record(s: c.Side) -> dict:
    d = asdict(s)
    d["parts"] = dict(s.parts)
    return d


def side_of(d: dict) -> c.Side:
    parts = tuple((k, math.nan if v is None else v) for k, v in (d.get("parts") or {}).items())
    iv = d.get("interval")
    return c.Side(
        value=math.nan if d.get("value") is None else d["value"],
        interval=None if iv is None else tuple(math.inf if x is None else x for x in iv),
        verdict=d.get("verdict", ""),
        per_seed=tuple(d.get("per_seed", ())),
        parts=parts,
        values=tuple(d.get("values", ())),
        seeds=tuple(d.get("seeds", ())),
    )


def shift_record(x: c.Carry, p: c.Predictions) -> dict | None:
    """T7, T8: the shift new - reference the cost rule read (paired by seed, or Welch's), with
    its interval and, paired, the pairs' sd; None for any other quantity or a side without
    values."""
    if x.quantity not in ("T7", "T8") or not x.reference.values or not x.new.values:
        return None
    if p.paired:
        s = c.paired_shift(x.reference, x.new, p.study.precision, p.cost_confidence)
        return {"paired": True, **asdict(s), "pair_sd": c.pair_sd(x.reference, x.new)}
    return {"paired": False, **asdict(c.shift(x.reference.values, x.new.values, p.study.precision))}


def record(x: c.Carry, p: c.Predictions) -> dict:
    shift = shift_record(x, p)
    return {
        "quantity": x.quantity,
        "reference": side_record(x.reference),
        "new": side_record(x.new),
        "outcome": x.outcome,
        "reason": x.reason,
        **({"shift": shift} if shift else {}),
    }


# -- the page ----------------------------------------------------------------------------------
def pooled(tables: list[list[dict]]) -> list[dict]:
    """The runs of several report folders as one side (section 24), refused when two hold the
    same run (arm, LR, seed and depth): a seed is paired once."""
    rows = [r for t in tables for r in t]
    keys = [(r["arm"], r["lr"], r["seed"], r.get("n_layer")) for r in rows]
    if len(keys) != len(set(keys)):
        raise ValueError("two of the pooled reports hold the same run (arm, LR, seed, depth)")
    return rows


def _runs(folder: Path, where=()) -> list[dict]:
    import pandas as pd

    table = pd.read_parquet(Path(folder) / "runs.parquet")
    for column, value in where:
        table = table[table[column] == value]
    return table.to_dict("records")


def _unfinished(folder: Path) -> dict | None:
    """The report's unfinished runs while its sweep trains (caveats.unfinished); None when it
    has none, or is a runs.parquet without an analysis.json."""
    import json

    path = Path(folder) / "analysis.json"
    if not path.exists():
        return None
    analysis = from_json(json.loads(path.read_text()))
    counts = caveats.unfinished(analysis)
    return {**counts, "sweep": analysis.sweep} if counts else None


def build(
    report: Path, reference: Path | None = None, control: Path | None = None, plan=None
) -> dict:
    """carry.json's document for a report folder (runs.parquet, and analysis.json where the
    report has one), stamped with the live rules."""
    plan = plan or plan_for(report)
    reference = reference or plan.reference
    control = control if control is not None else plan.control
    p = plan.predictions
    warm = _runs(control) if control is not None and "T6" in p.quantities else None
    reference_runs = pooled(
        [_runs(folder, plan.reference_rows) for folder in (reference, *plan.more_reference)]
    )
    report_runs = pooled([_runs(folder) for folder in (report, *plan.more_new)])
    judged = c.carry(reference_runs, report_runs, warm, p)
    shifts = (
        c.loss_shifts(c.cells_of(reference_runs), c.cells_of(report_runs), p.study.precision)
        if p.paired
        else ()
    )
    more = plan.more_reference or plan.more_new
    return clean_json(
        {
            "report": Path(report).name,
            "reference": Path(reference).name,
            "unfinished": _unfinished(report),
            "reference_rows": dict(plan.reference_rows),
            **(
                {
                    "pooled": {
                        "reference": [f.name for f in plan.more_reference],
                        "new": [f.name for f in plan.more_new],
                    }
                }
                if more
                else {}
            ),
            **(
                {"reference_head_width": plan.reference_head_width}
                if plan.reference_head_width
                else {}
            ),
            "control": Path(control).name if warm is not None else None,
            "predictions": predictions_record(p),
            **live_stamp(),
            "quantities": [record(x, p) for x in judged],
            **({"loss_shifts": [asdict(x) for x in shifts]} if shifts else {}),
        }
    )


# -- the page read back, typed (figures/carry.py words it) --------------------------------------
@dataclass(frozen=True)
class CostShift:
    """T7, T8: the shift new - reference the cost rule read (shift_record)."""

    paired: bool
    mean: float
    lower: float  # NaN: no interval (too few seeds)
    upper: float
    pair_sd: float = math.nan  # paired: the sd of the per-seed differences


@dataclass(frozen=True)
class Judged:
    """One quantity of the page: both sides, the outcome and its reason code, and (T7, T8)
    the shift its rule read."""

    quantity: str
    reference: c.Side
    new: c.Side
    outcome: str
    reason: str
    shift: CostShift | None = None


@dataclass(frozen=True)
class Page:
    """carry.json read back: what was judged against what, by which predictions and rules."""

    report: str
    reference: str
    reference_rows: dict[str, int]
    control: str | None
    predictions: c.Predictions
    quantities: tuple[Judged, ...]
    loss_shifts: tuple[c.LossShift, ...]
    unfinished: dict | None  # caveats.unfinished's counts with the sweep's name
    pooled_reference: tuple[str, ...] = ()  # section 24: the reports pooled into each side
    pooled_new: tuple[str, ...] = ()


def _number(x) -> float:
    return math.nan if x is None else float(x)


def page_of(doc: dict) -> Page:
    """A carry.json document (build's) as a typed Page."""

    def judged(q: dict) -> Judged:
        shift = q.get("shift")
        return Judged(
            quantity=q["quantity"],
            reference=side_of(q["reference"]),
            new=side_of(q["new"]),
            outcome=q["outcome"],
            reason=q["reason"],
            shift=None
            if shift is None
            else CostShift(
                bool(shift["paired"]),
                _number(shift["mean"]),
                _number(shift["lower"]),
                _number(shift["upper"]),
                _number(shift.get("pair_sd")),
            ),
        )

    pooled = doc.get("pooled") or {}
    return Page(
        report=doc["report"],
        reference=doc["reference"],
        reference_rows=dict(doc.get("reference_rows") or {}),
        control=doc.get("control"),
        predictions=predictions_of(doc["predictions"]),
        quantities=tuple(judged(q) for q in doc["quantities"]),
        loss_shifts=tuple(
            c.LossShift(
                x["arm"],
                x["lr"],
                x["n"],
                _number(x["mean"]),
                _number(x["lower"]),
                _number(x["upper"]),
            )
            for x in doc.get("loss_shifts", ())
        ),
        unfinished=doc.get("unfinished"),
        pooled_reference=tuple(pooled.get("reference", ())),
        pooled_new=tuple(pooled.get("new", ())),
    )
