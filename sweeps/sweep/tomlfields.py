"""Checked fields of a TOML table (a sweep spec), each refused with one line that names the
table, the field, what it must be and what it got."""

from __future__ import annotations

import json
import math
import re

from sweeps.core.errors import ConfigError


def flatten(table: dict, prefix: str = "") -> dict:
    """[set] train.lr = 1 (a nested table in TOML) and "train.lr" = 1 mean the same."""
    out = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def number(table: dict, key: str, at: str, positive: bool = False, default=None) -> float:
    value = table.get(key, default)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (positive and value <= 0) or (not positive and value < 0):
        rule = "> 0" if positive else ">= 0"
        raise ConfigError(f"{at}: {key} must be a number {rule} (got {value!r})")
    return float(value)


def lr_list(table: dict, key: str, at: str, required: bool = False) -> tuple[float, ...]:
    if key not in table:
        if required:
            raise ConfigError(f"{at} has no {key} list")
        return ()
    values = list_of(table, key, (int, float), at)
    if any(not (v > 0 and math.isfinite(v)) for v in values):
        raise ConfigError(f"{at}: every {key} must be a positive number (got {values})")
    if any(b <= a for a, b in zip(values, values[1:])):
        raise ConfigError(f"{at}: {key} must be strictly increasing (got {values})")
    return tuple(float(v) for v in values)


# how a refusal names the kind a list must hold, and how to write one in TOML
KIND_NAMES = {
    int: ("an integer", "unquoted, e.g. 3"),
    str: ("a string", 'in quotes, e.g. "rms"'),
    (int, float): ("a number", "unquoted, e.g. 1e-3"),
}


def list_of(table: dict, key: str, kind, where: str) -> list:
    values = table[key]
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{where}: {key} must be a non-empty list (got {values!r})")
    for i, v in enumerate(values):
        if not isinstance(v, kind) or isinstance(v, bool):
            what, written = KIND_NAMES.get(kind, ("of the list's type", "as the others"))
            raise ConfigError(
                f"{where}: {key}: {_toml(v)} (item {i + 1} of {_toml(values)}) is not {what}; "
                f"write every {key} as {what}, {written}"
            )
    if len(set(values)) != len(values):
        raise ConfigError(f"{where}: {key} has duplicates (got {values!r})")
    return values


def _toml(value) -> str:
    """A value as the spec file writes it (a string in double quotes, true for True)."""
    try:
        return _value(value)
    except TypeError:
        return repr(value)


def no_unknown(table, known: set, where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'; known: {', '.join(sorted(known))}")


# -- writing ---------------------------------------------------------------------------------
def to_toml(raw: dict) -> str:
    """TOML text of a spec as data: top-level keys, then each table under its dotted header
    ([arms.off]); a table of plain values inside a table is written inline (set = {...}).
    None values are left out (TOML has none)."""
    lines: list[str] = []
    _table(raw, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(body: dict, path: list[str], lines: list[str]) -> None:
    tables = {k: v for k, v in body.items() if isinstance(v, dict) and _is_table(v, path)}
    plain = {k: v for k, v in body.items() if v is not None and k not in tables}
    if path and (plain or not tables):
        lines += ["", f"[{'.'.join(_key(p) for p in path)}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in plain.items()]
    for key, value in tables.items():
        _table(value, [*path, key], lines)


def _is_table(value: dict, path: list[str]) -> bool:
    """A dict written as a [table]: every top-level section ([set], [grid]), and below them
    one that holds a dict ([arms.off]); a dict of plain values below them is inline."""
    return not path or any(isinstance(v, dict) for v in value.values())


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string for the text a spec holds
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")
