"""`config show --explain`: every config field with its value, unit and meaning.

The meaning is the field's own comment in sweeps/core/config.py (read from the source, so it
is written once: a new field documents itself there); the unit is declared here.
"""

from __future__ import annotations

import dataclasses
import inspect
import re

from sweeps.core.config import DataConfig, ModelConfig, RunConfig, TrainConfig

UNITS = {
    "model.n_layer": "blocks",
    "model.n_head": "heads",
    "model.n_embd": "features",
    "model.block_size": "tokens",
    "model.norm_eps": "-",
    "model.init_std": "std",
    "model.qk_gain_init": "x",
    "model.qk_proj_std": "std",
    "train.lr": "per step (peak)",
    "train.max_steps": "steps",
    "train.batch_size": "sequences",
    "train.warmup_steps": "steps",
    "train.min_lr_ratio": "x peak lr",
    "train.weight_decay": "per step",
    "train.beta1": "-",
    "train.beta2": "-",
    "train.adam_eps": "-",
    "train.grad_clip": "L2 norm",
    "train.eval_interval": "steps",
    "train.eval_batches": "batches",
    "train.early_eval_interval": "steps (0: off)",
    "train.early_eval_until": "x max_steps",
    "train.final_eval_tokens": "tokens (0: all)",
    "train.diag_sequences": "sequences",
    "train.log_interval": "steps",
    "train.loss_eval_fraction": "x max_steps",
    "train.loss_eval_batches": "batches",
    "train.checkpoint_interval": "steps",
    "train.diverge_margin": "nats",
    "train.spike_margin": "nats",
    "data.compact_vocab": "token ids",
    "data.builtin_stories": "stories",
    "data.val_fraction": "x documents",
    "data.path": "path",
    "seed": "-",
    "model.attn_softcap": "logit (0: off)",
    "model.qk_clip": "logit (0: off)",
    "train.z_loss": "x mean (log Z)^2 (0: off)",
}
SECTIONS = (("model", ModelConfig), ("train", TrainConfig), ("data", DataConfig), ("", RunConfig))


def field_comments(cls) -> dict[str, str]:
    """field -> its comment: the one on its line, else the comment lines just above it."""
    comments, above = {}, []
    for line in inspect.getsource(cls).splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("# ").strip())
            continue
        match = re.match(r"(\w+): [^=]+=[^#]*(#\s*(.*))?$", stripped)
        if match:
            comments[match[1]] = match[3] or " ".join(above)
        elif stripped.startswith("def "):
            break
        above = []
    return comments


def explain(cfg: RunConfig) -> list[str]:
    """One line per field: name = value  [unit]  meaning."""
    lines = []
    for section, cls in SECTIONS:
        comments = field_comments(cls)
        if section:
            lines.append(f"[{section}]")
        for f in dataclasses.fields(cls):
            if f.name in ("model", "train", "data"):
                continue
            key = f"{section}.{f.name}" if section else f.name
            # getattr, not to_dict(): to_dict leaves out interventions that are off
            value = getattr(getattr(cfg, section), f.name) if section else getattr(cfg, f.name)
            unit = UNITS.get(
                key,
                "choice" if isinstance(value, str) else "flag" if isinstance(value, bool) else "-",
            )
            meaning = MEANINGS[key](cfg) if key in MEANINGS else comments.get(f.name, "")
            lines.append(f"  {key:<26} = {value!s:<12} [{unit}]  {meaning}")
    return lines


def _weight_decay(cfg: RunConfig) -> str:
    """What train.weight_decay does under this config's train.weight_decay_mode."""
    if cfg.train.weight_decay_mode == "independent":
        return (
            "weight decay on 2-D weights only, independent of the peak LR: each step "
            "multiplies them by 1 - (lr_t / lr) x weight_decay (Wortsman et al. 2023)"
        )
    return (
        "weight decay on 2-D weights only, coupled to the LR as in AdamW: each step "
        "multiplies them by 1 - lr_t x weight_decay"
    )


# Fields whose meaning depends on another field's value: written here, not in config.py
MEANINGS = {"train.weight_decay": _weight_decay}
