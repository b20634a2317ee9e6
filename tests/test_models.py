"""Both backends: parameter names and shapes, fused vs explicit attention, the QK-norm bound."""

import numpy as np
import pytest

from sweeps.core.params import init_params, param_shapes
from sweeps.core.precision import expected_sites
from tests.conftest import BACKENDS, make_trainer, smoke_config, train_steps


def random_tokens(cfg, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, cfg.vocab_size, (4, cfg.model.block_size)).astype(np.int32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["model.qk_norm=rms"],
        ["model.qk_norm=layernorm"],
        ["model.tie_embeddings=true", "model.norm=rms"],
    ],
)
def test_parameter_names_and_shapes_match_the_shared_spec(backend, overrides):
    cfg = smoke_config(backend, *overrides)
    params = make_trainer(backend, cfg).get_params()
    assert {k: v.shape for k, v in params.items()} == param_shapes(cfg.model, cfg.vocab_size)
    assert ("blocks.0.attn.q_norm.weight" in params) == (cfg.model.qk_norm != "none")
    assert ("lm_head.weight" in params) != cfg.model.tie_embeddings


@pytest.mark.parametrize("backend", BACKENDS)
def test_weights_come_from_the_shared_numpy_init(backend):
    cfg = smoke_config(backend, "seed=3")
    params = make_trainer(backend, cfg).get_params()
    expected = init_params(cfg.model, cfg.vocab_size, seed=3)
    for name, value in expected.items():
        np.testing.assert_array_equal(params[name], value)
    # residual projections are scaled down by sqrt(2 n_layer)
    ratio = expected["blocks.0.mlp.proj.weight"].std() / expected["blocks.0.mlp.fc.weight"].std()
    assert ratio == pytest.approx(1 / np.sqrt(2 * cfg.model.n_layer), rel=0.1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("qk_norm", ["none", "rms", "layernorm"])
def test_fused_and_explicit_attention_agree(backend, qk_norm):
    cfg = smoke_config(backend, f"model.qk_norm={qk_norm}")
    trainer = make_trainer(backend, cfg)
    x = random_tokens(cfg)
    fused = trainer.logits(x)
    if backend == "torch":
        import torch

        with torch.no_grad():
            explicit = trainer.model.probe(trainer.tensor(x))[0].numpy()
    else:
        import mlx.core as mx

        explicit = np.array(trainer.model.probe(mx.array(x))[0])
    np.testing.assert_allclose(fused, explicit, atol=2e-5, rtol=1e-5)
    # causal: attention weights above the diagonal are exactly zero, rows sum to one
    probe = trainer.probe(x)
    np.testing.assert_allclose(probe.logits, fused, atol=2e-5, rtol=1e-5)
    scores, probs, residual, q_gain, k_gain = probe.layers[0]
    assert (q_gain is None) == (qk_norm == "none")
    assert np.all(np.triu(probs, k=1) == 0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)


def blown_up_query_keys(backend, qk_norm):
    """A model whose q and k projections are 300x too large: logits explode without QK-norm."""
    cfg = smoke_config(backend, f"model.qk_norm={qk_norm}", "model.n_embd=32", "model.n_head=2")
    trainer = make_trainer(backend, cfg)
    params = trainer.get_params()
    for name in params:
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            params[name] = params[name] * 300
    trainer.set_params(params)
    return cfg, trainer


@pytest.mark.parametrize("backend", BACKENDS)
def test_qk_norm_with_unit_gains_bounds_the_attention_logits(backend):
    cfg, trainer = blown_up_query_keys(backend, "rms")
    bound = np.sqrt(cfg.model.head_dim)  # |q.k| <= |q||k| = head_dim, divided by sqrt(head_dim)
    for layer in trainer.probe(random_tokens(cfg)).layers:
        assert np.abs(layer.scores).max() <= bound * (1 + 1e-5)
    _, unnormed = blown_up_query_keys(backend, "none")
    layers = unnormed.probe(random_tokens(cfg)).layers
    assert max(np.abs(layer.scores).max() for layer in layers) > 10 * bound


@pytest.mark.parametrize("source,target", [("torch", "mlx"), ("mlx", "torch")])
def test_state_written_by_one_backend_loads_in_the_other(source, target):
    cfg = smoke_config(source, "model.qk_norm=rms")
    a = make_trainer(source, cfg)
    x = random_tokens(cfg)
    train_steps(a, x.reshape(-1), 1e-2)
    b = make_trainer(target, cfg.with_overrides([f"backend={target}"]))
    b.set_state(*a.get_state())
    np.testing.assert_allclose(a.logits(x), b.logits(x), atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(a.get_state()[1]["step"], b.get_state()[1]["step"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_bfloat16_computes_in_bfloat16_with_float32_master_weights(backend):
    losses = {}
    for dtype in ("float32", "bfloat16"):
        trainer = make_trainer(backend, smoke_config(backend, f"train.dtype={dtype}"))
        x = random_tokens(trainer.cfg)
        losses[dtype] = [loss for loss, _ in train_steps(trainer, x.reshape(-1), 1e-2, steps=5)]
        assert all(p.dtype == np.float32 for p in trainer.get_params().values())
    assert losses["bfloat16"] != losses["float32"]  # really ran in lower precision
    np.testing.assert_allclose(losses["bfloat16"], losses["float32"], atol=0.05)


@pytest.mark.parametrize("backend", BACKENDS)
def test_q_and_k_gains_stay_equal_through_training(backend):
    """q's and k's QK-norm gains start equal and each one's gradient is the other's times the
    same sum, so training keeps them equal: the largest gain squared is the gain product
    max_i |g_q,i g_k,i| (figures/head_width.py reads it so where a sweep kept only that gain)."""
    cfg = smoke_config(backend, "model.qk_norm=rms")
    trainer = make_trainer(backend, cfg)
    tokens = random_tokens(cfg, seed=1).reshape(-1)
    train_steps(trainer, tokens, lr=0.05, steps=8)
    params = trainer.get_params()
    for layer in range(cfg.model.n_layer):
        q = params[f"blocks.{layer}.attn.q_norm.weight"]
        k = params[f"blocks.{layer}.attn.k_norm.weight"]
        assert np.abs(q - 1).max() > 1e-3  # the gains moved
        np.testing.assert_allclose(q, k, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("overrides", [["model.qk_norm=rms"], ["model.tie_embeddings=true"]])
def test_each_precision_follows_the_declared_policy(backend, dtype, overrides):
    """sweeps.core.precision's sites in the single-run model: in bfloat16 the matmuls, the
    attention output and the logits bfloat16, the embeddings, the residual stream and every
    norm's output float32; in float32 everything float32. A model that casts its weights
    wholesale (the residual in bfloat16, as qkmlx did before v14) fails."""
    cfg = smoke_config(backend, f"train.dtype={dtype}", *overrides)
    trainer = make_trainer(backend, cfg)
    assert trainer.precision_sites(random_tokens(cfg)) == expected_sites(dtype)


def test_the_policy_a_wholesale_cast_breaks_is_seen(monkeypatch):
    """The check above can fail: qkmlx with its residual stream in bfloat16."""
    import qkmlx.model as m

    embed = m.GPT.embed
    monkeypatch.setattr(m.GPT, "embed", lambda self, idx: embed(self, idx).astype(self.dtype))
    cfg = smoke_config("mlx", "train.dtype=bfloat16")
    sites = make_trainer("mlx", cfg).precision_sites(random_tokens(cfg))
    assert sites["embedding"] == sites["residual"] == "bfloat16"


def test_design_prints_the_bfloat16_policy_the_code_declares():
    from pathlib import Path

    from sweeps.core.precision import policy_table

    design = (Path(__file__).resolve().parents[1] / "docs" / "DESIGN.md").read_text()
    assert policy_table() in design
