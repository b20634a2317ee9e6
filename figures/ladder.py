"""A sweep's ladder as the report reads it: the one field its rungs differ in (depth,
n_layer; or width, n_embd: sweeps.core.ladder) and what a reader calls it.

The analysis decides it once from the runs (`of_runs`) and records it in settings["ladder"];
everything downstream (tables, charts, the report's words) reaches the rung through `of`,
never through n_layer. analysis.json's per-rung dict keeps its name "depths" (from schema 4,
which every reader of a committed report uses): its keys are the rung values of settings["ladder"],
depths on a depth ladder, widths on a width ladder. An analysis without settings["ladder"]
(one written before ladders had a width) is a depth ladder.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweeps.analysis.run_table import ladder_field
from sweeps.core.ladder import AXES, DEPTH
from sweeps.study import hypotheses

UNITS = {"n_layer": "layers", "n_embd": "embedding dims"}


@dataclass(frozen=True)
class Ladder:
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
    def trends(self) -> tuple[str, ...]:
        """The verdicts this ladder's trend decides, in report order (the registry's)."""
        return hypotheses.trends(self.field)

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


DEFAULT = Ladder(DEPTH)  # what an analysis that records no ladder is: a depth ladder


def of_runs(runs) -> Ladder:
    """The ladder of a runs table (a DataFrame with n_layer and, since ladders have a width,
    n_embd): width when only the width varies, else depth (a single rung reads as a depth
    ladder of one). Raises ConfigError for a table that varies both."""
    return Ladder(ladder_field(runs))


def of_analysis(analysis) -> Ladder:
    """The ladder of a typed Analysis (sweeps/analysis/model.py), from its settings."""
    return Ladder(analysis.settings.ladder.field)


def of(analysis: dict) -> Ladder:
    """The ladder an analysis dict records (settings["ladder"]); depth when it records none."""
    found = (analysis.get("settings") or {}).get("ladder") or {}
    return Ladder(found["field"]) if "field" in found else DEFAULT
