"""A spec's [study] table: the pre-registered analysis (docs/STUDY.md section 6), read and
checked against the spec's arms and LR grid; and what makes a list of LRs log-uniform, which
the sensitivity range and ad-hoc grids need."""

from __future__ import annotations

from sweeps.core.errors import ConfigError
from sweeps.study.rules import Comparison, Study
from sweeps.sweep.tomlfields import no_unknown, number

STUDY_KEYS = {
    "reference",
    "primary",
    "start_control",
    "comparisons",
    "delta",
    "sensitivity_range",
    "min_effect",
    "negligible",
    "min_sensitivity",
    "precision",
    "target_loss",
}


def study_table(table, arms, lr: tuple[float, ...], where: str) -> Study:
    """A spec's [study] table read and checked (arms: the spec's arms, each with a `name` and
    `full`, whether it covers the whole grid; lr: the grid's LRs)."""
    at = f"{where} [study]"
    if not isinstance(table, dict):
        raise ConfigError(
            f"{where} has no [study]: pre-register delta, sensitivity_range and "
            f"target_loss there (docs/STUDY.md section 6)"
        )
    no_unknown(table, STUDY_KEYS, at)
    for key in ("delta", "sensitivity_range", "target_loss"):
        if key not in table:
            raise ConfigError(f"{at} has no {key}: it is pre-registered (docs/STUDY.md section 6)")
    names = [a.name for a in arms]
    study = Study(
        delta=number(table, "delta", at, positive=True),
        sensitivity_range=_range(table["sensitivity_range"], lr, at),
        target_loss=number(table, "target_loss", at, positive=True),
        reference=table.get("reference", "off"),
        primary=table.get("primary", "on"),
        start_control=table.get("start_control"),
        comparisons=tuple(
            Comparison(*c) if isinstance(c, list) and len(c) == 2 else c
            for c in table.get("comparisons", [])
        ),
        min_effect=number(table, "min_effect", at, default=0.02),
        negligible=number(table, "negligible", at, positive=True, default=0.05),
        min_sensitivity=number(table, "min_sensitivity", at, default=0.05),
        precision=number(table, "precision", at, positive=True, default=0.01),
    )
    for key in ("reference", "primary", "start_control"):
        value = getattr(study, key)
        if value is not None and value not in names:
            raise ConfigError(f"{at}: {key} '{value}' is not an arm; arms: {', '.join(names)}")
    if study.primary == study.reference:
        raise ConfigError(
            f"{at}: primary and reference are both '{study.primary}'; the "
            f"primary comparison needs two arms"
        )
    for pair in study.comparisons:
        if (
            not isinstance(pair, Comparison)
            or pair[0] == pair[1]
            or any(p not in names for p in pair)
        ):
            raise ConfigError(
                f"{at}: comparisons must be pairs of two different arms "
                f"[baseline, treatment] (got {pair!r})"
            )
    for name in (study.reference, study.primary):
        if not next(a for a in arms if a.name == name).full:
            raise ConfigError(
                f"{at}: the primary comparison's arm '{name}' has an LR subset; "
                f"it must cover the whole grid"
            )
    return study


def _range(value, lr: tuple[float, ...], at: str) -> tuple[float, float]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise ConfigError(f"{at}: sensitivity_range must be [low, high] (got {value!r})")
    low, high = float(value[0]), float(value[1])
    if not 0 < low < high:
        raise ConfigError(
            f"{at}: sensitivity_range must be [low, high] with 0 < low < high (got {value!r})"
        )
    inside = [x for x in lr if low * (1 - 1e-9) <= x <= high * (1 + 1e-9)]
    if len(inside) < 2:
        raise ConfigError(
            f"{at}: sensitivity_range {value!r} holds {len(inside)} grid LR(s); it needs at least 2"
        )
    if not is_log_uniform(inside):
        raise ConfigError(
            f"{at}: the grid LRs inside sensitivity_range {value!r} are not "
            f"log-uniform ({inside}); the mean over them must weight every "
            f"decade the same; the nearest log-uniform LRs: {nearest_log_uniform(inside)}"
        )
    return low, high


LOG_UNIFORM_TOLERANCE = 1.02  # the largest over the smallest ratio of neighbouring LRs


def is_log_uniform(lrs) -> bool:
    """Whether increasing LRs step by one ratio (to LOG_UNIFORM_TOLERANCE: three significant
    digits of a half-decade grid pass)."""
    ratios = [b / a for a, b in zip(lrs, lrs[1:])]
    return len(ratios) < 2 or max(ratios) / min(ratios) <= LOG_UNIFORM_TOLERANCE


def nearest_log_uniform(lrs) -> list[float]:
    """The log-uniform LRs nearest to increasing `lrs`: the same endpoints and count, at three
    significant digits (more only where three would not pass is_log_uniform)."""
    low, high, n = lrs[0], lrs[-1], len(lrs)
    exact = [low * (high / low) ** (i / (n - 1)) for i in range(n)] if n > 1 else list(lrs)
    for digits in range(3, 10):
        rounded = [float(f"{x:.{digits}g}") for x in exact]
        if is_log_uniform(rounded) and len(set(rounded)) == n:
            return rounded
    return exact
