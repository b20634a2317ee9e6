"""The token-matched check (docs/STUDY.md section 11): read and decided in the typed analysis
(sweeps/analysis/token_check.py, on typed values at each depth), worded by
figures/words/token_check.py from analysis.json's "token_check"."""

from __future__ import annotations

import json

import pytest

from figures.words import token_check
from sweeps.analysis import model as m
from sweeps.analysis.adapter import from_json, record, to_json
from sweeps.analysis.token_check import NO_CHECK, NO_LADDER, judge, values_at
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED


def grid(lo: float, hi: float) -> m.GridPoint:
    return m.GridPoint(value=(lo * hi) ** 0.5, kind="", bracket=[lo, hi], interpolated=False)


def side(
    depth: int, threshold: m.GridPoint, critical: list[m.GridPoint], tokens: float, influence=()
) -> m.CheckSide:
    """One depth's values as the check reads them (critical: off's per-seed critical LRs; the
    median is the lower middle one, which the check does not judge on; influence: (run id, LR,
    the threshold without that run))."""
    return m.CheckSide(
        depth=depth,
        threshold=threshold,
        critical=critical[(len(critical) - 1) // 2],
        critical_seeds=list(critical),
        definition="stuck",
        tokens_per_param=tokens,
        influence=[m.Moved(run_id=r, lr=lr, threshold=t) for r, lr, t in influence],
    )


def words(entry: m.TokenCheck) -> list[str]:
    """The check in words, as the report says it."""
    return token_check.lines(entry)


LADDER = side(4, grid(0.0316, 0.0562), [grid(0.0316, 0.0562)] + [grid(0.0562, 0.1)] * 3, 10.3)


def test_a_check_below_the_reference_survives_and_says_both_sides():
    check = side(8, grid(0.0178, 0.0316), [grid(0.0316, 0.0562)] * 4, 10.3)
    entry = judge(check, LADDER, "cpu-depth")
    assert (entry.verdict, entry.why) == (SUPPORTED, "survives")
    text = "\n".join(words(entry))
    assert "survives matching tokens per parameter" in text
    assert "Depth 8 (this check, 10.3 tokens per parameter): threshold (0.0178, 0.0316]" in text
    assert "Depth 4 (cpu-depth, 10.3 tokens per parameter)" in text
    assert "its seeds' brackets put it in (0.0562, 0.1]" in text
    assert "its seeds' brackets put it in (0.0316, 0.0562]" in text


def test_a_check_back_at_the_reference_is_a_token_effect():
    above = m.GridPoint(value=0.1, kind="above", bracket=None, interpolated=False)
    check = side(8, grid(0.0316, 0.0562), [above] * 4, 10.3)
    entry = judge(check, LADDER, "cpu-depth")
    assert (entry.verdict, entry.threshold_below, entry.critical_below) == (
        NOT_SUPPORTED,
        False,
        False,
    )
    assert "tokens-per-parameter effect" in words(entry)[0]


def test_a_verdict_one_run_decides_names_that_run_and_the_answer_without_it():
    """Leave-one-run-out on both sides: a run whose removal lifts the check to the reference's
    bracket flips the answer and is named; one that only moves the check further down is not."""
    reference = side(
        4,
        grid(0.0562, 0.1),
        [grid(0.0562, 0.1)] * 4,
        10.3,
        influence=[("ref-off-s1", 0.0562, grid(0.0316, 0.0562))],
    )
    check = side(
        8,
        grid(0.0316, 0.0562),
        [grid(0.0562, 0.1)] * 4,
        10.3,
        influence=[("check-off-s3", 0.0316, grid(0.0178, 0.0316))],
    )
    entry = judge(check, reference, "cpu-depth")
    assert entry.verdict == INCONCLUSIVE  # threshold below, critical LR not
    assert [(f.run_id, f.verdict) for f in entry.fragile] == [("ref-off-s1", NOT_SUPPORTED)]
    text = "\n".join(words(entry))
    assert (
        "without `ref-off-s1` (depth 4, LR 0.0562), depth 4's threshold is (0.0316, 0.0562], "
        'and the answer becomes "No: the depth trend is a tokens-per-parameter effect"'
    ) in text
    assert "check-off-s3" not in text


def test_a_missing_side_is_a_code_in_the_analysis_and_said_in_words():
    check = side(8, grid(0.0178, 0.0316), [grid(0.0316, 0.0562)] * 4, 10.3)
    entry = judge(check, None, "cpu-depth")
    assert (entry.verdict, entry.why) == (INCONCLUSIVE, NO_LADDER)
    assert entry.threshold_below is None and "threshold_below" not in record(entry)
    said = words(entry)[0]
    assert "cpu-depth's depth" in said and "same --runs-dir" in said
    # the check's own depth without finished runs of both arms: said as that, no runs-dir hint
    entry = judge(None, LADDER, "cpu-depth")
    assert entry.why == NO_CHECK
    said = words(entry)[0]
    assert "this sweep's depth yet" in said and "--runs-dir" not in said
    # a none value as analysis.json writes it (NaN as null) reads back
    none = m.GridPoint(value=None, kind="none", bracket=None, interpolated=False)
    entry = judge(side(8, none, [grid(0.0316, 0.0562)] * 4, 10.3), LADDER, "cpu-depth")
    assert entry.threshold_below is False and entry.verdict == INCONCLUSIVE


# -- end to end: a ladder and its check as run directories (tests/figures_fakes.py) ----------
def write_check(root, ladder: str, outcome) -> None:
    """The check sweep: depth 8 of the main fixture, its spec naming the ladder it checks."""
    import json

    from tests.figures_fakes import write_study

    write_study(root, "check", depths=[8], outcome=outcome)
    plan = json.loads((root / "plan.json").read_text())
    plan["spec"]["token_check"] = {"ladder": ladder, "reference": 4}
    (root / "plan.json").write_text(json.dumps(plan))


@pytest.mark.slow
def test_a_check_sweeps_report_judges_it_against_its_ladders_runs(tmp_path):
    import json

    from figures.report.assemble import make_report
    from tests.figures_fakes import study_outcome, write_study

    write_study(tmp_path / "study")  # the ladder: off's threshold 3e-2, 1e-2, 3e-3 at 2, 4, 8

    def like_depth_4(arm, n_layer, lr, seed):
        return study_outcome(arm, 4, lr, seed)

    for outcome, verdict in ((study_outcome, SUPPORTED), (like_depth_4, NOT_SUPPORTED)):
        check = tmp_path / f"check-{verdict}"
        write_check(check, "study", outcome)
        report = make_report(check, tmp_path / f"out-{verdict}", formats=())
        entry = json.loads((report.parent / "analysis.json").read_text())["token_check"]
        assert entry["verdict"] == verdict
        assert (entry["check"]["depth"], entry["reference"]["depth"]) == (8, 4)
        text = report.read_text()
        assert (
            "Does the depth trend survive matching tokens per parameter? (depth 8 at depth 4"
            in text
        )
        # the ladder's own depth 8 is shown beside, for comparison: threshold 3e-3 there
        assert entry["same_depth"]["depth"] == 8
        assert "For comparison, not decided on: depth 8 in study itself" in text
        assert "threshold (0.001, 0.003]" in text.split("For comparison")[1].split("\n")[0]
        assert "not on the ladder's grid" in text
        # re-rendered from its own data, with the ladder gone, the check keeps its answer
        again = make_report(None, tmp_path / f"again-{verdict}", (), from_report=report.parent)
        entry = json.loads((again.parent / "analysis.json").read_text())["token_check"]
        assert entry["verdict"] == verdict and entry["same_depth"]["depth"] == 8
        assert "depth 8 in study itself" in again.read_text()
    # a check whose ladder is not beside it says so and decides nothing
    alone = tmp_path / "alone" / "check"
    write_check(alone, "study", study_outcome)
    report = make_report(alone, tmp_path / "out-alone", formats=())
    assert "same --runs-dir" in report.read_text()


@pytest.mark.slow
def test_analyze_returns_a_check_sweeps_analysis_with_its_token_check(tmp_path):
    """sweeps.analysis.analyze of a check sweep: the Analysis it returns holds the check, typed
    and decided (nothing is added to it afterwards); figures/ writes it as analysis.json's
    "token_check" unchanged. Without the sweep's folder the ladder is not found (a code)."""
    from figures.words.view import as_json, say
    from sweeps.analysis import analyze
    from sweeps.analysis.results import load_curves, load_results
    from tests.figures_fakes import study_outcome, write_study

    write_study(tmp_path / "study")
    write_check(tmp_path / "check", "study", study_outcome)
    results = load_results(tmp_path / "check")
    curves = load_curves(results.runs)
    analysis = analyze(results, curves, tmp_path / "check")
    found = analysis.token_check
    assert isinstance(found, m.TokenCheck) and isinstance(found.check, m.CheckSide)
    assert (found.verdict, found.why) == (SUPPORTED, "survives")
    assert (found.check.depth, found.reference.depth, found.same_depth.depth) == (8, 4, 8)
    assert as_json(say(analysis))["token_check"] == to_json(analysis)["token_check"]
    assert from_json(to_json(analysis)).token_check == found  # analysis.json reads back
    alone = analyze(results, curves).token_check
    assert (alone.verdict, alone.why, alone.reference) == (INCONCLUSIVE, NO_LADDER, None)
    # a sweep without [token_check] has none
    ladder = load_results(tmp_path / "study")
    plain = analyze(ladder, load_curves(ladder.runs), tmp_path / "study")
    assert plain.token_check is None and "token_check" not in to_json(plain)


@pytest.mark.slow
def test_a_re_rendered_check_reads_the_ladders_report_beside_it_not_its_stale_record(tmp_path):
    """docs/cpu-depth-tokens re-rendered after docs/cpu-depth grew: the reference values come
    from the ladder's report as it now is, not from what the check's analysis once recorded."""
    from figures.report.assemble import make_report
    from tests.figures_fakes import study_outcome, write_study

    runs, docs = tmp_path / "runs", tmp_path / "docs"
    write_study(runs / "study")
    write_check(runs / "check", "study", study_outcome)
    make_report(runs / "check", docs / "check", formats=())
    recorded = json.loads((docs / "check" / "analysis.json").read_text())["token_check"]
    assert recorded["reference"]["threshold"]["bracket"] == [0.003, 0.01]

    def check_again(out: str) -> dict:
        report = make_report(None, tmp_path / out, (), from_report=docs / "check")
        return json.loads((report.parent / "analysis.json").read_text())["token_check"]

    assert check_again("kept") == recorded  # no ladder report beside: what it recorded

    def grown(arm, n_layer, lr, seed):  # the ladder since: its depth 4 now like depth 2
        return study_outcome(arm, 2 if n_layer == 4 else n_layer, lr, seed)

    write_study(runs / "grown", outcome=grown)
    make_report(runs / "grown", docs / "study", formats=())
    ladder = from_json(json.loads((docs / "study" / "analysis.json").read_text()))
    now = check_again("now")
    assert now["reference"]["threshold"]["bracket"] == [0.01, 0.03]
    assert now["reference"] == record(values_at(ladder, 4))
