"""One run's place in the study's statistics, and one rung's table of them (docs/STUDY.md
section 3): each run's outcome class, its capped loss, whether it failed under the named
definitions, the baseline its summary recorded; and the (arm, LR, seed) arrays every rule of
sweeps/study/rules.py reads, built once for the runner's refinement and the report alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from sweeps.run.outcomes import FAILED, OUTCOMES

# A run fails at its LR under three named definitions (docs/STUDY.md section 3), each wider
# than the one before: it stopped (diverged); it diverged or finished worse than its data's
# baseline (stuck); it diverged or finished worse than its seed's best LR by delta (degraded).
DIVERGED, STUCK, DEGRADED = "diverged", "stuck", "degraded"
FAILURE_DEFINITIONS = (DIVERGED, STUCK, DEGRADED)
PRIMARY_FAILURE = STUCK  # the definition H2a, the ceiling and the failure model decide on


# -- one run -----------------------------------------------------------------------------------
def outcome_class(status) -> str | None:
    """ok | unstable | diverged for a finished run; None when failed, unfinished or corrupt
    (not in any statistic)."""
    return status if status in OUTCOMES else None


def fails(status) -> bool:
    """The runner's record: the run ended diverged or unstable (sweeps/run/outcomes.py). The
    statistics use the named failure definitions (is_stuck, critical_lrs) instead."""
    return status in FAILED


def effective_loss(status, init_loss, final_val_loss) -> float:
    """A finished run's outcome as the statistics count it (docs/STUDY.md section 3, as
    Wortsman et al. count it): its final val loss capped at its loss at initialization,
    min(final, L0); only a run that stopped (diverged, or a final loss that is not finite)
    takes L0. NaN for unfinished or failed-process runs and a missing loss at init."""
    if status not in OUTCOMES or not _finite(init_loss):
        return math.nan
    if status == DIVERGED or not _finite(final_val_loss):
        return float(init_loss)
    return float(min(final_val_loss, init_loss))


def is_stuck(status, final_val_loss, baseline) -> bool:
    """Failed under the `stuck` definition: diverged, or finished worse than the data's
    baseline (bigram for the study specs; None: the run's config has no baseline rule)."""
    if status == DIVERGED or not _finite(final_val_loss):
        return True
    return _finite(baseline) and final_val_loss > baseline


def recorded_baseline(rule: str | None, recorded: Mapping) -> float | None:
    """The loss of a run's baseline rule (train.baseline: bigram, unigram or none) as its
    summary recorded it (summary.json's `bigram_loss`, `unigram_loss`): the `stuck`
    definition's line. The one reader of it, for the report and the runner's refinement alike:
    a runner that missed it would bisect divergence brackets instead of the study's."""
    if not rule or rule == "none":
        return None
    value = recorded.get(f"{rule}_loss")
    return float(value) if _finite(value) else None


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# -- one depth's table -------------------------------------------------------------------------
@dataclass(frozen=True)
class Cells:
    """One depth's finished runs as arrays [arm, LR, seed]: capped loss (NaN: no finished
    run), failing under the primary definition (stuck), diverged, and run id (None: no
    finished run)."""

    arms: tuple[str, ...]
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    loss: np.ndarray
    failing: np.ndarray
    run_ids: np.ndarray = field(repr=False)
    diverged: np.ndarray | None = field(default=None, repr=False)  # None: none diverged
    # final loss minus the run's baseline (the stuck cut); NaN: no baseline rule, or stopped
    cut_gap: np.ndarray | None = field(default=None, repr=False)

    def arm(self, name: str) -> int:
        return self.arms.index(name)

    def has(self, name: str) -> bool:
        return name in self.arms

    def finished(self) -> np.ndarray:
        return np.isfinite(self.loss)


def build_cells(rows: Iterable[dict], rung: str = "n_layer") -> dict[int, Cells]:
    """The one builder of the study's table: rows (run_id, n_layer or the ladder's other
    field, arm, lr, seed, status, init_loss, final_val_loss, baseline_loss: the run's baseline
    rule's loss or None) -> per rung (the value of the field `rung`: the depth, or the width
    of a width ladder), the (arm, LR, seed) arrays of finished runs."""
    by_rung: dict[int, dict] = {}
    for r in rows:
        status, final = r.get("status"), r.get("final_val_loss")
        loss = effective_loss(status, r.get("init_loss"), final)
        if not math.isfinite(loss):
            continue
        key = (str(r["arm"]), float(r["lr"]), int(r["seed"]))
        by_rung.setdefault(int(r[rung]), {})[key] = (
            loss,
            is_stuck(status, final, r.get("baseline_loss")),
            status == DIVERGED,
            r.get("run_id"),
            _cut_gap(status, final, r.get("baseline_loss")),
        )
    return {value: _cells(found) for value, found in sorted(by_rung.items())}


def _cells(found: dict) -> Cells:
    arms = tuple(dict.fromkeys(a for a, _, _ in found))
    lrs = tuple(sorted({lr for _, lr, _ in found}))
    seeds = tuple(sorted({s for _, _, s in found}))
    shape = (len(arms), len(lrs), len(seeds))
    loss, failing, diverged = np.full(shape, np.nan), np.zeros(shape, bool), np.zeros(shape, bool)
    run_ids, gap = np.full(shape, None, dtype=object), np.full(shape, np.nan)
    for (a, lr, s), (value, stuck, stopped, rid, to_cut) in found.items():
        i = (arms.index(a), lrs.index(lr), seeds.index(s))
        loss[i], failing[i], diverged[i], run_ids[i], gap[i] = value, stuck, stopped, rid, to_cut
    return Cells(arms, lrs, seeds, loss, failing, run_ids, diverged, gap)


def _cut_gap(status, final, baseline) -> float:
    if status == DIVERGED or not (_finite(final) and _finite(baseline)):
        return math.nan
    return float(final) - float(baseline)


# -- borderline fates (docs/STUDY.md section 13) -----------------------------------------------
def borderline(cells: Cells, margin: float) -> np.ndarray:
    """[arm, LR, seed]: a finished run whose final loss lies within `margin` of its stuck cut
    (the data's baseline): its fate is within measurement precision, so every verdict it could
    flip is shown both ways."""
    if cells.cut_gap is None:
        return np.zeros(cells.loss.shape, bool)
    with np.errstate(invalid="ignore"):
        return np.abs(cells.cut_gap) <= margin


def both_ways(cells: Cells, margin: float, judge_one):
    """judge_one on the table read both ways (docs/STUDY.md section 13): every borderline run
    stuck, then every one trained; None where no finished run is borderline (both readings are
    the table as recorded). The one place a verdict meets its borderline runs: a decision the
    two readings disagree on is left to the borderline runs, not decided."""
    if not (borderline(cells, margin) & cells.finished()).any():
        return None
    return tuple(judge_one(with_borderline_as(cells, margin, f)) for f in (True, False))


def plateau_cut(failing, cut_gap, above, margin: float):
    """(failing, cut_gap) with the stuck cut moved `margin` nats down where `above` holds (the
    LRs above the reference arm's best, docs/STUDY.md section 23): a run that finished less than
    `margin` under its cut there sits on a plateau just past a bigram model, barely trained, and
    counts as stuck; borderline fates are then read against the moved cut. Arrays broadcast
    together; a stopped run (gap NaN) is unchanged."""
    failing = np.asarray(failing, bool)
    if margin <= 0:
        return failing, cut_gap
    moved = np.where(np.asarray(above, bool), np.asarray(cut_gap, float) + margin, cut_gap)
    with np.errstate(invalid="ignore"):
        return failing | (moved > 0), moved


def with_borderline_as(cells: Cells, margin: float, failed: bool) -> Cells:
    """The same table with every borderline run's fate set: all stuck (failed=True) or all
    trained; their losses unchanged."""
    flip = borderline(cells, margin)
    if not flip.any():
        return cells
    return replace(cells, failing=np.where(flip, failed, cells.failing))
