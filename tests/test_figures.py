"""figures/: metrics with known answers, verdict edges, and the report from hand-made runs.

The study fixture (tests/figures_fakes.py) has a flat QK-norm-on arm and an off arm that is
0.4 nats worse at a depth-dependent threshold LR (3e-2, 1e-2, 3e-3 at n_layer 2, 4, 8) and
diverges above it, three seeds 0.01 nats apart. Reports render once per module (PNG export
is the slow part).
"""
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import figures_fakes as ff
from figures import metrics
from figures.report import make_report
from figures.results import load_curves, load_results
from figures.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, judge
from sweeps.errors import HarnessError
from sweeps.files import write_json_atomic

CHARTS = ["final_loss_vs_lr", "stability_vs_depth", "lr_sensitivity", "training_curves",
          "attention", "residual_kurtosis"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "study"
    ff.write_study(root, steps=30)  # short curves: cheaper PNGs, same answers
    return root


@pytest.fixture(scope="module")
def report(study):
    return make_report(study)


@pytest.fixture(scope="module")
def runs(study):
    return load_results(study).runs


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    """One depth, three arms (off, rms, layernorm), 3 LRs, 1 seed; one planned run missing,
    one failed, one unfinished; a crosscheck that passed."""
    root = tmp_path_factory.mktemp("runs") / "messy"
    cfgs = [ff.config(qk, 2, lr, 0) for qk in ("none", "rms", "layernorm")
            for lr in (1e-3, 1e-2, 1e-1)]
    for i, cfg in enumerate(cfgs):
        if i == 1:
            continue  # planned, never started
        status = {2: "failed", 4: None}.get(i, "diverged" if i == 8 else "ok")
        ff.write_run(root, cfg, status, 2.0 + 0.1 * i if status == "ok" else None,
                     error="RuntimeError: CUDA error: device-side assert\nTraceback ...")
    ff.write_plan(root, "messy", cfgs, {"name": "messy", "preset": "smoke",
                                        "description": "A sweep with gaps.", "target_loss": 2.5})
    write_json_atomic(root / "crosscheck.json", {"verdict": "pass",
                                                  "configs": [{"checks": [{}, {}]}]})
    return root, cfgs


# -- metrics ---------------------------------------------------------------------------------
def test_max_stable_lr_diverged_arm_and_flat_arm(runs):
    table = metrics.max_stable_lr(runs).set_index(["qk_norm", "n_layer"])
    # Off: the largest LR within 0.1 nats of its best; the 0.4-worse threshold LR is out.
    for depth, expected in {2: 1e-2, 4: 3e-3, 8: 1e-3}.items():
        row = table.loc[("none", depth)]
        assert row.max_stable_lr == expected and not row.at_top
        assert row.seed_lo == row.seed_hi == expected
    # On is flat (2.05 at the top vs best 2.00): stable at the largest swept LR, a lower bound.
    assert (table.loc["rms"].max_stable_lr == 0.1).all() and table.loc["rms"].at_top.all()


def test_max_stable_lr_seed_disagreement():
    def outcome(qk, d, lr, seed):
        if lr == 1e-2 and seed == 1:
            return "diverged", None
        return "ok", {1e-3: 2.2, 3e-3: 2.1, 1e-2: 2.05}[lr]

    runs = ff.runs_table(outcome, depths=[2], lrs=[1e-3, 3e-3, 1e-2], seeds=[0, 1],
                         qk_norms=("none",))
    per_seed = metrics.max_stable_lr_per_seed(runs).set_index("seed").max_stable_lr
    assert per_seed.to_dict() == {0: 1e-2, 1: 3e-3}
    pooled = metrics.max_stable_lr(runs).iloc[0]
    assert pooled.max_stable_lr == 3e-3  # a seed diverged at 1e-2
    assert (pooled.seed_lo, pooled.seed_hi) == (3e-3, 1e-2)


def test_grid_top_is_per_depth():
    # The sweep extended its grid to 0.3 at n_layer 2 only: at n_layer 4, 0.1 is the top.
    runs = ff.runs_table(lambda qk, d, lr, s: ("ok", 2.0), depths=[2, 4], lrs=[1e-2, 1e-1, 0.3])
    runs = runs[(runs.n_layer == 2) | (runs.lr < 0.3)]
    table = metrics.max_stable_lr(runs).set_index(["qk_norm", "n_layer"])
    assert table.loc[("none", 2)].max_stable_lr == 0.3 and table.loc[("none", 2)].at_top
    assert table.loc[("none", 4)].max_stable_lr == 0.1 and table.loc[("none", 4)].at_top
    assert metrics.necessity_threshold(runs, "rms").lr_top.tolist() == [0.3, 0.1]


def test_lr_sensitivity_by_hand():
    # loss_0 = 5.5. L = [2.0, 1.5, 6.0 (ok but worse than init), diverged -> 5.5]
    # E[min(L, 5.5)] = (2.0 + 1.5 + 5.5 + 5.5) / 4 = 3.625; min L = 1.5; S = 2.125.
    finals = {1e-3: 2.0, 3e-3: 1.5, 1e-2: 6.0}

    def outcome(qk, d, lr, seed):
        return ("ok", finals[lr]) if lr in finals else ("diverged", None)

    runs = ff.runs_table(outcome, depths=[2], lrs=[1e-3, 3e-3, 1e-2, 3e-2], seeds=[0],
                         qk_norms=("none",))
    row = metrics.lr_sensitivity(runs).iloc[0]
    assert row.sensitivity == pytest.approx(2.125) and row.n_lr == 4


def test_lr_sensitivity_of_the_study(runs):
    sens = metrics.lr_sensitivity(runs).set_index(["qk_norm", "n_layer", "seed"]).sensitivity
    # On, seed 0: mean(2.30, 2.10, 2.00, 2.02, 2.05) - 2.00 = 0.094.
    assert sens[("rms", 4, 0)] == pytest.approx(0.094)
    # Off, n_layer 2, seed 0: mean(2.30, 2.10, 2.00, 2.42, 5.5) - 2.00 = 0.864.
    assert sens[("none", 2, 0)] == pytest.approx(0.864)


def test_necessity_threshold_and_off_max_stable_lr(runs):
    table = metrics.necessity_threshold(runs, "rms").set_index("n_layer")
    for depth, expected in ff.THRESHOLD.items():
        row = table.loc[depth]
        assert row.threshold == row.lo == row.hi == expected  # seeds agree: no uncertainty
    assert table.off_max_stable_lr.to_dict() == {2: 1e-2, 4: 3e-3, 8: 1e-3}


def test_necessity_seed_disagreement_widens_the_interval():
    # Off diverges at 1e-2 in seed 0 only and everywhere at 3e-2. One diverged seed of three
    # already costs (5.5 - 2.0) / 3 nats on average: necessary at 1e-2.
    def outcome(qk, d, lr, seed):
        if qk == "none" and (lr == 3e-2 or (lr == 1e-2 and seed == 0)):
            return "diverged", None
        return "ok", 2.0 + 0.01 * seed

    runs = ff.runs_table(outcome, depths=[2], lrs=[1e-3, 1e-2, 3e-2])
    effect = metrics.necessity(runs, "rms").set_index("lr")
    assert effect.loc[1e-2].delta == pytest.approx(3.5 / 3)
    assert effect.loc[1e-2].spread == pytest.approx(0.02)  # non-diverged seeds only
    assert not effect.loc[1e-3].necessary and effect.loc[1e-2].necessary
    row = metrics.necessity_threshold(runs, "rms").iloc[0]
    # Resamples that miss seed 0 (8/27 of them) put the threshold at 3e-2.
    assert (row.threshold, row.lo, row.hi) == (1e-2, 1e-2, 3e-2)
    again = metrics.necessity_threshold(runs, "rms").iloc[0]
    assert (again.lo, again.hi) == (row.lo, row.hi)  # fixed bootstrap seed


@pytest.mark.parametrize("seeds, gap, necessary", [
    ([0, 1, 2], 0.05, False),  # within the 0.1-nat seed range
    ([0, 1, 2], 0.15, True),
    ([0], 0.01, False),  # one seed: the spread is 0, MIN_EFFECT (0.02) still applies
    ([0], 0.05, True),
])
def test_necessity_gap_against_seed_spread(seeds, gap, necessary):
    def outcome(qk, d, lr, seed):
        return "ok", 2.0 + 0.05 * seed + (gap if qk == "none" else 0.0)

    runs = ff.runs_table(outcome, depths=[2], lrs=[1e-2], seeds=seeds)
    assert bool(metrics.necessity(runs, "rms").necessary.iloc[0]) is necessary


def test_loss_table(runs):
    table = metrics.loss_table(runs).set_index(["qk_norm", "n_layer", "lr"])
    dead = table.loc[("none", 8, 1e-2)]
    assert (dead.n, dead.n_diverged) == (3, 3) and math.isnan(dead.loss_mean)
    row = table.loc[("rms", 2, 1e-3)]
    assert row.loss_mean == pytest.approx(2.31) and row.loss_sd == pytest.approx(0.01)
    assert row.ppl_mean == pytest.approx(np.mean(np.exp([2.30, 2.31, 2.32])))


def test_steps_to_target(runs, study):
    assert metrics.default_target(runs) == 2.32  # off at n_layer 8: worst seed at its best LR
    curves = pd.DataFrame({"run_id": ["a"] * 3 + ["b"] * 3, "qk_norm": "none", "n_layer": 2,
                           "lr": 1e-3, "seed": 0, "step": [0, 20, 40] * 2,
                           "val_loss": [5.5, 3.0, 2.0, 5.5, 3.0, 2.9]})
    steps = metrics.steps_to_target(curves, 2.5).set_index("run_id").steps
    assert steps["a"] == 40 and math.isnan(steps["b"])
    fastest = metrics.fastest_to_target(metrics.steps_to_target(load_curves(runs), 2.32))
    row = fastest.set_index(["qk_norm", "n_layer"]).loc[("none", 8)]
    assert (row.lr, row.steps) == (1e-3, 30)  # only 1e-3 gets every seed there (last step)


# -- verdicts --------------------------------------------------------------------------------
def _verdicts(runs, on_arm="rms"):
    return {v.hypothesis: v for v in judge(runs, on_arm)}


def test_verdicts_supported_on_the_study(runs):
    v = _verdicts(runs)
    assert [v[h].verdict for h in ("H1", "H2", "H3")] == [SUPPORTED] * 3


def test_one_seed_is_inconclusive():
    v = _verdicts(ff.runs_table(seeds=[0]))
    for h in v.values():
        assert h.verdict == INCONCLUSIVE and "1 seed(s)" in h.reason


def test_two_depths_leave_h3_inconclusive():
    v = _verdicts(ff.runs_table(depths=[2, 4]))
    assert v["H1"].verdict == v["H2"].verdict == SUPPORTED
    assert v["H3"].verdict == INCONCLUSIVE and "2 depth(s)" in v["H3"].reason


def test_two_learning_rates_are_inconclusive():
    v = _verdicts(ff.runs_table(lrs=[1e-2, 3e-2]))
    assert all(h.verdict == INCONCLUSIVE and "2 learning rate(s)" in h.reason
               for h in v.values())


def test_grid_below_the_off_arms_instability_is_inconclusive():
    v = _verdicts(ff.runs_table(depths=[2], lrs=[1e-3, 3e-3, 1e-2]))
    assert v["H1"].verdict == INCONCLUSIVE and "extend the LR grid" in v["H1"].reason
    assert v["H2"].verdict == INCONCLUSIVE and "extend the LR grid" in v["H2"].reason


def test_effect_at_every_lr_is_not_lr_conditional():
    def outcome(qk, d, lr, seed):
        return "ok", 2.0 + 0.01 * seed + (0.5 if qk == "none" else 0.0)

    v = _verdicts(ff.runs_table(outcome))
    assert v["H1"].verdict == NOT_SUPPORTED and "lowest LR" in v["H1"].reason


def test_threshold_rising_with_depth_does_not_support_h3():
    rising = {2: 3e-3, 4: 1e-2, 8: 3e-2}

    def outcome(qk, d, lr, seed):
        return ff.study_outcome(qk, {2: 8, 4: 4, 8: 2}[d], lr, seed)

    v = _verdicts(ff.runs_table(outcome))
    thresholds = metrics.necessity_threshold(ff.runs_table(outcome), "rms")
    assert thresholds.set_index("n_layer").threshold.to_dict() == rising
    assert v["H3"].verdict == NOT_SUPPORTED


def test_overlapping_intervals_leave_h3_inconclusive():
    # Seed 0 alone diverges one LR early at n_layer 2 and 8: the point thresholds fall
    # (1e-2, 1e-2, 3e-3) but the intervals [1e-2, 3e-2] at 2 and [3e-3, 1e-2] at 8 touch.
    early = {2: 1e-2, 4: None, 8: 3e-3}
    late = {2: 3e-2, 4: 1e-2, 8: 1e-2}

    def outcome(qk, d, lr, seed):
        if qk == "none" and (lr >= late[d] or (lr == early[d] and seed == 0)):
            return "diverged", None
        return "ok", 2.0 + 0.01 * seed

    v = _verdicts(ff.runs_table(outcome, lrs=[1e-3, 3e-3, 1e-2, 3e-2, 1e-1]))
    assert v["H3"].verdict == INCONCLUSIVE and "overlap" in v["H3"].reason


# -- report ----------------------------------------------------------------------------------
def test_report_states_verdicts_tables_and_provenance(report):
    text = report.read_text()
    assert "**SYNTHETIC built-in corpus.**" in text
    assert text.count("**Verdict: supported.**") == 3
    assert "crosscheck: **not run**" in text
    assert "30 steps x 8 sequences x 32 tokens = 7,680 tokens" in text
    assert "0123456789abcdef clean (90 runs)" in text and "torch 2.4.0" in text
    assert "| 8 | on (rms) | 0.003 | [0.003, 0.003] | 3 | 0.001 |" in text
    for name in CHARTS:
        assert f"]({name}.png)" in text


def test_figures_exist_and_open_offline(report):
    out = report.parent
    for name in CHARTS:
        png, svg, html = (out / f"{name}.{ext}" for ext in ("png", "svg", "html"))
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
        assert svg.read_text().lstrip().startswith("<svg") and svg.stat().st_size > 5_000
        page = html.read_text()
        assert len(page) > 100_000 and "vega" in page  # the bundled runtime, inline
        assert not re.search(r"<script[^>]*\bsrc=", page)
        assert not re.search(r"<link[^>]*href=[\"']https?:", page)


def test_same_runs_give_identical_report_and_specs(report, study, tmp_path):
    again = make_report(study, tmp_path / "again")
    assert again.read_bytes() == report.read_bytes()
    for name in CHARTS:
        spec = f"{name}.vl.json"
        assert (tmp_path / "again" / spec).read_bytes() == (report.parent / spec).read_bytes()


def test_report_names_missing_failed_and_incomplete_runs(messy):
    root, cfgs = messy
    text = make_report(root).read_text()
    assert "| 5 | 1 | 1 | 1 | 1 | 9 |" in text  # ok, diverged, failed, incomplete, missing
    for i, status in {1: "missing", 2: "failed", 4: "incomplete"}.items():
        assert f"| {status} | `{cfgs[i].run_id}` |" in text
    assert "RuntimeError: CUDA error: device-side assert |" in text  # first line only
    assert "crosscheck: **pass** (2 checks over 1 model configs)" in text
    assert "A sweep with gaps." in text and "target loss 2.50 nats (from the spec)" in text
    # Two normalisations: one verdict set per comparison, each inconclusive (one seed).
    assert "### H1 (off vs layernorm)" in text and "### H1 (off vs rms)" in text
    assert text.count("**Verdict: inconclusive.**") == 6


def test_report_before_any_run_finished(tmp_path):
    cfgs = [ff.config(qk, 2, lr, 0) for qk in ("none", "rms") for lr in (1e-3, 1e-2)]
    for cfg in cfgs[:3]:
        ff.write_run(tmp_path, cfg, None)
    ff.write_plan(tmp_path, "early", cfgs)
    text = make_report(tmp_path).read_text()
    assert "| 0 | 0 | 0 | 3 | 1 | 4 |" in text and "No run has finished yet" in text
    assert f"| missing | `{cfgs[3].run_id}` |" in text


def test_runs_outside_the_plan_are_ignored_and_named(messy, tmp_path):
    root, _ = messy
    copy = tmp_path / "messy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("report"))
    stray = ff.config("none", 2, 3e-1, 0)
    ff.write_run(copy, stray, "ok", 2.0)
    sweep = load_results(copy)
    assert sweep.ignored == [stray.run_id] and stray.run_id not in set(sweep.runs.run_id)
    (copy / "plan.json").unlink()
    sweep = load_results(copy)
    assert not sweep.has_plan and stray.run_id in set(sweep.runs.run_id)


def test_empty_sweep_directory_raises(tmp_path):
    with pytest.raises(HarnessError, match="no run directories"):
        make_report(tmp_path / "nothing")


def test_figures_never_imports_a_trainer():
    code = ("import sys, figures.report, figures.charts, figures.verdicts; "
            "bad = {'mlx', 'torch', 'qkmlx', 'qktorch'} & {m.split('.')[0] for m in sys.modules}; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
