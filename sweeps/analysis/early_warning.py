"""Whether an early diagnostic tells the runs that will fail from those that will not: per
rung and arm, the AUC of the max attention logit and the max output logit at 10% of the run
(docs/STUDY.md section 4, descriptive: it decides nothing)."""

from __future__ import annotations

import pandas as pd

from sweeps.analysis.run_table import optional_float
from sweeps.study import rules
from sweeps.study.stats import EARLY_FRACTION, auc_interval

# the diagnostics (sweeps/core/diagnostics.py) whose early value may predict a failure
EARLY_PREDICTORS = ("max_attn_logit", "logit_max")


def table(runs: pd.DataFrame, curves: pd.DataFrame, rung: str = "n_layer") -> dict:
    """Per rung (rung: the ladder's field) and arm, for each early predictor: does its value
    at the early step (the first evaluation at or after 10% of the run) tell the runs that
    fail (stuck, the primary definition) from those that do not? AUC with its 90% bootstrap
    interval (docs/STUDY.md 4, descriptive: it decides nothing)."""
    finished = runs[runs.outcome.notna()].copy()
    finished["fails"] = [
        rules.is_stuck(st, optional_float(f), b)
        for st, f, b in zip(finished.status, finished.final_val_loss, finished.baseline_loss)
    ]
    early = _early_rows(curves, finished)
    if early.empty:  # no curves (a report rebuilt from a runs table): nothing to say
        return {}
    out: dict = {}
    for (depth, arm), part in finished.groupby([rung, "arm"]):
        entry = {}
        for column in EARLY_PREDICTORS:
            values = early.get(column, pd.Series(dtype=float))
            x = part.run_id.map(values)
            use = x.notna()
            fail, ok = x[use & part.fails], x[use & ~part.fails]
            value, lo, hi = auc_interval(fail.to_numpy(float), ok.to_numpy(float))
            entry[column] = {
                "auc": optional_float(value),
                "ci90": [optional_float(lo), optional_float(hi)],
                "n_fail": int(len(fail)),
                "n_ok": int(len(ok)),
                "step_fraction": optional_float(
                    early.get("fraction", pd.Series(dtype=float)).reindex(part.run_id[use]).median()
                ),
            }
        out.setdefault(str(int(depth)), {})[str(arm)] = entry
    return out


def _early_rows(curves: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per run: the early predictors at its first evaluation with diagnostics at or after
    EARLY_FRACTION of its steps, and that step as a fraction of the run."""
    if curves.empty or "max_attn_logit" not in curves:
        return pd.DataFrame(columns=[*EARLY_PREDICTORS, "fraction"])
    steps = pd.to_numeric(runs.set_index("run_id").max_steps, errors="coerce")
    c = curves.dropna(subset=["max_attn_logit"]).copy()
    if c.empty:  # no run's curves carry a diagnostic (pandas 3 would divide by a str column)
        return pd.DataFrame(columns=[*EARLY_PREDICTORS, "fraction"])
    c["fraction"] = c.step / pd.to_numeric(c.run_id.map(steps), errors="coerce")
    c = c[c.fraction >= EARLY_FRACTION - 1e-9].sort_values(["run_id", "step"])
    return c.groupby("run_id").first().reindex(columns=[*EARLY_PREDICTORS, "fraction"])


def without_early_value(analysis, rung: str, arm: str, counted: int) -> tuple[int, bool]:
    """How many of the arm's finished runs at this rung (its name: a depth or a width) the
    early-warning table could not count (`counted`: its failing and other runs), and whether
    the arm has at least that many diverged runs there: then they are runs that stopped before
    their first evaluation at EARLY_FRACTION of the run, with no early value (a run that
    diverged that early is the plainest failure, and is named, not dropped)."""
    field = analysis.settings.ladder.field
    finished = diverged = 0
    for r in analysis.runs:
        at = getattr(r, field, None)
        if r.outcome and r.arm == arm and at is not None and str(int(at)) == str(rung):
            finished += 1
            diverged += r.outcome == "diverged"
    unseen = max(0, finished - counted)
    return unseen, 0 < unseen <= diverged
