"""Which LRs the training-dynamics charts show (sweeps/analysis/curve_picks.py), on hand-made
runs: the largest LR where every primary run is ok, the middle LR when there is none, and the
training curves' columns spread over the grid with the most different LR among them."""

import dataclasses

from sweeps.analysis import curve_picks
from sweeps.analysis import model as m


def run(arm, lr, outcome):
    fields = dict.fromkeys(f.name for f in dataclasses.fields(m.Run))
    return m.Run(**fields | {"run_id": f"{arm}-{lr}", "arm": arm, "lr": lr, "outcome": outcome})


def analysis(runs, per_lr=()):
    settings = m.Settings(**dict.fromkeys(f.name for f in dataclasses.fields(m.Settings)))
    settings = dataclasses.replace(settings, reference="off", primary="on")
    comparison = m.Comparison(
        **dict.fromkeys(f.name for f in dataclasses.fields(m.Comparison)) | {"per_lr": per_lr}
    )
    rung = m.Rung({}, {"off vs on": comparison}, {}, None)
    fields = dict.fromkeys(f.name for f in dataclasses.fields(m.Analysis))
    return m.Analysis(**fields | {"settings": settings, "runs": runs, "depths": {"4": rung}})


def effect(lr, mean, n=3, ceiling=False):
    return m.LrEffect(n, mean, 0.1, 0.1, 0.0, 0.0, [0.0, 0.0], 0.0, lr=lr, ceiling=ceiling)


def test_the_attention_chart_shows_the_largest_lr_where_every_primary_run_is_ok():
    runs = [run("on", lr, "ok") for lr in (0.001, 0.01, 0.1)] + [run("on", 0.1, "diverged")]
    runs += [run("off", 0.1, "ok"), run("on", 1.0, None)]  # unfinished: not counted
    assert curve_picks.high_stable_lr(analysis(runs)) == 0.01
    failing = [run("on", lr, "unstable") for lr in (0.001, 0.01, 0.1)]
    assert curve_picks.high_stable_lr(analysis(failing)) == 0.01  # none ok: the middle LR


def test_the_curves_show_lrs_spread_over_the_grid_and_always_the_most_different():
    lrs = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05]
    runs = [run("on", lr, "ok") for lr in lrs]
    per_lr = [effect(0.002, 0.5), effect(0.05, 0.9, ceiling=True), effect(0.01, -0.1)]
    a = analysis(runs, per_lr)
    assert curve_picks.most_different_lr(a) == 0.002  # a common ceiling is not an effect
    # four spread over six LRs (0.001, 0.005, 0.01, 0.05); 0.002 takes its nearest one's place
    assert curve_picks.curve_lrs(a) == [0.002, 0.005, 0.01, 0.05]
    runs_far = analysis(runs, [effect(0.02, 0.5)])  # 0.02 replaces its nearest, 0.01
    assert curve_picks.curve_lrs(runs_far) == [0.001, 0.005, 0.02, 0.05]
    assert curve_picks.curve_lrs(analysis([])) == []
