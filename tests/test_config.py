"""Configs: JSON round trip, validation messages, dotted overrides, run ids, schedule, presets."""

import json

import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.config import RunConfig
from sweeps.core.errors import ConfigError
from sweeps.core.params import count_params
from sweeps.core.presets import PRESETS, get_preset
from sweeps.core.schedule import lr_at


@pytest.mark.parametrize("name", ["smoke", "tiny", "core", "core-L12"])
def test_json_round_trip_is_exact(name):
    cfg = get_preset(name).with_overrides(["model.qk_norm=rms", "train.lr=0.00316"])
    again = RunConfig.from_json(cfg.to_json())
    assert again == cfg and again.run_id == cfg.run_id


def test_run_id_is_deterministic_readable_and_config_sensitive():
    a = get_preset("tiny").with_overrides(["train.lr=3e-3", "model.qk_norm=rms", "seed=1"])
    b = get_preset("tiny").with_overrides(["seed=1", "model.qk_norm=rms", "train.lr=0.003"])
    assert a.run_id == b.run_id
    assert a.run_id.startswith("torch-qkrms-L4-lr0.003-s1-")
    assert a.with_overrides(["train.adam_eps=1e-9"]).run_id != a.run_id
    assert a.with_overrides(["backend=mlx"]).run_id != a.run_id


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.n_head=5", "model.n_embd must be divisible by model.n_head (got 16 and 5)"),
        ("model.qk_norm=l2", "unknown model.qk_norm 'l2'; choose one of: none, rms, layernorm"),
        ("model.norm=batch", "unknown model.norm 'batch'"),
        ("model.n_layer=0", "model.n_layer must be > 0 (got 0)"),
        ("train.lr=-1", "train.lr must be > 0 (got -1.0)"),
        ("train.lr=abc", "train.lr must be float (got 'abc')"),
        ("train.lr=nan", "train.lr must be a finite number (got 'nan')"),
        ("train.max_steps=2.5", "train.max_steps must be int (got '2.5')"),
        ("train.beta2=1", "train.beta2 must be in [0, 1) (got 1.0)"),
        ("train.min_lr_ratio=2", "train.min_lr_ratio must be in [0, 1] (got 2.0)"),
        ("train.warmup_steps=60", "train.warmup_steps must be below train.max_steps"),
        ("train.weight_decay=-0.1", "train.weight_decay must be >= 0"),
        ("train.diag_sequences=9", "train.diag_sequences must be at most train.batch_size"),
        ("train.early_eval_interval=-1", "train.early_eval_interval must be >= 0 (got -1)"),
        ("train.early_eval_until=1.5", "train.early_eval_until must be in [0, 1], a fraction"),
        ("train.final_eval_tokens=-1", "train.final_eval_tokens must be >= 0 (got -1)"),
        ("train.dtype=float16", "unknown train.dtype 'float16'"),
        ("model.tie_embeddings=maybe", "model.tie_embeddings must be bool (got 'maybe')"),
        ("data.corpus=wiki", "unknown data.corpus 'wiki'"),
        ("data.tokenizer=sentencepiece", "unknown data.tokenizer 'sentencepiece'"),
        ("data.corpus=file", "data.corpus=file needs a file"),
        ("data.val_fraction=0.6", "data.val_fraction must be below 0.5"),
        ("seed=-1", "seed must be >= 0"),
        ("backend=jax", "unknown backend 'jax'"),
        ("train.learning_rate=1", "unknown setting 'train.learning_rate'"),
        ("optim.lr=1", "unknown setting 'optim.lr'"),
        ("train.lr", "override 'train.lr' has no '='"),
    ],
)
def test_each_invalid_value_has_its_own_clear_message(override, message):
    with pytest.raises(ConfigError) as error:
        get_preset("smoke").with_overrides([override])
    assert message in str(error.value)


def test_evaluation_steps_follow_the_early_and_the_regular_cadence():
    def steps(cfg):
        return [s for s in range(cfg.train.max_steps + 1) if cfg.train.evaluates_at(s)]

    early = list(range(0, 121, 12))  # every 1% of the run in its first 10%
    assert steps(get_preset("cpu")) == early + [200, 400, 600, 800, 1000, 1200]
    assert steps(get_preset("smoke")) == [0, 20, 40, 60]  # off
    odd = get_preset("smoke").with_overrides(
        ["train.max_steps=50", "train.early_eval_interval=3", "train.early_eval_until=0.25"]
    )
    assert steps(odd) == [0, 3, 6, 9, 12, 20, 40, 50]  # up to step 12 = floor(0.25 x 50)


def test_new_evaluation_fields_at_their_defaults_keep_earlier_run_ids():
    # smoke caps its final evaluation (2^14 tokens); at the fields' defaults it is the config
    # smoke was before these fields existed, with the same run id
    smoke = get_preset("smoke").with_overrides(["train.final_eval_tokens=0"])
    d = smoke.to_dict()["train"]
    assert not {"early_eval_interval", "early_eval_until", "final_eval_tokens"} & set(d)
    assert smoke.run_id == "torch-qknone-L2-lr0.003-s0-dbcf6c2284"
    assert get_preset("smoke").run_id != smoke.run_id
    for override in (
        "train.early_eval_interval=2",
        "train.early_eval_until=0.2",
        "train.final_eval_tokens=64",
    ):
        changed = smoke.with_overrides([override])
        assert changed.run_id != smoke.run_id
        assert RunConfig.from_json(changed.to_json()) == changed


def test_vocabulary_larger_than_the_tokenizer_is_refused():
    with pytest.raises(ConfigError, match="not smaller than the gpt2 vocabulary"):
        get_preset("core").with_overrides(["data.compact_vocab=60000"])
    cfg = get_preset("core").with_overrides(["data.compact_vocab=1000"])
    assert cfg.vocab_size == 1001


def test_overrides_are_typed():
    cfg = get_preset("smoke").with_overrides(
        [
            "train.lr=1e-2",
            "model.n_layer=3",
            "model.tie_embeddings=true",
            "seed=7",
            "data.path=x.txt",
            "train.max_steps=1e2",
        ]
    )
    assert cfg.train.lr == 0.01 and isinstance(cfg.model.n_layer, int)
    assert cfg.model.tie_embeddings is True and cfg.seed == 7 and cfg.train.max_steps == 100


def test_from_dict_rejects_unknown_and_mistyped_fields():
    d = get_preset("smoke").to_dict()
    with pytest.raises(ConfigError, match="unknown setting 'model.width'"):
        RunConfig.from_dict({**d, "model": {**d["model"], "width": 3}})
    with pytest.raises(ConfigError, match="train.max_steps must be int"):
        RunConfig.from_dict({**d, "train": {**d["train"], "max_steps": "10"}})


def test_schedule_warms_up_linearly_then_decays_by_cosine_to_the_floor():
    train = get_preset("smoke").train  # lr 3e-3, warmup 10, 60 steps, floor 0.1
    assert lr_at(0, train) == pytest.approx(3e-4)
    assert lr_at(9, train) == pytest.approx(3e-3)
    assert lr_at(10, train) == pytest.approx(3e-3)
    assert lr_at(35, train) == pytest.approx(0.5 * (3e-3 + 3e-4))  # half way: mid point
    assert lr_at(60, train) == pytest.approx(3e-4)
    values = [lr_at(s, train) for s in range(10, 61)]
    assert all(a >= b for a, b in zip(values, values[1:]))


def test_preset_sizes_match_their_purpose():
    smoke, tiny, core = (
        count_params(p.model, p.vocab_size)
        for p in (PRESETS["smoke"], PRESETS["tiny"], PRESETS["core"])
    )
    assert smoke["total"] < 20_000
    assert 0.7e6 < tiny["total"] < 1.2e6
    assert 10e6 <= core["total"] <= 15e6 and core["non_embedding"] > 10e6
    assert get_preset("core-L12").model.n_layer == 12


@pytest.mark.slow
def test_config_show_prints_json_with_parameter_counts():
    result = CliRunner().invoke(
        make_cli("mlx"), ["config", "show", "tiny", "--set", "model.qk_norm=rms"]
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["config"]["backend"] == "mlx" and shown["config"]["model"]["qk_norm"] == "rms"
    assert shown["params"]["total"] > shown["params"]["non_embedding"] > 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["config", "show", "huge"], "unknown preset 'huge'"),
        (["config", "show", "smoke", "--set", "model.n_head=5"], "divisible"),
    ],
)
def test_cli_errors_are_one_line_with_exit_code_2(args, message):
    result = CliRunner().invoke(make_cli("torch"), args)
    assert result.exit_code == 2
    assert message in result.output and result.output.strip().count("\n") == 0


def test_train_help_lists_every_preset():
    text = " ".join(CliRunner().invoke(make_cli("torch"), ["train", "--help"]).output.split())
    assert " | ".join([*PRESETS, "NAME-L<n>"]) in text and "cpu" in PRESETS


def test_config_show_of_a_spec_is_the_config_its_sweep_trains():
    def show(*args):
        result = CliRunner().invoke(make_cli("torch"), ["config", "show", *args])
        assert result.exit_code == 0, result.output
        return result.output

    spec = json.loads(show("cpu", "--no-temperature"))
    assert spec["config"]["train"]["weight_decay"] == 1e-4
    assert spec["config"]["train"]["weight_decay_mode"] == "independent"
    assert spec["spec"]["set"] == {
        "train.weight_decay": 1e-4,
        "train.weight_decay_mode": "independent",
    }
    assert "the config `sweep cpu` trains" in spec["spec"]["note"]
    assert "`train --preset cpu` trains the preset without the [set]" in spec["spec"]["note"]
    mine = json.loads(show("cpu", "--no-temperature", "--set", "train.weight_decay=0.01"))
    assert mine["config"]["train"]["weight_decay"] == 0.01  # --set comes last
    control = json.loads(show("cpu-control", "--no-temperature"))  # a spec, not a preset
    assert control["config"]["model"]["n_embd"] == 64 and control["spec"]["preset"] == "cpu"
    preset = json.loads(show("cpu-L4", "--no-temperature"))  # a preset alone: as it is
    assert preset["config"]["train"]["weight_decay_mode"] == "coupled" and "spec" not in preset
    explained = show("cpu", "--explain")
    assert explained.splitlines()[0].startswith("the config `sweep cpu` trains")


@pytest.mark.parametrize(
    "mode, says, never",
    [
        ("coupled", "coupled to the LR as in AdamW", "independent"),
        ("independent", "independent of the peak LR", "coupled"),
    ],
)
def test_explain_describes_weight_decay_by_its_mode(mode, says, never):
    result = CliRunner().invoke(
        make_cli("torch"),
        ["config", "show", "cpu-L4", "--explain", "--set", f"train.weight_decay_mode={mode}"],
    )
    line = next(
        x for x in result.output.splitlines() if x.strip().startswith("train.weight_decay ")
    )
    assert says in line and never not in line and "decoupled" not in line


def test_help_lists_the_commands():
    for backend in ("mlx", "torch"):
        result = CliRunner().invoke(make_cli(backend), ["--help"])
        assert result.exit_code == 0
        for command in ("config", "data", "train"):
            assert command in result.output
