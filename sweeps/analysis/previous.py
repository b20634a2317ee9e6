"""What an earlier analysis.json decided, typed: the analysis a re-judged report had under the
rules before the current ones (v4's, schema 4 or 5; or a pre-v4 one, without a schema), read
once here so the report's "Re-judged" section (figures/report/rejudged.py) renders records,
not an old file's keys. Only what that section compares is read: each hypothesis's verdict,
each comparison's threshold, each arm's median critical LR and mean LR sensitivity, and each
intervention verdict."""

from __future__ import annotations

from dataclasses import dataclass

from sweeps.analysis.model import GridPoint


@dataclass(frozen=True)
class Threshold:
    """A comparison's threshold as the earlier rules wrote it, with its 90% interval (lower
    None: at or below the bottom of the grid) where they gave one."""

    point: GridPoint | None
    ci90: tuple[float | None, float | None]


@dataclass(frozen=True)
class Arm:
    critical_lr: GridPoint | None  # the median over seeds
    sensitivity: float | None  # the mean over seeds


@dataclass(frozen=True)
class Previous:
    """rules: "v4" or "v3"; rungs keyed as analysis.json keys them."""

    rules: str
    study_sha256: str
    verdicts: dict[str, str]  # hypothesis -> verdict
    thresholds: dict[str, dict[str, Threshold]]  # rung -> comparison key -> threshold
    arms: dict[str, dict[str, Arm]]  # rung -> arm -> its critical LR and sensitivity
    interventions: dict[str, dict[str, dict[str, str]]]  # rung -> arm -> hypothesis -> verdict


def is_v4(doc: dict) -> bool:
    """An analysis.json v4 wrote (schema 4 or 5), not a pre-v4 one (no schema)."""
    return doc.get("schema") in (4, 5)


def previous_of(doc: dict) -> Previous:
    """The earlier analysis.json (as its rules wrote it) as a Previous."""
    v4 = is_v4(doc)
    said = (doc.get("decided") if v4 else doc.get("verdicts")) or {}
    depths = doc.get("depths") or {}
    interventions = doc.get("interventions") or (doc.get("decisions") or {}).get("interventions")
    return Previous(
        rules="v4" if v4 else "v3",
        study_sha256=str(doc.get("study_sha256", "")),
        verdicts={h: v["verdict"] for h, v in said.items() if (v or {}).get("verdict")},
        thresholds={
            rung: {k: _threshold(c) for k, c in (d.get("comparisons") or {}).items()}
            for rung, d in depths.items()
        },
        arms={
            rung: {
                arm: Arm(_grid(a["eta_crit"]["median"]), a["sensitivity"].get("mean"))
                for arm, a in (d.get("arms") or {}).items()
            }
            for rung, d in depths.items()
        },
        interventions={
            rung: {
                arm: {h: v.get("verdict", "-") for h, v in hs.items()} for arm, hs in arms.items()
            }
            for rung, arms in (interventions or {}).items()
        },
    )


def _grid(value: dict | None) -> GridPoint | None:
    """An earlier analysis's grid value (its value and kind; a bracket and whether the value
    was interpolated where it wrote them)."""
    if not value:
        return None
    return GridPoint(
        value.get("value"),
        value.get("kind", ""),
        value.get("bracket"),
        value.get("interpolated", True),
    )


def _threshold(c: dict) -> Threshold:
    lo, hi = c.get("threshold_ci90") or [None, None]
    return Threshold(_grid(c.get("threshold") or {}) if c.get("threshold") else None, (lo, hi))
