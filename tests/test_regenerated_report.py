"""Regenerating a report gives the report (issue 49 point 9): a re-judged report re-rendered
elsewhere (`figures NAME --from-report DIR --out OUT`) keeps the charts the committed one kept
from its earlier report (their curves went with the run directories), and a ladder whose rungs
trained different LRs draws no empty panel in its curve charts.

docs/cpu is read, never written: the re-render goes to a temporary directory.
"""

from pathlib import Path

import chart_marks as cm
import figures_fakes as ff
import pytest

from figures.report.assemble import make_report
from figures.report.figure_set import figure_set
from sweeps.analysis import archive

DOCS = Path(__file__).resolve().parents[1] / "docs"
KEPT = ("training_curves", "attention", "residual_kurtosis")  # drawn from curves docs/cpu lacks


def test_a_rejudged_report_rendered_elsewhere_keeps_the_committed_charts(tmp_path):
    report = DOCS / "cpu"
    committed = {p.name for p in report.glob("*.svg")}
    assert {f"{name}.svg" for name in KEPT} <= committed
    assert archive.load(report)[1].empty  # no curves: those charts cannot be redrawn
    out = tmp_path / "cpu"
    text = make_report(None, out, formats=("svg",), from_report=report).read_text()
    assert {p.name for p in out.glob("*.svg")} == committed
    for name in KEPT:
        assert (out / f"{name}.svg").read_bytes() == (report / f"{name}.svg").read_bytes()
    # the earlier report the kept charts (and the re-judged section) cite lies beside them
    for name in (archive.OLD_REPORT, archive.OLD_ANALYSIS):
        assert (out / name).read_text() == (report / name).read_text()
    assert "_Not drawn: the finished runs hold no data for it._" not in text
    # a curves chart newer than the earlier report: none kept, and it says why
    newer = "_Not drawn: it is drawn from the runs' curves, which went with their run directories"
    assert text.count(newer) == 1
    assert text.index("### Attention against the learning rate") < text.index(newer)
    assert text.count(f"_Kept from the earlier report ({archive.OLD_REPORT})") == len(KEPT)


def write_uneven_ladder(root) -> None:
    """Depths 2 and 4, depth 4 without the lowest LR (a rung on an LR subset)."""
    cfgs = []
    for arm in ("off", "on"):
        for depth in (2, 4):
            for lr in ff.LRS if depth == 2 else ff.LRS[1:]:
                for seed in ff.SEEDS:
                    cfg = ff.config(arm, depth, lr, seed)
                    ff.write_run(root, cfg, *ff.study_outcome(arm, depth, lr, seed))
                    cfgs.append(cfg)
    ff.write_plan(root, "uneven", cfgs, lrs=ff.LRS)


@pytest.mark.slow
def test_a_ladder_draws_each_rung_only_at_the_lrs_it_trained(tmp_path):
    root = tmp_path / "uneven"
    write_uneven_ladder(root)
    view, curves = ff.drawn(root)
    figures = figure_set(ff.typed(view), curves)
    trained = {(r["n_layer"], r["lr"]) for r in view["runs"] if r["outcome"]}
    for name, layer in (("training_curves", "curves"), ("residual_kurtosis", "resid_kurtosis")):
        panels = cm.panels(figures[name][1])
        keys = [{(m["n_layer"], m["lr"]) for m in panel.get(layer, [])} for panel in panels]
        assert all(len(k) == 1 for k in keys), (name, keys)  # no empty panel, none mixed
        drawn = [k.pop() for k in keys]
        assert len(set(drawn)) == len(drawn) and set(drawn) <= trained, name
        assert (4, ff.LRS[0]) not in drawn and (2, ff.LRS[0]) in drawn, name
