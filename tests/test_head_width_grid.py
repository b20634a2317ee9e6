"""Whether the head-width cost verdicts rest on the LR grids (sweeps/analysis/head_width_page.py
judges, figures/head_width_grid.py words): the
cost at each shared LR finds a planted shift where it is and nowhere else, and a reference grown
by its own configuration at an LR it lacked removes a T7 "differs" that only the grids made."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from figures import head_width_grid as grid
from sweeps.analysis import head_width_page as hp
from sweeps.study import carry as c

DOCS = Path(__file__).resolve().parents[1] / "docs"
W128 = c.SECTION_20_WIDTH_128


@pytest.fixture(scope="module")
def width128() -> pd.DataFrame:
    runs = pd.read_parquet(DOCS / "cpu-width" / "runs.parquet")
    return runs[runs.n_embd == 128].reset_index(drop=True)


def at_new_lr(runs: pd.DataFrame, lr_from: float, lr: float, **loss_shift) -> pd.DataFrame:
    """Runs at LR `lr` copied from those at lr_from (their configuration but the LR), each arm's
    final loss moved by loss_shift[arm]: an LR the reference's grid never trained."""
    out = runs[runs.lr == lr_from].copy()
    out["lr"] = lr
    out["run_id"] = out.run_id + f"-at-{lr}"
    for arm, dx in loss_shift.items():
        out.loc[out.arm == arm, "final_val_loss"] += dx
    return out


def test_the_cost_at_each_shared_lr_finds_a_planted_shift_there_alone(width128):
    new = width128.copy()
    new.loc[(new.arm == "on") & (new.lr == 0.01), "final_val_loss"] += 0.3
    rows = {r.lr: r for r in hp.costs_by_lr(width128, new, W128.study)}
    assert sorted(rows) == sorted(width128.lr.unique())  # every LR both hold
    hit = rows[0.01]
    assert hit.reference == pytest.approx(-0.219, abs=5e-4)
    assert hit.new == pytest.approx(-0.519, abs=5e-4)
    assert hit.shift[0] == pytest.approx(-0.3, abs=1e-9)
    assert hit.outcome == c.DIFFERS and hit.best == ("reference", "new")
    for lr, r in rows.items():
        if lr != 0.01:
            assert r.shift[0] == pytest.approx(0.0, abs=1e-12), lr
            assert r.outcome in (c.CARRIES, c.INCONCLUSIVE), lr


def test_a_t7_that_only_the_grids_moved_carries_once_the_reference_is_grown(width128):
    # the new sweep trained 5.62e-3 too, where `off` does 0.1 better than at its old best and
    # QK-norm costs nothing: T7 now reads 5.62e-3 on the new side and 0.01 on the reference's
    extra = at_new_lr(width128, 0.00316, 0.00562, off=-0.2, on=-0.2 + 0.106)
    assert extra[extra.arm == "off"].final_val_loss.mean() < 0.6  # best, below 0.01's 0.668
    new = pd.concat([width128, extra], ignore_index=True)
    plain = hp.judged(width128, new, W128)
    assert plain["T7"].outcome == c.DIFFERS
    assert plain["T7"].reference_lrs == {"best_lr": 0.01}
    assert plain["T7"].new_lrs == {"best_lr": 0.00562}
    # the reference grown by the same configuration at 5.62e-3, where it behaves the same
    grown = hp.grown_reference(width128, extra)
    assert len(grown) == len(width128) + len(extra)
    again = hp.judged(grown, new, W128)
    assert again["T7"].reference_lrs == {"best_lr": 0.00562}
    assert again["T7"].outcome == c.CARRIES
    assert again["T7"].shift[0] == pytest.approx(0.0, abs=1e-12)


def test_growing_adds_only_the_lrs_the_reference_lacks_and_only_its_own_configuration(width128):
    same_lrs = at_new_lr(width128, 0.01, 0.01)
    assert hp.grown_reference(width128, same_lrs) is width128  # nothing it lacks
    foreign = at_new_lr(width128, 0.00316, 0.00562)
    foreign["config_json"] = foreign.config_json.str.replace('"n_head": 8', '"n_head": 2')
    with pytest.raises(ValueError, match="differ from its configuration beyond the LR"):
        hp.grown_reference(width128, foreign)


def test_the_section_names_each_sweep_and_marks_each_sides_best(width128):
    new = width128.copy()
    rows = [
        hp.LRGrid(
            "planted",
            "cpu-width",
            tuple(hp.costs_by_lr(width128, new, W128.study)),
            "fill",
            hp.judged(width128, new, W128),
        )
    ]
    text = grid.render(rows)
    assert "### planted against cpu-width" in text
    assert "| 0.01 | -0.219* | -0.219* | +0.000 [" in text
    assert "With cpu-width grown by fill:" in text
    assert "- T7: carries, shift +0.000 [" in text
    assert grid.render([]) == ""


@pytest.mark.parametrize(
    "option, said",
    [
        (["--grown", "cpu-width"], "--grown needs REF=REPORT"),
        (["--grown", "cpu-width=nowhere"], "holds no runs.parquet; build its report"),
        (["--grown", "cpu=cpu-width"], "--grown cpu=...: no page here has cpu as its reference"),
    ],
)
def test_a_bad_grown_is_refused_in_one_line(tmp_path, capsys, width128, option, said):
    from figures import carry
    from figures import head_width as hw

    folder = tmp_path / "cpu-width128-head64"
    folder.mkdir()
    width128.assign(n_head=2).to_parquet(folder / "runs.parquet")
    assert carry.main([str(folder), "--reference", str(DOCS / "cpu-width")]) == 0
    capsys.readouterr()
    code = hw.main([str(folder), "--out", str(tmp_path / "out"), *option], docs=DOCS)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and said in err
    assert not (tmp_path / "out").exists()
    assert json.loads((folder / "carry.json").read_text())["reference"] == "cpu-width"
