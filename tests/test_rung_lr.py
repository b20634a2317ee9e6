"""[rung_lr]: a rung of a ladder on an LR subset of the grid (sweeps/sweep/spec.py).

Planning and counting from specs made as data (no training), the refusals, the recorded forms
of specs with and without the table, and one real sweep of 30 runs of 8 steps with its report.
"""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.errors import ConfigError
from sweeps.sweep import record
from sweeps.sweep.grid import max_extra_runs
from sweeps.sweep.record import to_toml
from sweeps.sweep.spec import known_specs, load_spec, parse_spec

GRID = [0.01, 0.0316, 0.1, 0.316, 1.0]
SUBSET = [0.01, 0.1, 0.316, 1.0]  # depth 1 skips 0.0316
WARM = [0.01, 0.0316]  # the arm with its own LR subset


def raw_spec(lr=GRID, n_layer=(1, 2), rung_lr=None, warm=True, **extend) -> dict:
    raw = {
        "name": "rl",
        "preset": "smoke",
        "grid": {"lr": list(lr), "n_layer": list(n_layer), "seed": [0, 1, 2]},
        "arms": {
            "off": {"set": {"model.qk_norm": "none"}},
            "on": {"set": {"model.qk_norm": "rms"}},
        },
        "study": {"delta": 0.25, "sensitivity_range": [0.1, 1.0], "target_loss": 3.5},
        "extend": {"factor": 3.16, "max_extra_lrs": 1, **extend},
    }
    if warm:
        raw["arms"]["warm"] = {
            "set": {"model.qk_norm": "none", "model.qk_init": "matched"},
            "lr": list(WARM),
        }
    if rung_lr is not None:
        raw["rung_lr"] = rung_lr
    return raw


def planned(spec, lrs=None) -> set:
    return {(c.arm, c.model.n_layer, c.train.lr, c.seed) for c in spec.configs("torch", lrs=lrs)}


def points(spec, lrs=None) -> dict:
    """(arm, depth) -> the LRs planned there."""
    out: dict = {}
    for arm, depth, lr, _ in planned(spec, lrs):
        out.setdefault((arm, depth), set()).add(lr)
    return {k: sorted(v) for k, v in out.items()}


# -- planning --------------------------------------------------------------------------------
def test_a_listed_rung_trains_its_subset_and_the_others_the_whole_grid():
    spec = parse_spec(raw_spec(rung_lr={"1": SUBSET}))
    assert spec.rung_lr == {1: tuple(SUBSET)}
    got = points(spec)
    assert got[("off", 1)] == got[("on", 1)] == SUBSET
    assert got[("off", 2)] == got[("on", 2)] == GRID
    # an arm's own subset meets the rung's: 0.0316 is in neither depth 1's subset
    assert got[("warm", 1)] == [0.01] and got[("warm", 2)] == WARM
    # every seed of every point, and the count before a config is built matches the plan
    assert spec.grid_runs == len(spec.configs("torch")) == (4 + 4 + 1 + 5 + 5 + 2) * 3
    whole = parse_spec(raw_spec())
    assert whole.grid_runs == len(whole.configs("torch")) == (5 + 5 + 2) * 2 * 3
    assert planned(spec) < planned(whole)  # the same runs (run ids) where the rung keeps an LR


def test_extra_lrs_grow_every_rung_for_the_full_grid_arms():
    spec = parse_spec(raw_spec(rung_lr={"1": SUBSET}))
    got = points(spec, lrs={1: [3.16, 0.0316], 2: [3.16]})
    # a grown LR is planned at its rung even where the rung's subset left out that grid LR
    assert got[("off", 1)] == got[("on", 1)] == sorted([*SUBSET, 0.0316, 3.16])
    assert got[("off", 2)] == got[("on", 2)] == [*GRID, 3.16]
    assert got[("warm", 1)] == [0.01] and got[("warm", 2)] == WARM  # subset arms never grow


def test_a_width_ladders_rungs_are_its_widths():
    raw = raw_spec(warm=False, rung_lr={"64": [0.1, 1.0]})
    raw["grid"].pop("n_layer")
    raw["grid"]["n_embd"] = [32, 64]
    spec = parse_spec(raw)
    widths = {}
    for c in spec.configs("torch"):
        widths.setdefault(c.model.n_embd, set()).add(c.train.lr)
    assert widths == {32: set(GRID), 64: {0.1, 1.0}}
    assert spec.grid_runs == len(spec.configs("torch")) == (5 + 2) * 2 * 3


def test_growth_and_the_size_cap_count_each_rungs_own_lrs():
    refine = {"refine": True, "resolution": 0.125}
    alone = max_extra_runs(parse_spec(raw_spec(lr=SUBSET, n_layer=[1], warm=False, **refine)))
    full = max_extra_runs(parse_spec(raw_spec(n_layer=[2], warm=False, **refine)))
    spec = parse_spec(raw_spec(rung_lr={"1": SUBSET}, warm=False, **refine))
    # depth 1's decade gap needs more bisections than the grid's half decades
    assert alone > full and max_extra_runs(spec) == alone + full
    runs = (4 + 4 + 1 + 5 + 5 + 2) * 3  # with the warm arm: 63
    assert parse_spec(raw_spec(rung_lr={"1": SUBSET}), max_runs=runs).grid_runs == runs
    with pytest.raises(ConfigError) as refused:
        parse_spec(raw_spec(rung_lr={"1": SUBSET}), max_runs=runs - 1)
    assert (
        "plans up to 63 runs (21 arm-LR points over 2 depth(s) ([rung_lr] subsets) x 3 seed(s) "
        "= 63), more than the cap of 62" in str(refused.value)
    )


def invoke(*args):
    from figures.cli import figures

    return CliRunner().invoke(make_cli("torch", [figures]), [str(a) for a in args])


def write_spec(path, raw) -> str:
    path.write_text(to_toml(raw))
    return str(path)


def test_the_dry_run_counts_and_names_the_subsets(tmp_path):
    spec = write_spec(tmp_path / "rl.toml", raw_spec(rung_lr={"1": SUBSET}))
    dry = invoke("sweep", spec, "--runs-dir", tmp_path / "runs", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "x n_layer 1, 2 x seed 0, 1, 2 = 63 runs" in dry.output
    assert "  [rung_lr]: L1 lr 0.01, 0.1, 0.316, 1 (the other rungs: the whole grid)" in dry.output
    assert "total: 63 runs" in dry.output and "63 to run" in dry.output


# -- refusals ---------------------------------------------------------------------------------
REFUSALS = [
    (3, '[rung_lr]: give a table of depth = [grid LRs], e.g. "1" = [0.316, 1] (got 3)'),
    ({"x": [0.1]}, '[rung_lr]: key "x" is not a depth; keys are [grid] n_layer values'),
    ({"1.5": [0.1]}, '[rung_lr]: key "1.5" is not a depth'),
    ({"4": [0.1]}, '[rung_lr]: "4" is not a depth of the grid (n_layer [1, 2]); list only rungs'),
    ({"1": []}, '[rung_lr]: "1" is an empty list; give the LRs that depth trains, or drop'),
    ({"1": [0.5]}, "[rung_lr]: \"1\" lr [0.5] is not in the grid's lr list; a depth's LR subset"),
    ({"1": [1.0, 0.1]}, '[rung_lr]: "1" must be strictly increasing (got [1.0, 0.1])'),
    ({"1": [0.1, 0.1]}, '[rung_lr]: "1" has duplicates (got [0.1, 0.1])'),
    ({"1": 0.1}, '[rung_lr]: "1" must be a non-empty list (got 0.1)'),
    ({"1": {"lr": [0.1]}}, '[rung_lr]: "1" must be a non-empty list'),
    ({"1": [-0.1]}, '[rung_lr]: every "1" must be a positive number'),
]


@pytest.mark.parametrize("table, message", REFUSALS)
def test_a_bad_rung_lr_is_refused_in_one_line(table, message):
    with pytest.raises(ConfigError) as refused:
        parse_spec(raw_spec(rung_lr=table))
    text = str(refused.value)
    assert text.startswith("spec 'rl' [rung_lr]") and message in text and "\n" not in text


def test_rung_lr_needs_the_grid_to_list_its_rungs():
    raw = raw_spec(rung_lr={"2": [0.1, 1.0]})
    raw["grid"].pop("n_layer")  # the preset's depth
    with pytest.raises(ConfigError, match=r"the grid leaves the depth to the preset; list the"):
        parse_spec(raw)
    width = raw_spec(warm=False, rung_lr={"2": [0.1]})
    width["grid"]["n_layer"], width["grid"]["n_embd"] = [2], [32, 64]
    with pytest.raises(ConfigError, match=r'"2" is not a width of the grid \(n_embd \[32, 64\]\)'):
        parse_spec(width)


def test_the_arm_subset_refusal_is_worded_as_before():
    raw = raw_spec()
    raw["arms"]["warm"]["lr"] = [0.01, 0.5]
    with pytest.raises(ConfigError) as refused:
        parse_spec(raw)
    assert str(refused.value) == (
        "spec 'rl' [arms.warm]: lr [0.5] is not in the grid's lr list; an arm's LR subset must "
        "be grid LRs"
    )


def test_the_command_refuses_a_bad_spec_file_in_one_line(tmp_path):
    spec = write_spec(tmp_path / "rl.toml", raw_spec(rung_lr={"3": [0.1]}))
    result = invoke("sweep", spec, "--runs-dir", tmp_path / "runs", "--dry-run")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and result.output.strip().endswith(errors[0])  # one line, last
    assert '[rung_lr]: "3" is not a depth of the grid (n_layer [1, 2])' in errors[0]


# -- recorded forms ---------------------------------------------------------------------------
OLD_KEYS = {"name", "preset", "description", "grid", "arms", "set", "study", "extend"}


# cpu-depth grew by three rungs on a [rung_lr] subset (docs/STUDY.md section 14)
WITH_RUNG_LR = {"cpu-depth"}


@pytest.mark.parametrize("name", [n for n in known_specs() if n not in WITH_RUNG_LR])
def test_a_spec_without_rung_lr_records_what_it_recorded_before(name):
    spec = load_spec(name)
    d = spec.to_dict()
    assert spec.rung_lr == {} and "rung_lr" not in d
    assert set(d) - {"token_check", "budget", "order"} == OLD_KEYS  # budget: section 18
    assert not any(key.startswith("[rung_lr]") for key in record.definition(spec))
    assert spec.grid_runs == len(spec.configs("torch"))


def test_the_grown_depth_ladder_keeps_every_committed_run_and_adds_three_subset_rungs():
    spec = load_spec("cpu-depth")
    assert set(spec.rung_lr) == {1, 3, 6} and spec.n_layer == (1, 2, 3, 4, 6, 8)
    old = {c.run_id for c in spec.configs("torch") if c.model.n_layer in (2, 4, 8)}
    assert len(old) == 8 * 2 * 4 * 3  # the committed base grid, every run id unchanged
    import pandas as pd

    committed = pd.read_parquet(Path(__file__).resolve().parents[1] / "docs/cpu-depth/runs.parquet")
    on_grid = committed[committed.lr.isin(spec.lr) & committed.n_layer.isin([2, 4, 8])]
    assert len(on_grid) == len(old) and set(on_grid.run_id) == old
    new = [c for c in spec.configs("torch") if c.model.n_layer in spec.rung_lr]
    assert len(new) == 6 * 2 * 4 * 3 and min(c.train.lr for c in new) == 3.16e-3
    # the grown report holds every planned new-rung run, and no new-rung run below the subset
    grown = committed[committed.n_layer.isin(list(spec.rung_lr))]
    assert {c.run_id for c in new} <= set(grown.run_id) and grown.lr.min() == 3.16e-3


def test_rung_lr_is_recorded_and_reads_back_as_the_same_plan(tmp_path):
    raw = raw_spec(rung_lr={"1": SUBSET})
    spec = parse_spec(raw)
    d = spec.to_dict()
    assert d["rung_lr"] == {"1": SUBSET}
    # plan.json's form (a folder without spec.toml reads its plan's spec back as a spec)
    again = parse_spec(json.loads(json.dumps(d)))
    assert again.rung_lr == spec.rung_lr and planned(again) == planned(spec)
    # the record spec.toml
    text = record.plan(tmp_path, raw).record
    assert "[rung_lr]\n1 = [0.01, 0.1, 0.316, 1.0]" in text
    (tmp_path / "spec.toml").write_text(text)
    assert planned(parse_spec(record.read_raw(tmp_path / "spec.toml"))) == planned(spec)


def test_a_changed_rung_lr_is_another_definition():
    whole, subset = parse_spec(raw_spec()), parse_spec(raw_spec(rung_lr={"1": SUBSET}))
    assert record.differences(whole, whole) == []
    assert record.differences(whole, subset) == [
        "[rung_lr] 1 unset in the record, [0.01, 0.1, 0.316, 1] here"
    ]
    other = parse_spec(raw_spec(rung_lr={"1": [0.1, 1.0]}))
    assert record.differences(subset, other) == [
        "[rung_lr] 1 [0.01, 0.1, 0.316, 1] in the record, [0.1, 1] here"
    ]


# -- one real sweep and its report ------------------------------------------------------------
FAST = [
    "data.builtin_stories=300",
    "train.max_steps=8",
    "train.warmup_steps=2",
    "train.eval_interval=4",
    "train.checkpoint_interval=4",
]


@pytest.mark.slow
def test_a_sweep_with_a_subset_rung_runs_resumes_and_reports_exactly_its_plan(tmp_path):
    raw = raw_spec(lr=[0.1, 1.0, 3.16], warm=False, rung_lr={"1": [1.0, 3.16]})
    raw["extend"] = {"max_extra_lrs": 0}
    spec = write_spec(tmp_path / "rl.toml", raw)
    runs = tmp_path / "runs"
    sets = [a for o in FAST for a in ("--set", o)]
    swept = invoke("sweep", spec, "--runs-dir", runs, "--device", "cpu", *sets)
    assert swept.exit_code == 0, swept.output
    folder = runs / "rl"
    plan = json.loads((folder / "plan.json").read_text())
    assert plan["spec"]["rung_lr"] == {"1": [1.0, 3.16]} and len(plan["runs"]) == 30
    trained = {p.name for p in folder.glob("torch-*")}
    assert len(trained) == 30 and not any("-L1-lr0.1-" in r for r in trained)
    again = invoke("sweep", "rl", "--runs-dir", runs, "--device", "cpu")
    assert again.exit_code == 0 and "nothing to run" in again.output, again.output
    report = invoke("figures", "rl", "--runs-dir", runs, "--formats", "vl.json")
    assert report.exit_code == 0, report.output
    analysis = json.loads((folder / "report" / "analysis.json").read_text())
    ran = {(r["n_layer"], r["lr"]) for r in analysis["runs"]}
    assert len(analysis["runs"]) == 30
    assert ran == {(1, 1.0), (1, 3.16), (2, 0.1), (2, 1.0), (2, 3.16)}
    text = (folder / "report" / "report.md").read_text()
    assert "| ok | unstable | diverged | failed | incomplete | corrupt | missing | total |" in text
    counts = text.split("| total |\n|---|---|---|---|---|---|---|---|\n")[1].split("\n")[0]
    assert counts.endswith("| 0 | 30 |")  # no run missing, 30 in all
    # a report grows only from a sweep planned as it was: another [rung_lr] is refused
    other = tmp_path / "other"
    shutil.copytree(folder, other / "rl", ignore=shutil.ignore_patterns("report"))
    plan["spec"]["rung_lr"] = {"1": [3.16]}
    (other / "rl" / "plan.json").write_text(json.dumps(plan))
    grown = invoke(
        "figures", "rl", "--runs-dir", other, "--from-report", folder / "report", "--add-runs"
    )
    assert grown.exit_code == 2 and "whose rung_lr differ from the report's" in grown.output
