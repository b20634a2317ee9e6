"""A sweep's ladder: the one model dimension its rungs differ in (docs/STUDY.md section 11).

A depth ladder (`[grid] n_layer`) holds the width fixed; a width ladder (`[grid] n_embd`)
holds the depth and the head size fixed. Every per-rung rule (grid growth, the paired table,
the stability threshold, the trends H3 and W1/W2) groups runs by their rung: the value of the
laddered dimension. A sweep ladders one dimension at a time, so that a trend has one cause.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from sweeps.core.errors import ConfigError

# config field -> what a reader calls it
AXES = {"n_layer": "depth", "n_embd": "width"}
UNITS = {"n_layer": "layers", "n_embd": "embedding dims"}
DEPTH = "n_layer"


@dataclass(frozen=True)
class Ladder:
    """A ladder as a reader names it: the field its rungs differ in (n_layer or n_embd) and
    what a rung of it is called ('depth 4', 'width 96')."""

    field: str = DEPTH  # the runs-table column of the rung: n_layer or n_embd

    @property
    def name(self) -> str:
        """'depth' or 'width'."""
        return AXES[self.field]

    @property
    def plural(self) -> str:
        return f"{self.name}s"

    @property
    def unit(self) -> str:
        return UNITS[self.field]

    @property
    def is_width(self) -> bool:
        return self.field == "n_embd"

    def label(self, value) -> str:
        """'depth 4' / 'width 96'."""
        return f"{self.name} {int(value)}"

    def cap(self, value) -> str:
        """'Depth 4' / 'Width 96': a label that starts a sentence."""
        text = self.label(value)
        return text[0].upper() + text[1:]

    def to_dict(self) -> dict:
        return {"field": self.field, "name": self.name}


DEFAULT_LADDER = Ladder(DEPTH)  # what an analysis that records no ladder is: a depth ladder


def ladder_axis(rungs: Iterable[tuple[int, int]]) -> str:
    """The laddered field of a set of (n_layer, n_embd) pairs: width when only the width
    varies, else depth (one rung of either reads as a depth of one)."""
    pairs = set(rungs)
    depths = {d for d, _ in pairs}
    widths = {w for _, w in pairs}
    if len(depths) > 1 and len(widths) > 1:
        raise ConfigError(
            f"a sweep ladders depth or width, not both (depths {sorted(depths)}, widths "
            f"{sorted(widths)}); run one sweep per ladder"
        )
    return "n_embd" if len(widths) > 1 else DEPTH


def rung_label(axis: str, value: int) -> str:
    """'depth 4' / 'width 96': how reports and the terminal name a rung."""
    return Ladder(axis).label(value)


def width_overrides(n_embd: int, head_dim: int) -> list[str]:
    """The settings of one width rung: heads of the base preset's size, so that the
    attention logit's ceiling under QK-norm (sqrt(head_dim)) stays the same across widths."""
    if n_embd % head_dim:
        raise ConfigError(
            f"width {n_embd} is not a multiple of the head size {head_dim}; pick widths "
            f"that are (e.g. {head_dim * max(1, round(n_embd / head_dim))})"
        )
    return [f"model.n_embd={n_embd}", f"model.n_head={n_embd // head_dim}"]


def shape(model) -> tuple[int, int]:
    """A model's rung, whichever ladder it is on: (n_layer, n_embd)."""
    return model.n_layer, model.n_embd


def step_s_by_shape(timings) -> dict[tuple[int, int], float]:
    """Seconds per step per model shape from finished runs' own timings (timings: (model,
    wall_time_s, steps_run) triples): the median over each shape's runs, so a few runs slowed by
    other work on the machine (a test suite beside a sweep made some 4-5x slower) do not set
    the ETA of the rest, as a pooled mean would."""
    rates: dict[tuple[int, int], list[float]] = {}
    for model, wall, steps in timings:
        if wall and steps:
            rates.setdefault(shape(model), []).append(wall / steps)
    return {s: statistics.median(r) for s, r in rates.items()}


def step_s_from(timed: dict[tuple[int, int], float], model) -> float | None:
    """Seconds per step of a model from those measured at other shapes (timed: shape ->
    seconds per step): the nearest measured shape's, scaled by the block matmuls' cost
    (n_layer x n_embd^2), which is what grows along either ladder."""
    if not timed:
        return None
    d, w = shape(model)
    near = min(timed, key=lambda s: (abs(s[0] - d) + abs(s[1] - w) / 16, s))
    return timed[near] * (d * w * w) / (near[0] * near[1] ** 2)
