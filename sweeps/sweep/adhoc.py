"""Ad-hoc grids: `sweep --preset P --grid FIELD=V1,V2 ... [--seeds N] --name NAME` without a
TOML file. The grid becomes the spec it stands for, its --set in [set], written to
`<runs-dir>/NAME/spec.toml` (the sweep's record, sweeps.sweep.record), so the same command (or
`sweep NAME`) resumes it and `status NAME`, `figures NAME` and `crosscheck --sweep NAME` read it.

The spec takes the study's settings from the preset's own spec (sweeps/specs/<preset>.toml,
docs/STUDY.md section 6: [set] such as the independent weight decay, delta, target_loss,
min_effect, negligible), arms `off` and `on` unless the grid names qk_norm kinds,
sweeps.study.rules.STUDY_SEEDS seeds by default (4; at least MIN_SEEDS, 3), and the
sensitivity range of the preset's spec where it holds two of the new LRs (else the grid's
whole LR range), whose LRs must be log-uniform (a refusal names the nearest list that is). An
ad-hoc grid trains exactly the runs asked for: no extension or refinement.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from pathlib import Path

from sweeps.core.errors import ConfigError, HarnessError
from sweeps.run.backends import PROGRAMS
from sweeps.study.rules import MIN_SEEDS, STUDY_SEEDS
from sweeps.sweep.record import RECORD, Planned, base_raw, plan, record_raw, spec_note
from sweeps.sweep.spec import MAX_RUNS, SPECS_DIR, SweepSpec, known_specs
from sweeps.sweep.study_table import is_log_uniform, nearest_log_uniform

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SPEC_FILE = RECORD  # the record of the sweep (sweeps.sweep.record)
DEFAULT_SEEDS = STUDY_SEEDS  # the seed count the study's rules are proven for (STUDY.md 7)
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


def base_spec_raw(preset: str) -> dict:
    """The TOML of the preset's own spec (core-L12 -> core), {} when there is none."""
    base = re.sub(r"-L[0-9]+$", "", preset)
    path = SPECS_DIR / f"{base}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def adhoc_raw(
    name: str, preset: str, grid: dict[str, list], seeds: int = DEFAULT_SEEDS, command: str = ""
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
    inside = [x for x in lrs if low * (1 - 1e-9) <= x <= high * (1 + 1e-9)]
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
    inside = [x for x in lrs if low * (1 - 1e-9) <= x <= high * (1 + 1e-9)]
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


def adhoc_plan(
    runs_dir: str | Path,
    name: str,
    preset: str,
    grid_items,
    seeds: int,
    command: str,
    max_runs: int = MAX_RUNS,
    overrides=(),
    program: str = "qkmlx",
) -> Planned:
    """The ad-hoc grid's spec with its --set in [set], checked against the record in
    `<runs_dir>/NAME/spec.toml` (sweeps.sweep.record): the same command, or `sweep NAME`,
    resumes; another definition is refused while the folder holds finished runs."""
    if name in known_specs():
        raise HarnessError(f"--name {name} is a built-in spec; give the ad-hoc grid another name")
    raw = adhoc_raw(name, preset, parse_grid(grid_items), seeds, command)
    folder = Path(runs_dir) / name
    if (folder / "plan.json").exists() and record_raw(folder) is None:
        raise HarnessError(
            f"{folder} holds a sweep without a record ({SPEC_FILE}): not this ad-hoc grid; "
            f"choose another --name"
        )
    return plan(runs_dir, raw, overrides, max_runs, program, elsewhere="another --name")


def adhoc_spec(
    runs_dir: str | Path,
    name: str,
    preset: str,
    grid_items,
    seeds: int,
    command: str,
    write: bool,
    max_runs: int = MAX_RUNS,
    overrides=(),
) -> SweepSpec:
    """adhoc_plan's spec; write: its record written now (a sweep writes it with its plan)."""
    planned = adhoc_plan(runs_dir, name, preset, grid_items, seeds, command, max_runs, overrides)
    if write and planned.record is not None:
        from sweeps.core.files import write_atomic

        write_atomic(Path(runs_dir) / name / SPEC_FILE, planned.record)
    return planned.spec


def command_plan(name, preset, grid, seeds, sweep_name, runs_dir, max_runs, overrides, backend):
    """What the command plans (sweeps.sweep.record.Planned): the record of `sweep NAME` (or
    the spec NAME), or an ad-hoc grid (--preset, --grid, --name), with every --set in its
    [set]; refused where another definition's finished runs hold the folder."""
    program = PROGRAMS[backend]
    if preset or grid:
        if seeds is not None and any(g.split("=", 1)[0].strip() == "seed" for g in grid):
            raise HarnessError("give the seeds once: --seeds N or --grid seed=S1,S2,...")
        seeds = DEFAULT_SEEDS if seeds is None else seeds
        if not preset:
            raise HarnessError("--grid needs --preset: the preset the grid sweeps")
        if name and sweep_name and name != sweep_name:
            raise HarnessError(f"two names: NAME {name} and --name {sweep_name}; give one")
        target = sweep_name or name
        if not target:
            raise HarnessError("an ad-hoc grid needs --name NAME: its folder RUNS_DIR/NAME/")
        command = " ".join(
            [
                "sweep --preset",
                preset,
                *(f"--grid {g}" for g in grid),
                f"--seeds {seeds}",
                *(f"--set {o}" for o in overrides),
                f"--name {target}",
            ]
        )
        return adhoc_plan(
            runs_dir, target, preset, grid, seeds, command, max_runs, overrides, program
        )
    if seeds is not None:
        raise HarnessError(
            "--seeds sets the seeds of an ad-hoc grid (--preset, --grid); a "
            "spec's seeds are its [grid] seed list"
        )
    if sweep_name and not name:
        name = sweep_name
    if not name:
        raise HarnessError(
            "which sweep? give NAME (a spec: "
            + ", ".join(known_specs())
            + "), or an ad-hoc grid with --preset, --grid and --name"
        )
    planned = plan(runs_dir, base_raw(name, runs_dir, max_runs), overrides, max_runs, program)
    note = spec_note(name, runs_dir, program)
    return planned if note is None else dataclasses.replace(planned, notes=(*planned.notes, note))
