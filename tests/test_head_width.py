"""QK-norm against head width (figures/head_width.py, docs/STUDY.md section 20): the page and
chart read the carry pages' numbers, one row per width and head width, references once."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import chart_marks as cm
import pandas as pd
import pytest

from sweeps.analysis import head_width_page as hp

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
    rows = [hw.row_record(r) for r in hw.collect(folders, DOCS)[0]]
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
    (panel,) = cm.panels(hw.chart(hw.collect(folders, DOCS)[0]))  # the json's rows, drawn
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
    from figures.charts import head_width as hm

    _, folders = pages
    collected = hw.collect(folders, DOCS)[0]
    by = {(r["width"], r["head_width"]): r for r in map(hw.row_record, collected)}
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
    text = hw.render(collected)
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
                {"run_id": f"on-s{seed}", "arm": "on", "n_layer": 4, "lr": 0.01, "seed": seed,
                 "step": step, "max_attn_logit": logit * scale, "attn_entropy": 1.0 + scale,
                 "qk_logit_ceiling": ceiling * scale}
            )  # fmt: skip
            rows.append({**rows[-1], "run_id": f"on-hi-s{seed}", "lr": 0.0316,
                         "max_attn_logit": 99.0, "qk_logit_ceiling": 99.0})  # fmt: skip
    folder = tmp_path / "cpu-head64"
    folder.mkdir()
    pd.DataFrame(rows).to_parquet(folder / "curves.parquet")
    got = hm.at_lr(hw.read_ends(folder, 64), 0.01)
    assert (got.on_logit, got.ceiling, got.ceiling_kind) == (7.5, 9.0, "recorded")
    assert got.gain_product == pytest.approx(9.0 / 8)  # the ceiling over sqrt(64)
    assert got.use == pytest.approx(7.0 / 8.0)  # the median of 7/8, 7.5/9, 9/9.5
    assert (got.on_peak, got.on_entropy, got.off_peak) == (7.5, 2.0, None)
    assert hm.at_lr(hw.read_ends(folder, 64), None).on_logit is None


def test_a_head_width_sweep_still_training_is_said_first(pages):
    """A carry page whose sweep still trains passes its 'Not finished' line to the page."""
    from figures import head_width as hw

    tmp, folders = pages
    said = "**Not finished: 40 of the plan's 80 runs have not finished training (40 not started).**"
    counts = {"planned": 80, "missing": 40, "incomplete": 0, "sweep": "cpu-head64"}
    rows = [
        dataclasses.replace(r, side=dataclasses.replace(r.side, unfinished=counts))
        if r.side.source == "cpu-head64"
        else r
        for r in hw.collect(folders, DOCS)[0]
    ]
    text = hw.render(rows)
    assert text.count("Not finished") == 1
    assert text.index(f"> `cpu-head64`: {said}") < text.index("| width | head width |")
    carry = json.loads((folders[1] / "carry.json").read_text())
    # carry.json holds the counts (sweeps.analysis.caveats.unfinished); the page words them
    carry["unfinished"] = counts
    (folders[1] / "carry.json").write_text(json.dumps(carry))
    try:
        by = {r.side.source: r.side for r in hw.collect(folders, DOCS)[0]}
        assert by["cpu-head64"].unfinished == counts  # head_width.json keeps the counts
        assert by["cpu"].unfinished is None
        assert "`sweep cpu-head64`" in hw.render(list(hw.collect(folders, DOCS)[0]))
    finally:
        carry["unfinished"] = None
        (folders[1] / "carry.json").write_text(json.dumps(carry))


def test_a_page_that_is_not_section_20s_is_refused_in_one_line(tmp_path, capsys):
    from figures import head_width as hw

    assert hw.main([str(DOCS / "cpu-text"), "--out", str(tmp_path / "x")], docs=DOCS) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "section 20" in err
    assert not (tmp_path / "x").exists()


def _curves(runs: list[tuple]) -> pd.DataFrame:
    """Two evaluations per run (arm, lr, seed, peak logit, end logit, gains): the first with the
    peak logit, the last with the end logit, entropy 2 then 1, gains 1 then as given."""
    rows = []
    for arm, lr, seed, peak, end, gains in runs:
        first = {"run_id": f"{arm}-{lr}-{seed}", "arm": arm, "n_layer": 4, "lr": lr, "seed": seed}
        for step, logit, entropy, g in ((600, peak, 2.0, (1.0, 1.0)), (1200, end, 1.0, gains)):
            row = {**first, "step": step, "max_attn_logit": logit, "attn_entropy": entropy}
            if arm == "on":
                row["qk_gain_max"], row["qk_logit_ceiling"] = g
            rows.append(row)
    return pd.DataFrame(rows)


def test_run_ends_read_the_gain_product_recorded_or_bounded():
    """Peak: the largest logit of any evaluation; the product from the recorded ceiling over
    sqrt(head width), else the largest gain squared (an upper bound, so the share a lower one)."""
    from figures.charts import head_width as hm

    curves = _curves(
        [("off", 0.01, 0, 30.0, 20.0, None), ("on", 0.01, 0, 6.0, 5.0, (1.5, 2.0 * 4))]
    )
    ends = hm.run_ends(curves, 16).set_index("arm")
    assert ends.loc["off", "peak"] == 30.0 and ends.loc["off", "entropy"] == 1.0
    on = ends.loc["on"]
    assert (on.peak, on.end_logit, on.kind) == (6.0, 5.0, "recorded")
    assert on.gain_product == pytest.approx(2.0)  # ceiling 8 over sqrt(16)
    assert on.use == pytest.approx(5.0 / 8.0)
    bounded = hm.run_ends(curves.drop(columns="qk_logit_ceiling"), 16).set_index("arm").loc["on"]
    assert bounded.kind == "bound" and bounded.gain_product == pytest.approx(1.5**2)
    assert bounded.use == pytest.approx(5.0 / (4 * 1.5**2)) and bounded.use < on.use
    assert math.isnan(ends.loc["off", "gain_product"])  # off has no gains


def test_the_mechanism_chart_shows_the_medians_panel_by_panel():
    from figures.charts import head_width as hm

    sides = {}
    for hw_, scale in ((16, 1.0), (64, 0.5)):
        runs = [
            (arm, lr, seed, 10.0 * lr * 100 * scale * (1 + seed), 5.0 * scale, (1.2, 1.5 * scale))
            for arm in ("off", "on")
            for lr in (0.01, 0.1)
            for seed in range(3)
        ]
        sides[hw_] = hm.by_lr(hm.run_ends(_curves(runs), hw_), 64, hw_)
    data = pd.concat(sides.values(), ignore_index=True)
    (panel,) = cm.panels(hm.chart(data))
    for field in ("off_peak", "gain_product", "use"):
        drawn = sorted(
            (m["head width"], m["lr"], round(m["value"], 6)) for m in panel[f"{field}_w64_medians"]
        )
        want = data[(data.field == field) & (data.kind == "median")]
        assert drawn == sorted(
            (h, lr, round(v, 6)) for h, lr, v in zip(want.head_width, want.lr, want.value)
        )
        assert len(panel[f"{field}_w64_runs"]) == 2 * 3 * 2  # every run at both head widths
    off = data[(data.field == "off_peak") & (data.kind == "median") & (data.lr == 0.1)]
    assert dict(zip(off.head_width, off.value)) == {16: 200.0, 64: 100.0}  # seeds 1x, 2x, 3x: 2x


def test_a_reference_without_curves_reads_the_same_configurations_trained_again(pages, tmp_path):
    """docs/cpu kept no curves; cpu-depth-matched's depth 4 trained 56 of its 80 runs again
    (every LR both grids hold): with --curves-from the heads-of-16 row reads those, only those;
    a run of another seed is not the same run."""
    from figures import head_width as hw

    _, folders = pages
    by = {
        (r["width"], r["head_width"]): r
        for r in map(hw.row_record, hw.collect(folders[:1], DOCS, {"cpu": "cpu-depth-matched"})[0])
    }
    ref = by[(64, 16)]
    assert ref["curves_from"] == {"source": "cpu-depth-matched", "runs": 56, "of": 80}
    c = pd.read_parquet(DOCS / "cpu-depth-matched" / "curves.parquet")
    on = c[(c.n_layer == 4) & (c.arm == "on") & (c.lr == 0.01)].dropna(subset=["max_attn_logit"])
    end = on.sort_values("step").groupby("run_id").tail(1)
    assert (end.step == 1200).all()
    assert len(end) == 4
    assert ref["on_logit"] == pytest.approx(end.max_attn_logit.median())
    # trained before qk_logit_ceiling existed: the largest gain squared bounds the product
    assert ref["ceiling_kind"] == "bound" and end.qk_logit_ceiling.isna().all()
    assert ref["gain_product"] == pytest.approx((end.qk_gain_max**2).median())
    cpu, matched = (
        pd.read_parquet(DOCS / n / "runs.parquet") for n in ("cpu", "cpu-depth-matched")
    )
    same = hp.same_configs(cpu, matched)
    assert set(matched[matched.run_id.isin(same)].n_layer) == {4}
    assert (
        hp.same_configs(
            cpu.assign(config_json=cpu.config_json.str.replace('"seed": 0', '"seed": 9')), matched
        )
        < same
    )
    out = tmp_path / "hw"
    args = [str(folders[0]), "--out", str(out), "--curves-from", "cpu=cpu-depth-matched"]
    assert hw.main(args, docs=DOCS) == 0
    text = (out / "head_width.md").read_text()
    assert "| 64 | 16 | cpu-depth-matched: 56 of cpu's 80 runs, trained again |" in text
    assert (out / "head_width_mechanism.svg").is_file()
    assert "Regenerate: `python -m figures.head_width " in text


def test_curves_from_without_a_report_is_refused_in_one_line(pages, tmp_path, capsys):
    from figures import head_width as hw

    _, folders = pages
    args = [str(folders[0]), "--out", str(tmp_path / "x"), "--curves-from", "cpu=nowhere"]
    assert hw.main(args, docs=DOCS) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --curves-from:") and "\n" not in err
    assert not (tmp_path / "x").exists()
    assert hw.main([*args[:3], "--curves-from", "cpu"], docs=DOCS) == 2
    capsys.readouterr()
    # a reference no page has: said, not silently ignored
    wrong = [*args[:3], "--curves-from", "cpu-width=cpu-depth-matched"]
    assert hw.main(wrong, docs=DOCS) == 2
    err = capsys.readouterr().err.strip()
    assert "no page here has cpu-width as its reference (theirs: cpu)" in err
    assert not (tmp_path / "x").exists()


def test_the_bound_check_measures_how_far_the_product_sits_from_the_largest_gain_squared():
    from figures import head_width as hw
    from figures.charts import head_width as hm

    equal = _curves([("on", 0.01, s, 6.0, 5.0, (1.5, 1.5**2 * 4)) for s in range(3)])
    assert hm.bound_gap(hm.run_ends(equal, 16)) == {"runs": 3, "max_gap": 0.0}
    apart = _curves([("on", 0.01, 0, 6.0, 5.0, (1.5, 1.5**2 * 4 * 0.8))])  # product 0.8 x bound
    got = hm.bound_gap(hm.run_ends(apart, 16))
    assert got["runs"] == 1 and got["max_gap"] == pytest.approx(0.2)
    bounded = hm.run_ends(equal.drop(columns="qk_logit_ceiling"), 16)
    assert hm.bound_gap(bounded) == {"runs": 0, "max_gap": None}  # nothing to compare
    assert "differ by at most 2.0e-01" in hw._tightness(got)
    assert hw._tightness({"runs": 0, "max_gap": None}) == ""


def test_the_robustness_rows_judge_the_repeat_against_the_reference_and_the_sweeps_against_it(
    pages,
):
    """With --curves-from, section 20's rule on docs/cpu's runs trained again (a measured null:
    nothing changed) and on each sweep against that repeat. The stand-in sweep is docs/cpu's
    own runs, so its shift against the repeat is the repeat's against docs/cpu, reversed."""
    from figures import head_width as hw

    _, folders = pages
    rows = hp.retrained(folders[:2], DOCS, {"cpu": "cpu-depth-matched"})
    assert [(r.new, r.reference, r.new_is_repeat, r.reference_is_repeat) for r in rows] == [
        ("cpu-depth-matched", "cpu", True, False),
        ("cpu-head32", "cpu-depth-matched", False, True),
        ("cpu-head64", "cpu-depth-matched", False, True),
    ]  # the repeat judged once
    null, head32, _ = rows
    assert null.outcomes["T7"] == null.outcomes["T8"] == "carries"
    assert null.outcomes["T5"] == "inconclusive"  # the repeat's grid starts at 3.16e-3: no 1e-3
    for q in ("T7", "T8"):
        assert head32.shifts[q][0] == pytest.approx(-null.shifts[q][0])
        lo, hi = null.shifts[q][1:]
        assert lo < 0 < hi
    text = hw.render_retrained(rows)
    assert "| cpu-depth-matched (the same runs again) | cpu | carries |" in text
    assert "| cpu-head32 | cpu-depth-matched's repeat |" in text
    assert hw.render_retrained([]) == ""
    assert hp.retrained(folders[2:], DOCS, {"cpu": "cpu-depth-matched"}) == []  # cpu-width's


def test_the_committed_head_width_page_rebuilds_from_the_command_it_names(tmp_path, monkeypatch):
    """docs/head-width regenerates from the committed carry pages and reports alone, by the
    command its page names (its --out moved to a temporary folder)."""
    from figures import head_width as hw

    root = DOCS.parent
    committed = json.loads((DOCS / "head-width" / "head_width.json").read_text())
    args = committed["command"].split()[3:]  # after "python -m figures.head_width"
    i = args.index("--out")
    args[i + 1] = str(tmp_path / "hw")
    monkeypatch.chdir(root)
    assert hw.main(args, docs=Path("docs")) == 0
    text = (tmp_path / "hw" / "head_width.md").read_text()
    want = (DOCS / "head-width" / "head_width.md").read_text()
    assert text.replace(str(tmp_path / "hw"), "docs/head-width") == want
    built = json.loads((tmp_path / "hw" / "head_width.json").read_text())
    built["command"] = built["command"].replace(str(tmp_path / "hw"), "docs/head-width")
    assert built == committed, "docs/head-width/head_width.json is stale: rerun its command"


def test_leaving_one_seed_out_tells_a_one_seed_verdict_from_a_firm_one(tmp_path):
    """Planted per-seed costs: a shift every seed shows keeps its verdict with any seed left
    out; one carried by two of four seeds does not; three seeds are too few to drop one."""
    from figures import head_width as hw

    ref = [0.0, 0.01, -0.01, 0.005]

    def q(name, new):
        return {"quantity": name, "outcome": "differs", "reason": "", "reference": {"values": ref},
                "new": {"values": new}}  # fmt: skip

    folder = tmp_path / "cpu-head64"  # the name picks section 20's width-64 predictions
    folder.mkdir()
    doc = json.loads((DOCS / "cpu-head64" / "carry.json").read_text())  # a real page, its
    doc["quantities"] = [  # quantities planted
        q("T7", [-0.05, -0.06, -0.30, -0.25]),  # two seeds make it
        q("T8", [-0.20, -0.21, -0.19, -0.20]),  # every seed makes it
        q("T5", [-0.5, -0.5, -0.5, -0.5]),  # not a cost quantity
    ]
    (folder / "carry.json").write_text(json.dumps(doc))
    rows = {r.quantity: r for r in hp.seed_drops([folder])}
    assert set(rows) == {"T7", "T8"}
    assert rows["T8"].same == 4 and rows["T8"].drops == 4
    assert rows["T7"].same < 4
    lo, hi = rows["T8"].shifts
    assert -0.21 < lo < hi < -0.19  # the mean of three of them, less the reference's 0.001
    assert "| cpu-head64 | T8 | differs | 4 of 4 |" in hw.render_seed_drop(list(rows.values()))
    doc["quantities"] = [q("T8", [-0.2, -0.21, -0.19])]
    (folder / "carry.json").write_text(json.dumps(doc))
    assert hp.seed_drops([folder]) == []
    assert hw.render_seed_drop([]) == ""
