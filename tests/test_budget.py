"""The report's budget check (figures/report/budget.py): the same comparison at two token budgets,
paired by recipe, its calls side by side LR by LR."""

from __future__ import annotations

import figures_fakes as ff
import pytest

from figures.report.answer import answer_lines
from figures.report.assemble import make_report
from figures.report.budget import call, section
from figures.words.view import analyze
from sweeps.analysis.results import load_curves, load_results


def budget_outcome(arm, n_layer, lr, seed):
    """At 1x, the fixture's off/on (off 0.4 nats worse at the threshold LR 1e-2, diverged
    above). At 4x, everything 0.3 nats lower and off only 0.01 worse at 1e-2: that call flips;
    off still diverges above it, so those calls hold."""
    base = arm.removesuffix("-4x")
    status, loss = ff.study_outcome(base, n_layer, lr, seed)
    if arm == base:
        return status, loss
    if base == "off" and lr == ff.THRESHOLD[n_layer]:
        return "ok", ff.ON_LOSS[lr] + 0.01 * seed - 0.3 + 0.01 + 0.002 * (seed - 1)
    return status, None if loss is None else loss - 0.3


def write(root, study):
    ff.write_study(
        root,
        depths=[4],
        arms=("off", "on", "off-4x", "on-4x"),
        outcome=budget_outcome,
        study=study,
    )
    results = load_results(root)
    return analyze(results, load_curves(results.runs))


def rows_of(text):
    return [line.split(" | ") for line in text.splitlines() if line.startswith("| 0.")]


@pytest.mark.slow
def test_the_budget_check_pairs_the_comparison_at_both_budgets_lr_by_lr(tmp_path):
    root = tmp_path / "budget"
    result = write(root, {"comparisons": [["off-4x", "on-4x"], ["off", "off-4x"]]})
    d = result["depths"]["4"]
    assert d["arms"]["off"]["recipe"] == d["arms"]["off-4x"]["recipe"]
    assert d["arms"]["off"]["recipe"] != d["arms"]["on"]["recipe"]
    assert d["arms"]["off-4x"]["budget"] == 4 * d["arms"]["off"]["budget"]
    text = section(ff.typed(result))
    # one pair: off vs on against off-4x vs on-4x (off vs off-4x crosses budgets: not a pair)
    assert text.count("Depth 4:") == 1 and "`off vs on` at 1x (" in text
    assert "against `off-4x vs on-4x` at 4x (" in text
    effects = {r[0].strip("| "): r for r in rows_of(text.split("| arms |")[0])}
    assert list(effects) == ["0.001", "0.003", "0.01", "0.03", "0.1"]
    small = {e["lr"]: e for e in d["comparisons"]["off vs on"]["per_lr"]}
    large = {e["lr"]: e for e in d["comparisons"]["off-4x vs on-4x"]["per_lr"]}
    for lr, row in zip([1e-3, 3e-3, 1e-2, 3e-2, 1e-1], effects.values()):
        assert row[1].endswith(call(small[lr])) and row[2].endswith(call(large[lr]))
        assert row[3].strip(" |") == ("yes" if call(small[lr]) == call(large[lr]) else "**no**")
        for cell, e in ((row[1], small[lr]), (row[2], large[lr])):  # † where the floor decided
            assert ("†" in cell) == (e["judged"] and e["sd_used"] > e["sd"])
    # the planted flip: necessary at 1x (0.4 nats), not at 4x (0.01 nats) at LR 1e-2
    assert call(small[1e-2]) == "necessary" and call(large[1e-2]) == "not necessary"
    assert effects["0.01"][3].strip(" |") == "**no**"
    assert call(small[1e-1]) == call(large[1e-1]) == "necessary"  # off diverged at both
    assert "the calls hold at 4 of 5 LRs" in text
    assert "30 tokens" not in text and f"{int(d['arms']['off-4x']['budget']):,} tokens" in text
    report = make_report(root, tmp_path / "report", formats=("vl.json",)).read_text()
    assert text in report
    # the answer's opening (and the terminal) says it in one line, naming the LR that differs
    line = (
        "depth 4: with 4x the tokens (off-4x vs on-4x) the calls of off vs on hold at 4 of 5 "
        "LRs; they differ at 0.01"
    )
    lines = answer_lines(ff.said(result))  # the question this sweep was built to ask comes first
    assert lines[:2] == [
        "Do the calls hold with more tokens?",
        f"  - Partly: {line}. "
        + (
            "Stability threshold: (0.003, 0.01] at the smaller budget, (0.01, 0.03] at the larger "
            "(Budget check, under Tables)."
        ),
    ]
    assert result["rules"]["4"]["text"].startswith("At depth 4 (0.36 tokens/parameter)")  # 1x
    opening = report.split("### Budget check")[0]
    assert f"- Partly: {line}. Stability threshold" in opening
    assert opening.index("**Do the calls hold with more tokens?**") < opening.index(
        "**Where is QK-norm necessary?"
    )


def test_no_budget_section_without_a_comparison_at_two_budgets(tmp_path):
    plain = tmp_path / "plain"
    ff.write_study(plain, depths=[2])
    results = load_results(plain)
    assert section(ff.typed(analyze(results, load_curves(results.runs)))) == ""
    # both budgets run, but only the 1x comparison is analysed: nothing to pair
    assert section(ff.typed(write(tmp_path / "one", {"comparisons": []}))) == ""
