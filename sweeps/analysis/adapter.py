"""The one place analysis.json meets the typed Analysis: `to_json` writes an Analysis as the
dict analysis.json holds (schema 5: numbers and decisions, no prose), `from_json` reads one
back, of schema 5 or 4.

The mapping is by name: each dataclass field is the key of the same name
(sweeps/analysis/model.py); dict keys that are seeds are ints in the object and strings in the
JSON; the study's own NamedTuples (Rule, BaselineCheck, alternatives.Decision) are written as
their fields; a list of two kinds of record (the caveats) is read by which record's fields the
entry has. Schema 4 (the reports before it) held figures/'s words beside the numbers (and an
early predictor's label) and no `decided` or `caveats`: reading one sets those words aside
and leaves the decisions empty. Any other unknown key is refused, so a change of layout
cannot pass unseen.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, Union

from sweeps.analysis.model import Analysis
from sweeps.core.errors import HarnessError
from sweeps.core.files import clean_json

SCHEMA = 6  # analysis.json's layout: 5 is schema 4 (study v4's: thresholds as brackets, three
# failure definitions, per-LR intervals) with the decisions and caveats, and without prose; 6
# is 5 judged by the rulebook (docs/STUDY.md section 17): effect-curve marks, harm and help
# ranges, the cost at each arm's own best LR, borderline runs, trends with each rung left out
READS = (4, 5, 6)  # the schemas from_json reads
# schema 4's keys of figures/'s words (prose, not numbers), set aside on reading one
WORDED = ("verdicts", "rules", "interventions", "budget_warnings", "refinement_warnings")
# what schema 4 added for a re-rendered report: its source (the archive's gaps, prose)
ADDED = ("source",)


class SchemaError(HarnessError):
    """An analysis.json this adapter cannot read: another schema, or a key it does not know."""


def to_json(analysis: Analysis) -> dict:
    """The Analysis as analysis.json's dict (strict JSON: NaN as null, string keys)."""
    return clean_json(_out(analysis))


def record(x) -> dict | list:
    """One typed record (a Comparison, a GridPoint, a Slope...) as analysis.json writes it: for
    figures/'s formatters that still read the JSON form."""
    return clean_json(_out(x))


def read(cls, data: dict):
    """One record of analysis.json (an H2a entry, a Comparison...) as its typed class."""
    return _in(cls, data, cls.__name__)


def from_json(data: dict) -> Analysis:
    """An analysis.json dict (schema 5, or 4 with its prose set aside) as an Analysis. Raises
    SchemaError for another schema (an analysis written before schemas, such as docs/tiny's,
    has none) or a key the layout does not have."""
    schema = data.get("schema")
    if schema not in READS:
        found = "no schema (written before study v4)" if schema is None else f"schema {schema}"
        raise SchemaError(
            f"analysis.json has {found}; this reader reads schemas "
            f"{' and '.join(map(str, READS))}: regenerate the report "
            "(`qkmlx figures NAME --from-report docs/NAME`)"
        )
    body = data if schema >= 5 else _from_schema_4(data)
    return _in(Analysis, body, "analysis")


def _from_schema_4(data: dict) -> dict:
    """A schema-4 analysis as schema 5 lays it out: figures/'s words set aside, and each early
    predictor's label (its name in words, now figures/'s) dropped."""
    body = {k: v for k, v in data.items() if k not in WORDED + ADDED}
    body["early_warning"] = {
        rung: {
            arm: {p: {k: v for k, v in auc.items() if k != "label"} for p, auc in ps.items()}
            for arm, ps in arms.items()
        }
        for rung, arms in (data.get("early_warning") or {}).items()
    }
    return body


def _out(x):
    if dataclasses.is_dataclass(x):
        out = {}
        for f in dataclasses.fields(x):
            omit = f.metadata.get("omit")
            value = getattr(x, f.name)
            if omit is True and value is None:
                continue
            if isinstance(omit, str) and getattr(x, omit) is None:
                continue
            out[f.name] = _out(value)
        return out
    if isinstance(x, tuple) and hasattr(x, "_asdict"):
        return {k: _out(v) for k, v in x._asdict().items()}
    if isinstance(x, dict):
        return {str(k): _out(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_out(v) for v in x]
    return x


@cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _in(tp, data, where: str):
    """data (JSON) as the type tp, recursively; where: the key path, for errors."""
    if data is None or tp is Any:
        return data
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return _in(options[0], data, where)
        if not all(dataclasses.is_dataclass(o) for o in options):
            return data  # a union of plain values (JSON's own)
        return _in(_which(options, data, where), data, where)
    if dataclasses.is_dataclass(tp):
        return _record(tp, data, where)
    if isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields"):
        hints = _hints(tp)
        return tp(**{k: _in(hints[k], v, f"{where}.{k}") for k, v in data.items()})
    args = typing.get_args(tp)
    if origin is dict and args:
        key, value = args
        return {
            (int(k) if key is int else float(k) if key is float else k): _in(
                value, v, f"{where}.{k}"
            )
            for k, v in data.items()
        }
    if origin is list and args:
        return [_in(args[0], v, f"{where}[]") for v in data]
    if origin is tuple and args:
        inner = args[0]
        return tuple(_in(inner, v, f"{where}[]") for v in data)
    return data


def _which(options: list, data: dict, where: str):
    """The record of a union (ShortBudget | StuckRuns) whose fields are data's keys."""
    for cls in options:
        if {f.name for f in dataclasses.fields(cls)} == set(data):
            return cls
    raise SchemaError(f"{where}: keys {sorted(data)} are no record of {options}")


def _record(cls, data: dict, where: str):
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise SchemaError(f"{where}: keys {unknown} are not in schema {SCHEMA}'s {cls.__name__}")
    hints = _hints(cls)
    return cls(**{k: _in(hints[k], v, f"{where}.{k}") for k, v in data.items()})
