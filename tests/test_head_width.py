"""QK-norm against head width (figures/head_width.py, docs/STUDY.md section 20): the page and
chart read the carry pages' numbers, one row per width and head width, references once."""

from __future__ import annotations

import json
from pathlib import Path

import chart_marks as cm
import pandas as pd
import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def page(tmp: Path, name: str, runs: pd.DataFrame, reference: Path) -> Path:
    """A carry page as figures.carry writes it, its runs standing in for a head-width sweep."""
    from figures import carry

    folder = tmp / name
    folder.mkdir(parents=True)
    runs.to_parquet(folder / "runs.parquet")
    assert carry.main([str(folder), "--reference", str(reference)]) == 0
    return folder


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hw")
    cpu = pd.read_parquet(DOCS / "cpu" / "runs.parquet")
    wide = pd.read_parquet(DOCS / "cpu-width" / "runs.parquet")
    wide = wide[wide.n_embd == 128]
    return tmp, [
        page(tmp, "cpu-head32", cpu.assign(n_head=2), DOCS / "cpu"),
        page(tmp, "cpu-head64", cpu.assign(n_head=1), DOCS / "cpu"),
        page(tmp, "cpu-width128-head64", wide.assign(n_head=2), DOCS / "cpu-width"),
    ]


def test_one_row_per_width_and_head_width_from_the_carry_pages(pages):
    from figures import head_width as hw

    tmp, folders = pages
    rows = hw.rows_of(folders, DOCS)
    assert [(r["width"], r["head_width"], r["source"]) for r in rows] == [
        (64, 16, "cpu"),
        (64, 32, "cpu-head32"),
        (64, 64, "cpu-head64"),
        (128, 16, "cpu-width"),
        (128, 64, "cpu-width128-head64"),
    ]
    by = {(r["width"], r["head_width"]): r for r in rows}
    # the stand-ins are the references' own runs: every head width shows the reference's numbers
    for w, h in [(64, 32), (64, 64)]:
        assert by[(w, h)]["T7"] == pytest.approx(by[(64, 16)]["T7"])
    assert (by[(128, 64)]["T7"], by[(128, 64)]["T7_lo"]) == pytest.approx(
        (-0.219, -0.325), abs=5e-4
    )
    assert (by[(64, 16)]["T1_lo"], by[(64, 16)]["T1_hi"]) == pytest.approx((3.16, 5.62))
    assert (by[(128, 16)]["T8"], by[(128, 16)]["best_lr"]) == pytest.approx((0.092, 0.01), abs=5e-4)


def test_the_page_and_the_chart_show_those_numbers(pages, capsys):
    from figures import head_width as hw

    tmp, folders = pages
    out = tmp / "head-width"
    assert hw.main([*map(str, folders), "--out", str(out)], docs=DOCS) == 0
    assert capsys.readouterr().out.strip() == f"{out}/head_width.md: 5 rows"
    text = (out / "head_width.md").read_text()
    assert (
        "| 128 | 64 | cpu-width128-head64 | 0.01 | (x1, x1.78] | -0.219 [-0.325, -0.112] |" in text
    )
    rows = json.loads((out / "head_width.json").read_text())["rows"]
    (panel,) = cm.panels(hw.chart(rows))
    layer = {name.rsplit("_", 1)[0]: marks for name, marks in panel.items()}
    points = sorted((m["source"], m["head_width"], round(m["T7"], 6)) for m in layer["cost_points"])
    assert points == sorted((r["source"], r["head_width"], round(r["T7"], 6)) for r in rows)
    for m in layer["cost_points"]:  # placed at its head width, widths a few pixels apart
        assert m["head width"] == pytest.approx(m["head_width"], rel=0.05)
    bars = sorted(
        (m["stability threshold (x off's best LR)"], m["T1_hi"])
        for m in layer["threshold_brackets"]
    )
    assert bars == sorted((r["T1_lo"], r["T1_hi"]) for r in rows)
    assert (out / "head_width.svg").is_file()
    assert "Not finished" not in text  # every stand-in sweep finished


def test_a_head_width_sweep_still_training_is_said_first(pages):
    """A carry page whose sweep still trains passes its 'Not finished' line to the page."""
    from figures import head_width as hw

    tmp, folders = pages
    said = "**Not finished: 40 of the plan's 80 runs have not finished training (40 not started).**"
    rows = [
        {**r, "unfinished": said} if r["source"] == "cpu-head64" else r
        for r in hw.rows_of(folders, DOCS)
    ]
    text = hw.render(rows)
    assert text.count("Not finished") == 1
    assert text.index(f"> `cpu-head64`: {said}") < text.index("| width | head width |")
    carry = json.loads((folders[1] / "carry.json").read_text())
    carry["unfinished"] = said
    (folders[1] / "carry.json").write_text(json.dumps(carry))
    try:
        by = {r["source"]: r for r in hw.rows_of(folders, DOCS)}
        assert by["cpu-head64"]["unfinished"] == said and by["cpu"].get("unfinished") is None
    finally:
        carry["unfinished"] = None
        (folders[1] / "carry.json").write_text(json.dumps(carry))


def test_a_page_that_is_not_section_20s_is_refused_in_one_line(tmp_path, capsys):
    from figures import head_width as hw

    assert hw.main([str(DOCS / "cpu-text"), "--out", str(tmp_path / "x")], docs=DOCS) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "section 20" in err
    assert not (tmp_path / "x").exists()
