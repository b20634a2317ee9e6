"""The interventions a spec can put in an arm instead of (or beside) QK-norm, each declared once:
its name, the config field that switches it, what it controls, the diagnostic that shows it
acting, and the crosscheck levels where the two backends carry its arithmetic.

Off is each field's default, and an off intervention is invisible: the backends take exactly
the code path they took before it existed, and RunConfig.to_dict leaves a new field at its off
value out of the dict (so run ids, config hashes and config.json of every earlier run are
unchanged). Adding one is an entry here, its config field, and its arithmetic in both
qkmlx/ and qktorch/ (plus a planted-bug test per level in tests/test_crosscheck.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# The levels of crosscheck (crosscheck/checks.py) an intervention's arithmetic can reach.
LEVELS = ("forward", "grad", "train", "checkpoint")


@dataclass(frozen=True)
class Intervention:
    name: str  # how specs, tables and crosscheck labels call it
    field: str  # the dotted config field, e.g. "train.z_loss"
    controls: str  # what it does, in one sentence
    diagnostic: str  # where it shows: a sweeps.core.diagnostics name or a metrics.jsonl key
    levels: tuple[str, ...]  # crosscheck levels where the backends compute it
    new_field: bool = True  # True: added with this registry; off (0) is omitted from hashes
    # crosscheck's exercise value: strong enough to act on a few steps from the init weights
    # (None: the sweep's own value is always exercised)
    exercise: float | None = None
    step_metrics: tuple[str, ...] = ()  # extra per-step metrics.jsonl keys while it is on


INTERVENTIONS: dict[str, Intervention] = {
    i.name: i
    for i in (
        Intervention(
            "z-loss",
            "train.z_loss",
            "adds train.z_loss * mean over tokens of (log Z)^2 to the training objective, log Z "
            "the logsumexp of a token's output logits (PaLM; Wortsman et al. 2023); train_loss "
            "and val_loss stay the plain cross entropy",
            "logit_max",
            ("grad", "train", "checkpoint"),
            exercise=1e-2,
        ),
        Intervention(
            "attn-softcap",
            "model.attn_softcap",
            "replaces each attention logit s by c * tanh(s / c), c = model.attn_softcap, before "
            "the causal mask and the softmax (Gemma 2); the fused attention kernel cannot, so "
            "the explicit attention path runs",
            "max_attn_logit",
            ("forward", "grad", "train", "checkpoint"),
            exercise=0.1,
        ),
        Intervention(
            "qk-clip",
            "model.qk_clip",
            "after each optimizer step, scales the W_q and W_k rows of every head whose largest "
            "causal attention logit q.k / sqrt(d_head) on the step's batch exceeded tau = "
            "model.qk_clip by sqrt(tau / max), so that logit comes out at tau (Kimi K2's QK-clip)",
            "qk_clip_heads",
            ("train",),
            exercise=0.02,
            step_metrics=("qk_clip_heads", "qk_clip_max_logit"),
        ),
        Intervention(
            "warmup",
            "train.warmup_steps",
            "the length of the linear warmup; the shared loop's schedule (sweeps/core/schedule.py) "
            "computes it, so no backend arithmetic changes",
            "train_loss",
            (),
            new_field=False,
        ),
    )
}


def value(cfg, intervention: Intervention):
    """The intervention's field read from a RunConfig."""
    section, name = intervention.field.split(".")
    return getattr(getattr(cfg, section), name)


def active(cfg) -> list[Intervention]:
    """The new-field interventions a RunConfig switches on (warmup is always there)."""
    return [i for i in INTERVENTIONS.values() if i.new_field and value(cfg, i)]


def step_metrics(cfg) -> tuple[str, ...]:
    """The extra per-step values a trainer returns after (loss, grad norm), in order."""
    return tuple(m for i in active(cfg) for m in i.step_metrics)


def omit_off(d: dict) -> dict:
    """A RunConfig dict without the new fields that are off (their default 0): what earlier
    runs hashed, so their run ids and config.json stay what they were."""
    for i in INTERVENTIONS.values():
        section, name = i.field.split(".")
        if i.new_field and d.get(section, {}).get(name, None) == 0:
            del d[section][name]
    return d
