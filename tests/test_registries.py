"""Each concept is declared once: adding a diagnostic is one registry entry, adding a QK-norm
kind is one registry entry plus a make_norm branch per backend. Walked through here."""

import numpy as np
import pytest

from sweeps.core.config import RunConfig
from sweeps.core.diagnostics import DIAGNOSTICS, Diagnostic
from sweeps.core.errors import ConfigError
from sweeps.core.norms import QK_NORMS, QKNorm
from tests.conftest import make_trainer, smoke_config


def mean_abs_logit(layer) -> float:
    return float(np.abs(layer.scores).mean())


@pytest.mark.slow
def test_a_new_diagnostic_is_one_registry_entry(monkeypatch, tmp_path):
    """Registered at runtime only (sweeps/core/diagnostics.py untouched otherwise): the loop
    records it per layer, the figures reduce it by its rule, the report's table shows it."""
    from figures.report.assemble import make_report
    from sweeps.analysis.results import load_curves, load_results
    from sweeps.run.backends import trainer_factory
    from sweeps.run.loop import train_run

    monkeypatch.setitem(
        DIAGNOSTICS,
        "mean_abs_logit",
        Diagnostic("mean_abs_logit", "mean abs logit", "", "max", mean_abs_logit, in_report=True),
    )
    cfg = smoke_config(
        "torch", "train.max_steps=20", "train.eval_interval=10", "train.warmup_steps=2"
    )
    train_run(cfg, tmp_path / "smoke" / cfg.run_id, trainer_factory("torch", "cpu"))
    results = load_results(tmp_path / "smoke")
    curves = load_curves(results.runs)
    evals = curves.dropna(subset=["val_loss"])
    assert len(evals) == 3 and evals.mean_abs_logit.notna().all()
    assert (evals.mean_abs_logit > 0).all()
    report = make_report(tmp_path / "smoke").read_text()
    # one run without a sweep plan: its arm is named by its QK-norm kind
    assert "mean abs logit qknone" in report


def test_a_new_qk_norm_kind_is_one_entry_plus_two_make_norm_branches(monkeypatch):
    """With the registry entry alone the config, the parameter shapes and the chart colours
    know the kind; each backend's make_norm refuses it by name until it gets its branch."""
    from figures.charts import arm_colors
    from figures.report.tables import qk_display
    from sweeps.core.params import param_shapes

    monkeypatch.setitem(
        QK_NORMS, "scalenorm", QKNorm("scalenorm", "on (scalenorm)", "#009E73", has_params=True)
    )
    cfg = smoke_config("torch", "model.qk_norm=scalenorm")
    assert cfg.model.qk_norm == "scalenorm"
    assert param_shapes(cfg.model, cfg.vocab_size)["blocks.0.attn.q_norm.weight"] == (
        cfg.model.head_dim,
    )
    assert qk_display("scalenorm") == "on (scalenorm)"
    assert arm_colors(["off", "qkscalenorm"])["qkscalenorm"] == "#009E73"
    for backend in ("torch", "mlx"):
        with pytest.raises(ConfigError, match=f"qk{backend}/model.py's make_norm has no branch"):
            make_trainer(backend, cfg.with_overrides([f"backend={backend}"]))


def test_an_unknown_kind_is_refused_with_the_known_ones_everywhere():
    from figures.report.tables import qk_display
    from qkmlx.model import make_norm as mlx_norm
    from qktorch.model import make_norm as torch_norm

    known = ", ".join(QK_NORMS)
    with pytest.raises(ConfigError, match=f"choose one of: {known}"):
        RunConfig().with_overrides(["model.qk_norm=cosine"])
    for make_norm in (torch_norm, mlx_norm):
        with pytest.raises(
            ConfigError, match=f"unknown norm kind 'cosine'; choose one of: {known}"
        ):
            make_norm("cosine", 8, 1e-5)
    with pytest.raises(ConfigError, match=f"choose one of: {known}"):
        qk_display("cosine")


def test_each_intervention_names_a_config_field_off_by_default_and_where_it_shows():
    """sweeps/core/interventions.py: a real dotted field (0 = off for the new ones), a real
    diagnostic or per-step metric, and crosscheck levels that exist."""
    from sweeps.core.interventions import INTERVENTIONS, LEVELS

    cfg = RunConfig()
    for i in INTERVENTIONS.values():
        section, name = i.field.split(".")
        default = getattr(getattr(cfg, section), name)
        assert (default == 0) == i.new_field, i.name
        assert i.diagnostic in {*DIAGNOSTICS, *i.step_metrics, "train_loss"}, i.name
        assert set(i.levels) <= set(LEVELS) and (i.exercise is None) == (not i.levels)
        if i.new_field:  # switched on, it is a new config, named in crosscheck's labels
            on = cfg.with_overrides([f"{i.field}={i.exercise!r}"])
            assert on.run_id != cfg.run_id
