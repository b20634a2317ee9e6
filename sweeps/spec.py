"""Sweep specs: `sweeps/specs/NAME.toml` -> a validated SweepSpec -> the runs it plans.

A spec names a base preset, fixed overrides (`[set]`), the grid (`qk_norm` x `lr` x
`n_layer` x `seed`) and the rule that makes the grid reach divergence (`[extend]`):

    name = "tiny"
    preset = "tiny"
    description = "..."
    target_loss = 2.0            # optional: steps-to-target in the report
    max_stable_margin = 0.1      # optional: margin (nats) of the max-stable-LR rule
    [set]
    "train.max_steps" = 400      # any dotted config field except the swept ones
    [grid]
    qk_norm = ["none", "rms"]
    lr = [1e-3, 3.16e-3, 1e-2]   # strictly increasing
    n_layer = [4]                # default: the preset's depth
    seed = [0, 1]                # default: [0]
    [extend]
    factor = 3.16                # next LR = top LR x factor (default: the grid's top ratio)
    max_extra_lrs = 2            # at most this many LRs added above the grid, per depth
    until = "any"                # stop once any run at the top LR diverged, or "all" of them
    refine = true                # then add the geometric midpoint between each arm's last
                                 # stable and first divergent LR (once)
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sweeps.config import RunConfig
from sweeps.errors import ConfigError, HarnessError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SPECS_DIR = Path(__file__).resolve().parent / "specs"
SWEPT = {"model.qk_norm": "qk_norm", "train.lr": "lr", "model.n_layer": "n_layer",
         "seed": "seed"}
UNTIL = ("any", "all")
_TOP_KEYS = {"name", "preset", "description", "target_loss", "max_stable_margin", "grid", "set",
             "extend"}
_EXTEND_KEYS = {"factor", "max_extra_lrs", "until", "refine"}


@dataclass(frozen=True)
class Extend:
    factor: float | None = None  # None: the ratio of the grid's two highest LRs
    max_extra_lrs: int = 2
    until: str = "any"
    refine: bool = False


@dataclass(frozen=True)
class SweepSpec:
    name: str
    preset: str
    description: str = ""
    qk_norm: tuple[str, ...] = ("none", "rms")
    lr: tuple[float, ...] = ()
    n_layer: tuple[int, ...] = ()
    seed: tuple[int, ...] = (0,)
    set: dict = field(default_factory=dict)
    extend: Extend = field(default_factory=Extend)
    target_loss: float | None = None
    max_stable_margin: float | None = None

    @property
    def extend_factor(self) -> float:
        if self.extend.factor is not None:
            return self.extend.factor
        return self.lr[-1] / self.lr[-2] if len(self.lr) > 1 else 10.0

    def to_dict(self) -> dict:
        """The spec as plan.json records it; optional keys that are unset are left out."""
        out = {"name": self.name, "preset": self.preset, "description": self.description,
               "grid": {"qk_norm": list(self.qk_norm), "lr": list(self.lr),
                        "n_layer": list(self.n_layer), "seed": list(self.seed)},
               "set": dict(self.set),
               "extend": {"factor": self.extend_factor, "max_extra_lrs": self.extend.max_extra_lrs,
                          "until": self.extend.until, "refine": self.extend.refine}}
        if self.target_loss is not None:
            out["target_loss"] = self.target_loss
        if self.max_stable_margin is not None:
            out["max_stable_margin"] = self.max_stable_margin
        return out

    def base_config(self, backend: str, overrides=()) -> RunConfig:
        """Preset + [set] + command-line overrides, before the grid values."""
        from sweeps.presets import get_preset

        for item in overrides:
            key = item.split("=", 1)[0].strip()
            if key in SWEPT or key == "backend":
                what = "the command's backend" if key == "backend" else "the spec's grid"
                raise ConfigError(f"--set {key} is fixed by {what} in sweep '{self.name}'; "
                                  f"edit the spec's [grid] instead")
        fixed = [f"{k}={_text(v)}" for k, v in self.set.items()]
        try:
            cfg = get_preset(self.preset).with_overrides(fixed)
        except ConfigError as e:
            raise ConfigError(f"spec '{self.name}' [set]: {e}") from None
        return cfg.with_overrides([f"backend={backend}", *overrides])

    def configs(self, backend: str, overrides=(), lrs: dict[int, list[float]] | None = None
                ) -> list[RunConfig]:
        """Every planned run: the grid, plus extra LRs per depth (extension, refinement).

        Order: depth, qk_norm, lr, seed; the extra LRs of a depth come after its grid.
        """
        base = self.base_config(backend, overrides)
        out = []
        for n_layer in self.n_layer or (base.model.n_layer,):
            for group in (list(self.lr), sorted((lrs or {}).get(n_layer, []))):
                for qk_norm in self.qk_norm:
                    for lr in group:
                        for seed in self.seed:
                            out.append(base.with_overrides([
                                f"model.n_layer={n_layer}", f"model.qk_norm={qk_norm}",
                                f"train.lr={lr!r}", f"seed={seed}"]))
        return out


def known_specs() -> list[str]:
    return sorted(p.stem for p in SPECS_DIR.glob("*.toml"))


def load_spec(name_or_path: str) -> SweepSpec:
    """A spec by name (sweeps/specs/NAME.toml) or by path to a .toml file."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml"):
        if not path.is_file():
            raise HarnessError(f"spec file {path} does not exist")
    else:
        path = SPECS_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise HarnessError(f"unknown sweep spec '{name_or_path}'; known specs: "
                               f"{', '.join(known_specs())} (or give a path to a .toml file)")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"spec {path} is not valid TOML: {e}") from None
    return parse_spec(raw, default_name=path.stem)


def parse_spec(raw: dict, default_name: str = "sweep") -> SweepSpec:
    name = raw.get("name", default_name)
    where = f"spec '{name}'"
    _no_unknown(raw, _TOP_KEYS, where)
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ConfigError(f"{where}: name must be a plain directory name (got {name!r})")
    if "preset" not in raw:
        raise ConfigError(f"{where} has no preset; add e.g. preset = \"tiny\"")
    grid = raw.get("grid", {})
    _no_unknown(grid, {"qk_norm", "lr", "n_layer", "seed"}, f"{where} [grid]")
    if "lr" not in grid:
        raise ConfigError(f"{where} [grid] has no lr list")
    lr = _list(grid, "lr", (int, float), where)
    if any(not (v > 0 and math.isfinite(v)) for v in lr):
        raise ConfigError(f"{where}: every grid lr must be a positive number (got {lr})")
    if any(b <= a for a, b in zip(lr, lr[1:])):
        raise ConfigError(f"{where}: grid lr must be strictly increasing (got {lr})")
    settings = raw.get("set", {})
    if not isinstance(settings, dict):
        raise ConfigError(f"{where}: [set] must be a table of \"section.field\" = value")
    settings = _flatten(settings)
    for key in settings:
        if key in SWEPT or key == "backend":
            raise ConfigError(f"{where}: [set] {key} is swept or chosen by the command; use "
                              f"[grid] {SWEPT.get(key, key)}")
    ext = raw.get("extend", {})
    _no_unknown(ext, _EXTEND_KEYS, f"{where} [extend]")
    extend = Extend(factor=ext.get("factor"), max_extra_lrs=ext.get("max_extra_lrs", 2),
                    until=ext.get("until", "any"), refine=ext.get("refine", False))
    if extend.factor is not None and not (isinstance(extend.factor, (int, float))
                                          and extend.factor > 1):
        raise ConfigError(f"{where} [extend]: factor must be a number above 1 "
                          f"(got {extend.factor!r})")
    if not isinstance(extend.max_extra_lrs, int) or extend.max_extra_lrs < 0:
        raise ConfigError(f"{where} [extend]: max_extra_lrs must be an integer >= 0 "
                          f"(got {extend.max_extra_lrs!r})")
    if extend.until not in UNTIL:
        raise ConfigError(f"{where} [extend]: until must be one of {', '.join(UNTIL)} "
                          f"(got {extend.until!r})")
    if not isinstance(extend.refine, bool):
        raise ConfigError(f"{where} [extend]: refine must be true or false")
    for key in ("target_loss", "max_stable_margin"):
        if key in raw and not (isinstance(raw[key], (int, float)) and raw[key] > 0):
            raise ConfigError(f"{where}: {key} must be a positive number (got {raw[key]!r})")
    spec = SweepSpec(
        name=name, preset=raw["preset"], description=raw.get("description", ""),
        qk_norm=tuple(_list(grid, "qk_norm", str, where) if "qk_norm" in grid else
                      ("none", "rms")),
        lr=tuple(float(v) for v in lr),
        n_layer=tuple(_list(grid, "n_layer", int, where)) if "n_layer" in grid else (),
        seed=tuple(_list(grid, "seed", int, where)) if "seed" in grid else (0,),
        set=dict(settings), extend=extend,
        target_loss=_float_or_none(raw.get("target_loss")),
        max_stable_margin=_float_or_none(raw.get("max_stable_margin")))
    spec.configs("torch")  # every grid point is a valid config: fail now, not mid-sweep
    return spec


def round_lr(lr: float) -> float:
    """Three significant digits: readable run ids, and the same value however it is reached."""
    return float(f"{lr:.3g}")


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _flatten(table: dict, prefix: str = "") -> dict:
    """[set] train.lr = 1 (a nested table in TOML) and "train.lr" = 1 mean the same."""
    out = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _float_or_none(value):
    return None if value is None else float(value)


def _list(table: dict, key: str, kind, where: str) -> list:
    values = table[key]
    if (not isinstance(values, list) or not values
            or any(not isinstance(v, kind) or isinstance(v, bool) for v in values)):
        raise ConfigError(f"{where} [grid]: {key} must be a non-empty list (got {values!r})")
    if len(set(values)) != len(values):
        raise ConfigError(f"{where} [grid]: {key} has duplicates (got {values!r})")
    return values


def _no_unknown(table, known: set, where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'; known: {', '.join(sorted(known))}")
