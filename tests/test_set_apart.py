"""[study] set_apart (docs/STUDY.md section 22): rungs a spec trains beside its ladder but sets
apart from the trend verdict (cpu-depth-2-12 sets depth 1 apart). The spec field and its
refusals, and on a fixture ladder of four depths: the verdict is fitted without the set-apart
rung, the trend with it is given beside, and the report says both."""

import figures_fakes as ff
import pytest

from figures.report.assemble import make_report
from sweeps.core.errors import ConfigError
from sweeps.sweep.spec import load_spec, parse_spec
from tests.test_matched_budget import raw

THRESHOLDS = {1: 1e-1, 2: 3e-2, 4: 1e-2, 8: 3e-3}  # one grid step lower per doubling


def test_the_confirmatory_ladder_sets_depth_1_apart_and_records_it():
    spec = load_spec("cpu-depth-2-12")
    assert spec.study.set_apart == (1,)
    assert spec.study.to_dict()["set_apart"] == [1]
    assert "set_apart" not in load_spec("cpu-depth-matched").study.to_dict()


@pytest.mark.parametrize(
    "apart, message",
    [([3], r"set_apart must name rungs of \[grid\] n_layer"), ([1, 2], "leave at least 3")],
)
def test_a_bad_set_apart_is_refused_in_one_line(apart, message):
    spec = raw()
    spec["grid"]["n_layer"] = [1, 2, 4, 8]
    spec["study"]["set_apart"] = apart
    with pytest.raises(ConfigError, match=message) as err:
        parse_spec(spec)
    assert "\n" not in str(err.value)


def ladder(tmp_path, study):
    root = tmp_path / "ladder"
    ff.write_study(root, depths=[1, 2, 4, 8], outcome=ff.threshold_outcome(THRESHOLDS), study=study)
    return make_report(root, tmp_path / "out", formats=()).parent


def test_the_verdict_is_fitted_without_the_set_apart_rung_and_the_trend_with_it_beside(tmp_path):
    import json

    apart = json.loads((ladder(tmp_path, {"set_apart": [1]}) / "analysis.json").read_text())
    h3 = apart["h3"]
    assert h3["depths"] == [2, 4, 8]
    assert [r["rung"] for r in h3["rung_values"]] == [2, 4, 8]
    assert all(lo["rung"] != 1 for lo in h3["left_out"])
    beside = h3["with_apart"]
    assert beside["rungs"] == [1] and beside["slope"]["n"] == 4
    # the trend over every rung, as a spec without set_apart fits it
    every = json.loads((ladder(tmp_path / "b", None) / "analysis.json").read_text())["h3"]
    assert beside["slope"]["value"] == pytest.approx(every["at_bound"]["value"])
    assert beside["verdict"] == every["verdict"] and "with_apart" not in every
    report = (tmp_path / "out" / "report.md").read_text()
    assert "with depth 1 added (set apart by the spec, docs/STUDY.md section 22" in report
