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


def test_the_mechanism_column_reads_on_at_offs_best_lr_at_the_end(pages, tmp_path):
    """on's max attention logit at off's best LR at the end of training against its ceiling:
    recorded where the runs kept qk_logit_ceiling, else bounded by sqrt(head width) x max
    gain^2 (cpu-width's width 128, computed here from its curves), not recorded without curves
    (docs/cpu)."""
    from figures import head_width as hw

    _, folders = pages
    by = {(r["width"], r["head_width"]): r for r in hw.rows_of(folders, DOCS)}
    c = pd.read_parquet(DOCS / "cpu-width" / "curves.parquet")
    on = c[(c.n_embd == 128) & (c.arm == "on") & (c.lr == 0.01)]
    end = on.sort_values("step").groupby("run_id").tail(1)
    assert len(end) == 4 and (end.step == 1200).all()  # each seed's last evaluation
    wide = by[(128, 16)]
    assert wide["ceiling_kind"] == "bound"
    assert wide["on_logit"] == pytest.approx(end.max_attn_logit.median())
    assert wide["ceiling"] == pytest.approx(4 * (end.qk_gain_max**2).median())
    assert wide["on_logit"] <= wide["ceiling"]  # a ceiling no logit passed
    assert by[(64, 16)]["on_logit"] is None  # docs/cpu kept no curves
    text = hw.render(list(by.values()))
    row = next(x for x in text.splitlines() if x.startswith("| 128 | 16 |"))
    assert row.endswith(f"| {wide['on_logit']:.1f} / <={wide['ceiling']:.1f} |")
    assert next(x for x in text.splitlines() if x.startswith("| 64 | 16 |")).endswith(
        "| not recorded |"
    )
    # a head-width report whose runs recorded the ceiling: read as it is, at off's best LR only
    rows = []
    for seed, (logit, ceiling) in enumerate([(7.0, 8.0), (7.5, 9.0), (9.0, 9.5)]):
        for step, scale in ((600, 0.5), (1200, 1.0)):  # the last evaluation counts
            rows.append(
                {"run_id": f"on-s{seed}", "arm": "on", "lr": 0.01, "step": step,
                 "max_attn_logit": logit * scale, "qk_logit_ceiling": ceiling * scale}
            )  # fmt: skip
            rows.append({**rows[-1], "run_id": f"on-hi-s{seed}", "lr": 0.0316,
                         "max_attn_logit": 99.0, "qk_logit_ceiling": 99.0})  # fmt: skip
    folder = tmp_path / "cpu-head64"
    folder.mkdir()
    pd.DataFrame(rows).to_parquet(folder / "curves.parquet")
    got = hw.mechanism(folder, 64, 0.01)
    assert got == {"on_logit": 7.5, "ceiling": 9.0, "ceiling_kind": "recorded"}
    assert hw.mechanism(folder, 64, None)["on_logit"] is None


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
