"""Sweep specs parsed: a spec TOML file (`sweeps/specs/NAME.toml`, a sweep's record), its
`[study]` table, or an ad-hoc `--grid` -> a typed, frozen SweepSpec -> the runs it plans.
Every field is checked here and refused in one line that names the table, the field, what it
must be and what it got; the record a sweep writes beside its runs is sweeps.sweep.record's.

A spec names a base preset, fixed overrides (`[set]`), the grid (`lr` x `n_layer` or `n_embd`
x `seed`), its arms (named override sets, each on the whole grid or an LR subset), the
pre-registered analysis (`[study]`, docs/STUDY.md section 6) and how the grid grows
(`[extend]`):

    name = "tiny"
    preset = "tiny"
    description = "..."
    [set]
    "train.max_steps" = 400           # any dotted config field except the swept ones
    [grid]
    lr = [1e-3, 3.16e-3, 1e-2]        # strictly increasing
    n_layer = [4]                     # default: the preset's depth
    n_embd = [64, 128]                # a width ladder instead (heads keep the preset's size)
    seed = [0, 1, 2, 3]               # default: [0, 1, 2, 3]; at least 3
    [rung_lr]                         # optional: a rung (depth, or width) on an LR subset
    "1" = [3.16e-3, 1e-2]             # grid LRs; a rung not listed trains the whole grid
    [arms.off]
    set = { "model.qk_norm" = "none" }
    [arms.on]
    set = { "model.qk_norm" = "rms" }
    [arms.off-warm]                   # a control on a few low LRs
    set = { "model.qk_norm" = "none", "model.qk_init" = "matched" }
    lr = [1e-3, 3.16e-3]
    [study]
    reference = "off"                 # the baseline arm (default off)
    primary = "on"                    # the primary comparison is reference vs this (default on)
    start_control = "off-warm"        # optional: the start-matched control of C1
    comparisons = [["off-warm", "on"]]  # optional: more (baseline, treatment) pairs to report
    delta = 0.1                       # eta_max(delta) margin, nats
    sensitivity_range = [1e-3, 1e-2]  # LR range of the LR sensitivity (base grid only)
    min_effect = 0.02                 # nats (default 0.02)
    negligible = 0.05                 # nats (default 0.05)
    min_sensitivity = 0.05            # H2b's minimum effect, nats (default 0.05)
    precision = 0.01                  # the floor of a paired sd, nats (default 0.01)
    target_loss = 1.2                 # steps-to-target loss, nats
    [extend]
    factor = 3.16                     # next LR = top LR x factor (default: the grid's top ratio)
    max_extra_lrs = 2                 # at most this many LRs added above the grid, per depth
    until = "any"                     # stop once any run at the top LR failed, or "all" of them
    refine = true                     # bisect the failure and threshold brackets ...
    resolution = 0.125                # ... down to this many decades (default 1/8)
    [token_check]                     # optional: this sweep reruns a depth ladder's rung
    ladder = "cpu-depth"              # at the tokens per parameter of its reference depth
    reference = 4                     # (docs/STUDY.md section 11; sweeps.study.ladders)
    [budget]                          # optional: every rung trains the same tokens per
    tokens_per_param = 10.32          # parameter (max_steps set per rung, a multiple of
    round_steps = 50                  # round_steps; warmup and the early evaluations keep
                                      # their steps, so every rung's first steps match)
    order = "seed"                    # optional: train one seed at a time over every rung,
                                      # LR and arm (default "lr": highest LR first)

`[rung_lr]` lets new rungs of a ladder train part of the grid while the old rungs keep all
of it (so their runs, and their run ids, stay the same: `sweep --from-report` reuses them);
keys are values of `[grid] n_layer` (or `n_embd`) as strings, and an arm with its own LR
subset trains the LRs in both. Extension and refinement grow every rung as before.

Instead of [arms], `[grid] qk_norm = ["none", "rms"]` makes the arms `off` (none) and `on`
(the other kind; `on-KIND` when there are several).

Ad-hoc grids: `sweep --preset P --grid FIELD=V1,V2 ... [--seeds N] --name NAME` without a TOML
file stand for a spec (adhoc_raw): the study's settings of the preset's own spec
(sweeps/specs/<preset>.toml, docs/STUDY.md section 6: [set] such as the independent weight
decay, delta, target_loss, min_effect, negligible), arms `off` and `on` unless the grid names
qk_norm kinds, sweeps.study.rules.STUDY_SEEDS seeds by default (4; at least MIN_SEEDS, 3), and
the sensitivity range of the preset's spec where it holds two of the new LRs (else the grid's
whole LR range), whose LRs must be log-uniform (a refusal names the nearest list that is). An
ad-hoc grid trains exactly the runs asked for: no extension or refinement.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sweeps.core.config import ARM_NAME, RunConfig
from sweeps.core.errors import ConfigError, HarnessError
from sweeps.core.ladder import width_overrides
from sweeps.study.rules import MIN_SEEDS, STUDY_SEEDS, Comparison, Study

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SPECS_DIR = Path(__file__).resolve().parents[1] / "specs"
# Fields a run's place in the sweep fixes: the grid, the command (backend), the arm label.
SWEPT = {"train.lr": "lr", "model.n_layer": "n_layer", "seed": "seed"}
FIXED_BY_SWEEP = set(SWEPT) | {"backend", "arm"}
# fixed only by a width ladder ([grid] n_embd): the width, and the heads that keep their size
WIDTH_FIELDS = ("model.n_embd", "model.n_head")
UNTIL = ("any", "all")
DEFAULT_SEEDS = (0, 1, 2, 3)  # what docs/STUDY.md section 7's simulations need
# The most runs a sweep may plan, its grid grown to its limits (extension and refinement,
# sweeps.sweep.grid.max_extra_runs), counted from the spec before a single config is built; the
# sweep command's --max-runs overrides it. 10,000 runs of the core preset are months of GPU.
MAX_RUNS = 10_000
# Extension steps: LRs are kept to three significant digits (round_lr), which moves a value
# by at most 0.5%, so a step of 2% always lands on a new, higher LR.
MIN_EXTEND_FACTOR = 1.02
MAX_EXTRA_LRS = 100  # [extend] max_extra_lrs: far beyond any useful extension
ORDERS = ("lr", "seed")
_TOP_KEYS = {
    "order",
    "budget",
    "name",
    "preset",
    "description",
    "grid",
    "set",
    "arms",
    "study",
    "extend",
    "token_check",
    "rung_lr",
}
_GRID_KEYS = {"qk_norm", "lr", "n_layer", "n_embd", "seed"}
_ARM_KEYS = {"set", "lr"}
_EXTEND_KEYS = {"factor", "max_extra_lrs", "until", "refine", "resolution"}
_BUDGET_KEYS = {"tokens_per_param", "round_steps"}
_TOKEN_CHECK_KEYS = {"ladder", "reference"}


@dataclass(frozen=True)
class Arm:
    name: str
    set: dict  # dotted overrides, e.g. {"model.qk_norm": "rms"}
    lr: tuple[float, ...] | None = None  # an LR subset of the grid; None: the whole grid

    @property
    def full(self) -> bool:
        """On the whole grid: grows with it (extension, refinement)."""
        return self.lr is None


@dataclass(frozen=True)
class Extend:
    factor: float | None = None  # None: the ratio of the grid's two highest LRs
    max_extra_lrs: int = 2
    until: str = "any"
    refine: bool = False
    resolution: float = 0.125  # decades


@dataclass(frozen=True)
class Budget:
    """[budget]: every rung trains `tokens_per_param` training tokens per parameter, its
    max_steps rounded to a multiple of `round_steps` (docs/STUDY.md section 18: a depth ladder
    whose budget does not fall with depth). The warmup keeps its steps (through it every rung
    sees the same LR schedule), and the early evaluations reach at least the step where the
    base config's window ended."""

    tokens_per_param: float
    round_steps: int = 50

    def steps(self, cfg: RunConfig) -> int:
        from sweeps.core.params import count_params

        params = count_params(cfg.model, cfg.vocab_size)["total"]
        unit = self.round_steps
        return max(unit, round(self.tokens_per_param * params / cfg.tokens_per_step / unit) * unit)

    def applied(self, base: RunConfig, cfg: RunConfig) -> RunConfig:
        """cfg (a rung's config, built on base) at this budget's steps. The early evaluations
        keep at least the base config's share of the run and reach at least the step where the
        base config's ended, so a shorter rung is still measured through those steps."""
        steps = self.steps(cfg)
        settings = [f"train.max_steps={steps}"]
        if base.train.early_eval_interval and steps < base.train.max_steps:
            end = base.train.early_eval_end
            # the smallest 4-decimal fraction whose window ends at `end` (floor(until x steps))
            until = min(1.0, math.ceil(end * 1e4 / steps) / 1e4)
            settings.append(f"train.early_eval_until={until!r}")
        return cfg.with_overrides(settings)


@dataclass(frozen=True)
class TokenCheckOf:
    """[token_check]: this sweep reruns a depth ladder's deepest rung at the tokens per
    parameter of its `reference` depth (docs/STUDY.md section 11); the report sets its
    threshold and critical LR against the ladder's at that depth (sweeps.study.ladders)."""

    ladder: str  # the ladder sweep's name: its runs are <runs-dir>/<ladder>
    reference: int  # the depth whose tokens per parameter the check matches


@dataclass(frozen=True)
class SweepSpec:
    name: str
    preset: str
    arms: tuple[Arm, ...]
    study: Study
    description: str = ""
    lr: tuple[float, ...] = ()
    n_layer: tuple[int, ...] = ()
    n_embd: tuple[int, ...] = ()  # a width ladder (sweeps.core.ladder); () the preset's width
    seed: tuple[int, ...] = DEFAULT_SEEDS
    set: dict = field(default_factory=dict)
    extend: Extend = field(default_factory=Extend)
    token_check: TokenCheckOf | None = None
    budget: Budget | None = None  # [budget]: tokens per parameter held at every rung
    order: str = "lr"  # execution order: "lr" (highest first) or "seed" (one seed at a time)
    # [rung_lr]: rung (depth, or width on a width ladder) -> its LR subset of the grid; a rung
    # not listed trains the whole grid
    rung_lr: dict[int, tuple[float, ...]] = field(default_factory=dict)

    @property
    def rungs(self) -> int:
        """Depths x widths (one of them is 1: sweeps.core.ladder)."""
        return (len(self.n_layer) or 1) * (len(self.n_embd) or 1)

    def rung_lrs(self, rung: int | None) -> tuple[float, ...]:
        """The grid LRs a rung trains ([rung_lr], else the whole grid)."""
        return self.rung_lr.get(rung, self.lr)

    def arm_lrs(self, arm: Arm, rung: int | None) -> list[float]:
        """The grid LRs an arm trains at a rung: the rung's, within the arm's subset."""
        return [lr for lr in self.rung_lrs(rung) if not arm.lr or lr in arm.lr]

    @property
    def rung_keys(self) -> list[int | None]:
        """Each rung's key as configs() and [rung_lr] know it, in grid order (one per depth x
        width; None: the preset's)."""
        return [
            w if self.n_embd else d for d in self.n_layer or (None,) for w in self.n_embd or (None,)
        ]

    def _points(self) -> int:
        """Arm-LR points over every rung (the grid before it grows, without seeds)."""
        return sum(len(self.arm_lrs(a, r)) for r in self.rung_keys for a in self.arms)

    @property
    def grid_runs(self) -> int:
        """Runs on the grid before it grows: arm LRs x rungs x seeds (nothing expanded)."""
        return self._points() * len(self.seed)

    def size_error(self, max_runs: int, extra: int | None = None) -> ConfigError:
        """The refusal of a sweep above max_runs runs (extra: what growth may add)."""
        total = self.grid_runs + (extra or 0)
        grown = f", {extra:,} more from extension and refinement" if extra is not None else ""
        rungs = f"{self.rungs:,} {'width' if self.n_embd else 'depth'}(s)"
        if self.rung_lr:  # the rungs differ in their LRs: points summed over them
            points = f"{self._points():,} arm-LR points over {rungs} ([rung_lr] subsets)"
        else:
            points = f"{self._points() // self.rungs:,} arm-LR points x {rungs}"
        return ConfigError(
            f"sweep '{self.name}' plans up to {total:,} runs ({points} x "
            f"{len(self.seed):,} "
            f"seed(s) = {self.grid_runs:,}{grown}), more than the cap of "
            f"{max_runs:,}; shrink the spec's grid or raise the cap (sweep "
            f"--max-runs {total})"
        )

    @property
    def extend_factor(self) -> float:
        if self.extend.factor is not None:
            return self.extend.factor
        return self.lr[-1] / self.lr[-2] if len(self.lr) > 1 else 10.0

    def arm(self, name: str) -> Arm:
        return next(a for a in self.arms if a.name == name)

    def to_dict(self) -> dict:
        """The spec as plan.json records it (and the report reads it back)."""
        return {
            "name": self.name,
            "preset": self.preset,
            "description": self.description,
            "grid": {
                "lr": list(self.lr),
                "n_layer": list(self.n_layer),
                **({"n_embd": list(self.n_embd)} if self.n_embd else {}),
                "seed": list(self.seed),
            },
            "arms": {
                a.name: {"set": dict(a.set), **({"lr": list(a.lr)} if a.lr else {})}
                for a in self.arms
            },
            "set": dict(self.set),
            "study": self.study.to_dict(),
            "extend": {
                "factor": self.extend_factor,
                "max_extra_lrs": self.extend.max_extra_lrs,
                "until": self.extend.until,
                "refine": self.extend.refine,
                "resolution": self.extend.resolution,
            },
            **({"token_check": dataclasses.asdict(self.token_check)} if self.token_check else {}),
            **({"budget": dataclasses.asdict(self.budget)} if self.budget else {}),
            **({"order": self.order} if self.order != "lr" else {}),
            # only when given: every other spec's record stays as it was
            **(
                {"rung_lr": {str(r): list(lrs) for r, lrs in self.rung_lr.items()}}
                if self.rung_lr
                else {}
            ),
        }

    def base_config(self, backend: str, overrides=()) -> RunConfig:
        """Preset + [set] + command-line overrides, before the arms and the grid values."""
        from sweeps.core.presets import get_preset

        for item in overrides:
            key = item.split("=", 1)[0].strip()
            by_arms = [f"{a.name}: {_text(a.set[key])}" for a in self.arms if key in a.set]
            if by_arms:  # an arm would override it: the runs would ignore the --set
                raise ConfigError(
                    f"--set {key} is set by the arms of sweep '{self.name}' "
                    f"({', '.join(by_arms)}), so every run would ignore it; edit the spec's "
                    "arms instead"
                )
            if self.budget and key in ("train.max_steps", "train.early_eval_until"):
                raise ConfigError(
                    f"--set {key} is set per rung by the [budget] of sweep '{self.name}' "
                    f"({self.budget.tokens_per_param:g} tokens per parameter); edit the spec "
                    "instead"
                )
            if self.n_embd and key in WIDTH_FIELDS:
                raise ConfigError(
                    f"--set {key} is fixed by the width ladder ([grid] n_embd) of sweep "
                    f"'{self.name}'; edit the spec instead"
                )
            if key in FIXED_BY_SWEEP:
                what = "the command's backend" if key == "backend" else "the spec's grid or arms"
                grid = (
                    f", or sweep an ad-hoc grid: sweep --preset {self.preset} --grid "
                    f"{key}=V1,V2 --name NAME"
                    if key in SWEPT
                    else ""
                )
                raise ConfigError(
                    f"--set {key} is fixed by {what} in sweep '{self.name}'; "
                    f"edit the spec instead{grid}"
                )
        fixed = [f"{k}={_text(v)}" for k, v in self.set.items()]
        try:
            preset = get_preset(self.preset)
        except ConfigError as e:
            raise ConfigError(f"spec '{self.name}': {e}") from None
        try:
            cfg = preset.with_overrides(fixed)
        except ConfigError as e:
            raise ConfigError(f"spec '{self.name}' [set]: {e}") from None
        return cfg.with_overrides([f"backend={backend}", *overrides])

    def configs(
        self, backend: str, overrides=(), lrs: dict[int, list[float]] | None = None
    ) -> list[RunConfig]:
        """Every planned run: the grid (at a rung of [rung_lr], its LR subset), plus extra LRs
        per rung (extension, refinement; keyed by the rung's depth or width, sweeps.core.ladder)
        for the arms on the whole grid. Order: rung, then the grid before its extra LRs, arm,
        lr, seed."""
        base = self.base_config(backend, overrides)
        head_dim = base.model.n_embd // base.model.n_head
        out = []
        for n_layer, n_embd in self.rung_pairs(base):
            rung = n_embd if self.n_embd else n_layer
            for group, extra in (
                (list(self.rung_lrs(rung)), False),
                (sorted((lrs or {}).get(rung, [])), True),
            ):
                for arm in self.arms:
                    arm_cfg = _arm_config(base, arm, n_layer, n_embd, head_dim)
                    if self.budget:
                        arm_cfg = self.budget.applied(base, arm_cfg)
                    for lr in group:
                        if (extra and not arm.full) or (arm.lr and lr not in arm.lr):
                            continue
                        for seed in self.seed:
                            out.append(arm_cfg.with_overrides([f"train.lr={lr!r}", f"seed={seed}"]))
        return out

    def rung_pairs(self, base: RunConfig) -> list[tuple[int, int]]:
        """(n_layer, n_embd) of each rung, in grid order."""
        return [
            (d, w)
            for d in self.n_layer or (base.model.n_layer,)
            for w in self.n_embd or (base.model.n_embd,)
        ]

    @property
    def ladder(self) -> str:
        """The laddered config field: n_embd for a width ladder, else n_layer."""
        return "n_embd" if self.n_embd else "n_layer"


def _arm_config(base: RunConfig, arm: Arm, n_layer: int, n_embd: int, head_dim: int) -> RunConfig:
    settings = [f"model.n_layer={n_layer}", f"arm={arm.name}"]
    if n_embd != base.model.n_embd:  # a width rung; the preset's width keeps its run ids
        settings += width_overrides(n_embd, head_dim)
    return base.with_overrides(settings + [f"{k}={_text(v)}" for k, v in arm.set.items()])


def known_specs() -> list[str]:
    return sorted(p.stem for p in SPECS_DIR.glob("*.toml"))


def load_spec(name_or_path: str, max_runs: int = MAX_RUNS) -> SweepSpec:
    """A spec by name (sweeps/specs/NAME.toml) or by path to a .toml file, refused when its
    grid has more than max_runs runs."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml"):
        if not path.is_file():
            raise HarnessError(f"spec file {path} does not exist")
    else:
        path = SPECS_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise HarnessError(
                f"unknown sweep spec '{name_or_path}'; known specs: "
                f"{', '.join(known_specs())} (or give a path to a .toml file)"
            )
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"spec {path} is not UTF-8 text ({e.reason} at byte {e.start}); a spec is a TOML file"
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"spec {path} is not valid TOML: {e}") from None
    return parse_spec(raw, default_name=path.stem, max_runs=max_runs)


def parse_spec(raw: dict, default_name: str = "sweep", max_runs: int = MAX_RUNS) -> SweepSpec:
    name = raw.get("name", default_name)
    where = f"spec '{name}'"
    for old in ("target_loss", "max_stable_margin"):
        if old in raw:
            raise ConfigError(
                f"{where}: {old} is no longer a top-level key: pre-register the "
                f"analysis in [study] (target_loss; delta, measured from the best "
                f"loss of all arms, replaces max_stable_margin; docs/STUDY.md)"
            )
    no_unknown(raw, _TOP_KEYS, where)
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ConfigError(f"{where}: name must be a plain directory name (got {name!r})")
    if "preset" not in raw:
        raise ConfigError(f'{where} has no preset; add e.g. preset = "tiny"')
    if not isinstance(raw["preset"], str):
        raise ConfigError(
            f"{where}: preset must be a preset name in quotes, e.g. preset = "
            f'"tiny" (got {raw["preset"]!r})'
        )
    grid = raw.get("grid", {})
    no_unknown(grid, _GRID_KEYS, f"{where} [grid]")
    lr = lr_list(grid, "lr", f"{where} [grid]", required=True)
    at = f"{where} [grid]"
    seed = tuple(list_of(grid, "seed", int, at)) if "seed" in grid else DEFAULT_SEEDS
    if len(set(seed)) < MIN_SEEDS:
        raise ConfigError(
            f"{where} [grid]: seed needs at least {MIN_SEEDS} distinct seeds for "
            f"the paired rules of docs/STUDY.md (got {list(seed)}); "
            f"{len(DEFAULT_SEEDS)} are recommended (section 7)"
        )
    arms = _arms(raw, grid, lr, where)
    spec = SweepSpec(
        name=name,
        preset=raw["preset"],
        description=raw.get("description", ""),
        arms=arms,
        study=study_table(raw.get("study"), arms, lr, where),
        lr=lr,
        n_layer=tuple(list_of(grid, "n_layer", int, at)) if "n_layer" in grid else (),
        n_embd=tuple(list_of(grid, "n_embd", int, at)) if "n_embd" in grid else (),
        seed=seed,
        set=_settings(raw.get("set", {}), f"{where} [set]", width_ladder="n_embd" in grid),
        extend=_extend(raw, where),
        token_check=_token_check(raw, where),
        budget=_budget(raw, where),
        order=_order(raw, where),
    )
    if len(spec.n_layer) > 1 and len(spec.n_embd) > 1:
        raise ConfigError(
            f"{where} [grid]: a sweep ladders depth or width, not both (n_layer "
            f"{list(spec.n_layer)}, n_embd {list(spec.n_embd)}); give one of them one value"
        )
    _check_set_apart(spec, where)
    spec = dataclasses.replace(spec, rung_lr=_rung_lr(raw.get("rung_lr"), spec, where))
    _check_token_check(spec, where)
    _check_growth(spec, where)
    if spec.grid_runs > max_runs:  # before building a single config
        raise spec.size_error(max_runs)
    configs = spec.configs("torch")  # every grid point is a valid config: fail now
    _distinct_arms(spec, configs, where)
    return spec


def _check_set_apart(spec: SweepSpec, where: str) -> None:
    """[study] set_apart names rungs of the ladder, and leaves the trend at least three."""
    if not spec.study.set_apart:
        return
    field = "n_embd" if len(spec.n_embd) > 1 else "n_layer"
    rungs = getattr(spec, field)
    stray = [x for x in spec.study.set_apart if x not in rungs]
    if stray or len(set(rungs) - set(spec.study.set_apart)) < 3:
        raise ConfigError(
            f"{where} [study]: set_apart must name rungs of [grid] {field} "
            f"({', '.join(map(str, rungs)) or 'none'}) and leave at least 3 for the trend "
            f"(got {list(spec.study.set_apart)})"
        )


def _arms(raw: dict, grid: dict, lr: tuple[float, ...], where: str) -> tuple[Arm, ...]:
    if "qk_norm" in grid:
        if "arms" in raw:
            raise ConfigError(
                f"{where}: give the arms either as [grid] qk_norm or as [arms], not both"
            )
        kinds = list_of(grid, "qk_norm", str, f"{where} [grid]")
        on = [k for k in kinds if k != "none"]
        names = {k: "off" if k == "none" else ("on" if len(on) == 1 else f"on-{k}") for k in kinds}
        return tuple(Arm(names[k], {"model.qk_norm": k}) for k in kinds)
    table = raw.get("arms")
    if not isinstance(table, dict) or not table:
        raise ConfigError(
            f"{where} has no arms: add [arms.off] and [arms.on] tables (or [grid] "
            f'qk_norm = ["none", "rms"])'
        )
    arms = []
    for name, body in table.items():
        at = f"{where} [arms.{name}]"
        if not ARM_NAME.match(name):
            raise ConfigError(
                f"{at}: an arm name is lower-case letters, digits and dashes, "
                f"starting with a letter (e.g. off-warm)"
            )
        no_unknown(body, _ARM_KEYS, at)
        settings = _settings(body.get("set", {}), at, width_ladder="n_embd" in grid)
        subset = lr_list(body, "lr", at) if "lr" in body else None
        if subset:
            _grid_subset(subset, lr, at, "lr", "an arm's")
        arms.append(Arm(name, settings, subset))
    return tuple(arms)


def _grid_subset(subset, lr, at: str, what: str, whose: str) -> None:
    """An LR subset ([arms.X] lr, [rung_lr]) holds grid LRs only."""
    if not set(subset) <= set(lr):
        outside = sorted(set(subset) - set(lr))
        raise ConfigError(
            f"{at}: {what} {outside} is not in the grid's lr list; {whose} LR "
            f"subset must be grid LRs"
        )


def _rung_lr(table, spec: SweepSpec, where: str) -> dict[int, tuple[float, ...]]:
    """[rung_lr]: rung (a value of [grid] n_layer, or n_embd on a width ladder, written as a
    string) -> its LR subset of the grid."""
    if table is None:
        return {}
    at = f"{where} [rung_lr]"
    axis, what = spec.ladder, "width" if spec.n_embd else "depth"
    rungs = spec.n_embd or spec.n_layer
    if not isinstance(table, dict):
        raise ConfigError(
            f'{at}: give a table of {what} = [grid LRs], e.g. "{rungs[0] if rungs else 2}" '
            f"= [{', '.join(f'{x:g}' for x in spec.lr[-2:])}] (got {table!r})"
        )
    if not rungs:
        raise ConfigError(
            f"{at}: the grid leaves the {what} to the preset; list the rungs in [grid] "
            f"{axis} (e.g. {axis} = [2, 4]) to give one of them an LR subset"
        )
    out = {}
    for key, value in table.items():
        if not (isinstance(key, str) and re.fullmatch(r"[1-9][0-9]*", key)):
            raise ConfigError(
                f'{at}: key "{key}" is not a {what}; keys are [grid] {axis} values written '
                f'as strings, e.g. "{rungs[0]}" = [...]'
            )
        if int(key) not in rungs:
            raise ConfigError(
                f'{at}: "{key}" is not a {what} of the grid ({axis} {list(rungs)}); '
                f"list only rungs of [grid] {axis}"
            )
        if isinstance(value, list) and not value:
            raise ConfigError(
                f'{at}: "{key}" is an empty list; give the LRs that {what} trains, or drop '
                f"the key to train the whole grid"
            )
        subset = lr_list({f'"{key}"': value}, f'"{key}"', at)
        _grid_subset(subset, spec.lr, at, f'"{key}" lr', f"a {what}'s")
        out[int(key)] = subset
    return out


def _extend(raw: dict, where: str) -> Extend:
    ext = raw.get("extend", {})
    at = f"{where} [extend]"
    no_unknown(ext, _EXTEND_KEYS, at)
    extend = Extend(
        factor=ext.get("factor"),
        max_extra_lrs=ext.get("max_extra_lrs", 2),
        until=ext.get("until", "any"),
        refine=ext.get("refine", False),
        resolution=ext.get("resolution", 0.125),
    )
    if extend.factor is not None and not (
        isinstance(extend.factor, (int, float))
        and not isinstance(extend.factor, bool)
        and math.isfinite(extend.factor)
        and extend.factor > 1
    ):
        raise ConfigError(f"{at}: factor must be a number above 1 (got {extend.factor!r})")
    if (
        not isinstance(extend.max_extra_lrs, int)
        or isinstance(extend.max_extra_lrs, bool)
        or not 0 <= extend.max_extra_lrs <= MAX_EXTRA_LRS
    ):
        raise ConfigError(
            f"{at}: max_extra_lrs must be an integer from 0 to {MAX_EXTRA_LRS} "
            f"(got {extend.max_extra_lrs!r})"
        )
    if extend.until not in UNTIL:
        raise ConfigError(f"{at}: until must be one of {', '.join(UNTIL)} (got {extend.until!r})")
    if not isinstance(extend.refine, bool):
        raise ConfigError(f"{at}: refine must be true or false")
    if not (isinstance(extend.resolution, (int, float)) and extend.resolution > 0):
        raise ConfigError(
            f"{at}: resolution must be a positive number of decades, e.g. 0.125 "
            f"(got {extend.resolution!r})"
        )
    return extend


def _budget(raw: dict, where: str) -> Budget | None:
    table = raw.get("budget")
    if table is None:
        return None
    at = f"{where} [budget]"
    no_unknown(table, _BUDGET_KEYS, at)
    if "tokens_per_param" not in table:
        raise ConfigError(f"{at}: give tokens_per_param, e.g. tokens_per_param = 10.32")
    value = number(table, "tokens_per_param", at, positive=True)
    unit = table.get("round_steps", 50)
    if not isinstance(unit, int) or isinstance(unit, bool) or unit < 1:
        raise ConfigError(f"{at}: round_steps must be a positive integer (got {unit!r})")
    if any(k in raw.get("set", {}) for k in ("train.max_steps", "train.early_eval_until")):
        raise ConfigError(
            f"{at} sets train.max_steps and train.early_eval_until per rung: drop them from [set]"
        )
    return Budget(float(value), unit)


def _order(raw: dict, where: str) -> str:
    order = raw.get("order", "lr")
    if order not in ORDERS:
        raise ConfigError(f"{where}: order must be one of {', '.join(ORDERS)} (got {order!r})")
    return order


def _token_check(raw: dict, where: str) -> TokenCheckOf | None:
    table = raw.get("token_check")
    if table is None:
        return None
    at = f"{where} [token_check]"
    if not isinstance(table, dict):
        raise ConfigError(f'{at}: give a table, e.g. ladder = "cpu-depth" and reference = 4')
    no_unknown(table, _TOKEN_CHECK_KEYS, at)
    ladder, reference = table.get("ladder"), table.get("reference")
    if not isinstance(ladder, str) or not ladder or "/" in ladder or ladder.startswith("."):
        raise ConfigError(f'{at}: ladder must be a sweep name, e.g. ladder = "cpu-depth"')
    if not isinstance(reference, int) or isinstance(reference, bool) or reference < 1:
        raise ConfigError(f"{at}: reference must be the ladder's depth to match, e.g. 4")
    return TokenCheckOf(ladder, reference)


def _check_token_check(spec: SweepSpec, where: str) -> None:
    """A token-matched check reruns one depth of its ladder, not the reference depth itself."""
    check = spec.token_check
    if check is None:
        return
    if len(spec.n_layer) != 1 or spec.n_embd:
        raise ConfigError(
            f"{where} [token_check]: the check runs one depth of its ladder; give [grid] "
            f"n_layer one value (got {list(spec.n_layer) or 'the preset depth'})"
        )
    if spec.n_layer[0] == check.reference:
        raise ConfigError(
            f"{where} [token_check]: the check's depth {check.reference} is its reference "
            f"depth; check a deeper rung (e.g. n_layer = [8] against reference = 4)"
        )
    if spec.name == check.ladder:
        raise ConfigError(f"{where} [token_check]: a sweep cannot check itself; name its ladder")


def _check_growth(spec: SweepSpec, where: str) -> None:
    """Extension steps large enough to reach new LRs (MIN_EXTEND_FACTOR), and finite."""
    ext, factor = spec.extend, spec.extend_factor
    if not ext.max_extra_lrs:
        return
    given = (
        f"factor {factor:g}"
        if ext.factor is not None
        else f"the grid's top LR ratio {factor:.4g} (the default factor)"
    )
    if factor < MIN_EXTEND_FACTOR:
        raise ConfigError(
            f"{where} [extend]: {given} is below {MIN_EXTEND_FACTOR:g}: LRs keep "
            f"three significant digits, so smaller steps can repeat an LR already "
            f"planned; set factor = {MIN_EXTEND_FACTOR:g} or more"
        )
    if math.log10(spec.lr[-1]) + ext.max_extra_lrs * math.log10(factor) > 300:
        raise ConfigError(
            f"{where} [extend]: lr {spec.lr[-1]:g} x {given} ^ {ext.max_extra_lrs} is not a "
            "finite number; lower max_extra_lrs"
            + (" or factor" if ext.factor is not None else ", or set a smaller [extend] factor")
        )


def _distinct_arms(spec: SweepSpec, configs: list[RunConfig], where: str) -> None:
    """Two arms that train the same thing would be one arm under two names."""
    seen: dict = {}
    for cfg in configs:
        key = (
            cfg.model.n_layer,
            cfg.model.n_embd,
            cfg.train.lr,
            cfg.seed,
            RunConfig.from_dict({**cfg.to_dict(), "arm": ""}).to_json(),
        )
        if key in seen and seen[key] != cfg.arm:
            raise ConfigError(
                f"{where}: arms '{seen[key]}' and '{cfg.arm}' resolve to the same "
                f"config; give each arm a different setting"
            )
        seen[key] = cfg.arm


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _settings(table, where: str, width_ladder: bool = False) -> dict:
    """Dotted overrides; none of them may be a field the sweep itself fixes."""
    if not isinstance(table, dict):
        raise ConfigError(f'{where}: set must be a table of "section.field" = value')
    settings = flatten(table)
    for key in settings:
        if width_ladder and key in WIDTH_FIELDS:
            raise ConfigError(
                f"{where}: set may not fix {key}: [grid] n_embd decides it (heads keep "
                f"the preset's size)"
            )
        if key in FIXED_BY_SWEEP:
            fixed = f"[grid] {SWEPT[key]}" if key in SWEPT else "the command or the arm names"
            raise ConfigError(f"{where}: set may not fix {key}: {fixed} decides it")
    return settings


# -- the [study] table: the pre-registered analysis (docs/STUDY.md section 6) ---------------
STUDY_KEYS = {
    "set_apart",
    "plateau_margin",
    "seed_margin",
    "fate_margin",
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
        # "none": no steps-to-target (an ad-hoc grid on a corpus no spec pre-registers one for)
        target_loss=None
        if table["target_loss"] == NO_TARGET
        else number(table, "target_loss", at, positive=True),
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
        # section 17 (v9): pre-registered per spec; the defaults are section 13's
        seed_margin=number(table, "seed_margin", at, default=Study.seed_margin),
        fate_margin=number(table, "fate_margin", at, default=Study.fate_margin),
        set_apart=tuple(list_of(table, "set_apart", int, at)) if "set_apart" in table else (),
        # section 23: a plateau just under the cut above the reference's best LR counts stuck
        plateau_margin=number(table, "plateau_margin", at, default=Study.plateau_margin),
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
    inside = within(lr, low, high)
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


def within(lrs, low: float, high: float) -> list[float]:
    """The LRs of `lrs` in [low, high], give or take a rounding of the bounds (a TOML list and
    a range written as 3.16e-3 meet)."""
    return [x for x in lrs if low * (1 - 1e-9) <= x <= high * (1 + 1e-9)]


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


# -- an ad-hoc grid: the spec (as TOML data) that --preset and --grid stand for -------------
ADHOC_SEEDS = STUDY_SEEDS  # the seed count the study's rules are proven for (STUDY.md 7)
# --grid FIELD: the fields a spec's grid can sweep, under their config names and short names
GRID_FIELDS = {
    "train.lr": "lr",
    "lr": "lr",
    "model.n_layer": "n_layer",
    "n_layer": "n_layer",
    "model.n_embd": "n_embd",
    "n_embd": "n_embd",
    "seed": "seed",
    "model.qk_norm": "qk_norm",
    "qk_norm": "qk_norm",
}
_KINDS = {"lr": float, "n_layer": int, "n_embd": int, "seed": int, "qk_norm": str}


def parse_grid(items) -> dict[str, list]:
    """['train.lr=1e-3,3e-3', 'qk_norm=none,rms'] -> {'lr': [0.001, 0.003], 'qk_norm': [...]}."""
    grid: dict[str, list] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(
                f"--grid {item}: write FIELD=V1,V2,... (e.g. --grid train.lr=1e-3,3e-3)"
            )
        key, text = (part.strip() for part in item.split("=", 1))
        if key not in GRID_FIELDS:
            raise ConfigError(
                f"--grid {key}: a grid sweeps train.lr, model.n_layer, model.n_embd, seed "
                f"or model.qk_norm; fix any other field with --set {key}=VALUE"
            )
        field = GRID_FIELDS[key]
        if field in grid:
            raise ConfigError(
                f"--grid {key} is given twice; list every value once: --grid {key}=V1,V2"
            )
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not values:
            raise ConfigError(f"--grid {key}= has no values; e.g. --grid {key}=V1,V2")
        try:
            parsed = [_parse(v, _KINDS[field]) for v in values]
        except ValueError:
            raise ConfigError(
                f"--grid {key}: values must be {_KINDS[field].__name__}s (got {text!r})"
            ) from None
        if field == "lr":  # in the words of --set train.lr=...
            for value in parsed:
                if not math.isfinite(value):
                    raise ConfigError(
                        f"--grid {key}: train.lr must be a finite number (got {value!r})"
                    )
                if value <= 0:
                    raise ConfigError(f"--grid {key}: train.lr must be > 0 (got {value:g})")
        grid[field] = (
            sorted(set(parsed), key=parsed.index) if field == "qk_norm" else sorted(set(parsed))
        )
    return grid


def _parse(text: str, kind: type):
    if kind is float:
        return float(text)
    if kind is int:
        value = float(text)
        if not value.is_integer():
            raise ValueError(text)
        return int(value)
    return text


NO_TARGET = "none"


def corpus_of(raw: dict, preset: str) -> tuple[str, str]:
    """(corpus, tokenizer) a spec's runs train on: its [set], else the preset's."""
    from sweeps.core.presets import get_preset

    data = get_preset(preset).data
    given = flatten(raw.get("set", {}))
    return given.get("data.corpus", data.corpus), given.get("data.tokenizer", data.tokenizer)


def corpus_target(raw: dict) -> dict:
    """An ad-hoc grid's [study] target_loss from its own corpus: its preset spec's when the grid
    trains that spec's corpus and tokenizer, else a built-in spec's of the same preset that
    trains the grid's (cpu-text for `--preset cpu --set data.corpus=shakespeare`), else none:
    a target loss is never inherited from another corpus (its losses are on another scale)."""
    preset, base = raw["preset"], re.sub(r"-L[0-9]+$", "", raw["preset"])
    asked = corpus_of(raw, preset)
    if asked == corpus_of(base_spec_raw(preset), preset):
        return raw
    target = NO_TARGET
    for path in sorted(SPECS_DIR.glob("*.toml")):
        other = tomllib.loads(path.read_text(encoding="utf-8"))
        if other.get("preset") == base and corpus_of(other, base) == asked:
            target = other.get("study", {}).get("target_loss", NO_TARGET)
            break
    return {**raw, "study": {**raw["study"], "target_loss": target}}


def base_spec_raw(preset: str) -> dict:
    """The TOML of the preset's own spec (core-L12 -> core), {} when there is none."""
    base = re.sub(r"-L[0-9]+$", "", preset)
    path = SPECS_DIR / f"{base}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def adhoc_raw(
    name: str, preset: str, grid: dict[str, list], seeds: int = ADHOC_SEEDS, command: str = ""
) -> dict:
    """The spec (as TOML data) an ad-hoc grid stands for."""
    from sweeps.core.presets import get_preset

    cfg = get_preset(preset)  # an unknown preset fails here, with the list of presets
    base = base_spec_raw(preset)
    base_grid = base.get("grid", {})
    lrs = grid.get("lr") or base_grid.get("lr")
    if not lrs:
        raise ConfigError(
            f"preset {preset} has no spec to take learning rates from; add "
            f"--grid train.lr=V1,V2,..."
        )
    if "seed" not in grid and seeds < MIN_SEEDS:
        raise ConfigError(
            f"--seeds {seeds}: the study's paired rules need at least {MIN_SEEDS} seeds "
            f"(docs/STUDY.md section 2); give --seeds {MIN_SEEDS} or more (default {STUDY_SEEDS})"
        )
    if "seed" in grid and len(grid["seed"]) < MIN_SEEDS:
        raise ConfigError(
            f"--grid seed={','.join(map(str, grid['seed']))}: the study's paired rules need "
            f"at least {MIN_SEEDS} distinct seeds (docs/STUDY.md section 2)"
        )
    study = {
        k: v
        for k, v in base.get("study", {}).items()
        if k in ("delta", "target_loss", "min_effect", "negligible")
    }
    study.setdefault("delta", 0.1)
    study.setdefault("target_loss", 2.0)
    low, high = base.get("study", {}).get("sensitivity_range", [min(lrs), max(lrs)])
    inside = within(lrs, low, high)
    study["sensitivity_range"] = [low, high] if len(inside) >= 2 else [min(lrs), max(lrs)]
    if "lr" in grid:
        _check_log_uniform(list(lrs), study["sensitivity_range"], preset)
    raw = {
        "name": name,
        "preset": preset,
        "description": f"ad-hoc grid: {command}".strip(),
        "set": dict(base.get("set", {})),
        "grid": {
            "lr": list(lrs),
            "n_layer": grid.get("n_layer", [cfg.model.n_layer]),
            **({"n_embd": grid["n_embd"]} if "n_embd" in grid else {}),
            "seed": grid.get("seed", list(range(seeds))),
            "qk_norm": grid.get("qk_norm", ["none", "rms"]),
        },
        "study": study,
        "extend": {"max_extra_lrs": 0},
    }
    kinds = raw["grid"]["qk_norm"]
    if "none" not in kinds or len(kinds) < 2:
        raise ConfigError(
            f"--grid qk_norm={','.join(kinds)}: the study compares QK-norm off "
            f"with on: give none and at least one kind, e.g. qk_norm=none,rms"
        )
    return raw


def _check_log_uniform(lrs: list[float], sensitivity_range: list[float], preset: str) -> None:
    """Refuse --grid LRs whose sensitivity range is not log-uniform (the LR sensitivity
    averages over them: every decade must weigh the same), suggesting the nearest list that
    is: the same endpoints and count, three significant digits."""
    low, high = sensitivity_range
    inside = within(lrs, low, high)
    if is_log_uniform(inside):
        return
    fixed = dict(zip(inside, nearest_log_uniform(inside)))
    suggestion = ",".join(f"{fixed.get(x, x):g}" for x in lrs)
    which = (
        "are"
        if len(inside) == len(lrs)
        else f"inside the sensitivity range [{low:g}, {high:g}] of preset {preset}'s spec are"
    )
    raise ConfigError(
        f"--grid train.lr={','.join(f'{x:g}' for x in lrs)}: the LRs {which} not "
        f"log-uniform, and the LR sensitivity must weight every decade the same; the nearest "
        f"log-uniform list: --grid train.lr={suggestion}"
    )


# -- checked fields of a TOML table ---------------------------------------------------------
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
        return toml_value(value)
    except TypeError:
        return repr(value)


def no_unknown(table, known: set, where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key '{unknown[0]}'; known: {', '.join(sorted(known))}")


# -- a value as a spec file writes it: the record (sweeps.sweep.record.to_toml), and the refusals
# above that quote one ------------------------------------------------------------------------
def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string for the text a spec holds
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")
