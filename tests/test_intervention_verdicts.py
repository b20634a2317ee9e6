"""I1-I4 (figures/words/intervention_verdicts.py, docs/STUDY.md section 9) on sweeps with planted
answers: an arm that does what QK-norm does, one that does nothing, and QK-norm plus an arm
that helps it."""

from __future__ import annotations

import figures_fakes as ff
import pytest

from figures.words.view import analyze
from sweeps.analysis.results import load_curves, load_results
from sweeps.study import alternatives, rules, stats
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

ARMS = ("off", "on", "off-softcap", "off-z-loss", "off-qk-clip", "on-z-loss")
COMPARISONS = [[a, b] for x in ARMS[2:] for a, b in (("off", x), (x, "on"))]
JITTER = {0: 0.004, 1: -0.004, 2: 0.001}  # no exact ties between arms (docs/STUDY.md 4)


def planted(gap_at_low_lr: float):
    """off: gap_at_low_lr nats worse than on below its threshold (1e-2 at depth 4), 0.4 worse
    at it, diverged above. off-softcap behaves as on; off-z-loss as off; off-qk-clip as on up
    to off's threshold and diverged above it, as off (it helps, but does not move the edge);
    on-z-loss is on, 0.1 nats better at 1e-2 and 3e-2."""

    def outcome(arm, n_layer, lr, seed):
        on = ff.ON_LOSS[lr] + 0.01 * seed
        jitter = JITTER[seed] * (1 + ARMS.index(arm))
        if arm == "off-qk-clip" and lr > ff.THRESHOLD[n_layer]:
            return "diverged", None
        if arm in ("on", "off-softcap", "off-qk-clip"):
            return "ok", on + (jitter if arm != "on" else 0.0)
        if arm == "on-z-loss":
            return "ok", on + jitter - (0.1 if lr in (1e-2, 3e-2) else 0.0)
        if lr < ff.THRESHOLD[n_layer]:
            return "ok", on + gap_at_low_lr + jitter
        if lr == ff.THRESHOLD[n_layer]:
            return "ok", on + 0.4 + 0.02 * seed + jitter
        return "diverged", None

    return outcome


def judged(tmp_path, gap_at_low_lr):
    root = tmp_path / f"iv{gap_at_low_lr}"
    ff.write_study(
        root,
        depths=[4],
        arms=ARMS,
        outcome=planted(gap_at_low_lr),
        study={"comparisons": COMPARISONS},
    )
    results = load_results(root)
    return analyze(results, load_curves(results.runs))


def verdicts(result):
    return {
        arm: {h: v["verdict"] for h, v in hs.items()}
        for arm, hs in result["interventions"]["4"].items()
    }


def test_an_arm_like_qk_norm_and_an_arm_like_nothing_with_no_low_lr_gap(tmp_path):
    result = judged(tmp_path, 0.0)
    v = verdicts(result)
    assert v["off-softcap"] == {"I1": SUPPORTED, "I2": SUPPORTED, "I3": INCONCLUSIVE}
    assert v["off-z-loss"] == {"I1": NOT_SUPPORTED, "I2": NOT_SUPPORTED, "I3": INCONCLUSIVE}
    assert v["on-z-loss"] == {"I4": SUPPORTED}  # built on QK-norm: only I4
    # off is stuck at its threshold LR (worse than the bigram baseline) where off-qk-clip still
    # trains: its critical LR is one grid step higher, so it stabilises off (I1), though it
    # diverges from the next LR up
    assert v["off-qk-clip"]["I1"] == SUPPORTED
    crit = result["depths"]["4"]["arms"]
    assert crit["off-qk-clip"]["eta_crit"]["median"]["value"] == pytest.approx((1e-2 * 3e-2) ** 0.5)
    assert crit["off"]["eta_crit"]["median"]["value"] == pytest.approx((3e-3 * 1e-2) ** 0.5)
    assert result["depths"]["4"]["comparisons"]["off vs off-qk-clip"]["threshold"]["kind"] == ""
    reasons = result["interventions"]["4"]
    assert "no low-LR gap to close" in reasons["off-softcap"]["I3"]["reason"]
    # from off's critical LR (stuck at 1e-2 under v4): 1e-2, 3e-2 and 0.1
    assert "on is necessary over it at 0.01 to 0.1 (3 LRs)" in reasons["off-z-loss"]["I2"]["reason"]
    # the report prints each verdict in spec order with its reason
    from figures.report.interventions import section

    text = section(ff.typed(result))
    assert text.index("`off-softcap`") < text.index("`off-z-loss`") < text.index("`on-z-loss`")
    assert "  - I1 **supported**: needed against off from " in text


@pytest.mark.slow
def test_a_low_lr_gap_closed_by_one_arm_and_not_by_the_other(tmp_path):
    v = verdicts(judged(tmp_path, 0.3))
    assert v["off-softcap"]["I3"] == SUPPORTED
    assert v["off-z-loss"]["I3"] == NOT_SUPPORTED
    assert v["off-softcap"]["I1"] == SUPPORTED  # needed from the lowest LR ("below")


def call(lr, mean, half=0.05):
    """A judged LR's call (sweeps.study.rules.LRCall) with a 90% interval of +-half."""
    stat = stats.Paired(4, mean, half, half, mean - half, mean + half, mean - half / 3)
    return rules.LRCall(lr, True, mean - half > 0.02, abs(mean) + half < 0.05, stat)


@pytest.mark.parametrize(
    "means, verdict",
    [
        ([0.0, -0.2], SUPPORTED),  # better by more than m at one LR, worse at none
        ([0.1, -0.2], NOT_SUPPORTED),  # ... but worse at another: z-loss hurts there
        ([0.0, -0.05], NOT_SUPPORTED),  # not shown better anywhere (upper -0.0 > -m)
    ],
)
def test_i4_needs_a_gain_somewhere_and_a_loss_nowhere(means, verdict):
    calls = [call(lr, m) for lr, m in zip((1e-2, 3e-2), means)]
    assert alternatives.i4(calls, 0.02).verdict == verdict
    assert alternatives.i4([], 0.02).verdict == INCONCLUSIVE


def test_c1_and_i2_decide_on_typed_calls():
    """C1: supported where the control's gap is equivalent at every LR the primary needs;
    I2: QK-norm necessary over X at an LR at or above off's critical LR breaks it."""
    primary = [call(1e-3, 0.3), call(1e-2, 0.0)]
    assert alternatives.c1(primary, [call(1e-3, 0.0, 0.02)]).verdict == SUPPORTED
    assert alternatives.c1(primary, [call(1e-3, 0.2)]).verdict == NOT_SUPPORTED
    assert alternatives.c1([call(1e-3, 0.0)], [call(1e-3, 0.0)]).why == "no gap"
    crit = stats.GridValue(0.05, "", (0.03, 0.1))
    high = [call(0.03, 0.5), call(0.1, 0.0), call(0.3, 0.6)]
    d = alternatives.i2(high, crit)
    assert (d.verdict, d.lrs, d.at, d.n) == (NOT_SUPPORTED, (0.3,), 0.3, 2)
    assert alternatives.i2([call(0.1, 0.0), call(0.3, 0.0)], crit).verdict == SUPPORTED
    assert alternatives.i2(high, stats.GridValue(1.0, "above")).why == "off does not break"


def test_the_setup_names_each_warmup_an_arm_uses(tmp_path):
    from figures.report.what_ran import setup as _setup

    root = tmp_path / "warmups"
    ff.write_study(root, depths=[4], arms=("off", "on", "off-long-warmup"))
    results = load_results(root)
    setup = _setup(results, ff.typed(analyze(results, load_curves(results.runs))))
    assert "warmup 5 or 12 steps then cosine" in setup  # one run has one warmup
    assert "seeds 0, 1" in setup  # a list of a field's values stays a list


@pytest.mark.slow
def test_a_start_temperature_control_is_no_intervention(tmp_path):
    """off-warm has both comparisons (off vs off-warm, off-warm vs on) but switches no
    intervention: no I1-I4 verdicts and no interventions table for it."""
    from figures.report.interventions import section

    root = tmp_path / "multi"
    ff.write_multi(root)
    results = load_results(root)
    result = analyze(results, load_curves(results.runs))
    assert {tuple(c) for c in result["settings"]["all_comparisons"]} >= {
        ("off", "off-warm"),
        ("off-warm", "on"),
    }
    assert (
        result["depths"]["4"]["arms"]["off-warm"]["interventions"]
        == (result["depths"]["4"]["arms"]["off"]["interventions"])
    )
    assert result["interventions"] == {} and section(ff.typed(result)) == ""
