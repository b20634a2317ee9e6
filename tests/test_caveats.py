"""The report's refinement warning (figures/words/caveats.py): a rung whose brackets are wider than
its spec's resolution is named with the LRs the runner's own rule would add, and agrees with
the runner (sweeps/sweep/grid.py) on the same runs."""

from __future__ import annotations

import pandas as pd

from figures.words.caveats import unrefined
from sweeps.core.ladder import Ladder
from sweeps.study import rules
from sweeps.sweep.grid import grid_additions
from sweeps.sweep.spec import parse_spec

GRID = {"lr": [1e-3, 1e-2, 1e-1], "n_layer": [2, 4], "seed": [0, 1, 2]}
ARMS = {"off": {"set": {"model.qk_norm": "none"}}, "on": {"set": {"model.qk_norm": "rms"}}}
STUDY = {"delta": 0.1, "sensitivity_range": [1e-3, 0.1], "target_loss": 1.0}
EXTEND = {"max_extra_lrs": 0, "refine": True, "resolution": 0.25}


def _spec(extend=EXTEND) -> dict:
    return {
        "preset": "smoke",
        "grid": GRID,
        "arms": ARMS,
        "study": STUDY,
        "extend": extend,
        "set": {"train.baseline": "bigram"},
    }


def _summary(depth: int, lr: float) -> dict:
    """Depth 4 gets stuck at 0.1 in both arms (above the bigram line, not diverged); depth 2
    learns everywhere, with off's seeds a little apart so no pair ties exactly."""
    stuck = depth == 4 and lr == 0.1
    return {
        "status": "unstable" if stuck else "ok",
        "init_loss": 5.5,
        "final_val_loss": 2.5 if stuck else 2.0,
        "bigram_loss": 2.34,
    }


def _cells(configs, done) -> dict[int, rules.Cells]:
    rows = [
        {
            **done[c.run_id],
            "run_id": c.run_id,
            "n_layer": c.model.n_layer,
            "arm": c.arm,
            "lr": c.train.lr,
            "seed": c.seed,
            "baseline_loss": done[c.run_id]["bigram_loss"],
        }
        for c in configs
    ]
    return rules.build_cells(rows)


SETTINGS = {"base_lrs": GRID["lr"], "arms": ["off", "on"], "subset_arms": []}
NO_MISSING = pd.DataFrame(columns=["run_id", "n_layer", "lr"])


def test_an_unrefined_rung_is_named_with_the_lrs_the_runner_would_add():
    raw = _spec()
    spec = parse_spec(raw)
    configs = spec.configs("torch")
    done = {c.run_id: _summary(c.model.n_layer, c.train.lr) for c in configs}
    lines = unrefined(_cells(configs, done), SETTINGS, raw, NO_MISSING, Ladder())
    assert len(lines) == 1 and lines[0].startswith("depth 4: not refined to 0.25 decades")
    assert "would add LR 0.0316 (off seed 0: 0.01 ok, 0.1 fails" in lines[0]
    # the runner, on the same runs, grows the same rung by the same LRs
    runner = grid_additions(spec, configs, done)
    assert set(runner) == {4} and runner[4][0] == [0.0316]


def test_planned_lrs_and_specs_without_refinement_raise_no_warning():
    raw = _spec()
    configs = parse_spec(raw).configs("torch")
    cells = _cells(configs, {c.run_id: _summary(c.model.n_layer, c.train.lr) for c in configs})
    # 0.0316 planned but not yet trained: the missing-runs list says so, not this warning
    planned = pd.DataFrame({"run_id": ["x"], "n_layer": [4], "lr": [0.0316]})
    assert unrefined(cells, SETTINGS, raw, planned, Ladder()) == []
    # a sweep that never refines has no resolution to fall short of
    assert unrefined(cells, SETTINGS, _spec({"refine": False}), NO_MISSING, Ladder()) == []
