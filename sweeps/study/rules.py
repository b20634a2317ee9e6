"""The study's rules applied to a sweep's runs, in one place for the runner (refinement) and
the report (figures/): the pre-registration as a `Study`, each run's outcome class and
effective loss, the (arm, LR, seed) table of one depth, paired differences with their common
ceiling and noise floor, the necessity rule with a leave-one-run-out check, the critical LRs,
the brackets refinement bisects, and the paired verdict rules of H2a and H2b
(docs/STUDY.md sections 4-6).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from sweeps.run.outcomes import FAILED, OUTCOMES
from sweeps.study.stats import (
    NONE,
    GridValue,
    Necessity,
    Paired,
    critical_lr,
    necessity,
    paired,
    quantization_sd,
    sensitivity,
)

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not supported", "inconclusive"
MIN_SEEDS = 3  # every rule needs 3 paired seeds (docs/STUDY.md section 2)
STUDY_SEEDS = 4  # the seed count the study's rules are proven for (docs/STUDY.md section 7)
# Below this many training tokens per parameter a run's "failure" may be only a run that has not
# yet learned (not yet below the bigram baseline): the plan and the report warn (STUDY.md 3).
MIN_TOKENS_PER_PARAM = 5.0
RESOLUTION_SLACK = 1.01


class Comparison(NamedTuple):
    """A paired comparison, baseline minus treatment; "a vs b" is only its display key."""

    baseline: str
    treatment: str

    @property
    def key(self) -> str:
        return f"{self.baseline} vs {self.treatment}"


@dataclass(frozen=True)
class Study:
    """[study] of a spec (docs/STUDY.md section 6), as the runner and the report use it."""

    delta: float
    sensitivity_range: tuple[float, float]
    target_loss: float | None
    reference: str = "off"
    primary: str = "on"
    start_control: str | None = None
    comparisons: tuple[Comparison, ...] = ()
    min_effect: float = 0.02
    negligible: float = 0.05
    min_sensitivity: float = 0.05

    @property
    def primary_comparison(self) -> Comparison:
        return Comparison(self.reference, self.primary)

    @property
    def control_comparison(self) -> Comparison | None:
        return Comparison(self.start_control, self.primary) if self.start_control else None

    def all_comparisons(self) -> list[Comparison]:
        """The primary comparison first, then the start control's, then the listed ones."""
        out = [self.primary_comparison]
        if self.start_control:
            out.append(self.control_comparison)
        return list(dict.fromkeys(out + [Comparison(*c) for c in self.comparisons]))

    def to_dict(self) -> dict:
        return {
            "reference": self.reference,
            "primary": self.primary,
            "start_control": self.start_control,
            "comparisons": [list(c) for c in self.comparisons],
            "delta": self.delta,
            "sensitivity_range": list(self.sensitivity_range),
            "min_effect": self.min_effect,
            "negligible": self.negligible,
            "min_sensitivity": self.min_sensitivity,
            "target_loss": self.target_loss,
        }

    @classmethod
    def from_dict(cls, raw: dict | None, lrs: list[float]) -> Study:
        """The study a plan recorded (spec.to_dict), defaults for what it lacks: an old plan,
        or none (then sensitivity over the whole grid, delta 0.1)."""
        raw = {k: v for k, v in (raw or {}).items() if v is not None}
        known = {f for f in cls.__dataclass_fields__}
        raw = {k: v for k, v in raw.items() if k in known}
        raw.setdefault("delta", 0.1)
        raw.setdefault("sensitivity_range", [min(lrs), max(lrs)] if lrs else [0.0, 0.0])
        raw.setdefault("target_loss", None)
        raw["sensitivity_range"] = tuple(raw["sensitivity_range"])
        raw["comparisons"] = tuple(Comparison(*c) for c in raw.get("comparisons", ()))
        return cls(**raw)


def round_lr(lr: float) -> float:
    """Three significant digits: readable run ids, and the same value however it is reached."""
    return float(f"{lr:.3g}")


# -- one run -----------------------------------------------------------------------------------
def outcome_class(status) -> str | None:
    """ok | unstable | diverged for a finished run; None when failed, unfinished or corrupt
    (not in any statistic)."""
    return status if status in OUTCOMES else None


def fails(status) -> bool:
    """The run fails at its LR: diverged or unstable (docs/STUDY.md section 3)."""
    return status in FAILED


def effective_loss(status, init_loss, final_val_loss) -> float:
    """A finished run's loss as the statistics count it (docs/STUDY.md section 4): a run that
    fails at its LR (diverged or unstable) counts as its loss at initialization, however it
    failed; an ok run min(final val loss, loss at init). NaN for unfinished or failed-process
    runs and a missing loss at init."""
    if status not in OUTCOMES or not _finite(init_loss):
        return math.nan
    if status in FAILED or not _finite(final_val_loss):
        return float(init_loss)
    return float(min(final_val_loss, init_loss))


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# -- one depth's table -------------------------------------------------------------------------
@dataclass(frozen=True)
class Cells:
    """One depth's finished runs as arrays [arm, LR, seed]: effective loss (NaN: no finished
    run), failing (diverged or unstable) and run id (None: no finished run)."""

    arms: tuple[str, ...]
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    loss: np.ndarray
    failing: np.ndarray
    run_ids: np.ndarray = field(repr=False)

    def arm(self, name: str) -> int:
        return self.arms.index(name)

    def has(self, name: str) -> bool:
        return name in self.arms

    def finished(self) -> np.ndarray:
        return np.isfinite(self.loss)


def build_cells(rows: Iterable[dict]) -> dict[int, Cells]:
    """The one builder of the study's table: rows (run_id, n_layer, arm, lr, seed, status,
    init_loss, final_val_loss) -> per depth, the (arm, LR, seed) arrays of finished runs."""
    by_depth: dict[int, dict] = {}
    for r in rows:
        loss = effective_loss(r.get("status"), r.get("init_loss"), r.get("final_val_loss"))
        if not math.isfinite(loss):
            continue
        key = (str(r["arm"]), float(r["lr"]), int(r["seed"]))
        by_depth.setdefault(int(r["n_layer"]), {})[key] = (
            loss,
            fails(r["status"]),
            r.get("run_id"),
        )
    return {depth: _cells(found) for depth, found in sorted(by_depth.items())}


def _cells(found: dict) -> Cells:
    arms = tuple(dict.fromkeys(a for a, _, _ in found))
    lrs = tuple(sorted({lr for _, lr, _ in found}))
    seeds = tuple(sorted({s for _, _, s in found}))
    shape = (len(arms), len(lrs), len(seeds))
    loss, failing = np.full(shape, np.nan), np.zeros(shape, bool)
    run_ids = np.full(shape, None, dtype=object)
    for (a, lr, s), (value, fails, rid) in found.items():
        i = (arms.index(a), lrs.index(lr), seeds.index(s))
        loss[i], failing[i], run_ids[i] = value, fails, rid
    return Cells(arms, lrs, seeds, loss, failing, run_ids)


# -- paired differences ------------------------------------------------------------------------
@dataclass(frozen=True)
class Pairs:
    """Baseline minus treatment at the LRs both arms ran: d [LR, seed] (NaN: no pair), the
    common ceiling (every finished run of both arms failed), the clean LRs (no run failed),
    and the two runs behind each difference."""

    comparison: Comparison
    lrs: list[float]
    seeds: list[int]
    d: np.ndarray
    ceiling: np.ndarray
    clean: np.ndarray
    mixed: np.ndarray  # [LR]: failures mix there (not judged)
    runs: np.ndarray  # object [LR, seed, 2]: (baseline run id, treatment run id)


def pairs(cells: Cells, comparison: Comparison) -> Pairs:
    b, t = comparison
    if not (cells.has(b) and cells.has(t)):
        return _no_pairs(comparison, list(cells.seeds))
    ib, it = cells.arm(b), cells.arm(t)
    fin = cells.finished()
    shared = [j for j in range(len(cells.lrs)) if fin[ib, j].any() and fin[it, j].any()]
    if not shared:
        return _no_pairs(comparison, list(cells.seeds))
    d = cells.loss[ib, shared] - cells.loss[it, shared]
    both = fin[[ib, it]][:, shared]  # [2, LR, seed]
    fails = cells.failing[[ib, it]][:, shared]
    ceiling = ((fails | ~both).all(axis=(0, 2))) & both.any(axis=(0, 2))
    clean = ~(fails & both).any(axis=(0, 2))
    mixed = mixed_failures(fails, both)
    runs = np.stack([cells.run_ids[ib, shared], cells.run_ids[it, shared]], axis=-1)
    return Pairs(
        comparison,
        [cells.lrs[j] for j in shared],
        list(cells.seeds),
        d,
        ceiling,
        clean,
        mixed,
        runs,
    )


def mixed_failures(fails, finished) -> np.ndarray:
    """[..., LR] of fails and finished [..., 2 arms, LR, seed]: some run failed, yet not the
    baseline in every pair with the treatment in none. Only there does a failure pattern not
    say by itself which arm is better; the necessity rule skips those LRs."""
    fails = np.asarray(fails, bool) & np.asarray(finished, bool)
    pair = np.asarray(finished, bool).all(axis=-3)
    any_fail = fails.any(axis=(-3, -1))
    clear = (fails[..., 0, :, :] | ~pair).all(axis=-1) & ~fails[..., 1, :, :].any(axis=-1)
    return any_fail & ~clear


def _no_pairs(comparison: Comparison, seeds: list[int]) -> Pairs:
    n = len(seeds)
    return Pairs(
        comparison,
        [],
        seeds,
        np.zeros((0, n)),
        np.zeros(0, bool),
        np.zeros(0, bool),
        np.zeros(0, bool),
        np.zeros((0, n, 2), dtype=object),
    )


@dataclass(frozen=True)
class Judgement:
    """A comparison at one depth: its pairs, the necessity rule, and the runs whose removal
    alone moves the threshold (leave-one-run-out): (run id, threshold without it)."""

    pairs: Pairs
    necessity: Necessity
    influence: list[tuple[str, GridValue]]


def judge_pairs(p: Pairs, min_effect: float, influence: bool = True) -> Judgement:
    result = necessity(p.lrs, p.d, p.ceiling, min_effect, p.clean, p.mixed)
    movers = []
    if influence:
        for j, s in zip(*np.nonzero(np.isfinite(p.d))):
            d = p.d.copy()
            d[j, s] = np.nan  # either run of the pair gone removes the pair
            without = necessity(p.lrs, d, p.ceiling, min_effect, p.clean, p.mixed).threshold
            if _moved(result.threshold, without):
                movers += [(rid, without) for rid in p.runs[j, s]]
    return Judgement(p, result, sorted(movers, key=lambda m: str(m[0])))


def _moved(a: GridValue, b: GridValue) -> bool:
    """The threshold moved: another kind, or another grid bracket."""
    return a.kind != b.kind or (a.inside and a.bracket != b.bracket)


def compare(
    cells: Cells, comparison: Comparison, min_effect: float, influence: bool = True
) -> Judgement:
    return judge_pairs(pairs(cells, comparison), min_effect, influence)


# -- stability ---------------------------------------------------------------------------------
def critical_lrs(cells: Cells, arm: str) -> dict[int, GridValue]:
    """eta_crit per seed of one arm over every LR it finished."""
    if not cells.has(arm):
        return {}
    a = cells.arm(arm)
    fin = cells.finished()
    out = {}
    for k, seed in enumerate(cells.seeds):
        failed = [
            bool(cells.failing[a, j, k]) if fin[a, j, k] else None for j in range(len(cells.lrs))
        ]
        out[seed] = critical_lr(cells.lrs, failed, cells.loss[a, :, k])
    return out


def worst_losses(cells: Cells, arm: str) -> tuple[list[float], list[float]]:
    """W(eta) of eta_max (docs/STUDY.md section 4): per LR the arm finished runs at, the worst
    seed's effective loss, NaN unless every seed of the arm finished there."""
    if not cells.has(arm):
        return [], []
    a = cells.arm(arm)
    fin = cells.finished()[a]  # [LR, seed]
    seeds = fin.any(axis=0)
    lrs = [j for j in range(len(cells.lrs)) if fin[j].any()]
    worst = [float(cells.loss[a, j, seeds].max()) if fin[j, seeds].all() else math.nan for j in lrs]
    return [cells.lrs[j] for j in lrs], worst


# -- LR sensitivity ----------------------------------------------------------------------------
def sensitivity_lrs(base_lrs, sensitivity_range) -> list[float]:
    """The base-grid LRs inside the pre-registered range (the same for every arm and depth;
    extension and refinement LRs never enter)."""
    low, high = sensitivity_range
    return [float(lr) for lr in base_lrs if low * (1 - 1e-9) <= lr <= high * (1 + 1e-9)]


def sensitivities(cells: Cells, arm: str, lrs) -> dict[int, float]:
    """S per seed of one arm over `lrs` (stats.sensitivity); NaN (incomplete) where a run is
    missing or failed as a process."""
    if not cells.has(arm):
        return {}
    a = cells.arm(arm)
    at = {lr: j for j, lr in enumerate(cells.lrs)}
    return {
        seed: sensitivity([cells.loss[a, at[lr], k] if lr in at else math.nan for lr in lrs])
        for k, seed in enumerate(cells.seeds)
    }


# -- refinement --------------------------------------------------------------------------------
def refinement_brackets(
    cells: Cells, study: Study, arms: Iterable[str]
) -> list[tuple[float, float, str]]:
    """The brackets adaptive refinement bisects (docs/STUDY.md section 6): each arm's and
    seed's critical-LR bracket, and the primary comparison's threshold bracket."""
    out = []
    for arm in arms:
        for seed, crit in critical_lrs(cells, arm).items():
            if crit.inside:
                ok, fail = crit.bracket
                out.append((ok, fail, f"{arm} seed {seed}: {ok:g} ok, {fail:g} fails"))
    t = compare(cells, study.primary_comparison, study.min_effect, influence=False)
    bracket = t.necessity.threshold.bracket if t.necessity.threshold.inside else None
    if bracket:
        out.append((*bracket, f"necessity threshold between {bracket[0]:g} and {bracket[1]:g}"))
    return out


def midpoints(brackets, resolution: float, planned) -> dict[float, list[str]]:
    """New LRs: the rounded geometric midpoint of every bracket wider than the resolution
    (1% slack absorbs the three-digit rounding: sqrt(10) becomes 3.16, 0.5003 decades)."""
    mids: dict[float, list[str]] = {}
    for lo, hi, reason in brackets:
        if math.log10(hi / lo) <= resolution * RESOLUTION_SLACK:
            continue
        mid = round_lr(math.sqrt(lo * hi))
        if lo < mid < hi and mid not in planned:
            mids.setdefault(mid, []).append(reason)
    return dict(sorted(mids.items()))


# -- the paired verdicts of H2a and H2b -------------------------------------------------------
def h2a_stats(off: dict[int, GridValue], on: dict[int, GridValue]) -> tuple[Paired, list]:
    """r_s = log10(eta_crit on / off) over seeds where both are inside or censored above;
    the sd floor is the grid's resolution: each critical LR is known only within its bracket
    (uniform, w / sqrt(12) per arm), so r_s is never more precise than that."""
    seeds = sorted(set(off) & set(on))
    use = [k for k in seeds if off[k].kind in ("", "above") and on[k].kind in ("", "above")]
    r = [math.log10(on[k].value / off[k].value) for k in use]
    q = [quantization_sd(off[k]) ** 2 + quantization_sd(on[k]) ** 2 for k in use]
    floor = math.sqrt(sum(q) / len(q)) if q else 0.0
    return paired(r, floor), r


def h2b_stats(off: dict[int, float], on: dict[int, float], floor: float) -> Paired:
    """D_s = S off - S on over seeds with both; floor: the primary comparison's noise floor
    (S's min term is one run's loss, so D is no more precise than one paired difference)."""
    seeds = sorted(set(off) & set(on))
    return paired([off[k] - on[k] for k in seeds], floor)


def paired_verdict(p: Paired, min_effect: float = 0.0) -> str:
    """Supported: the one-sided 95% lower bound above the minimum effect; not supported: the
    mean at or below 0, or the upper bound below the minimum effect; else inconclusive (also
    with fewer than MIN_SEEDS pairs or a tie no floor covers)."""
    if p.n < MIN_SEEDS or not math.isfinite(p.lower):
        return INCONCLUSIVE
    if p.lower > min_effect:
        return SUPPORTED
    if p.mean <= 0 or p.upper < min_effect:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def negligible(p: Paired, min_effect: float, bound: float) -> bool:
    """H1 / C1: the effect is small in both directions: |mean| below the negligible bound, and
    neither a benefit nor a harm larger than m shown (lower <= m, upper >= -m)."""
    return (
        p.n >= MIN_SEEDS
        and math.isfinite(p.lower)
        and abs(p.mean) < bound
        and p.lower <= min_effect
        and p.upper >= -min_effect
    )


__all__ = [
    "NONE",
    "outcome_class",
    "fails",
    "Comparison",
    "Study",
    "Cells",
    "Pairs",
    "Judgement",
    "build_cells",
    "pairs",
    "compare",
    "judge_pairs",
    "critical_lrs",
    "effective_loss",
    "worst_losses",
    "sensitivity_lrs",
    "sensitivities",
    "refinement_brackets",
    "midpoints",
    "h2a_stats",
    "h2b_stats",
    "paired_verdict",
    "negligible",
    "round_lr",
]
