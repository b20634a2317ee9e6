"""Section 23's plateau reading (docs/STUDY.md): above `off`'s best LR a run that finished less
than [study] plateau_margin nats under its stuck cut counts as stuck, in both arms, for every
rule that reads a fate. The array rule, the cells it reads, the spec field, one rung judged
with and without it, and its simulation mark (the stability threshold recovered with one `off`
seed on a plateau just under the cut; what it cannot catch: a plateau deeper than the margin)."""

import numpy as np
import pytest

from sweeps.core.errors import ConfigError
from sweeps.study import judge, rules
from sweeps.study.cells import plateau_cut
from sweeps.study.simulation import rungs as sim
from sweeps.sweep.plan_text import _study_text
from sweeps.sweep.spec import load_spec, parse_spec
from tests.test_matched_budget import raw

CUT = 2.34
LRS = (1e-3, 1e-2, 3.16e-2, 1e-1)
# final losses per (arm, LR): four seeds; `off` best at 1e-2, seed 3 of `off` on a plateau just
# under the cut from 3.16e-2 up, every seed of `off` slow (under the cut by 0.09) at 1e-3
LOSSES = {
    ("off", 1e-3): [2.25, 2.251, 2.252, 2.253],
    ("off", 1e-2): [1.30, 1.31, 1.32, 1.33],
    ("off", 3.16e-2): [1.46, 1.47, 1.45, 2.25],
    ("off", 1e-1): [2.40, 2.41, 2.42, 2.28],
    ("on", 1e-3): [1.80, 1.81, 1.82, 1.83],
    ("on", 1e-2): [1.31, 1.32, 1.33, 1.34],
    ("on", 3.16e-2): [1.30, 1.31, 1.30, 1.32],
    ("on", 1e-1): [1.35, 1.36, 1.34, 1.37],
}


def rung_cells():
    rows = [
        {
            "run_id": f"{arm}-{lr}-{s}",
            "n_layer": 4,
            "arm": arm,
            "lr": lr,
            "seed": s,
            "status": "ok",
            "init_loss": 3.0,
            "final_val_loss": loss,
            "baseline_loss": CUT,
        }
        for (arm, lr), losses in LOSSES.items()
        for s, loss in enumerate(losses)
    ]
    return rows


def study(margin: float) -> rules.Study:
    return rules.Study(
        delta=0.1, sensitivity_range=(1e-3, 1e-1), target_loss=None, plateau_margin=margin
    )


def test_the_cut_moves_down_only_where_asked_and_only_by_the_margin():
    failing = np.array([False, False, False, True])
    gap = np.array([-0.10, -0.20, -0.10, np.nan])  # a stopped run has no gap
    above = np.array([True, True, False, True])
    moved_failing, moved = plateau_cut(failing, gap, above, 0.15)
    assert moved_failing.tolist() == [True, False, False, True]
    assert moved[:3] == pytest.approx([0.05, -0.05, -0.10]) and np.isnan(moved[3])
    same_failing, same = plateau_cut(failing, gap, above, 0.0)
    assert same_failing.tolist() == failing.tolist() and same is gap


def test_the_plateau_counts_stuck_above_off_s_best_lr_and_the_slow_low_lrs_do_not():
    cells = rules.study_cells(rung_cells(), study(0.15))[4]
    off = cells.arm("off")
    assert cells.failing[off, LRS.index(3.16e-2)].tolist() == [False, False, False, True]
    assert cells.failing[off, LRS.index(1e-1)].all()
    assert not cells.failing[off, LRS.index(1e-3)].any()  # below the best LR: slow, trained
    assert not cells.failing[cells.arm("on")].any()
    as_recorded = rules.study_cells(rung_cells(), study(0.0))[4]
    assert not as_recorded.failing[off, LRS.index(3.16e-2)].any()
    assert as_recorded.failing[off, LRS.index(1e-1)].tolist() == [True, True, True, False]


def test_with_the_plateau_read_stuck_the_rung_s_threshold_is_found_where_it_lies():
    def threshold(margin):
        cells = rules.study_cells(rung_cells(), study(margin))[4]
        s = study(margin)
        return judge.compare(cells, s.primary_comparison, s, influence=False).necessity.threshold

    found = threshold(0.15)
    assert found.inside and found.bracket == pytest.approx((1e-2, 3.16e-2))
    # as recorded the one plateau seed makes 3.16e-2's interval span 0 and 0.1's fates mixed
    missed = threshold(0.0)
    assert not (missed.inside and missed.bracket == pytest.approx((1e-2, 3.16e-2)))


def test_the_confirmatory_ladder_preregisters_the_margin_and_others_record_none():
    spec = load_spec("cpu-depth-2-12")
    assert spec.study.plateau_margin == 0.15 == sim.PLATEAU_MARGIN
    assert spec.study.to_dict()["plateau_margin"] == 0.15
    assert "plateau_margin" not in load_spec("cpu-depth-matched").study.to_dict()
    assert rules.Study.from_dict(spec.study.to_dict(), [0.1]).plateau_margin == 0.15
    assert "set apart: 1; plateau margin 0.15 (section 23)" in _study_text(spec)  # the dry run


def test_a_negative_margin_is_refused_in_one_line():
    spec = raw()
    spec["study"]["plateau_margin"] = -0.1
    with pytest.raises(
        ConfigError, match=r"plateau_margin must be a number >= 0 \(got -0.1\)"
    ) as err:
        parse_spec(spec)
    assert "\n" not in str(err.value)


PLATEAU, DEEPER = sim.MESSY_CONDITIONS[-2], sim.MESSY_CONDITIONS[-1]


def test_the_simulation_mark_one_off_seed_on_a_plateau_under_the_cut():
    """Section 23's mark: the pooled threshold recovered in at least 80% of simulated rungs at
    each planted LR with the plateau read stuck, false thresholds at most 5%; as recorded the
    same draws lose it (the defect the rule fixes)."""
    assert PLATEAU.plateau_seed and DEEPER.plateau[1] <= sim.sweep_sim.PLATEAU[0]
    lrs = PLATEAU.base.lrs
    keys = [f"v5 recovery at {lrs[i]:.3g}" for i in sim.MESSY_PLANTED]
    read = sim.rung_rates(PLATEAU, 800, planted=sim.MESSY_PLANTED, plateau_margin=0.15)
    recorded = sim.rung_rates(PLATEAU, 800, planted=sim.MESSY_PLANTED)
    assert min(read[k] for k in keys) >= 0.8 and read["v5 false"] <= 0.05
    assert max(recorded[k] for k in keys) <= 0.05
    # deeper than the margin the seed is a trained run again: the rule does not reach it
    deeper = sim.rung_rates(DEEPER, 800, planted=sim.MESSY_PLANTED, plateau_margin=0.15)
    assert max(deeper[k] for k in keys) <= 0.2


def test_the_rule_moves_nothing_where_no_run_ends_near_the_cut_above_the_best_lr():
    clean = sim.MESSY_CONDITIONS[0]
    assert sim.rung_rates(clean, 400, planted=sim.MESSY_PLANTED, plateau_margin=0.15) == (
        sim.rung_rates(clean, 400, planted=sim.MESSY_PLANTED)
    )


def test_the_report_names_the_reading_and_the_runs_it_counted_stuck(tmp_path):
    import json

    import figures_fakes as ff

    from figures.report.assemble import make_report

    plain = ff.threshold_outcome({4: 1e-1})

    def outcome(arm, rung, lr, seed):
        if (arm, lr, seed) == ("off", 3e-2, 0):
            return "ok", ff.BIGRAM - 0.05  # trained, on a plateau just under the cut
        return plain(arm, rung, lr, seed)

    def report(name, study):
        root = tmp_path / name
        ff.write_study(root, depths=[4], outcome=outcome, study=study)
        path = make_report(root, tmp_path / f"{name}-out", formats=())
        return json.loads((path.parent / "analysis.json").read_text()), path.read_text()

    analysis, text = report("read", {"plateau_margin": 0.15})
    assert analysis["settings"]["plateau_margin"] == 0.15
    [moved] = analysis["plateau_stuck"]["4"]
    assert moved.startswith("torch-off-") or moved.startswith("mlx-off-")
    assert "Plateau reading (docs/STUDY.md section 23)" in text and f"`{moved}`" in text
    assert "stuck, in both arms; 1 run read so" in text
    analysis, text = report("recorded", None)
    assert "plateau_stuck" not in analysis and "plateau_margin" not in analysis["settings"]
    assert "Plateau reading" not in text


@pytest.mark.slow
def test_the_committed_robustness_page_is_what_the_benchmark_prints_for_docs_cpu(capsys):
    """docs/plateau-reading.md's section for docs/cpu, as `python benchmarks/plateau_reading.py`
    prints it now (one report: the whole page takes minutes)."""
    from pathlib import Path

    from benchmarks.plateau_reading import main

    main(["cpu"])
    printed = capsys.readouterr().out
    page = (Path(__file__).resolve().parents[1] / "docs" / "plateau-reading.md").read_text()
    section = page[page.index("### docs/cpu:") : page.index("### docs/cpu-bf16-depth2")]
    assert printed.endswith(section)
    assert printed[: printed.index("### docs/cpu:")] == page[: page.index("### docs/cpu:")]
