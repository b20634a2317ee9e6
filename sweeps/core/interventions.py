"""The interventions a spec can put in an arm instead of (or beside) QK-norm, each declared once:
its name, the config field that switches it, what it controls, the diagnostic that shows it
acting, and the crosscheck levels where the two backends carry its arithmetic.

Off is each field's default, and an off intervention is invisible: the backends take exactly
the code path they took before it existed, and RunConfig.to_dict leaves a new field at its off
value out of the dict (so run ids, config hashes and config.json of every earlier run are
unchanged).

An intervention that acts in the training step declares it here, once, as hooks: its term in
the objective, its action after the optimizer step, its per-run tally. The four trainers (one
run and M fused, in qktorch/ and qkmlx/) and sweeps/run/loop.py call the hooks of whatever a
config switches on and name no intervention themselves. A hook's backend arithmetic is
reached through `ops`, the module the trainer hands it (below), so one declaration serves
torch and MLX, one run and a fused group (whose arrays carry the models first and whose
per-run values are [M]). Adding one is an entry here, its config field, and any backend
functions its hooks call in those modules (plus a planted-bug test per crosscheck level in
tests/test_crosscheck.py). The attention soft cap changes the model itself (the attention of
qkmlx/ and qktorch/ model and fused modules), and warmup the schedule: no hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

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
    # -- its hooks (none: it acts elsewhere, e.g. in the model or the schedule) --
    # term(ops, logits) -> the run's term ([M] fused): the objective gains value * term
    term: Callable | None = None
    # after_step(ops, params, value, cfg, attn_max) -> the step_metrics values, params updated
    # in place (torch; (new params, *values) in MLX, whose arrays are immutable, as each
    # backend's AdamW update); attn_max: the step's [n_layer, H] max attention logits
    # ([M, n_layer, H] fused) when attn_max is True, else None
    after_step: Callable | None = None
    attn_max: bool = False  # the forward measures them (the explicit attention path runs)
    # tally(previous or None, metrics row) -> this run's tally, checkpointed with the run and
    # written to summary.json under the field's name (`attr`)
    tally: Callable | None = None

    @property
    def attr(self) -> str:
        """The field's own name: the trainer attribute holding its value and the summary key
        of its tally (train.z_loss -> z_loss)."""
        return self.field.split(".")[1]

    @property
    def hooked(self) -> bool:
        return bool(self.term or self.after_step or self.tally)


# A hook's `ops`, the module whose functions it calls: for one run's objective term the
# backend's model module (qktorch.model, qkmlx.model: z_term), for its action after the step
# its train module (qktorch.train, qkmlx.train: clip_qk, from the optimizer module); a fused
# group's trainer hands its own module to both (qktorch.fused, qkmlx.fused: the same names on
# arrays with the models first). Looked up when called, so a function patched into one of
# them is what runs (tests/test_crosscheck.py plants bugs so).


def z_loss_term(ops, logits):
    """PaLM's z-loss: the mean over a run's tokens of (log Z)^2 (ops.z_term)."""
    return ops.z_term(logits)


def qk_clip_after_step(ops, params, tau: float, cfg, attn_max):
    """QK-clip after the optimizer step: W_q and W_k rows of each head over tau rescaled
    (ops.clip_qk); returns (heads clipped, largest max logit) as its step metrics."""
    return ops.clip_qk(params, attn_max, tau, cfg.model.head_dim)


def qk_clip_tally(tally: dict | None, row: dict) -> dict:
    """How often and how much QK-clip fired: steps and head rescales, and the largest max
    logit it met (tau / that is its strongest rescale)."""
    tally = dict(tally or {"steps_fired": 0, "heads_fired": 0, "max_logit": 0.0})
    tally["steps_fired"] += int(row["qk_clip_heads"] > 0)
    tally["heads_fired"] += int(row["qk_clip_heads"])
    if row["qk_clip_max_logit"] > tally["max_logit"]:  # NaN (a diverged step) is skipped
        tally["max_logit"] = float(row["qk_clip_max_logit"])
    return tally


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
            term=z_loss_term,
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
            after_step=qk_clip_after_step,
            attn_max=True,
            tally=qk_clip_tally,
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


# -- what a trainer's step calls ---------------------------------------------------------------
class StepHooks(NamedTuple):
    terms: tuple  # (value, term) of each objective term, in registry order
    attn_max: bool  # whether the forward measures the max attention logits
    after: tuple  # (value, after_step) of each action after the optimizer step


def attach(trainer, cfg) -> None:
    """Give a trainer the hooked interventions cfg switches on (trainer.hooks; none:
    trainer.intervened is False and the step is the plain one) and each one's value as the
    attribute its field names (train.z_loss -> trainer.z_loss). The step reads the value
    there when it is traced, so a subclass may change it (crosscheck's planted bugs do)."""
    trainer.hooks = [i for i in active(cfg) if i.hooked]
    for i in trainer.hooks:
        setattr(trainer, i.attr, value(cfg, i))
    trainer.intervened = bool(trainer.hooks)


def step_hooks(trainer) -> StepHooks:
    """The hooks of the trainer's interventions at their values now (one at 0: skipped)."""
    on = [(getattr(trainer, i.attr), i) for i in trainer.hooks if getattr(trainer, i.attr)]
    return StepHooks(
        tuple((v, i.term) for v, i in on if i.term),
        any(i.attn_max for _, i in on),
        tuple((v, i.after_step) for v, i in on if i.after_step),
    )


def tallied(cfg) -> list[Intervention]:
    """The interventions cfg switches on that keep a per-run tally."""
    return [i for i in active(cfg) if i.tally]
