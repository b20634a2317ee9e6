"""The dry run's cost on measured devices (sweeps.sweep.measured): a measured speed prices its
own config exactly, scales by FLOPs per token across depths, and each mode without a
measurement is named instead of left out."""

import re
from dataclasses import replace

import pytest

from sweeps.core.presets import get_preset
from sweeps.sweep.estimate import flops_per_token
from sweeps.sweep.measured import MEASURED, Measured, applies, cost_lines, run_seconds
from sweeps.sweep.spec import load_spec

EAGER = next(m for m in MEASURED if m.mode == "eager" and m.dtype == "float32")


def core(depth: int, steps: int = 1000, **train):
    cfg = get_preset("core").with_overrides([f"model.n_layer={depth}", f"train.max_steps={steps}"])
    return replace(cfg, train=replace(cfg.train, **train)) if train else cfg


def test_a_measured_speed_prices_its_own_config_exactly():
    cfg = core(EAGER.n_layer, 2000)
    assert applies(EAGER, cfg, "torch")
    assert run_seconds(EAGER, cfg) == pytest.approx(2000 * 8192 / EAGER.tokens_per_s)


def test_other_depths_scale_by_flops_per_token():
    shallow, deep = core(2), core(EAGER.n_layer)
    ratio = flops_per_token(shallow.model, shallow.vocab_size) / flops_per_token(
        deep.model, deep.vocab_size
    )
    assert 0.2 < ratio < 0.5
    assert run_seconds(EAGER, shallow) == pytest.approx(ratio * run_seconds(EAGER, deep))


def test_an_entry_prices_only_its_program_dtype_width_and_batch_shape():
    cfg = core(6)
    assert not applies(EAGER, cfg, "mlx")
    assert not applies(EAGER, core(6, dtype="bfloat16"), "torch")
    assert not applies(EAGER, get_preset("cpu"), "torch")


@pytest.mark.slow
def test_the_depth_spec_dry_run_prices_every_planned_run_and_names_what_is_unmeasured():
    spec = load_spec("depth")
    cfgs = spec.configs("torch")
    lines = cost_lines(cfgs, "torch", extra_runs=10)
    assert "estimates" in lines[0] and "docs/gpu-h200/README.md" in lines[0]
    eager = next(x for x in lines if " eager float32" in x)
    planned, worst = (float(h) for h in re.findall(r"([0-9.]+) h", eager))
    want = sum(run_seconds(EAGER, c) for c in cfgs) / 3600
    assert planned == pytest.approx(want, abs=0.05)
    biggest = max(run_seconds(EAGER, c) for c in cfgs) / 3600
    assert worst == pytest.approx(want + 10 * biggest, abs=0.05)
    assert f"{len(cfgs)} planned runs" in eager
    assert "core at L12 with a 4,097-id vocabulary (training steps only" in eager
    said = [x.strip() for x in lines]
    unmeasured = next(x for x in said if x.startswith("not measured"))
    assert "fused" in unmeasured and "float32" in unmeasured
    # the float32 spec priced in bfloat16 too, marked as not its precision, every run counted
    in_bf16 = [x for x in said if x.startswith("in bfloat16, not this sweep's precision")]
    bf16 = next(m for m in MEASURED if m.backend == "torch" and m.dtype == "bfloat16")
    as_bf16 = [replace(c, train=replace(c.train, dtype="bfloat16")) for c in cfgs]
    want = sum(run_seconds(bf16, c) for c in as_bf16) / 3600
    assert len(in_bf16) == 1 and "training steps only" in in_bf16[0]
    assert float(re.findall(r"([0-9.]+) h", in_bf16[0])[0]) == pytest.approx(want, abs=0.05)
    assert want < planned / 4  # the measured bfloat16 step speed is several times float32's


def test_a_program_without_measurements_says_so_and_other_shapes_print_nothing():
    mlx = cost_lines(load_spec("core").configs("mlx"), "mlx", 0)
    assert len(mlx) == 3 and "eager, compiled, fused" in mlx[1]
    assert "in bfloat16, not this sweep's precision" in mlx[2] and "qkmlx compiled" in mlx[2]
    assert cost_lines(load_spec("smoke").configs("torch"), "torch", 0) == []


def test_a_fused_measurement_is_used_once_recorded(monkeypatch):
    import sweeps.sweep.measured as measured

    fused = Measured(**{**EAGER.__dict__, "mode": "fused", "tokens_per_s": 4 * EAGER.tokens_per_s})
    monkeypatch.setattr(measured, "MEASURED", (*MEASURED, fused))
    lines = measured.cost_lines([core(8)], "torch", 0)
    assert any(" fused float32" in x for x in lines)
    assert any(x.strip().startswith("not measured") and "none;" in x for x in lines)
