"""A toy sweep's report reads as what it is (issue 49 point 4): a sweep none of whose arms beats
the bigram baseline opens by saying it demonstrates the harness (sweeps.study.rules
.baseline_check decides, figures/report/opening.py words it); a verdict answered above reads as
meant; with the bigram-baseline rule off no critical LR is labelled stuck; arms that share a
critical LR share a label whose verb agrees.

The fixture is the `smoke` spec's shape at fixture scale (tests/figures_fakes.py): off and on
at one depth, every run worse than the bigram baseline, train.baseline = none, both arms
diverging at the top LR, so QK-norm is necessary nowhere although off fails inside the grid.
"""

import chart_marks as cm
import figures_fakes as ff
import pytest

from figures import charts
from figures.report import opening
from figures.report.assemble import make_report
from sweeps.study import rules

TOY_LOSS = 1.0  # nats above the fixture's usual losses: every run ends above BIGRAM (2.35)


def toy_outcome(arm: str, n_layer: int, lr: float, seed: int):
    if lr == ff.LRS[-1]:
        return "diverged", None
    jitter = ff.OFF_JITTER.get(seed, 0.0) if arm == "off" else 0.0
    return "ok", ff.ON_LOSS[lr] + TOY_LOSS + 0.01 * seed + jitter


def write_toy(root, baseline: str = "none") -> None:
    cfgs = []
    for arm in ("off", "on"):
        for lr in ff.LRS:
            for seed in ff.SEEDS:
                cfg = ff.config(arm, 2, lr, seed).with_overrides([f"train.baseline={baseline}"])
                ff.write_run(root, cfg, *toy_outcome(arm, 2, lr, seed))
                cfgs.append(cfg)
    ff.write_plan(root, "toy", cfgs)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "toy"
    write_toy(root)
    text = make_report(root, formats=("vl.json",)).read_text()
    view, _ = ff.drawn(root)
    return text, view


# -- a: the toy says so first ----------------------------------------------------------------
def test_the_baseline_check_finds_whether_any_arm_beats_the_baseline():
    def row(arm, lr, seed, final, status="ok"):
        return {
            "run_id": f"{arm}-{lr}-{seed}",
            "n_layer": 2,
            "arm": arm,
            "lr": lr,
            "seed": seed,
            "status": status,
            "init_loss": 5.5,
            "final_val_loss": final,
            "baseline_loss": None,
        }

    rows = [row("off", 0.01, 0, 3.1), row("off", 0.1, 0, None, "diverged"), row("on", 0.01, 0, 2.9)]
    cells = rules.build_cells(rows).values()
    toy = rules.baseline_check(cells, 2.34)
    assert toy.beaten is False and toy.best == {"off": 3.1, "on": 2.9}
    rows.append(row("on", 0.1, 0, 2.3))  # one run of one arm below it: not a toy
    assert rules.baseline_check(rules.build_cells(rows).values(), 2.34).beaten is True
    assert rules.baseline_check(cells, None).beaten is None  # no baseline: nothing to say


def test_a_toy_report_opens_by_saying_it_demonstrates_the_harness(toy):
    text, view = toy
    check = view["baseline_check"]
    assert check["beaten"] is False and min(check["best"].values()) > ff.BIGRAM
    answer = text.split("## The answer", 1)[1].lstrip().splitlines()
    assert answer[0] == (
        "**A harness demonstration, not an answer: no arm beats the bigram baseline, so nothing "
        "below is about QK-norm**"
    )
    assert f"bigram baseline, {ff.BIGRAM:.3f} nats: off 3.0" in answer[2]
    assert opening.terminal(ff.said(view))[0].startswith("A harness demonstration, not an answer")


def test_a_sweep_that_beats_the_baseline_has_no_toy_line(tmp_path):
    ff.write_study(tmp_path / "study", depths=[2])
    view, _ = ff.drawn(tmp_path / "study")
    assert view["baseline_check"]["beaten"] is True
    assert not any("harness demonstration" in line for line in opening.terminal(ff.said(view)))


# -- b: a verdict answered above reads as meant ----------------------------------------------
def test_a_verdict_answered_above_says_what_it_found(toy):
    text, view = toy
    assert view["verdicts"]["H1"]["verdict"] == rules.NOT_SUPPORTED
    assert view["depths"]["2"]["h1"]["why"] == "no threshold"
    (h1,) = [line for line in text.splitlines() if line.startswith("- H1 ")]
    assert h1 == (
        "- H1 not supported. Does QK-norm matter only above off's best LR? No: QK-norm is "
        "necessary at no LR although off fails inside the grid, as above."
    )
    assert "No, as above" not in text


# -- c: with the baseline rule off, no critical LR is stuck ----------------------------------
def test_with_the_baseline_rule_off_no_critical_lr_is_labelled_stuck(toy):
    text, view = toy
    assert view["settings"]["baseline_rule"] == "none"
    assert (
        "- Runs start to fail (critical LR, diverged; the bigram-baseline rule is off): off "
        in text
    )
    assert (
        "| critical LR, diverged (decides) | critical LR, degraded | per seed (diverged) |" in text
    )
    # "stuck" only where the report says that no run can be
    said = [line for line in text.splitlines() if "stuck" in line]
    assert said and all("no run" in line for line in said), said
    assert "When only a divergence counts" not in text  # the same runs: not shown twice


def test_with_the_baseline_rule_on_the_labels_stay_stuck(tmp_path):
    root = tmp_path / "toy"
    write_toy(root, baseline="bigram")
    text = make_report(root, formats=("vl.json",)).read_text()
    assert "- Runs start to fail (critical LR, stuck): off " in text
    assert "critical LR, stuck (decides)" in text


# -- d: arms that share a critical LR share a label that agrees ------------------------------
def test_arms_failing_at_one_lr_share_a_label_whose_verb_agrees(toy):
    _, view = toy
    (panel,) = cm.panels(charts.final_loss(ff.typed(view)))
    labels = [m["text"] for m in panel["labels"]]
    assert "off and on fail from 0.0548" in labels, labels
    assert not any(", on fails" in t for t in labels)
