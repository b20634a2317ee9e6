"""Whether section 20's cost verdicts rest on the LR grids (docs/STUDY.md section 20, T7 and T8;
an analysis beside the section, not a rule of it). A head-width sweep and its reference need not
hold the same LRs: cpu-width's width-128 rung was trained on half decades and refined, while
cpu-width128-head64 runs quarter decades, so `off`'s best LR can land where the reference never
trained, and T7 then compares costs at different LRs. Two reads answer it:

- the cost, off - on per seed, at every LR both sweeps hold, with section 20's shift (Welch's
  90% interval) at each: whether the cost moved at a fixed LR;
- section 20's carry rule again with the reference grown by another report's runs at the LRs it
  lacks (figures/head_width.py --grown REF=REPORT), each of which must be the reference's own
  configuration at another LR (grown_reference checks it).

figures/head_width.py reads the reports and writes this section of the head-width page.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from sweeps.study import carry as c
from sweeps.study import rules


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


def costs_by_lr(reference: pd.DataFrame, new: pd.DataFrame, study: rules.Study) -> list[dict]:
    """Per LR both run tables hold: each side's mean cost off - on (capped losses, per seed),
    and the shift new - reference with Welch's 90% interval and section 20's outcome for it;
    `best` marks the sides whose `off` is best at that LR."""
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
            {
                "lr": float(lr),
                "reference": float(np.nanmean(ra)) if np.isfinite(ra).any() else math.nan,
                "new": float(np.nanmean(rb)) if np.isfinite(rb).any() else math.nan,
                "shift": (s.mean, s.lower, s.upper),
                "outcome": c.decide_shift(s)[0],
                "best": [k for k, v in best.items() if v is not None and math.isclose(v, lr)],
            }
        )
    return rows


def judged(
    reference: pd.DataFrame, new: pd.DataFrame, predictions: c.Predictions
) -> dict[str, dict]:
    """Section 20's rule against this reference, every quantity: its outcome; for T7 and T8
    also the shift (mean, 90% interval) and the LRs each side read, for T9 each side's harm
    window (its number of LRs and the first). T1's, T2's and T5's windows are fixed in section
    20, so only T7, T8 and T9 can move with the reference's runs."""
    out = {}
    for x in c.carry(reference.to_dict("records"), new.to_dict("records"), None, predictions):
        row: dict = {"outcome": x.outcome}
        if x.quantity in ("T7", "T8"):
            s = c.shift(x.reference.values, x.new.values, predictions.study.precision)
            row |= {
                "shift": (s.mean, s.lower, s.upper),
                "reference_lrs": dict(x.reference.parts),
                "new_lrs": dict(x.new.parts),
            }
        if x.quantity == "T9":
            row |= {"reference_harm": x.reference.interval, "new_harm": x.new.interval}
        out[x.quantity] = row
    return out


def number(x: float | None, fmt: str = "+.3f") -> str:
    """A number for the page's tables; n/a where there is none."""
    return "n/a" if x is None or not math.isfinite(x) else format(x, fmt)


def shift_text(m) -> str:
    """A shift (mean, lower, upper) as the page writes it: +0.123 [+0.045, +0.201]."""
    return f"{number(m[0])} [{number(m[1])}, {number(m[2])}]"


def _lrs(parts: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in parts.items())


def _harm(window) -> str:
    """A harm window as carry.t9_side keeps it: its first (lowest LR, highest LR), or None."""
    return "none" if not window else f"LRs {window[0]:g} to {window[1]:g}"


def _detail(j: dict) -> str:
    if "shift" in j:
        return (
            f", shift {shift_text(j['shift'])} (reference: {_lrs(j['reference_lrs'])}; new: "
            f"{_lrs(j['new_lrs'])})"
        )
    if "reference_harm" in j:
        return f" (harm window: reference {_harm(j['reference_harm'])}, new {_harm(j['new_harm'])})"
    return ""


def render(rows: list[dict]) -> str:
    """The page's grid section: per head-width sweep, the cost at each LR both grids hold, and
    T7/T8 against a grown reference where there is one. Empty without rows."""
    if not rows:
        return ""
    lines = [
        "",
        "## Robustness: the LR grids",
        "",
        "T7 reads QK-norm's cost at each sweep's own `off`'s best LR, so where the two grids "
        "differ it compares costs at different LRs. Here the cost off - on at every LR both "
        "sweeps hold (means over seeds, capped losses; `*`: that side's `off` is best there; "
        "shift: new - reference, Welch's 90% interval, up: QK-norm costs less at the new "
        "head width), and T7 and T8 again where a report grows the reference by its own "
        "configuration at LRs it lacked (an analysis, not a rule of section 20). The "
        "outcome at one LR is not a verdict: the rule says 'differs' about 9% of the time "
        "when nothing moved (section 20), so across a page's 7-8 LRs about one false "
        "'differs' is expected.",
    ]
    for r in rows:
        lines += [
            "",
            f"### {r['report']} against {r['reference']}",
            "",
            "| LR | reference: off - on | new: off - on | shift | outcome |",
            "|---|---|---|---|---|",
        ]
        for x in r["costs"]:
            star = {k: "*" if k in x["best"] else "" for k in ("reference", "new")}
            lines.append(
                f"| {x['lr']:g} | {number(x['reference'])}{star['reference']} "
                f"| {number(x['new'])}{star['new']} | {shift_text(x['shift'])} | {x['outcome']} |"
            )
        grown = r.get("grown")
        if grown:
            lines += ["", f"With {r['reference']} grown by {grown['source']}:", ""]
            for q, j in grown["judged"].items():
                lines.append(f"- {q}: {j['outcome']}{_detail(j)}")
    return "\n".join(lines) + "\n"
