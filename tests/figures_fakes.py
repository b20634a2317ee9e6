"""Hand-made run directories with known answers, for the figures tests (no trainer needed).

A run's outcome is given directly: status and final val loss. Its metrics.jsonl is a smooth
curve from INIT_LOSS to that loss (rising back after warmup when it diverged), with quick
val losses every 2% of the run and diagnostics that grow with the LR when QK-norm is off.
"""

from __future__ import annotations

import math
from pathlib import Path

from sweeps.core.files import write_json_atomic
from sweeps.core.presets import get_preset
from sweeps.run.rundir import RunDir

# every chart a report writes, in report order (figures/report/figure_set.py), as the tests expect
# them
CHARTS = (
    "final_loss_vs_lr",
    "necessity_map",
    "stability_vs_depth",
    "threshold_trend",
    "paired_effect",
    "eta_max_ratio",
    "lr_sensitivity",
    "training_curves",
    "attention",
    "attention_vs_lr",
    "qk_ceiling",
    "residual_kurtosis",
)


INIT_LOSS = 5.5
UNIGRAM = 3.05  # the data's unigram baseline as the runs record it, nats/token
PROVENANCE = {
    "git_commit": "0123456789abcdef",
    "git_dirty": False,
    "device": "cpu",
    "versions": {"numpy": "2.0.0", "torch": "2.4.0"},
    "python": "3.11.0",
    "platform": "Linux-test",
    "host": {
        "cpu": "Test CPU",
        "simd": ["avx", "avx2"],
        "cpus": 2,
        "threads": {"OMP_NUM_THREADS": "1"},
    },
    "started_at": "2025-01-01T00:00:00+00:00",
}
ARM_SETTINGS = {
    "off": {"model.qk_norm": "none"},
    "on": {"model.qk_norm": "rms"},
    "off-warm": {"model.qk_norm": "none", "model.qk_init": "matched"},
    # interventions (figures/words/intervention_verdicts.py)
    "off-softcap": {"model.qk_norm": "none", "model.attn_softcap": 20.0},
    "off-z-loss": {"model.qk_norm": "none", "train.z_loss": 1e-4},
    "off-qk-clip": {"model.qk_norm": "none", "model.qk_clip": 20.0},
    "on-z-loss": {"model.qk_norm": "rms", "train.z_loss": 1e-4},
    "off-long-warmup": {"model.qk_norm": "none", "train.warmup_steps": 12},
    # off and on with 4x the steps (the budget check, figures/report/budget.py)
    "off-4x": {"model.qk_norm": "none", "train.max_steps": 120},
    "on-4x": {"model.qk_norm": "rms", "train.max_steps": 120},
}
# The runs' bigram baseline (nats): above every trained run's loss (<= 2.32) and below off's at
# its threshold LR (>= 2.40), so off there is stuck (docs/STUDY.md section 3), as at real scale.
BIGRAM = 2.35
STUDY = {
    "reference": "off",
    "primary": "on",
    "start_control": None,
    "comparisons": [],
    "delta": 0.1,
    "sensitivity_range": [1e-3, 1e-1],
    "min_effect": 0.02,
    "negligible": 0.05,
    "target_loss": 3.0,
}


def config(arm: str, n_layer: int, lr: float, seed: int, steps: int = 30, n_embd: int = 0):
    """A smoke-preset run; n_embd: a width ladder's rung (heads of WIDTH_HEAD), 0 the preset's."""
    width = [f"model.n_embd={n_embd}", f"model.n_head={n_embd // WIDTH_HEAD}"] if n_embd else []
    overrides = [
        f"arm={arm}",
        f"model.n_layer={n_layer}",
        *width,
        f"train.lr={lr}",
        f"seed={seed}",
        f"train.max_steps={steps}",
        "train.warmup_steps=5",
        "train.eval_interval=10",
        "train.baseline=bigram",  # the study specs' rule: a run worse than bigram is stuck
    ]
    overrides += [f"{k}={v}" for k, v in ARM_SETTINGS[arm].items()]  # an arm's steps win
    return get_preset("smoke").with_overrides(overrides)


def write_run(
    root: Path, cfg, status: str | None, final: float | None = None, error: str = ""
) -> RunDir:
    """status None: an unfinished run (config and metrics, no summary)."""
    run = RunDir(Path(root) / cfg.run_id)
    write_json_atomic(
        run.config_path, {"run_id": cfg.run_id, "config": cfg.to_dict(), "provenance": PROVENANCE}
    )
    t = cfg.train
    last = t.max_steps if status in ("ok", "unstable") else t.max_steps // 2
    diverged_at = last if status == "diverged" else None
    target = final if final is not None else 3.0
    rows = []
    for step in range(0, last + 1):
        # Exponential approach that lands exactly on the final loss at the last step.
        decay = (math.exp(-6 * step / t.max_steps) - math.exp(-6)) / (1 - math.exp(-6))
        loss = target + (INIT_LOSS - target) * decay
        if diverged_at is not None and step > t.warmup_steps:
            loss = INIT_LOSS + 3.0 * (step - t.warmup_steps) / (last - t.warmup_steps)
        row = {"step": step, "tokens": step * cfg.tokens_per_step}
        if step:
            row.update(lr=t.lr, train_loss=loss, grad_norm=1.0, train_loss_ema=loss)
        if step % t.loss_eval_interval == 0:
            row["quick_val_loss"] = loss
        if step % t.eval_interval == 0 or step == last:
            row.update(val_loss=loss, quick_val_loss=loss, **_diagnostics(cfg, step / last))
        rows.append(row)
    run.append_metrics(rows)
    if status is None:
        return run
    summary = {
        "run_id": cfg.run_id,
        "status": status,
        "init_loss": INIT_LOSS,
        "steps_run": last,
        "max_steps": t.max_steps,
        "diverged_at": diverged_at,
        "wall_time_s": 1.0,
        "tokens_per_s": 1000.0,
        "device": "cpu",
        "tokens_seen": last * cfg.tokens_per_step,
        "unstable_reasons": [],
        # off starts warmer as it widens (as a real model's does: its logit std grows with the
        # width); the smoke preset's width (16) starts at 0.01
        "init_logit_std": 0.01 * cfg.model.n_embd / 16 if cfg.model.qk_norm == "none" else 1.0,
        "bigram_loss": BIGRAM,
        "unigram_loss": UNIGRAM,
        "final_val_loss": final if status in ("ok", "unstable") else None,
    }
    if status == "unstable":
        summary["unstable_reasons"] = ["final val loss is worse than the bigram baseline"]
    if status == "failed":
        summary["error"] = error or "RuntimeError: out of memory"
    summary["metrics"] = run.metrics_fingerprint()
    run.write_summary(summary)
    return run


def _ceiling_use(cfg, progress: float) -> float:
    return 0.5 + 0.4 * progress * min(1.0, 10 * cfg.train.lr)


def _diagnostics(cfg, progress: float) -> dict:
    """Per-layer lists: logits grow with LR and training when QK-norm is off, not when on."""
    off = cfg.model.qk_norm == "none"
    growth = 1 + (300 * cfg.train.lr * progress if off else 0.2 * progress)
    layers = range(cfg.model.n_layer)
    logit = [4.0 * growth * (1 + 0.1 * i) for i in layers]
    return {
        "max_attn_logit": logit,
        "attn_logit_std": [0.01 * x for x in logit],
        "attn_entropy": [max(0.2, 3.0 - 0.02 * x) for x in logit],
        "attn_entropy_min": [max(0.05, 2.0 - 0.03 * x) for x in logit],
        "resid_kurtosis": [3.0 + 0.5 * x for x in logit],
        "resid_max_over_median": [5.0 + x for x in logit],
        "qk_gain_max": [None if off else 1.0 + progress for _ in layers],
        # on uses more of its ceiling as it trains, more at higher LRs (off: none)
        "qk_logit_ceiling": [None if off else x / _ceiling_use(cfg, progress) for x in logit],
        "qk_ceiling_use": [None if off else _ceiling_use(cfg, progress) for _ in layers],
        "logit_max": 5.0 + progress,
        "logit_rms": 1.0 + progress,
    }


def write_plan(
    root: Path,
    name: str,
    cfgs: list,
    arms=("off", "on"),
    study: dict | None = None,
    lrs=None,
    control_lrs=None,
) -> None:
    lrs = sorted({c.train.lr for c in cfgs}) if lrs is None else lrs
    spec = {
        "name": name,
        "preset": "smoke",
        "description": f"The {name} fixture.",
        "grid": {"lr": lrs},
        "arms": {
            a: {
                "set": ARM_SETTINGS[a],
                **({"lr": control_lrs} if a == "off-warm" and control_lrs else {}),
            }
            for a in arms
        },
    }
    if study is not False:
        spec["study"] = {**STUDY, **(study or {})}
    write_json_atomic(
        Path(root) / "plan.json",
        {
            "name": name,
            "spec": spec,
            "runs": [{"run_id": c.run_id, "config": c.to_dict()} for c in cfgs],
        },
    )


# The main fixture sweep. QK-norm on is flat: ON_LOSS per LR, +0.01 per seed. Off matches on
# below its threshold up to a seed jitter (OFF_JITTER: exact ties bound nothing,
# docs/STUDY.md section 4), is 0.4 + 0.02 * seed nats worse at it, and diverges above it.
LRS = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
DEPTHS = [2, 4, 8]
SEEDS = [0, 1, 2]
ON_LOSS = {1e-3: 2.30, 3e-3: 2.10, 1e-2: 2.00, 3e-2: 2.02, 1e-1: 2.05}
THRESHOLD = {2: 3e-2, 4: 1e-2, 8: 3e-3}
OFF_JITTER = {0: 0.004, 1: -0.004}


def threshold_outcome(thresholds: dict):
    """The fixture's outcomes with off's threshold LR per rung (a depth, or a width)."""

    def outcome(arm: str, rung: int, lr: float, seed: int) -> tuple[str, float | None]:
        base = ON_LOSS[lr] + 0.01 * seed
        if arm != "off":
            return "ok", base
        if lr < thresholds[rung]:
            return "ok", base + OFF_JITTER.get(seed, 0.0)
        if lr == thresholds[rung]:
            return "ok", base + 0.4 + 0.02 * seed
        return "diverged", None

    return outcome


study_outcome = threshold_outcome(THRESHOLD)


def write_study(
    root: Path,
    name: str = "study",
    depths=DEPTHS,
    lrs=LRS,
    seeds=SEEDS,
    outcome=study_outcome,
    arms=("off", "on"),
    study=None,
    control_lrs=None,
    plan: bool = True,
) -> list:
    cfgs = []
    for arm in arms:
        for d in depths:
            for lr in control_lrs if arm == "off-warm" and control_lrs else lrs:
                for s in seeds:
                    cfg = config(arm, d, lr, s)
                    write_run(root, cfg, *outcome(arm, d, lr, s))
                    cfgs.append(cfg)
    if plan:
        write_plan(root, name, cfgs, arms, study, lrs, control_lrs)
    return cfgs


# A sweep with several arms, comparisons and depths, for the chart tests: off and on as in the
# main fixture; off-warm fails one LR later than off and costs less (0.2 nats) at its threshold.
# Comparisons: off vs on, off-warm vs on (the start control) and off vs off-warm.
MULTI_STUDY = {"start_control": "off-warm", "comparisons": [["off", "off-warm"]]}
MULTI_DEPTHS = [2, 4, 8]


def multi_outcome(arm: str, n_layer: int, lr: float, seed: int) -> tuple[str, float | None]:
    if arm != "off-warm":
        return study_outcome(arm, n_layer, lr, seed)
    base = ON_LOSS[lr] + 0.01 * seed
    later = LRS[min(LRS.index(THRESHOLD[n_layer]) + 1, len(LRS) - 1)]
    if lr < later:
        return "ok", base + 0.005 * seed
    if lr == later:
        return "unstable", base + 0.2 + 0.03 * seed
    return "diverged", None


def write_multi(root: Path, name: str = "multi") -> list:
    return write_study(
        root,
        name,
        depths=MULTI_DEPTHS,
        outcome=multi_outcome,
        arms=("off", "on", "off-warm"),
        study=MULTI_STUDY,
    )


# The ladder fixture for the charts read as a reader reads them (tests/test_charts_read.py):
# five depths and the seven arms of the interventions spec. off-z-loss is off to the hundredth
# (its line lies on off's, as in docs/interventions), on-z-loss is on's, off-softcap and
# off-qk-clip fail one LR later than off (worse, then stuck), off-long-warmup like off.
LADDER_DEPTHS = [2, 3, 4, 6, 8]
LADDER_ARMS = (
    "off",
    "on",
    "off-softcap",
    "off-qk-clip",
    "off-z-loss",
    "on-z-loss",
    "off-long-warmup",
)
LADDER_THRESHOLD = {2: 3e-2, 3: 3e-2, 4: 1e-2, 6: 1e-2, 8: 3e-3}
LADDER_STUDY = {
    "comparisons": [
        [b, t] for arm in LADDER_ARMS[2:] for b, t in (("off", arm), (arm, "on")) if arm != "on"
    ]
}


def ladder_outcome(arm: str, n_layer: int, lr: float, seed: int) -> tuple[str, float | None]:
    base = ON_LOSS[lr] + 0.01 * seed
    if arm.startswith("on"):
        return "ok", base + (0.002 if arm == "on-z-loss" else 0.0)
    at = LRS.index(LADDER_THRESHOLD[n_layer]) + (arm in ("off-softcap", "off-qk-clip"))
    i = LRS.index(lr)
    if i < at:
        return "ok", base + OFF_JITTER.get(seed, 0.0) + (0.003 if arm == "off-z-loss" else 0.0)
    if i == at:
        if arm == "off-qk-clip":
            return "unstable", BIGRAM + 0.1 + 0.02 * seed  # stuck: worse than bigram
        return "ok", base + 0.4 + 0.02 * seed
    return "diverged", None


def write_ladder(root: Path, name: str = "ladder") -> list:
    return write_study(
        root,
        name,
        depths=LADDER_DEPTHS,
        outcome=ladder_outcome,
        arms=LADDER_ARMS,
        study=LADDER_STUDY,
    )


# The width ladder (docs/STUDY.md section 11, at fixture scale): depth 2, widths 32, 48 and 64
# with heads of 16 (2, 3 and 4 heads). Off fails as in the main fixture at a threshold LR per
# width: one grid step lower per width (WIDTH_THRESHOLD, a planted fall: W1 supported), or the
# same at every width (FLAT_THRESHOLD: W1 not supported). Off's best LR falls with the
# threshold, so the threshold as a multiple of it stays put (W2's question).
WIDTH_HEAD = 16
WIDTHS = [32, 48, 64]
WIDTH_DEPTH = 2
WIDTH_THRESHOLD = {32: 3e-2, 48: 1e-2, 64: 3e-3}
FLAT_THRESHOLD = {32: 1e-2, 48: 1e-2, 64: 1e-2}


def write_width(
    root: Path,
    name: str = "width",
    thresholds: dict = WIDTH_THRESHOLD,
    widths=WIDTHS,
    run=WIDTHS,
) -> list:
    """A width-ladder sweep of off and on (widths x LRS x SEEDS), its plan laddering n_embd;
    only the widths in `run` have run directories (the others are planned, not yet run)."""
    outcome = threshold_outcome(thresholds)
    cfgs = []
    for arm in ("off", "on"):
        for w in widths:
            for lr in LRS:
                for s in SEEDS:
                    cfg = config(arm, WIDTH_DEPTH, lr, s, n_embd=w)
                    if w in run:
                        write_run(root, cfg, *outcome(arm, w, lr, s))
                    cfgs.append(cfg)
    write_plan(root, name, cfgs, ("off", "on"), None, LRS)
    return cfgs


def drawn(root: Path) -> tuple[dict, object]:
    """(the analysis as the charts draw it, the curves) of the sweep written under root."""
    from figures.words.view import analyze
    from sweeps.analysis.results import load_curves, load_results

    results = load_results(root)
    curves = load_curves(results.runs)
    return analyze(results, curves), curves


def typed(view: dict):
    """The typed analysis figures/ draws and words (sweeps.analysis.model.Analysis) of a dict a
    test holds: analysis.json's, or figures.words.view.as_json's worded view (its words,
    adapter.WORDED, set aside)."""
    from sweeps.analysis.adapter import WORDED, from_json

    return from_json({k: v for k, v in view.items() if k not in WORDED})


def said(view: dict):
    """The analysis in words (figures.words.view.Said) of a dict a test holds (typed's)."""
    from figures.words.view import say

    return say(typed(view))
