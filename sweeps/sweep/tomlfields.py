"""Checked fields of a TOML table (a sweep spec), each refused with one line that names the
table, the field, what it must be and what it got."""

from __future__ import annotations

import math

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


def list_of(table: dict, key: str, kind, where: str) -> list:
    values = table[key]
    if (
        not isinstance(values, list)
        or not values
        or any(not isinstance(v, kind) or isinstance(v, bool) for v in values)
    ):
        raise ConfigError(f"{where}: {key} must be a non-empty list (got {values!r})")
    if len(set(values)) != len(values):
        raise ConfigError(f"{where}: {key} has duplicates (got {values!r})")
    return values


def no_unknown(table, known: set, where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'; known: {', '.join(sorted(known))}")
