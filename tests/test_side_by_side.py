"""A ladder's report beside another's (docs/STUDY.md section 18): the overlap rule, the rows
read from committed reports, a planted difference, the machine check and the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from figures.side_by_side import note_words, quantity_words
from sweeps.analysis import side_by_side as sbs
from sweeps.analysis.adapter import from_json

DOCS = Path(__file__).resolve().parents[1] / "docs"


def load(name: str) -> dict:
    return json.loads((DOCS / name / "analysis.json").read_text())


@pytest.mark.parametrize(
    "a, b, outcome",
    [
        ((0.01, 0.0178, False), (0.0178, 0.0316, False), sbs.DIFFERS),  # brackets only touch
        ((0.01, 0.0316, False), (0.0178, 0.0316, False), sbs.CARRIES),
        ((-0.2, -0.1, True), (-0.1, 0.0, True), sbs.CARRIES),  # closed intervals share -0.1
        ((-0.2, -0.11, True), (-0.1, 0.0, True), sbs.DIFFERS),
        ((0.0316, float("inf"), False), (0.01, 0.0562, False), sbs.CARRIES),
        (None, (0.01, 0.02, True), sbs.INCONCLUSIVE),
    ],
)
def test_the_overlap_rule(a, b, outcome):
    assert sbs.overlap(a, b) == outcome
    assert sbs.overlap(b, a) == outcome


def test_a_report_beside_itself_carries_every_ruled_row_and_matches_every_run():
    a = from_json(load("cpu-depth"))
    rows, machine = sbs.side_by_side(a, a)
    ruled = {r.outcome for r in rows if r.outcome}
    assert ruled <= {sbs.CARRIES, sbs.INCONCLUSIVE} and sbs.CARRIES in ruled
    assert {r.rung for r in rows} == {1, 2, 3, 4, 6, 8, None}
    assert [x.rung for x in machine] == [1, 2, 3, 4, 6, 8]
    assert all(x.same_fate == x.runs > 0 and x.max_abs_diff == 0 for x in machine)


def test_depth_8_at_4x_the_tokens_beside_the_fixed_ladder_reads_the_committed_numbers():
    rows, machine = sbs.side_by_side(
        from_json(load("cpu-depth")), from_json(load("cpu-depth-tokens"))
    )
    got = {quantity_words(r): r for r in rows}
    assert {r.rung for r in rows} == {8} and machine == []  # 1200 vs 2200 steps: no run shared
    cost = got["cost at off's best LR (off - on)"]
    assert (cost.reference, *cost.reference_span[:2]) == pytest.approx(
        (-0.126, -0.146, -0.106), abs=5e-4
    )
    assert (cost.new, *cost.new_span[:2]) == pytest.approx((-0.034, -0.080, 0.013), abs=5e-4)
    assert cost.outcome == sbs.DIFFERS and cost.unit == "nats"
    threshold = got["stability threshold"]
    assert threshold.reference_span == (0.0178, 0.0316, False)
    assert threshold.new_span == (0.0316, 0.0562, False) and threshold.outcome == sbs.DIFFERS
    edge = got["off's diverged edge"]
    assert edge.outcome == sbs.INCONCLUSIVE and edge.notes[1] == sbs.Note(sbs.CENSORED, 4, 4)
    assert note_words(edge.notes[1]) == "beyond the grid in 4 of 4 seeds"
    assert got["off's best LR"].outcome == "" and got["off's best LR"].new == 0.0178


def test_a_planted_shift_of_one_rungs_cost_differs_there_alone():
    ref = load("cpu-depth")
    new = copy.deepcopy(ref)
    effect = next(
        e
        for e in new["depths"]["4"]["comparisons"]["off vs on"]["per_lr"]
        if e["lr"] == new["depths"]["4"]["comparisons"]["off vs on"]["best_lr"]
    )
    for k in ("mean", "lower", "upper"):
        effect[k] -= 0.5
    rows, _ = sbs.side_by_side(from_json(ref), from_json(new))
    differ = [(r.rung, quantity_words(r)) for r in rows if r.outcome == sbs.DIFFERS]
    assert differ == [(4, "cost at off's best LR (off - on)")]


def test_the_side_by_side_page(tmp_path, capsys):
    from figures import side_by_side as page

    new = tmp_path / "cpu-depth-tokens"
    new.mkdir()
    (new / "analysis.json").write_text(json.dumps(load("cpu-depth-tokens")))
    argv = [str(new), "--reference", str(DOCS / "cpu-depth"), "--check", str(DOCS / "cpu-depth")]
    assert page.main(argv) == 0
    assert capsys.readouterr().out.strip() == f"{new}/side_by_side.md: 9 rows, 2 differ"
    text = (new / "side_by_side.md").read_text()
    assert (
        "| 8 | cost at off's best LR (off - on) | -0.126 [-0.146, -0.106] | "
        "-0.034 [-0.080, +0.013] | **differs** |" in text
    )
    assert "| 8 | stability threshold | (0.0178, 0.0316] | (0.0316, 0.0562] | **differs** |" in text
    assert "8: 5.65 (cpu-depth) vs 10.35 (cpu-depth-tokens)" in text
    doc = json.loads((new / "side_by_side.json").read_text())
    assert len(doc["rows"]) == 9 and doc["machine_check"] == []


def test_a_ladder_still_training_is_said_to_be_first(tmp_path, capsys):
    """Set beside the fixed ladder while it trains (runs of its plan missing), the page opens
    with that report's 'Not finished' line; a finished reference gets none."""
    from figures import side_by_side as page

    new = tmp_path / "cpu-depth-tokens"
    new.mkdir()
    doc = load("cpu-depth-tokens")
    assert not [p for p in doc["problems"] if p["status"] in ("missing", "incomplete")]
    missing = {"status": "missing", "arm": "off", "n_layer": 8, "n_embd": 64, "seed": 9}
    doc["problems"] += [
        {**missing, "run_id": f"torch-x-{i}", "lr": 0.01, "error": ""} for i in (0, 1)
    ]
    (new / "analysis.json").write_text(json.dumps(doc))
    assert page.main([str(new), "--reference", str(DOCS / "cpu-depth")]) == 0
    text = (new / "side_by_side.md").read_text()
    planned = len(doc["runs"]) + 2
    said = f"> `cpu-depth-tokens`: **Not finished: 2 of the plan's {planned} runs"
    assert said in text and text.index(said) < text.index("| rung | quantity |")
    assert "`cpu-depth`: **Not finished" not in text


def test_a_folder_without_an_analysis_is_refused_in_one_line(tmp_path, capsys):
    from figures import side_by_side as page

    assert page.main([str(tmp_path), "--reference", str(DOCS / "cpu-depth")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "analysis.json" in err
    assert page.main([str(tmp_path)]) == 2
    assert list(tmp_path.iterdir()) == []


def test_the_cost_per_doubling_is_set_side_by_side():
    """Section 18's question, does the cost's growth with depth survive a matched budget: the
    two ladders' cost_trend lines, carrying where their intervals overlap."""
    ref = load("cpu-depth")
    same, _ = sbs.side_by_side(from_json(ref), from_json(ref))
    rows = {quantity_words(r): r for r in same if r.quantity == sbs.COST_PER_DOUBLING}
    line = ref["cost_trend"]["lines"]["at the reference's best LR"]
    at_best = rows["cost per doubling (at off's best LR, nats)"]
    assert at_best.reference == pytest.approx(line["value"]) and at_best.outcome == sbs.CARRIES
    assert "cost per doubling (own best LRs, nats)" in rows
    flat = copy.deepcopy(ref)  # a matched ladder where the cost shrinks with depth instead
    for x in flat["cost_trend"]["lines"].values():
        x["value"], x["ci90"] = 0.02, [0.005, 0.035]
    moved, _ = sbs.side_by_side(from_json(ref), from_json(flat))
    assert {quantity_words(r) for r in moved if r.outcome == sbs.DIFFERS} == set(rows)


def test_the_committed_page_rebuilds_from_the_command_it_names(tmp_path, capsys):
    """docs/cpu-depth-matched/side_by_side.md names the command that made it, --check reports
    included (its depth-8 machine check is against cpu-depth-tokens): run as written on a copy
    of the report, it gives the committed page back."""
    from figures import side_by_side as page

    committed = (DOCS / "cpu-depth-matched" / "side_by_side.md").read_text()
    command = committed.split("Regenerate with `")[1].split("`")[0].split()
    assert command[:3] == ["python", "-m", "figures.side_by_side"]
    assert "--check" in command and "docs/cpu-depth-tokens" in command
    new = tmp_path / "cpu-depth-matched"
    new.mkdir()
    for name in ("analysis.json", "side_by_side.json"):  # as the command finds them in place
        (new / name).write_text((DOCS / "cpu-depth-matched" / name).read_text())
    args = [str(new) if a == "docs/cpu-depth-matched" else a for a in command[3:]]
    args = [str(DOCS.parent / a) if a.startswith("docs/") else a for a in args]
    assert page.main(args) == 0
    assert (new / "side_by_side.md").read_text() == committed
