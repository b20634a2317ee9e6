"""The record of a sweep, `<runs-dir>/NAME/spec.toml`: read, set against what a command asks
for, and written (as TOML text) beside the runs and plan.json.

A named sweep is one thing: its record, the complete spec its runs were planned from. A
built-in spec's sweep and an ad-hoc grid alike: the spec (or the grid the command stands for)
with every `--set` of the command merged into its `[set]`, so the record alone plans the same
runs (seeds, arms and extension are in it too; the backend is in each run id, and plan.json
records the last sweep's backend and device choices).

- Written by the first sweep command that runs in the folder (a dry run writes nothing),
  rewritten only when it changes (below).
- `sweep NAME`, `status NAME`, `figures NAME` and `crosscheck --sweep NAME` read it before
  sweeps/specs/NAME.toml: what ran is what resumes, is shown and is checked.
- A command asks for a definition: `sweep NAME` the record (or, without one, the spec), with
  its own `--set` merged in; an ad-hoc command its grid with its `--set`. Where that would plan
  other runs than the record (another preset, grid, arm, extension or resolved base config)
  and the folder holds finished runs, it is refused in one line naming the difference (exit
  2): nothing is ever planned beside finished runs of another definition. Without finished
  runs the new definition replaces the record, and says so. The study's analysis settings
  ([study]) are not part of the comparison: an ad-hoc grid takes them from its preset's spec
  when it starts, and a later edit of that spec does not change a sweep under way.
- An ad-hoc grid (`sweep --preset P --grid ... --name NAME`) is recorded as the spec it stands
  for (sweeps.sweep.spec.adhoc_raw), so the same command, or `sweep NAME`, resumes it.
- A folder written before records: the spec its plan.json holds is its record, and the
  "overrides" that plan.json kept apart from the spec are part of it (written as spec.toml
  by the next sweep).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from sweeps.core.errors import ConfigError, HarnessError
from sweeps.core.files import write_atomic
from sweeps.sweep.spec import (
    MAX_RUNS,
    SPECS_DIR,
    SweepSpec,
    adhoc_raw,
    corpus_target,
    flatten,
    known_specs,
    load_spec,
    parse_grid,
    parse_spec,
    toml_key,
    toml_value,
)
from sweeps.sweep.sweepdir import RECORD

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHOWN_DIFFERENCES = 6  # a refusal names this many differences, then counts the rest


@dataclasses.dataclass(frozen=True)
class Planned:
    """The spec a sweep command plans, the record text to write with its plan (None: the
    record on disk is already this spec) and one-line notes for the terminal."""

    spec: SweepSpec
    record: str | None
    notes: tuple[str, ...] = ()


def record_path(runs_dir: str | Path, name: str) -> Path:
    return Path(runs_dir) / name / RECORD


def read_raw(path: Path) -> dict:
    """A spec file as TOML data, refused in one line when it is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path} is not a valid spec ({e}); {_fix(path)}") from None


def _fix(path: Path) -> str:
    return f"restore it, or delete it to plan the sweep from the command again (it is {path})"


def record_raw(folder: Path) -> dict | None:
    """The record of the sweep in `folder` as TOML data, None when there is none: spec.toml,
    or in a folder written before records, the spec its plan.json holds (when it still
    reads as a spec); either with the "overrides" of such a plan.json merged in. Its name is
    the folder's: a sweep's folder renamed is that sweep under its new name, resumed, shown
    and reported there (never a new folder of the old name beside it)."""
    path = folder / RECORD
    if path.is_file():
        raw = read_raw(path)
    else:
        raw = _plan(folder).get("spec")
        if not isinstance(raw, dict):
            return None
        raw = {k: v for k, v in raw.items() if v is not None}
        try:
            parse_spec(raw, default_name=folder.name)
        except (ConfigError, TypeError, AttributeError, ValueError):
            return None  # a plan too old to read back: the command's definition is used
    raw = {**raw, "name": folder.name}
    legacy = _plan_overrides(folder)
    return with_sets(raw, legacy) if legacy else raw


def _plan(folder: Path) -> dict:
    try:
        plan = json.loads((folder / "plan.json").read_text())
    except (OSError, ValueError):
        return {}
    return plan if isinstance(plan, dict) else {}


def _plan_overrides(folder: Path) -> list[str]:
    overrides = _plan(folder).get("overrides")
    return [str(o) for o in overrides] if isinstance(overrides, list) else []


def with_sets(raw: dict, overrides) -> dict:
    """raw with each `--set KEY=VALUE` merged into its [set], typed as the config field (so
    the record reads `"train.max_steps" = 300`); refused in the words of --set where the
    sweep fixes the field (its grid, arms or backend) or the value is not valid."""
    overrides = list(overrides)
    if not overrides:
        return raw
    spec = parse_spec(raw, default_name=raw.get("name", "sweep"))
    base = spec.base_config("torch", overrides)  # refuses a swept field or a bad value
    merged = dict(flatten(raw.get("set", {})))
    for item in overrides:
        key = item.split("=", 1)[0].strip()
        merged[key] = _typed(base, key, item.split("=", 1)[1].strip())
    return {**raw, "set": merged}


def _typed(cfg, key: str, text: str):
    """The value `key` has in cfg, when TOML can hold it; else the text as given."""
    value = cfg
    for part in key.split("."):
        value = getattr(value, part)
    ok = isinstance(value, (bool, int, float, str))
    return value if ok else text


def load_record(folder: Path, max_runs: int = MAX_RUNS) -> SweepSpec | None:
    raw = record_raw(folder)
    if raw is None:
        return None
    try:
        return parse_spec(raw, default_name=folder.name, max_runs=max_runs)
    except ConfigError as e:
        raise ConfigError(f"{e} (in {folder / RECORD}; {_fix(folder / RECORD)})") from None


def find_spec(name: str, runs_dir: str | Path, max_runs: int = MAX_RUNS) -> SweepSpec:
    """The spec `sweep NAME`, `status NAME`, `figures NAME` and `crosscheck --sweep NAME`
    mean: the record in `<runs_dir>/NAME/` first, else sweeps/specs/NAME.toml, else a path to
    a .toml file."""
    if not name.endswith(".toml"):
        held = load_record(Path(runs_dir) / name, max_runs)
        if held is not None:
            return held
        if name not in known_specs():
            raise HarnessError(
                f"unknown sweep '{name}': no {record_path(runs_dir, name)} (a sweep that ran "
                f"there, or an ad-hoc grid) and no spec of that name (known specs: "
                f"{', '.join(known_specs())}); check --runs-dir, or give a path to a .toml file"
            )
    return load_spec(name, max_runs)


def base_raw(name: str, runs_dir: str | Path, max_runs: int = MAX_RUNS) -> dict:
    """What `sweep NAME` asks for before its --set: the record, else the spec NAME (or path).
    max_runs: the command's --max-runs, so a spec past the default cap loads when it is raised."""
    if not name.endswith(".toml"):
        held = record_raw(Path(runs_dir) / name)
        if held is not None:
            return held
    spec_path = Path(name) if name.endswith(".toml") else None
    load_spec(name, max_runs)  # the one-line refusal of an unknown name, a bad file or a bad spec
    if spec_path is None:
        spec_path = SPECS_DIR / f"{name}.toml"
    raw = read_raw(spec_path)
    return {**raw, "name": raw.get("name", spec_path.stem)}


# -- what defines a sweep's runs ------------------------------------------------------------
def definition(spec: SweepSpec) -> dict:
    """Everything that decides which runs a spec plans, flat: its preset, grid, arms,
    extension, [rung_lr] and [budget], and its base config (preset + [set], resolved: `--set
    train.max_steps=300` and a [set] entry of 300 are the same). Not its name, description or
    [study]."""
    d = spec.to_dict()
    flat = {"preset": d["preset"]}
    # [rung_lr] and [budget] only where a spec has them
    for table in ("grid", "arms", "extend", "rung_lr", "budget"):
        flat.update({f"[{table}] {k}": v for k, v in flatten(d.get(table, {})).items()})
    base = spec.base_config("torch").to_dict()
    base.pop("backend", None)
    base.pop("arm", None)
    flat.update(flatten(base))
    return flat


def differences(held: SweepSpec, asked: SweepSpec, where=("in the record", "here")) -> list[str]:
    """What `asked` plans differently from `held`, one phrase each ('train.max_steps 300 in
    the record, 1200 here'; `where` names the two)."""
    a, b = definition(held), definition(asked)
    return [
        f"{key} {_shown(a.get(key))} {where[0]}, {_shown(b.get(key))} {where[1]}"
        for key in sorted(set(a) | set(b), key=lambda k: (k.startswith("["), k))
        if a.get(key) != b.get(key)
    ]


def _shown(value) -> str:
    if value is None:
        return "unset"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def named(diffs: list[str]) -> str:
    more = len(diffs) - SHOWN_DIFFERENCES
    return "; ".join(diffs[:SHOWN_DIFFERENCES]) + (f" (and {more} more)" if more > 0 else "")


def finished_runs(folder: Path) -> int:
    """Run directories in `folder` with a summary.json (finished: ok, unstable, diverged or
    failed), of any backend."""
    if not folder.is_dir():
        return 0
    return sum((child / "summary.json").is_file() for child in folder.iterdir())


def plan(
    runs_dir: str | Path,
    raw: dict,
    overrides=(),
    max_runs: int = MAX_RUNS,
    program: str = "qkmlx",
    elsewhere: str = "another --runs-dir",
) -> Planned:
    """The spec a sweep command plans in `<runs_dir>/<name>/`: raw (the record, a spec or an
    ad-hoc grid as TOML data) with the command's --set merged into [set], checked against the
    folder's record (module doc). elsewhere: where the refusal sends a new definition
    ('another --name' for an ad-hoc grid)."""
    asked_raw = with_sets(raw, overrides)
    asked = parse_spec(asked_raw, default_name=raw.get("name", "sweep"), max_runs=max_runs)
    folder = Path(runs_dir) / asked.name
    text = _text(asked.name, asked_raw)
    held = load_record(folder, max_runs)
    if held is None:
        return Planned(asked, text)
    diffs = differences(held, asked)
    if not diffs:  # the record as written: its [study] as the sweep started
        legacy = _plan_overrides(folder) or not (folder / RECORD).is_file()
        return Planned(held, _text(held.name, record_raw(folder)) if legacy else None)
    done = finished_runs(folder)
    if done:
        raise HarnessError(
            f"{folder} holds {done} finished run(s) of another definition: {named(diffs)}; "
            f"resume them with `{program} sweep {asked.name}` (its {RECORD} records the "
            f"rest), or plan this one in {elsewhere}"
        )
    return Planned(
        asked,
        text,
        (f"note: {folder / RECORD} replaced (no run had finished): {named(diffs)}",),
    )


def _text(name: str, raw: dict) -> str:
    head = f"# the record of sweep {name}: what `sweep {name}` resumes (sweeps/sweep/record.py)"
    return head + "\n" + to_toml(raw)


def spec_note(name: str, runs_dir: str | Path, program: str) -> str | None:
    """One line when `sweep NAME` resumes a record that differs from sweeps/specs/NAME.toml
    (a --set of the command that started it, or the spec edited since); None otherwise."""
    folder = Path(runs_dir) / name
    if name not in known_specs() or not (folder / RECORD).is_file():
        return None
    held = load_record(folder)
    diffs = differences(load_spec(name), held, ("in the spec", "in the record"))
    if not diffs:
        return None
    return (
        f"note: resuming {folder / RECORD}, the sweep as it started, which differs from "
        f"sweeps/specs/{name}.toml: "
        + named(diffs)
        + f" (the spec as it is now: `{program} sweep {name} --runs-dir ANOTHER_DIR`)"
    )


# -- an ad-hoc grid's record ------------------------------------------------------------------
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
    raw = corpus_target(
        with_sets(adhoc_raw(name, preset, parse_grid(grid_items), seeds, command), overrides)
    )
    folder = Path(runs_dir) / name
    if (folder / "plan.json").exists() and record_raw(folder) is None:
        raise HarnessError(
            f"{folder} holds a sweep without a record ({RECORD}): not this ad-hoc grid; "
            f"choose another --name"
        )
    return plan(runs_dir, raw, overrides, max_runs, program, elsewhere="another --name")


def adhoc_spec(runs_dir: str | Path, name: str, *asked, write: bool, **options) -> SweepSpec:
    """adhoc_plan(runs_dir, name, *asked, **options)'s spec; write: its record written now (a
    sweep writes it with its plan)."""
    planned = adhoc_plan(runs_dir, name, *asked, **options)
    if write and planned.record is not None:
        write_atomic(Path(runs_dir) / name / RECORD, planned.record)
    return planned.spec


# -- writing the record ------------------------------------------------------------------------
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
        lines += ["", f"[{'.'.join(toml_key(p) for p in path)}]"]
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in plain.items()]
    for key, value in tables.items():
        _table(value, [*path, key], lines)


def _is_table(value: dict, path: list[str]) -> bool:
    """A dict written as a [table]: every top-level section ([set], [grid]), and below them
    one that holds a dict ([arms.off]); a dict of plain values below them is inline."""
    return not path or any(isinstance(v, dict) for v in value.values())
