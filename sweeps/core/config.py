"""Run configuration: frozen dataclasses, validation, JSON round trip, run ids, overrides.

Every field has a default and a one-line comment. Standard parametrization only (no muP):
muP transfers learning rates across widths by design and would confound the study.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path

from sweeps.core.errors import ConfigError
from sweeps.core.interventions import omit_off
from sweeps.core.norms import QK_NORMS

BLOCK_NORMS = ("layernorm", "rms")
# The corpora: one module each in sweeps/data/corpora/ (that package's registry finds them by
# the same names). Read from the file names, because core cannot import the data layer; a test
# holds the two lists equal.
CORPORA = tuple(
    sorted(
        p.stem
        for p in (Path(__file__).resolve().parents[1] / "data" / "corpora").glob("*.py")
        if not p.stem.startswith("_")
    )
)
TOKENIZERS = ("bytes", "gpt2", "gpt2-compact")
BACKENDS = ("mlx", "torch")
DTYPES = ("float32", "bfloat16")
QK_INITS = ("default", "matched")
WEIGHT_DECAY_MODES = ("coupled", "independent")
BASELINES = ("bigram", "unigram", "none")
GPT2_VOCAB = 50257  # tiktoken's gpt2 encoding, <|endoftext|> included
ARM_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
# Fields added after runs were recorded, left out of RunConfig.to_dict at these defaults so
# that earlier runs keep their run ids (a run directory whose config.json hashes to another id
# would read as damaged). Interventions do the same through sweeps.core.interventions.omit_off.
NEW_DEFAULTS = {
    "train.early_eval_interval": 0,
    "train.early_eval_until": 0.1,
    "train.final_eval_tokens": 0,
}


@dataclass(frozen=True)
class ModelConfig:
    n_layer: int = 2  # transformer blocks (the depth moderator)
    n_head: int = 2  # attention heads per block
    n_embd: int = 16  # residual stream width
    block_size: int = 32  # context length in tokens
    qk_norm: str = "none"  # a kind of sweeps.core.norms (none | rms | layernorm): q, k per head
    norm: str = "layernorm"  # pre-norm of each block and the final norm: layernorm | rms
    norm_eps: float = 1e-5  # eps of every norm, explicit because torch and MLX defaults differ
    tie_embeddings: bool = False  # share wte and lm_head
    init_std: float = 0.02  # N(0, init_std); residual projections get / sqrt(2 n_layer)
    qk_gain_init: float = 1.0  # initial gain of q_norm and k_norm (QK-norm on)
    qk_proj_std: float = 0.0  # init std of W_q and W_k; 0: init_std, like every matrix
    # default | matched: start with the attention-logit scale of the other QK-norm setting
    # (sweeps.core.params.qk_init_scales): QK-norm off gets W_q, W_k ~ N(0, 1/n_embd), QK-norm
    # on gets gains init_std * sqrt(n_embd). The start-temperature control of docs/STUDY.md.
    qk_init: str = "default"
    # An intervention (sweeps.core.interventions), 0 = off: attention logits s become
    # c * tanh(s / c) with c = attn_softcap, before the mask and the softmax.
    attn_softcap: float = 0.0
    # An intervention, 0 = off: QK-clip's threshold tau on each head's max attention logit.
    qk_clip: float = 0.0

    def validate(self) -> None:
        _positive(
            self,
            "n_layer",
            "n_head",
            "n_embd",
            "block_size",
            "norm_eps",
            "init_std",
            "qk_gain_init",
        )
        _non_negative(self, "qk_proj_std", "attn_softcap", "qk_clip")
        if self.qk_clip and self.qk_norm != "none":
            raise ConfigError(
                f"model.qk_clip rescales W_q and W_k, which QK-norm "
                f"(model.qk_norm={self.qk_norm}) normalises away; use it with "
                f"model.qk_norm=none"
            )
        _choice(self, "qk_norm", tuple(QK_NORMS))
        _choice(self, "norm", BLOCK_NORMS)
        _choice(self, "qk_init", QK_INITS)
        if self.n_embd % self.n_head:
            raise ConfigError(
                f"model.n_embd must be divisible by model.n_head (got {self.n_embd} and "
                f"{self.n_head}); pick a head count that divides the width"
            )
        if self.qk_init == "matched" and (self.qk_gain_init != 1.0 or self.qk_proj_std != 0.0):
            raise ConfigError(
                "model.qk_init=matched sets the W_q/W_k std or the QK-norm gains "
                "itself; leave model.qk_gain_init and model.qk_proj_std at their "
                "defaults (1 and 0)"
            )

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 3e-3  # peak learning rate (the swept variable)
    max_steps: int = 60  # optimizer steps (token budget = max_steps * batch_size * block_size)
    batch_size: int = 8  # sequences per step
    warmup_steps: int = 10  # linear warmup from lr / warmup_steps to lr
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio at max_steps
    weight_decay: float = 0.1  # decoupled (AdamW), on 2-D weights only
    # coupled: each step decays by lr_t * weight_decay (AdamW); independent: by
    # (lr_t / lr) * weight_decay, the schedule without the peak LR (Wortsman et al. 2023)
    weight_decay_mode: str = "coupled"
    beta1: float = 0.9  # AdamW first-moment decay
    beta2: float = 0.95  # AdamW second-moment decay
    adam_eps: float = 1e-8  # AdamW eps, added to sqrt(v_hat)
    grad_clip: float = 1.0  # global gradient-norm clip; 0 disables
    eval_interval: int = 20  # evaluate val loss and diagnostics every N steps (and at the end)
    eval_batches: int = 4  # fixed validation batches per evaluation
    # the same evaluations also every N steps early in the run, up to early_eval_until x
    # max_steps, to see the first phase of learning (0 = off)
    early_eval_interval: int = 0
    early_eval_until: float = 0.1  # the early evaluations last this fraction of max_steps
    # the final val loss (summary.json's final_val_loss), after the last step: the mean per
    # token over non-overlapping block_size windows of the whole validation split (0) or of
    # its first N tokens
    final_eval_tokens: int = 0
    diag_sequences: int = 4  # sequences of the first val batch used for the diagnostics
    # Losses stay on the device and are read (and metrics rows, one per step, written)
    # every N steps: a diverged run stops at most N - 1 steps late.
    log_interval: int = 1
    loss_eval_fraction: float = 0.02  # quick val loss every this fraction of max_steps
    loss_eval_batches: int = 2  # the first N fixed validation batches make the quick val loss
    checkpoint_interval: int = 50  # save a resumable checkpoint every N steps (and at the end)
    diverge_margin: float = 1.0  # diverged: train loss > loss at init + margin (nats) after warmup
    # unstable if the smoothed train loss ends more than this (nats) above its running
    # minimum after warmup: a spike that did not recover (docs/STUDY.md)
    spike_margin: float = 0.2
    # unstable if the final val loss is worse than this baseline of the data (what counting
    # achieves, sweeps.data.baselines): bigram | unigram | none (toy models that cannot)
    baseline: str = "bigram"
    dtype: str = "float32"  # float32 | bfloat16 (mixed precision where the device supports it)
    # z-loss coefficient (an intervention, 0 = off): the objective adds z_loss * mean(log Z)^2
    # over the output logits; train_loss and val_loss stay the cross entropy
    z_loss: float = 0.0

    def validate(self) -> None:
        _positive(
            self,
            "lr",
            "max_steps",
            "batch_size",
            "eval_interval",
            "eval_batches",
            "diag_sequences",
            "log_interval",
            "checkpoint_interval",
            "adam_eps",
            "diverge_margin",
            "spike_margin",
            "loss_eval_fraction",
            "loss_eval_batches",
        )
        _non_negative(
            self,
            "warmup_steps",
            "weight_decay",
            "grad_clip",
            "z_loss",
            "early_eval_interval",
            "final_eval_tokens",
        )
        for name in ("beta1", "beta2"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"train.{name} must be in [0, 1) (got {getattr(self, name)})")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ConfigError(f"train.min_lr_ratio must be in [0, 1] (got {self.min_lr_ratio})")
        if not 0.0 <= self.early_eval_until <= 1.0:
            raise ConfigError(
                f"train.early_eval_until must be in [0, 1], a fraction of train.max_steps "
                f"(got {self.early_eval_until})"
            )
        if self.warmup_steps >= self.max_steps:
            raise ConfigError(
                f"train.warmup_steps must be below train.max_steps (got {self.warmup_steps} "
                f">= {self.max_steps}); shorten the warmup or train longer"
            )
        if self.diag_sequences > self.batch_size:
            raise ConfigError(
                f"train.diag_sequences must be at most train.batch_size (got "
                f"{self.diag_sequences} > {self.batch_size})"
            )
        _choice(self, "dtype", DTYPES)
        _choice(self, "weight_decay_mode", WEIGHT_DECAY_MODES)
        _choice(self, "baseline", BASELINES)
        if self.loss_eval_fraction > 1:
            raise ConfigError(
                f"train.loss_eval_fraction must be at most 1 (got {self.loss_eval_fraction})"
            )
        if self.loss_eval_batches > self.eval_batches:
            raise ConfigError(
                f"train.loss_eval_batches must be at most train.eval_batches (got "
                f"{self.loss_eval_batches} > {self.eval_batches})"
            )

    @property
    def loss_eval_interval(self) -> int:
        """Steps between quick val-loss evaluations (steps-to-target resolution)."""
        return max(1, int(self.max_steps * self.loss_eval_fraction))

    @property
    def early_eval_end(self) -> int:
        """The last step the early evaluations may fall on (early_eval_until x max_steps)."""
        return math.floor(self.early_eval_until * self.max_steps + 1e-9)

    def evaluates_at(self, step: int) -> bool:
        """Whether the loop evaluates (val loss on the fixed batches and every diagnostic)
        after `step` steps: step 0, every eval_interval, every early_eval_interval up to
        early_eval_end, and the last step."""
        early = self.early_eval_interval
        return (
            step % self.eval_interval == 0
            or step == self.max_steps
            or (early > 0 and step % early == 0 and step <= self.early_eval_end)
        )


@dataclass(frozen=True)
class DataConfig:
    corpus: str = "builtin"  # one of CORPORA: builtin (synthetic, offline), tinystories, file, ...
    path: str = ""  # file: a .txt/.jsonl/.parquet; tinystories: a local copy of the hub dataset
    tokenizer: str = "bytes"  # bytes | gpt2 | gpt2-compact
    compact_vocab: int = 4096  # gpt2-compact: keep the K most frequent train ids (+1 unknown id)
    builtin_stories: int = 20000  # builtin: generated stories (28.5M bytes, 7.2M gpt2 tokens)
    builtin_seed: int = 0  # builtin: generator seed (the corpus, not the run)
    val_fraction: float = 0.05  # builtin and file: share of documents held out for validation

    def validate(self) -> None:
        _choice(self, "corpus", CORPORA)
        _choice(self, "tokenizer", TOKENIZERS)
        _positive(self, "compact_vocab", "builtin_stories", "val_fraction")
        if self.corpus == "file" and not self.path:
            raise ConfigError(
                "data.corpus=file needs a file: add --set data.path=FILE (.txt, .jsonl or .parquet)"
            )
        if self.val_fraction >= 0.5:
            raise ConfigError(f"data.val_fraction must be below 0.5 (got {self.val_fraction})")
        if self.tokenizer == "gpt2-compact" and self.compact_vocab >= GPT2_VOCAB:
            raise ConfigError(
                f"data.compact_vocab={self.compact_vocab} is not smaller than the gpt2 "
                f"vocabulary ({GPT2_VOCAB}); choose at most {GPT2_VOCAB - 1} or use "
                f"tokenizer gpt2"
            )

    @property
    def vocab_size(self) -> int:
        """Size of the token id space the model sees (known without loading any data)."""
        if self.tokenizer == "bytes":
            return 256
        if self.tokenizer == "gpt2":
            return GPT2_VOCAB
        return self.compact_vocab + 1  # the kept ids plus one unknown id


@dataclass(frozen=True)
class RunConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)
    seed: int = 0  # initial weights and batch order
    backend: str = "torch"  # torch | mlx: which trainer ran (part of the run id)
    arm: str = ""  # the sweep arm this run belongs to (a spec's [arms] name; part of the run id)

    def validate(self) -> RunConfig:
        self.model.validate()
        self.train.validate()
        self.data.validate()
        _choice(self, "backend", BACKENDS)
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0 (got {self.seed})")
        if self.arm and not ARM_NAME.match(self.arm):
            raise ConfigError(
                f"arm name '{self.arm}' must be lower-case letters, digits and "
                f"dashes, starting with a letter (e.g. off-warm)"
            )
        return self

    @property
    def vocab_size(self) -> int:
        return self.data.vocab_size

    @property
    def tokens_per_step(self) -> int:
        return self.train.batch_size * self.model.block_size

    def to_dict(self) -> dict:
        """Every field, except an intervention field at its off value (sweeps.core.interventions)
        and a field of NEW_DEFAULTS at its default: so the run id, config hash and config.json
        of a run without them are what they were."""
        d = omit_off(dataclasses.asdict(self))
        for key, default in NEW_DEFAULTS.items():
            section, name = key.split(".")
            if d[section][name] == default:
                del d[section][name]
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        d = dict(d)
        sections = {"model": ModelConfig, "train": TrainConfig, "data": DataConfig}
        kwargs = {}
        for name, section_cls in sections.items():
            kwargs[name] = _build(section_cls, d.pop(name, {}), name)
        kwargs.update(_check_keys(cls, d, ""))
        return cls(**kwargs).validate()

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        return cls.from_dict(json.loads(text))

    def config_hash(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:10]

    @property
    def run_id(self) -> str:
        """Readable prefix + hash of the full config: same config, same directory."""
        m, t = self.model, self.train
        return (
            f"{self.backend}-{arm_label(self)}-L{m.n_layer}-lr{t.lr:.3g}-s{self.seed}-"
            f"{self.config_hash()}"
        )

    def with_overrides(self, overrides: typing.Iterable[str]) -> RunConfig:
        """Apply dotted `section.field=value` overrides with type checking."""
        d = self.to_dict()
        for item in overrides:
            key, value = _split_override(item)
            parts = key.split(".")
            target, cls, prefix = d, RunConfig, ""
            if len(parts) == 2 and parts[0] in ("model", "train", "data"):
                target = d[parts[0]]
                cls = {"model": ModelConfig, "train": TrainConfig, "data": DataConfig}[parts[0]]
                prefix = parts[0] + "."
            elif len(parts) != 1:
                raise ConfigError(
                    f"unknown setting '{key}': use model.X, train.X, data.X, "
                    f"seed, backend or arm{_did_you_mean(parts[-1])}"
                )
            name = parts[-1]
            types = _field_types(cls)
            if name not in types or name in ("model", "train", "data"):
                known = ", ".join(prefix + n for n in types if n not in SECTIONS)
                raise ConfigError(
                    f"unknown setting '{key}'{_did_you_mean(name, prefix)}; "
                    f"known: {known}" + ("" if prefix else ", or model.X, train.X, data.X")
                )
            target[name] = parse_value(value, types[name], key)
        return RunConfig.from_dict(d)


SECTIONS = ("model", "train", "data")


def _did_you_mean(name: str, prefix: str = "") -> str:
    """': did you mean train.lr?' for a field given without its section (or misspelt)."""
    import difflib

    candidates = [
        f"{section}.{f.name}"
        for section, cls in (("model", ModelConfig), ("train", TrainConfig), ("data", DataConfig))
        for f in dataclasses.fields(cls)
    ] + ["seed", "backend", "arm"]
    exact = [c for c in candidates if c.split(".")[-1] == name]
    close = exact or difflib.get_close_matches(prefix + name, candidates, n=2, cutoff=0.75)
    return f": did you mean {' or '.join(close)}?" if close else ""


def parse_value(text: str, kind: type, key: str):
    """Parse an override's text as the field's type, with a one-line error."""
    try:
        if kind is bool:
            lowered = text.strip().lower()
            if lowered in ("true", "1", "yes", "on"):
                return True
            if lowered in ("false", "0", "no", "off"):
                return False
            raise ValueError
        if kind is int:
            value = float(text)
            if not value.is_integer():
                raise ValueError
            return int(value)
        if kind is float:
            value = float(text)
            if not math.isfinite(value):
                raise ConfigError(f"{key} must be a finite number (got '{text}')")
            return value
        return str(text)
    except ValueError:
        raise ConfigError(f"{key} must be {kind.__name__} (got '{text}')") from None


def _split_override(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(
            f"override '{item}' has no '=': write it as section.field=value, "
            f"for example train.lr=3e-3"
        )
    key, value = item.split("=", 1)
    return key.strip(), value.strip()


@functools.cache  # a class's hints never change; resolving them dominated planning big sweeps
def _field_types(cls) -> dict[str, type]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _check_keys(cls, d: dict, section: str) -> dict:
    types = _field_types(cls)
    prefix = section + "." if section else ""
    unknown = sorted(set(d) - set(types))
    if unknown:
        raise ConfigError(
            f"unknown setting '{prefix}{unknown[0]}' in config; known: "
            f"{', '.join(prefix + n for n in types)}"
        )
    out = {}
    for key, value in d.items():
        kind = types[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{prefix}{key} must be {kind.__name__} (got {value!r})")
        out[key] = value
    return out


def _build(cls, d, section: str):
    if not isinstance(d, dict):
        raise ConfigError(f"config section '{section}' must be a mapping (got {d!r})")
    return cls(**_check_keys(cls, d, section))


def _section_name(obj) -> str:
    return {ModelConfig: "model.", TrainConfig: "train.", DataConfig: "data."}.get(type(obj), "")


def _positive(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not value > 0:
            raise ConfigError(f"{_section_name(obj)}{name} must be > 0 (got {value})")


def _non_negative(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not value >= 0:
            raise ConfigError(f"{_section_name(obj)}{name} must be >= 0 (got {value})")


def _choice(obj, name: str, choices: tuple[str, ...]) -> None:
    value = getattr(obj, name)
    if value not in choices:
        raise ConfigError(
            f"unknown {_section_name(obj)}{name} '{value}'; choose one of: {', '.join(choices)}"
        )


def arm_label(cfg: RunConfig) -> str:
    """The run's arm: its name, or "qk<kind>" for runs made before arms existed."""
    return cfg.arm or f"qk{cfg.model.qk_norm}"
