"""Issue 72, the first hour's third pass: no traceback, no self-contradiction, one source for
every price. Each test fails on the code before the issue's fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from sweeps.analysis.compute import analyze
from sweeps.analysis.results import load_curves, load_results
from sweeps.cli import make_cli
from sweeps.run.rundir import RunDir
from sweeps.sweep import record
from tests import figures_fakes as fakes

ROOT = Path(__file__).resolve().parent.parent


def invoke(*args, backend="torch"):
    from figures.cli import figures

    return CliRunner().invoke(make_cli(backend, [figures]), [str(a) for a in args])


def small_study(root: Path, name: str = "study", **kw) -> list:
    return fakes.write_study(root / name, name, depths=[2], **kw)


# -- 1: a summary.json whose numbers are not numbers is corrupt, in status and figures alike ---
def test_a_summary_with_a_non_numeric_loss_is_corrupt_not_a_traceback(tmp_path):
    cfgs = small_study(tmp_path)
    damaged = RunDir(tmp_path / "study" / cfgs[0].run_id)
    summary = json.loads(damaged.summary_path.read_text())
    damaged.summary_path.write_text(json.dumps({**summary, "final_val_loss": "abc"}))
    record = damaged.record()
    assert record.status == "corrupt"
    assert record.problem == 'summary.json\'s final_val_loss is not a number ("abc")'
    results = load_results(tmp_path / "study")  # raised ValueError before
    analysis = analyze(results, load_curves(results.runs))
    assert [(p.run_id, p.status) for p in analysis.problems] == [(cfgs[0].run_id, "corrupt")]
    status = invoke("status", "study", "--runs-dir", tmp_path)
    assert status.exit_code == 0, status.output
    assert "1 corrupt" in status.output and "final_val_loss is not a number" in status.output


# -- 2: a renamed sweep folder is that sweep under its new name --------------------------------
def test_a_renamed_sweep_folder_is_resumed_shown_and_checked_where_it_is(tmp_path):
    asked = ("smoke", ["train.lr=0.01,0.1,1"], 3, "sweep ... --name mine")
    record.adhoc_spec(tmp_path, "mine", *asked, write=True)
    (tmp_path / "mine").rename(tmp_path / "other")
    assert record.find_spec("other", tmp_path).name == "other"
    assert record.base_raw("other", tmp_path)["name"] == "other"
    status = invoke("status", "other", "--runs-dir", tmp_path)
    assert status.exit_code == 0, status.output
    assert status.output.startswith(f"sweep other ({tmp_path / 'other'}): 18 runs")
    dry = invoke("sweep", "other", "--dry-run", "--runs-dir", tmp_path)
    assert dry.exit_code == 0, dry.output
    assert f"sweep other: preset smoke, backend torch -> {tmp_path / 'other'}" in dry.output
    assert not (tmp_path / "mine").exists()


# -- 3: one seed that failed inside the grid is not 'no failure' -------------------------------
def one_seed_fails_at_the_top(arm, n_layer, lr, seed):
    base = fakes.ON_LOSS[lr] + 0.01 * seed + (0.004 if arm == "off" else 0.0)
    if arm == "off" and lr == fakes.LRS[-1] and seed == 1:
        return "diverged", None
    return "ok", base


def test_one_seed_failing_at_the_top_lr_is_said_in_the_report_the_rule_and_the_chart(tmp_path):
    from figures.charts.headline import _critical_rows
    from figures.report.opening import _failing
    from figures.words.practitioner import practitioner_rules

    small_study(tmp_path, outcome=one_seed_fails_at_the_top)
    results = load_results(tmp_path / "study")
    a = analyze(results, load_curves(results.runs))
    rung = a.depths["2"]
    assert rung.arms["off"].eta_crit.median.kind == "above"  # the median alone says no failure
    said = _failing(a, rung, ["off", "on"], [])
    assert "No arm's runs failed" not in said
    assert said.startswith(
        "Runs start to fail (critical LR, stuck): off > 0.1 (seed range 0.0548 to > 0.1), on > 0.1."
    )
    rule = practitioner_rules(a)["2"]
    assert "did not fail" not in rule
    assert "Without QK-norm runs failed in 1 of 3 seeds inside the grid (from LR 0.0548)" in rule
    _, labels = _critical_rows({}, rung, [], {})
    assert labels[0] == "off: 1 of 3 seeds fail inside the grid, the median above 0.1"
    assert "on: no failure up to 0.1" in labels


# -- 5: no silent or wrong advice --------------------------------------------------------------
def test_train_refuses_another_programs_backend_instead_of_training_with_it(tmp_path):
    result = invoke("train", "--set", "backend=mlx", "--out", tmp_path / "run")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Error: --set backend=mlx: qktorch trains with torch (the backend is the program's); "
        "run the same command with qkmlx instead, without this --set"
    )
    assert not (tmp_path / "run").exists()
    same = invoke("config", "show", "smoke", "--set", "backend=torch")
    assert same.exit_code == 0, same.output


def test_crosscheck_names_its_own_device_option_and_a_choice_it_accepts():
    import torch

    from crosscheck.cli import cli as crosscheck

    if torch.cuda.is_available():
        return  # the refusal needs a machine without CUDA
    result = CliRunner().invoke(crosscheck, ["--preset", "smoke", "--torch-device", "cuda"])
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: --torch-device cuda: not available here")
    assert line.endswith("; use --torch-device cpu") and "--device auto" not in line


def test_figures_of_an_unknown_name_suggests_a_command_that_works(tmp_path):
    (tmp_path / "runs").mkdir()
    result = invoke("figures", "nonexistent", "--runs-dir", tmp_path / "runs")
    assert result.exit_code == 2
    line = result.output.strip()
    assert "`qktorch sweep nonexistent`" not in line  # a command that fails: no such spec
    suggested = line.split("`")[1]
    assert suggested.startswith("qktorch sweep --preset smoke --grid ")
    dry = invoke(*suggested.split()[1:], "--dry-run", "--runs-dir", tmp_path / "runs")
    assert dry.exit_code == 0, dry.output


def test_an_unreachable_extension_names_the_default_factor_as_the_grids_ratio(tmp_path):
    spec = (ROOT / "sweeps/specs/smoke.toml").read_text()
    spec = spec.replace("lr = [1e-2, 3.16e-2, 0.1, 0.316, 1.0, 3.16]", "lr = [1e250, 3.16456e250]")
    spec = spec.replace("sensitivity_range = [1e-2, 1.0]", "sensitivity_range = [1e250, 3.2e250]")
    spec = spec.replace("max_extra_lrs = 2", "max_extra_lrs = 100").replace('"smoke"', '"bigx"', 1)
    (tmp_path / "bigx.toml").write_text(spec)
    result = invoke("sweep", tmp_path / "bigx.toml", "--dry-run", "--runs-dir", tmp_path)
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Error: spec 'bigx' [extend]: lr 3.16456e+250 x the grid's top LR ratio 3.165 (the "
        "default factor) ^ 100 is not a finite number; lower max_extra_lrs, or set a smaller "
        "[extend] factor"
    )


def test_the_seeds_help_does_not_promise_that_grid_seeds_lift_the_minimum(tmp_path):
    import re

    text = " ".join(invoke("sweep", "--help").output.split())
    seeds = re.search(r"--seeds INTEGER (.*?) --name", text).group(1)
    assert "unless" not in seeds and "at least 3 too" in seeds
    refused = invoke(
        "sweep",
        "--preset",
        "smoke",
        "--grid",
        "train.lr=0.01,0.1",
        "--grid",
        "seed=0,1",
        "--name",
        "two",
        "--dry-run",
        "--runs-dir",
        tmp_path,
    )
    assert refused.exit_code == 2 and "at least 3 distinct seeds" in refused.output


def test_another_sweeps_report_is_named_without_doubled_quotes(tmp_path):
    report = tmp_path / "report"
    shutil.copytree(ROOT / "docs/cpu-control", report)
    result = invoke("figures", "cpu-depth", "--from-report", report, "--runs-dir", tmp_path)
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"Error: {report} is sweep cpu-control's report, not cpu-depth's: give NAME cpu-control"
    )


def test_a_qkmlx_estimate_on_the_reference_blas_says_so_with_the_fix(monkeypatch):
    from sweeps.platform import blas
    from sweeps.sweep import estimate

    monkeypatch.setattr(blas, "preload_env", lambda environ=None: None)
    line = estimate._blas_line("mlx", "cpu")
    assert "slow reference BLAS" in line and "apt-get install libopenblas0-pthread" in line
    assert estimate._blas_line("torch", "cpu") is None
    monkeypatch.setattr(blas, "preload_env", lambda environ=None: {})
    assert estimate._blas_line("mlx", "cpu") is None


# -- 8: a report is rewritten only with --in-place ---------------------------------------------
def test_out_into_the_report_given_is_refused_and_the_report_kept(tmp_path):
    report = tmp_path / "cpu-control"
    shutil.copytree(ROOT / "docs/cpu-control", report)
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    result = invoke(
        "figures",
        "cpu-control",
        "--from-report",
        report,
        "--out",
        report,
        "--formats",
        "svg",
        "--runs-dir",
        tmp_path,
    )
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"Error: --out {report} is the report given with --from-report: a report is rewritten "
        "only with --in-place (and no --out); give another --out to write a copy"
    )
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before


# -- 6: status and figures agree about damaged runs --------------------------------------------
def test_a_finished_run_without_config_json_is_corrupt_in_figures_as_in_status(tmp_path):
    cfgs = small_study(tmp_path)
    lost = tmp_path / "study" / cfgs[0].run_id
    (lost / "config.json").unlink()
    status = invoke("status", "study", "--runs-dir", tmp_path)
    assert f"corrupt: {cfgs[0].run_id}: " in status.output
    results = load_results(tmp_path / "study")
    assert results.missing.empty  # not "not started"
    row = results.runs.set_index("run_id").loc[cfgs[0].run_id]
    assert row.status == "corrupt" and "config.json does not exist" in row.error
    # the plan's arm, depth, LR and seed, so the report's row names the run it meant
    assert (row.arm, row.n_layer, row.lr, row.seed) == ("off", 2, cfgs[0].train.lr, 0)
    analysis = analyze(results, load_curves(results.runs))
    assert [(p.status, p.lr) for p in analysis.problems] == [("corrupt", cfgs[0].train.lr)]


def test_a_best_lr_above_damaged_runs_is_not_called_the_lowest_lr_it_ran(tmp_path):
    from figures.words.practitioner import practitioner_rules

    cfgs = small_study(tmp_path)
    for cfg in cfgs:  # every off run at the two lowest LRs: a summary cut short
        if cfg.arm == "off" and cfg.train.lr in fakes.LRS[:2]:
            (tmp_path / "study" / cfg.run_id / "summary.json").write_text("{")
    results = load_results(tmp_path / "study")
    a = analyze(results, load_curves(results.runs))
    assert a.decisions.rules["2"].best_at_bottom  # the lowest LR with finished runs
    rule = practitioner_rules(a)["2"]
    assert "the lowest LR it ran" not in rule
    assert (
        "without QK-norm the best LR is 0.01, the lowest LR with finished runs (its runs at "
        "0.001 and 0.003 are left out: named in the report): its best may lie lower"
    ) in rule


def test_figures_reports_a_sweep_whose_plan_json_is_cut_from_its_record(tmp_path, capsys):
    def flat(arm, n_layer, lr, seed):
        return "ok", 2.0 + 0.01 * seed + (0.004 if arm == "off" else 0.0)

    lrs = [1e-3, 3.16e-3, 1e-2]  # log-uniform, so the record reads as a spec
    small_study(tmp_path, lrs=lrs, outcome=flat, study={"sensitivity_range": [1e-3, 1e-2]})
    folder = tmp_path / "study"
    plan = json.loads((folder / "plan.json").read_text())
    grid = {**plan["spec"]["grid"], "n_layer": [2], "seed": fakes.SEEDS}  # as a sweep records
    fixed = {  # what figures_fakes.config sets on every run
        "train.max_steps": 30,
        "train.warmup_steps": 5,
        "train.eval_interval": 10,
        "train.baseline": "bigram",
    }
    spec = {**plan["spec"], "grid": grid, "set": fixed, "extend": {"max_extra_lrs": 0}}
    (folder / "spec.toml").write_text(record.to_toml(spec))
    intact = load_results(folder)
    (folder / "plan.json").write_text((folder / "plan.json").read_text()[:500])
    status = invoke("status", "study", "--runs-dir", tmp_path)
    assert status.exit_code == 0, status.output  # status copes, as before
    cut = load_results(folder)  # refused before: plan.json is not valid JSON
    assert "plan.json is not valid JSON" in capsys.readouterr().err
    for key in ("delta", "sensitivity_range", "target_loss", "reference", "primary"):
        assert cut.spec["study"][key] == intact.spec["study"][key], key
    assert set(cut.configs) == set(intact.configs)
    assert cut.missing.empty and len(cut.runs) == len(intact.runs)


# -- 7: charts ---------------------------------------------------------------------------------
def diverged_at_once(root: Path) -> str:
    """A study whose off run at the top LR, seed 1, diverged at step 4, before its first
    evaluation after the start (the fixture evaluates every 10 steps): its only attention
    diagnostics are its starting ones."""
    cfgs = small_study(root, outcome=one_seed_fails_at_the_top)
    cfg = next(c for c in cfgs if c.arm == "off" and c.train.lr == fakes.LRS[-1] and c.seed == 1)
    run = RunDir(root / "study" / cfg.run_id)
    rows = [json.loads(line) for line in run.metrics_path.read_text().splitlines()][:5]
    run.metrics_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = json.loads(run.summary_path.read_text())
    summary.update(steps_run=4, diverged_at=4, metrics=run.metrics_fingerprint())
    run.summary_path.write_text(json.dumps(summary))
    return cfg.run_id


def test_a_run_that_diverged_before_its_first_evaluation_is_named_not_drawn_at_its_start(
    tmp_path,
):
    from figures.charts.output import spec_of
    from figures.report.figure_set import figure_set
    from figures.report.tables import early_warning

    diverged_at_once(tmp_path)
    results = load_results(tmp_path / "study")
    curves = load_curves(results.runs)
    a = analyze(results, curves)
    chart = figure_set(a, curves)["attention_vs_lr"][1]
    spec = spec_of(chart)
    runs = [r for rows in spec["datasets"].values() for r in rows if r.get("kind") == "run"]
    assert len(runs) == 29 and all(r["step"] > 0 for r in runs)  # 30 finished, one not drawn
    subtitle = (spec.get("title") or {}).get("subtitle", [])
    assert (
        "not drawn: 1 run that diverged before its first evaluation after the start (no "
        "attention measured while training)"
    ) in subtitle
    table = early_warning(a)
    counted = "0 / 14 (+1 stopped before it: no early value)"
    assert f"| 2 | off | max attention logit | n/a (one class) | {counted} |" in table
    assert "| 2 | on | max attention logit | n/a (one class) | 0 / 15 |" in table


def test_an_svgs_bytes_do_not_depend_on_what_rendered_before_it(tmp_path):
    from figures.charts.output import RENDERERS, spec_of
    from figures.report.figure_set import figure_set

    small_study(tmp_path)
    results = load_results(tmp_path / "study")
    curves = load_curves(results.runs)
    chart = figure_set(analyze(results, curves), curves)["necessity_map"][1]
    spec = spec_of(chart)
    first = RENDERERS["svg"](spec, "necessity_map")
    RENDERERS["png"](spec, "necessity_map")  # a PNG between: the renderer's ids move on
    assert 'id="gradient_0"' in first
    assert RENDERERS["svg"](spec, "necessity_map") == first


def test_a_cpu_estimate_names_the_load_it_was_timed_under_even_when_idle():
    from sweeps.core.presets import get_preset
    from sweeps.sweep import estimate

    cfg = get_preset("smoke")
    probe = estimate.Measurement(
        cfg, "cpu", "x", step_s=0.1, eval_s=0.05, startup_s=0, steps=2, load=0.1, cpus=2
    )
    assert not probe.busy
    assert estimate._machine_line(probe) == (
        "  machine load average 0.10 on 2 CPU(s) before the probe: the range holds while the "
        "cores stay this free; other work on them during the sweep makes it slower"
    )
    busy = estimate.Measurement(
        cfg, "cpu", "x", step_s=0.1, eval_s=0.05, startup_s=0, steps=2, load=2.0, cpus=2
    )
    assert estimate._machine_line(busy).startswith("  machine busy: load average 2.00")
    gpu = estimate.Measurement(cfg, "cuda", "x", step_s=0.1, eval_s=0.05, startup_s=0, steps=2)
    assert estimate._machine_line(gpu) is None
