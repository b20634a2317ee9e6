"""Hand-made run directories with known answers, for the figures tests (no trainer needed).

A run's outcome is given directly: status and final val loss. Its metrics.jsonl is a smooth
curve from INIT_LOSS to that loss (rising back after warmup when it diverged) with
diagnostics that grow with the LR when QK-norm is off, so every chart has data.
"""
from __future__ import annotations

import math
from pathlib import Path

from sweeps.presets import get_preset
from sweeps.files import write_json_atomic
from sweeps.runs import RunDir

INIT_LOSS = 5.5
PROVENANCE = {"git_commit": "0123456789abcdef", "git_dirty": False, "device": "cpu",
              "versions": {"numpy": "2.0.0", "torch": "2.4.0"}, "python": "3.11.0",
              "platform": "Linux-test", "started_at": "2025-01-01T00:00:00+00:00"}


def config(qk_norm: str, n_layer: int, lr: float, seed: int, preset: str = "smoke",
           steps: int | None = None):
    overrides = [f"model.qk_norm={qk_norm}", f"model.n_layer={n_layer}", f"train.lr={lr}",
                 f"seed={seed}"]
    if steps is not None:
        overrides.append(f"train.max_steps={steps}")
    return get_preset(preset).with_overrides(overrides)


def write_run(root: Path, cfg, status: str | None, final: float | None = None,
              error: str = "") -> RunDir:
    """status None: an unfinished run (config and metrics, no summary)."""
    run = RunDir(Path(root) / cfg.run_id)
    write_json_atomic(run.config_path, {"run_id": cfg.run_id, "config": cfg.to_dict(),
                                        "provenance": PROVENANCE})
    t = cfg.train
    last = t.max_steps if status == "ok" else t.max_steps // 2
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
            row.update(lr=t.lr, train_loss=loss, grad_norm=1.0)
        if step % t.eval_interval == 0 or step == last:
            row.update(val_loss=loss, **_diagnostics(cfg, step / t.max_steps))
        rows.append(row)
    run.append_metrics(rows)
    if status is None:
        return run
    summary = {"status": status, "init_loss": INIT_LOSS, "steps_run": last,
               "max_steps": t.max_steps, "diverged_at": diverged_at, "wall_time_s": 1.0,
               "tokens_per_s": 1000.0, "tokens_seen": last * cfg.tokens_per_step}
    if status == "ok":
        summary.update(final_val_loss=final, best_val_loss=final, final_train_loss=final,
                       perplexity=math.exp(final))
    else:
        summary.update(final_val_loss=None, best_val_loss=None, final_train_loss=None,
                       perplexity=None)
    if status == "failed":
        summary["error"] = error or "RuntimeError: out of memory"
    run.write_summary(summary)
    return run


def _diagnostics(cfg, progress: float) -> dict:
    """Per-layer lists: logits grow with LR and training when QK-norm is off, not when on."""
    off = cfg.model.qk_norm == "none"
    growth = 1 + (300 * cfg.train.lr * progress if off else 0.2 * progress)
    layers = range(cfg.model.n_layer)
    logit = [4.0 * growth * (1 + 0.1 * i) for i in layers]
    return {"max_attn_logit": logit,
            "attn_entropy": [max(0.2, 3.0 - 0.02 * x) for x in logit],
            "attn_entropy_min": [max(0.05, 2.0 - 0.03 * x) for x in logit],
            "resid_kurtosis": [3.0 + 0.5 * x for x in logit],
            "resid_max_over_median": [5.0 + x for x in logit]}


def write_plan(root: Path, name: str, cfgs: list, spec: dict | None = None) -> None:
    write_json_atomic(Path(root) / "plan.json", {
        "name": name, "spec": spec or {"name": name, "preset": "smoke"},
        "runs": [{"run_id": c.run_id, "config": c.to_dict()} for c in cfgs]})


# The main fixture sweep. QK-norm on (rms) is flat: ON_LOSS per LR, +0.01 per seed.
# Off matches on below its threshold, is 0.4 nats worse at it, and diverges above it.
LRS = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
DEPTHS = [2, 4, 8]
SEEDS = [0, 1, 2]
ON_LOSS = {1e-3: 2.30, 3e-3: 2.10, 1e-2: 2.00, 3e-2: 2.02, 1e-1: 2.05}
THRESHOLD = {2: 3e-2, 4: 1e-2, 8: 3e-3}


def study_outcome(qk_norm: str, n_layer: int, lr: float, seed: int) -> tuple[str, float | None]:
    base = ON_LOSS[lr] + 0.01 * seed
    if qk_norm != "none" or lr < THRESHOLD[n_layer]:
        return "ok", base
    if lr == THRESHOLD[n_layer]:
        return "ok", base + 0.4
    return "diverged", None


def write_study(root: Path, name: str = "study", depths=DEPTHS, lrs=LRS, seeds=SEEDS,
                outcome=study_outcome, plan: bool = True, **cfg_kw) -> list:
    cfgs = []
    for qk in ("none", "rms"):
        for d in depths:
            for lr in lrs:
                for s in seeds:
                    cfg = config(qk, d, lr, s, **cfg_kw)
                    write_run(root, cfg, *outcome(qk, d, lr, s))
                    cfgs.append(cfg)
    if plan:
        write_plan(root, name, cfgs)
    return cfgs


def runs_table(outcome=study_outcome, depths=DEPTHS, lrs=LRS, seeds=SEEDS,
               qk_norms=("none", "rms")):
    """The runs table load_sweep would give for write_study, without touching the disk."""
    import pandas as pd

    rows = []
    for qk in qk_norms:
        for d in depths:
            for lr in lrs:
                for s in seeds:
                    status, final = outcome(qk, d, lr, s)
                    rows.append({"run_id": f"{qk}-L{d}-lr{lr:g}-s{s}", "qk_norm": qk,
                                 "n_layer": d, "lr": lr, "seed": s, "status": status,
                                 "init_loss": INIT_LOSS, "final_val_loss": final,
                                 "perplexity": math.exp(final) if final else None})
    return pd.DataFrame(rows)
