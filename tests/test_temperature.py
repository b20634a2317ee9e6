"""The start-temperature control: matched arms start with the other arm's attention-logit
scale, measured by the backends' own probe (docs/STUDY.md section 2: within 5%)."""

import json

import pytest
from click.testing import CliRunner

from sweeps.cli import make_cli
from sweeps.core.errors import ConfigError
from sweeps.core.interventions import INTERVENTIONS
from sweeps.core.presets import get_preset
from sweeps.run.backends import trainer_factory
from sweeps.run.temperature import initial_logit_std, probe_batch


def start(cfg, backend="torch", x=None):
    cfg = cfg.with_overrides([f"backend={backend}"])
    return initial_logit_std(cfg, trainer_factory(backend, "cpu"), x)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["tiny", "core"])
def test_matched_arms_start_within_5_percent_of_the_other_arm(preset):
    base = get_preset(preset).with_overrides(["train.diag_sequences=2"])
    x, _ = probe_batch(base)  # core: random ids (TinyStories is not prepared in tests)
    arms = {
        name: base.with_overrides(sets)
        for name, sets in {
            "off": ["model.qk_norm=none"],
            "on": ["model.qk_norm=rms"],
            "off-warm": ["model.qk_norm=none", "model.qk_init=matched"],
            "on-cool": ["model.qk_norm=rms", "model.qk_init=matched"],
        }.items()
    }
    std = {name: start(cfg, x=x) for name, cfg in arms.items()}
    assert std["off-warm"] == pytest.approx(std["on"], rel=0.05)
    assert std["on-cool"] == pytest.approx(std["off"], rel=0.05)
    # unmatched they differ by ~init_std^2 * n_embd: 0.05 (tiny), 0.15 (core) against 1
    assert std["off"] < 0.2 * std["on"] and std["on"] == pytest.approx(1.0, rel=0.05)


@pytest.mark.slow
def test_both_backends_measure_the_same_start():
    cfg = get_preset("tiny").with_overrides(["model.qk_init=matched"])
    x, _ = probe_batch(cfg)
    assert start(cfg, "mlx", x) == pytest.approx(start(cfg, "torch", x), rel=1e-4)


@pytest.mark.slow
def test_config_show_prints_the_starting_temperature():
    result = CliRunner().invoke(
        make_cli("torch"), ["config", "show", "smoke", "--set", "model.qk_init=matched"]
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    measured = shown["initial_attention_logit_std"]
    assert measured["this config"] == measured["with model.qk_norm=none"]
    assert measured["this config"] == pytest.approx(1.0, rel=0.15)  # 16-wide: noisier
    assert shown["qk_init"]["w_q_w_k_std"] == pytest.approx(0.25)  # 1 / sqrt(16)


@pytest.mark.slow
@pytest.mark.parametrize(
    "intervention",
    [i for i in INTERVENTIONS.values() if i.new_field],
    ids=lambda i: i.name,
)
@pytest.mark.parametrize("kind", ["none", "rms"])
def test_config_show_works_for_every_config_train_accepts(intervention, kind):
    """Every intervention with QK-norm off and on: where train accepts the config, config show
    does too, and a variant the probe cannot build (QK-clip with QK-norm on) reads as its
    reason, not as an error about the config asked for."""
    overrides = [f"model.qk_norm={kind}", f"{intervention.field}={intervention.exercise}"]
    try:
        get_preset("smoke").with_overrides(overrides)
    except ConfigError:
        pytest.skip("train refuses this config too")
    args = ["config", "show", "smoke"] + [x for o in overrides for x in ("--set", o)]
    result = CliRunner().invoke(make_cli("torch"), args)
    assert result.exit_code == 0, result.output
    measured = json.loads(result.output)["initial_attention_logit_std"]
    assert isinstance(measured["this config"], float)
    other = measured[f"with model.qk_norm={'rms' if kind == 'none' else 'none'}"]
    if intervention.name == "qk-clip" and kind == "none":
        assert other.startswith("not a valid config: model.qk_clip rescales W_q and W_k")
    else:
        assert isinstance(other, float)
