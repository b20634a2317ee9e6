"""The token-matched check as the report words it (figures/token_check.py), on analysis dicts
shaped as figures/analysis.py writes them."""

from __future__ import annotations

from figures import token_check
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED


def grid(lo: float, hi: float) -> dict:
    return {"value": (lo * hi) ** 0.5, "kind": "", "bracket": [lo, hi], "interpolated": False}


def analysis(
    depth: int, threshold: dict, critical: list[dict], tokens: float, influence=()
) -> dict:
    """The parts of an analysis dict the check reads, at one depth (critical: off's per-seed
    critical LRs; the median is the lower middle one, which the check does not judge on;
    influence: (run id, LR, the threshold without that run))."""
    return {
        "settings": {
            "reference": "off",
            "primary": "on",
            "tokens_per_param": {str(depth): tokens},
        },
        "depths": {
            str(depth): {
                "comparisons": {
                    "off vs on": {
                        "threshold": threshold,
                        "influence": [
                            {"run_id": r, "lr": lr, "threshold_without": t}
                            for r, lr, t in influence
                        ],
                    }
                },
                "arms": {
                    "off": {
                        "eta_crit": {
                            "definition": "stuck",
                            "median": critical[(len(critical) - 1) // 2],
                            "seeds": dict(enumerate(critical)),
                        }
                    }
                },
            }
        },
    }


LADDER = analysis(4, grid(0.0316, 0.0562), [grid(0.0316, 0.0562)] + [grid(0.0562, 0.1)] * 3, 10.3)


def test_a_check_below_the_reference_survives_and_says_both_sides():
    check = analysis(8, grid(0.0178, 0.0316), [grid(0.0316, 0.0562)] * 4, 10.3)
    entry = token_check.judge(
        token_check.values_at(check, 8), token_check.values_at(LADDER, 4), "cpu-depth"
    )
    assert (entry["verdict"], entry["why"]) == (SUPPORTED, "survives")
    text = "\n".join(token_check.lines(entry))
    assert "survives matching tokens per parameter" in text
    assert "Depth 8 (this check, 10.3 tokens per parameter): threshold (0.0178, 0.0316]" in text
    assert "Depth 4 (cpu-depth, 10.3 tokens per parameter)" in text
    assert "its seeds' brackets put it in (0.0562, 0.1]" in text
    assert "its seeds' brackets put it in (0.0316, 0.0562]" in text


def test_a_check_back_at_the_reference_is_a_token_effect():
    check = analysis(8, grid(0.0316, 0.0562), [{"value": 0.1, "kind": "above"}] * 4, 10.3)
    entry = token_check.judge(
        token_check.values_at(check, 8), token_check.values_at(LADDER, 4), "cpu-depth"
    )
    assert (entry["verdict"], entry["threshold_below"], entry["critical_below"]) == (
        NOT_SUPPORTED,
        False,
        False,
    )
    assert "tokens-per-parameter effect" in token_check.lines(entry)[0]


def test_a_verdict_one_run_decides_names_that_run_and_the_answer_without_it():
    """Leave-one-run-out on both sides: a run whose removal lifts the check to the reference's
    bracket flips the answer and is named; one that only moves the check further down is not."""
    reference = analysis(
        4,
        grid(0.0562, 0.1),
        [grid(0.0562, 0.1)] * 4,
        10.3,
        influence=[("ref-off-s1", 0.0562, grid(0.0316, 0.0562))],
    )
    check = analysis(
        8,
        grid(0.0316, 0.0562),
        [grid(0.0562, 0.1)] * 4,
        10.3,
        influence=[("check-off-s3", 0.0316, grid(0.0178, 0.0316))],
    )
    entry = token_check.judge(
        token_check.values_at(check, 8), token_check.values_at(reference, 4), "cpu-depth"
    )
    assert entry["verdict"] == INCONCLUSIVE  # threshold below, critical LR not
    assert [(m["run_id"], m["verdict"]) for m in entry["fragile"]] == [
        ("ref-off-s1", NOT_SUPPORTED)
    ]
    text = "\n".join(token_check.lines(entry))
    assert (
        "without `ref-off-s1` (depth 4, LR 0.0562), depth 4's threshold is (0.0316, 0.0562], "
        'and the answer becomes "No: the depth trend is a tokens-per-parameter effect"'
    ) in text
    assert "check-off-s3" not in text


def test_a_missing_ladder_is_said_not_judged():
    check = analysis(8, grid(0.0178, 0.0316), [grid(0.0316, 0.0562)] * 4, 10.3)
    entry = token_check.judge(token_check.values_at(check, 8), None, "cpu-depth")
    assert entry["verdict"] == INCONCLUSIVE and "cpu-depth's depth" in entry["why"]
    assert "same --runs-dir" in token_check.lines(entry)[0]
    # the check's own depth without finished runs of both arms: said as that, no runs-dir hint
    entry = token_check.judge(None, token_check.values_at(LADDER, 4), "cpu-depth")
    said = token_check.lines(entry)[0]
    assert "this sweep's depth yet" in said and "--runs-dir" not in said
    # a none value as analysis.json writes it (NaN as null) reads back
    none = analysis(
        8, {"value": None, "kind": "none", "bracket": None}, [grid(0.0316, 0.0562)] * 4, 10.3
    )
    entry = token_check.judge(
        token_check.values_at(none, 8), token_check.values_at(LADDER, 4), "cpu-depth"
    )
    assert entry["threshold_below"] is False and entry["verdict"] == INCONCLUSIVE


# -- end to end: a ladder and its check as run directories (tests/figures_fakes.py) ----------
def write_check(root, ladder: str, outcome) -> None:
    """The check sweep: depth 8 of the main fixture, its spec naming the ladder it checks."""
    import json

    from tests.figures_fakes import write_study

    write_study(root, "check", depths=[8], outcome=outcome)
    plan = json.loads((root / "plan.json").read_text())
    plan["spec"]["token_check"] = {"ladder": ladder, "reference": 4}
    (root / "plan.json").write_text(json.dumps(plan))


def test_a_check_sweeps_report_judges_it_against_its_ladders_runs(tmp_path):
    import json

    from figures.report import make_report
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


def test_a_re_rendered_check_reads_the_ladders_report_beside_it_not_its_stale_record(tmp_path):
    """docs/cpu-depth-tokens re-rendered after docs/cpu-depth grew: the reference values come
    from the ladder's report as it now is, not from what the check's analysis once recorded."""
    import json

    check_dir, ladder_dir = tmp_path / "check", tmp_path / "ladder"
    check_dir.mkdir()
    ladder_dir.mkdir()
    old_ladder = analysis(4, grid(0.01, 0.0316), [grid(0.0316, 0.0562)] * 4, 10.3)
    stale = {"token_check": {"reference": token_check.values_at(old_ladder, 4)}}
    (check_dir / "analysis.json").write_text(json.dumps(stale))
    own = analysis(8, grid(0.0316, 0.0562), [grid(0.0316, 0.0562)] * 4, 10.3)
    spec = {"ladder": "ladder", "reference": 4}
    kept = token_check.entry(own, spec, None, check_dir)  # no ladder report beside: the record
    assert kept["reference"]["threshold"]["bracket"] == [0.01, 0.0316]
    (ladder_dir / "analysis.json").write_text(json.dumps(LADDER))
    now = token_check.entry(own, spec, None, check_dir)
    assert now["reference"]["threshold"]["bracket"] == [0.0316, 0.0562]
    assert now["reference"] == token_check.values_at(LADDER, 4)
