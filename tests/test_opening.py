"""The answer a practitioner reads first (figures/report/opening.py): each report opens with what
its
sweep was built to ask, in short sentences, every verdict with its words and its interval,
cross-references only to what the report has; the terminal says the same.

Fixtures (tests/figures_fakes.py): the seven arms of the interventions spec at one depth; the
five-depth, seven-arm ladder; a plain off/on sweep with a low-LR effect and no control; a
start-matched control that closes the low-LR gap.
"""

import math
import re
from dataclasses import fields, replace

import figures_fakes as ff
import pytest

from figures.report import opening
from figures.report.assemble import make_report
from figures.words import numbers
from figures.words.view import analyze
from sweeps.analysis import model as m
from sweeps.analysis.adapter import read
from sweeps.analysis.results import load_curves, load_results
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

ANSWERS = {SUPPORTED: "Yes", NOT_SUPPORTED: "No", INCONCLUSIVE: "Not decided"}
MAX_WORDS = 40  # per sentence: the issue's ~90-word sentence would fail this


def analysed(root):
    results = load_results(root)
    return analyze(results, load_curves(results.runs))


def only(cls, **given):
    """A typed record (sweeps/analysis/model.py) with the given fields and None elsewhere: what
    a test of one reader needs, without a whole analysis."""
    return cls(**{f.name: None for f in fields(cls)} | given)


def opening_of(report_text: str) -> str:
    """The report's answer up to the line that names the data (before the definitions)."""
    return report_text[report_text.index("## The answer") : report_text.index("These runs:")]


def sentences(text: str) -> list[str]:
    """Sentences of the opening: split after . ? ! or : before a capital, and at bullets."""
    out = []
    for line in text.splitlines():
        line = line.strip().removeprefix("- ").strip("*")
        out += [s for s in re.split(r"(?<=[.?!])\s+(?=[A-Z])", line) if s]
    return out


def low_lr_outcome(arm, n_layer, lr, seed):
    """off 0.3 nats worse at the lowest LR (a start-temperature-like gap), even with on at
    3e-3 and 1e-2, 0.4 worse at 3e-2 and diverged at 0.1."""
    base = ff.ON_LOSS[lr] + 0.01 * seed
    if arm != "off":
        return "ok", base
    if lr == 1e-3:
        return "ok", base + 0.3 + 0.02 * seed
    if lr < 3e-2:
        return "ok", base + ff.OFF_JITTER.get(seed, 0.0)
    if lr == 3e-2:
        return "ok", base + 0.4 + 0.02 * seed
    return "diverged", None


@pytest.fixture(scope="module")
def interventions(tmp_path_factory):
    """The interventions spec's seven arms at one depth, rendered with its SVG figures."""
    root = tmp_path_factory.mktemp("runs") / "iv"
    ff.write_study(
        root, depths=[4], outcome=ff.ladder_outcome, arms=ff.LADDER_ARMS, study=ff.LADDER_STUDY
    )
    report = make_report(root, formats=("svg",))
    return report.read_text(), analysed(root)


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "ladder"
    ff.write_ladder(root)
    report = make_report(root, formats=("vl.json",))
    return report.read_text(), analysed(root)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs") / "plain"
    ff.write_study(root, depths=[2], outcome=low_lr_outcome)
    report = make_report(root, formats=("vl.json",))
    return report.read_text(), analysed(root)


def test_the_interventions_report_answers_i1_to_i4_before_any_figure(interventions):
    text, result = interventions
    first = text.index("**Would a cheaper fix do instead of QK-norm?")
    assert first < text.index("**Where is QK-norm necessary?") < text.index("![")
    block = text[first : text.index("**Where is QK-norm necessary?")]
    judged = result["interventions"]["4"]
    for h in ("I1", "I2", "I3", "I4"):
        line = next(x for x in block.splitlines() if x.startswith("- ") and f"({h}:" in x)
        for arm, hs in judged.items():
            if h not in hs:
                continue
            # each arm under the answer its verdict gives, with the reason that decided it
            said = ANSWERS[hs[h]["verdict"]]
            group = re.search(rf"{said}: ([^;.]*)", line, re.IGNORECASE)
            assert group and arm in group.group(1).split(", "), (h, arm, line)
            assert f"  - {arm}: {hs[h]['reason']}" in block
    # the reasons quote the interval that decided: I2's largest gap, I3's gap at the lowest LR
    i2 = result["decisions"]["interventions"]["4"]["off-softcap"]["I2"]
    gap = next(
        e
        for e in result["depths"]["4"]["comparisons"]["off-softcap vs on"]["per_lr"]
        if e["lr"] == i2["at"]
    )
    assert f"largest gap {numbers.pm_interval(read(m.LrEffect, gap))}" in block


def test_a_report_without_a_control_names_none_and_every_verdict_has_words(interventions, plain):
    for text, result in (interventions, plain):
        head = opening_of(text)
        assert "control sweep" not in head and "(C1)." not in head
        low = any(r["low_lrs"] for r in result["decisions"]["rules"].values())
        assert ("This sweep has no control arm to tell." in head) == low
        lines = [x for x in head.splitlines() if re.match(r"- (H1|H2a|H2b|H3|C1) ", x)]
        assert [x.split()[1] for x in lines] == ["H1", "H2a", "H2b", "H3", "C1"]
        for line in lines:
            h = line.split()[1]
            verdict = result["verdicts"][h]["verdict"]
            assert line.startswith(f"- {h} {verdict}. "), line
            answer = "Not assessed" if h == "C1" else ANSWERS[verdict]
            assert re.search(rf"\? {answer}[:,]", line), line  # the question, then its answer
        c1 = next(x for x in lines if x.startswith("- C1"))
        assert c1.endswith("Not assessed: this sweep has no start-matched control arm.")


def test_the_low_lr_effect_is_named_apart_from_the_threshold(plain):
    text, result = plain
    head = opening_of(text)
    rule = result["decisions"]["rules"]["2"]
    lo, hi = rule["bracket"]
    assert rule["low_lrs"] == [1e-3] and (lo, hi) == (1e-2, 3e-2)
    bullets = [x for x in head.splitlines() if x.startswith("- ")]
    threshold = next(x for x in bullets if "not shown necessary" in x)
    # the LRs where QK-norm was not shown necessary are the bracket's lower end only: no range
    # that runs over the low LRs where it helped
    assert f"at {numbers.lr(lo)} (1x) it was not shown necessary" in threshold
    assert numbers.lr(1e-3) not in threshold and " to " not in threshold.split("Per seed")[0]
    low = next(x for x in bullets if x.startswith("- Separately"))
    assert low == (
        "- Separately, QK-norm also helped below that best LR: at 0.001. This low-LR effect may "
        "be the start temperature, not stability. This sweep has no control arm to tell."
    )
    # H1 at off's best LR, with its interval, and where each arm fails
    h1 = result["depths"]["2"]["h1"]["stats"]
    lo90, hi90 = h1["ci90"]
    assert (
        f"- At that best LR (H1): off - on = {numbers.num(h1['mean'])} [{numbers.num(lo90)}, "
        in head
    )
    assert "- Runs start to fail (critical LR, stuck): off 0.0173, on > 0.1." in head


def test_a_ladder_opens_with_the_trend_its_slope_and_interval(ladder):
    text, result = ladder
    head = opening_of(text)
    t = result["h3"]["at_bound"]
    trend = head.index("**Does the stability threshold fall as depth grows? (H3, depths 2, 3, 4")
    assert trend < head.index("**Where is QK-norm necessary? (off vs on, per depth)**")
    assert (
        f"- Yes: the threshold changes x{10 ** t['value']:.2f} per doubling of depth (slope "
        f"{t['value']:.3f} decades per doubling, 90% interval {t['lower']:.3f} to "
        f"{t['upper']:.3f};"
    ) in head
    assert result["verdicts"]["H3"]["verdict"] == SUPPORTED
    # answered above: the answer with what the verdict found, so a bare Yes or No cannot
    # read as its opposite (issue 49)
    h3 = (
        "- H3 supported. Does the stability threshold fall as depth grows? Yes: "
        f"{result['verdicts']['H3']['reason']}, as above."
    )
    assert h3 in head
    # the Verdicts section's evidence counts the fit's points as what they are: one value per
    # depth (five), not per seed
    n = len(ff.LADDER_DEPTHS)
    assert t["n"] == n
    assert f"{t['upper']:.3f}, {n} depths' values, 0 per-seed thresholds censored); x" in text
    # one bullet per depth, and the verdicts per depth as sub-bullets
    for d in ff.LADDER_DEPTHS:
        assert f"\n- Depth {d}: without QK-norm the best LR is" in head
        assert f"\n  - depth {d}: on's critical LR is x" in head
    # seven arms at five depths: the cheaper fixes' answer per question, and where their numbers
    # are (a heading the report has)
    assert "- Each arm's reasons and numbers per depth: Interventions, under Tables." in head
    assert "### Interventions: each arm against no intervention" in text


def test_the_openings_speak_in_short_sentences_and_point_only_at_what_exists(
    interventions, ladder, plain
):
    for text, _ in (interventions, ladder, plain):
        head = opening_of(text)
        long = [s for s in sentences(head) if len(s.split()) > MAX_WORDS]
        assert not long, long
        for said, heading in (
            ("thresholds table", "### Stability thresholds"),
            ("Interventions, under Tables", "### Interventions:"),
            ("Budget check, under Tables", "### Budget check"),
            ("Verdicts section", "## Verdicts"),
        ):
            assert said not in head or heading in text, said


def test_a_start_matched_control_opens_with_c1_and_its_gaps(tmp_path):
    def outcome(arm, d, lr, seed):
        base = ff.ON_LOSS[lr] + 0.01 * seed
        if arm == "off" and lr <= 1e-3:
            return "ok", base + 0.3 + 0.02 * seed  # the cold start costs at low LR ...
        if arm == "off" and lr >= 3e-2:
            return "diverged", None  # ... and instability at high LR
        if arm == "off-warm":  # the matched start closes the gap where it ran
            return "ok", base + ff.OFF_JITTER.get(seed, 0.0)
        return "ok", base

    root = tmp_path / "control"
    ff.write_study(
        root,
        depths=[2],
        arms=("off", "on", "off-warm"),
        outcome=outcome,
        control_lrs=[1e-3, 3e-3],
        study={"start_control": "off-warm"},
    )
    result = analysed(root)
    assert result["verdicts"]["C1"]["verdict"] == SUPPORTED
    lines = opening.terminal(ff.said(result))
    assert lines[0].startswith(
        "Is the low-LR gap between off and on the start temperature? (C1: off-warm is off "
        "started at on's attention-logit scale"
    )
    assert lines[1].startswith(
        "  - Yes: off-warm - on lies inside ±0.05 nats at all 1 LRs where QK-norm is necessary"
    )
    gaps = [_at(result, key, 1e-3) for key in ("off vs on", "off-warm vs on")]
    share = 1 - gaps[1]["mean"] / gaps[0]["mean"]  # docs/STUDY.md section 12
    assert 0.9 < share < 1.1  # the matched start closes the planted 0.3-nat gap
    assert lines[2] == (
        "    - LR 0.001: off - on {}; off-warm - on {}".format(*map(_nats, gaps))
        + f"; start-temperature share {share:.2f}"
    )
    assert gaps[0]["necessary"] and gaps[1]["equivalent"]
    assert lines[-1].endswith(
        "C1 supported. Is the low-LR gap the start temperature? Yes: the gap vanishes with the "
        "start matched at all 1 such LR(s), as above."
    )
    # the low-LR effect points at the control the sweep has
    assert any("The start-temperature control tests that (C1)." in x for x in lines)


def _at(result, key, lr):
    return next(e for e in result["depths"]["2"]["comparisons"][key]["per_lr"] if e["lr"] == lr)


def _nats(e):
    lo, hi = e["ci90"]
    return f"{numbers.num(e['mean'])} [{numbers.num(lo)}, {numbers.num(hi)}] nats"


def test_an_ad_hoc_grid_without_a_study_says_why_nothing_was_decided(tmp_path):
    """No [study] (an ad-hoc grid): every verdict line says so, and nothing points at a control
    arm or a control sweep the report does not have."""
    root = tmp_path / "bare"
    ff.write_study(root, depths=[2], study=False, outcome=low_lr_outcome)
    lines = opening.terminal(ff.said(analysed(root)))
    said = [x for x in lines if re.match(r"  - (H1|H2a|H2b|H3|C1) ", x)]
    assert len(said) == 5
    assert all(
        x.endswith("Not decided: the plan has no pre-registered [study] (docs/STUDY.md section 6).")
        for x in said
    ), said
    text = "\n".join(lines)
    assert "control sweep" not in text and "(C1)." not in text
    assert "This sweep has no control arm to tell." in text  # the low-LR effect, named apart


def test_a_best_lr_at_the_grids_bottom_is_said_to_bound_the_multiples(tmp_path, plain):
    """A grid that starts at off's best LR (a check sweep around the edge) cannot show a lower
    best: the rule says so, and the multiples it counts become lower bounds."""
    root = tmp_path / "edge"
    ff.write_study(
        root, depths=[2], lrs=[lr for lr in ff.LRS if lr >= 1e-2], outcome=low_lr_outcome
    )
    head = opening_of(make_report(root, formats=("vl.json",)).read_text())
    rule = analysed(root)["decisions"]["rules"]["2"]
    assert rule["best_lr"] == 1e-2 and rule["best_at_bottom"]
    assert "the best LR is 0.01, the lowest LR it ran" in head
    assert "each multiple of it below is a lower bound" in head
    text, result = plain  # the full grid: its best LR lies inside
    assert not result["decisions"]["rules"]["2"]["best_at_bottom"]
    assert "the lowest LR it ran" not in opening_of(text)


def test_a_fragile_threshold_says_where_it_moves_without_each_run():
    """Leave-one-run-out: the rule and the thresholds table say where the threshold lies
    without each run that moves it, so a reader sees which way it is fragile."""
    from figures.report import tables
    from figures.words.practitioner import rule_parts
    from sweeps.analysis import model as m
    from sweeps.study.rules import Rule

    without = m.GridPoint(0.0204, "", [0.0178, 0.0316], True)
    influence = [m.Influence(f"{arm}-s3", 0.0316, without) for arm in ("off", "on")]
    c = only(
        m.Comparison,
        threshold=m.GridPoint(0.042, "", [0.0316, 0.0562], False),
        seed_thresholds={0: without},
        influence=influence,
        ceiling=[],
        partial_ceiling=[],
    )
    crit = only(m.CriticalLRs, median=m.GridPoint(0.075, "", None, False))
    depth = only(m.Rung, arms={"off": only(m.Arm, eta_crit=crit)})
    rule = Rule("", 0.0178, (0.0316, 0.0562), (), None)
    s = only(m.Settings, reference="off", start_control=None)
    said = rule_parts(depth, c, s, rule)["fragile"]
    assert said.startswith("2 runs at LR 0.0316 each move the threshold when left out, to ")
    assert "to ~0.0204 in (0.0178, 0.0316] (leave-one-run-out" in said  # said once, not twice
    other = m.Influence("on-s3", 0.0316, m.GridPoint(math.nan, "none", None, False))
    said = rule_parts(depth, replace(c, influence=[influence[0], other]), s, rule)["fragile"]
    assert "to ~0.0204 in (0.0178, 0.0316] or none in the grid" in said
    ladder_axis = only(m.Settings, ladder=m.LadderAxis("n_layer", "depth"))
    rung = only(m.Rung, comparisons={"off vs on": c})
    table = tables.thresholds(only(m.Analysis, depths={"8": rung}, settings=ladder_axis))
    assert "`off-s3` (without it: ~0.0204 in (0.0178, 0.0316])" in table
    assert "`on-s3` (without it: ~0.0204 in (0.0178, 0.0316])" in table


def test_h2b_with_a_run_of_its_range_missing_says_so_not_a_number(tmp_path):
    """A missing run in the sensitivity range leaves H2b incomplete (the registry's reason code,
    sweeps.study.hypotheses.h2b, which figures/report/opening.py now reads instead of the worded
    reason): the opening says why, and prints no difference of S."""
    root = tmp_path / "study"
    ff.write_study(root, depths=[2])
    next(root.glob("torch-on-L2-lr0.003-s1-*")).rename(tmp_path / "moved-away")
    (line,) = [x for x in opening.markdown(ff.said(analysed(root))) if x.startswith("- H2b ")]
    assert "incomplete: a run of the sensitivity range is missing or failed" in line
    assert "LR sensitivity off - on" not in line
    # nor its robustness check: there is no registered difference for it to qualify
    h2b = analysed(root)["depths"]["2"]["h2b"]
    assert h2b.get("trained") is None and not h2b.get("trained_lrs")
    assert "Among runs that trained" not in line


def test_a_sweep_still_training_says_no_lr_is_judged_yet_not_up_to_nan(tmp_path, plain):
    """Two seeds finished of a plan's four (a sweep mid-way overnight): no LR has the 3 pairs
    the rule needs, and the rule says so instead of "up to n/a (... nanx that best LR)"."""
    root = tmp_path / "two-seeds"
    ff.write_study(root, depths=[2], seeds=[0, 1], outcome=low_lr_outcome)
    head = opening_of(make_report(root, formats=("vl.json",)).read_text())
    rule = analysed(root)["decisions"]["rules"]["2"]
    assert rule["top_lr"] is None
    assert "No LR could be judged yet: the rule needs at least 3 seeds" in head
    assert "n/a" not in head and "nanx" not in head
    text, _ = plain  # four seeds: judged, no such line
    assert "No LR could be judged yet" not in opening_of(text)
    assert "Not finished" not in text  # every planned run has an outcome


def test_h2b_says_what_is_left_among_runs_that_trained(plain):
    """H2b's robustness check (descriptive): off diverged at 0.1, so the registered
    sensitivity difference is partly that failure; the line goes on with the difference over
    the LRs where every run trained, the number computed here by hand from the fixture."""
    import numpy as np

    text, result = plain
    h = result["depths"]["2"]["h2b"]
    # the range [1e-3, 0.1] without the LRs where off failed: worse than the fixture's bigram
    # baseline (stuck) at 1e-3 and 3e-2, diverged at 0.1
    lrs = [3e-3, 1e-2]
    assert h["trained_lrs"] == pytest.approx(lrs)

    def sensitivity(arm, seed):
        losses = [low_lr_outcome(arm, 2, lr, seed)[1] for lr in lrs]
        return np.mean(losses) - min(losses)

    d = [sensitivity("off", k) - sensitivity("on", k) for k in ff.SEEDS]
    assert h["trained"]["mean"] == pytest.approx(np.mean(d)) and h["trained"]["n"] == 3
    assert h["trained"]["mean"] < h["mean"]  # the failure was part of the registered one
    (line,) = [x for x in opening_of(text).splitlines() if x.startswith("- H2b ")]
    lo, hi = h["trained"]["ci90"]
    assert line.endswith(
        f". Among runs that trained, at {numbers.lrs(lrs)}, where no run of either arm failed "
        f"(descriptive): {h['trained']['mean']:.3f} [{lo:.3f}, {hi:.3f}] nats."
    )
