"""The model configs to check: one preset, or every distinct model config of a sweep spec.

Each config is checked in the precision it trains in: float32 (exact arithmetic, tight
tolerances) unless it sets `train.dtype = "bfloat16"`, which is checked against
crosscheck.tolerances' bfloat16 bounds; a bfloat16 sweep's configs are checked in float32 too,
which catches what bfloat16's rounding hides. Learning rate and seed do not change the model,
so a sweep's configs are its distinct (model, data, precision) triples, trained here at the
spec's base LR (preset + [set], a stable one: at divergent LRs rounding differences grow
chaotically and agreement is not defined) and its first seed. Specs are read by
sweeps.sweep.spec, as the sweep runner reads them.

Interventions (sweeps.core.interventions) that change a backend's arithmetic are part of what
makes a config distinct. A sweep's own values may never act in a short check from the init
weights (a QK-clip threshold no logit reaches in 50 steps), so every target with one on is
checked again at the intervention's exercise value, where it acts from the first steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweeps.core.config import RunConfig
from sweeps.core.interventions import INTERVENTIONS, active, value
from sweeps.core.presets import get_preset

DEFAULT_QK_NORMS = ("none", "rms")  # QK-norm off and on
OTHER_DECAY = {"coupled": "independent", "independent": "coupled"}
FLOAT32 = "train.dtype=float32"


@dataclass(frozen=True)
class Target:
    label: str  # e.g. "tiny L4 qk_norm=rms"
    cfg: RunConfig


def preset_targets(preset: str, overrides=(), qk_norms=(), interventions=False) -> list[Target]:
    """interventions: also each intervention at its exercise value, QK-norm off."""
    base = get_preset(preset).with_overrides(list(overrides))
    cfgs = [base.with_overrides([f"model.qk_norm={qk}"]) for qk in qk_norms or DEFAULT_QK_NORMS]
    if interventions:
        cfgs += [
            base.with_overrides(["model.qk_norm=none", f"{i.field}={i.exercise!r}"])
            for i in INTERVENTIONS.values()
            if i.exercise is not None
        ]
    return distinct(preset, cfgs)


def sweep_targets(spec, overrides=(), qk_norms=()) -> list[Target]:
    """spec: a sweeps.sweep.spec.SweepSpec. --qk-norm replaces the spec's own qk_norm values."""
    base = spec.base_config("torch", overrides)
    cfgs = spec.configs("torch", overrides)
    if qk_norms:
        cfgs = [c.with_overrides([f"model.qk_norm={qk}"]) for c in cfgs for qk in qk_norms]
    fixed = [f"train.lr={base.train.lr!r}", f"seed={spec.seed[0]}"]
    cfgs = [c.with_overrides(fixed) for c in cfgs]
    exact = [c.with_overrides([FLOAT32]) for c in cfgs if c.train.dtype != "float32"]
    return distinct(spec.preset, exact + cfgs)


def distinct(name: str, cfgs: list[RunConfig]) -> list[Target]:
    """One target per distinct (model, data, z-loss, dtype), plus the last one again in the other
    weight decay mode, so every crosscheck covers both (coupled and independent), plus every
    target with an intervention on again at the intervention's exercise value."""
    targets, seen = [], set()
    for cfg in cfgs:
        key = (cfg.model, cfg.data, cfg.train.z_loss, cfg.train.dtype)
        if key not in seen:
            seen.add(key)
            targets.append(Target(label(name, cfg), cfg))
    last = targets[-1].cfg
    other = OTHER_DECAY[last.train.weight_decay_mode]
    targets.append(
        Target(
            f"{targets[-1].label} weight_decay_mode={other}",
            last.with_overrides([f"train.weight_decay_mode={other}"]),
        )
    )
    for target in list(targets):
        strong = [
            f"{i.field}={i.exercise!r}"
            for i in active(target.cfg)
            if i.exercise is not None and value(target.cfg, i) != i.exercise
        ]
        cfg = target.cfg.with_overrides(strong)
        key = (cfg.model, cfg.data, cfg.train.z_loss, cfg.train.dtype)
        if strong and key not in seen:
            seen.add(key)
            targets.append(Target(f"{label(name, cfg)} (exercise values)", cfg))
    return targets


def label(name: str, cfg: RunConfig) -> str:
    """e.g. "tiny L4 qk_norm=none qk-clip=0.02": the model and its interventions; a width
    other than the preset's is named too ("cpu L4 n_embd=96 qk_norm=none"), so that the
    configs of a width ladder can be told apart, and a precision other than float32
    ("tiny L4 qk_norm=none bfloat16")."""
    on = "".join(f" {i.name}={value(cfg, i):g}" for i in active(cfg))
    width = (
        "" if cfg.model.n_embd == get_preset(name).model.n_embd else f" n_embd={cfg.model.n_embd}"
    )
    dtype = "" if cfg.train.dtype == "float32" else f" {cfg.train.dtype}"
    return f"{name} L{cfg.model.n_layer}{width} qk_norm={cfg.model.qk_norm}{on}{dtype}"
