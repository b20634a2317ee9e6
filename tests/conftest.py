"""Shared fixtures: a small builtin corpus cached once per session, and both backends."""

import pytest

from sweeps.core.presets import get_preset

BACKENDS = ["torch", "mlx"]
SMALL_DATA = ["data.builtin_stories=300"]


@pytest.fixture(scope="session", autouse=True)
def data_cache(tmp_path_factory):
    """Every test shares one throwaway data cache, never the user's ~/.cache."""
    path = tmp_path_factory.mktemp("data-cache")
    patcher = pytest.MonkeyPatch()
    patcher.setenv("QKNORM_DATA_DIR", str(path))
    yield path
    patcher.undo()


@pytest.fixture
def one_torch_thread():
    """Smoke-sized matmuls gain nothing from threads, and on 2 busy cores torch's OpenMP pool
    waiting for a descheduled thread made steps up to 60x slower (modules that train torch
    models use it: pytestmark = pytest.mark.usefixtures("one_torch_thread"))."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # also what tests/test_interventions.py's fingerprints used
    yield
    torch.set_num_threads(before)


def smoke_config(backend: str, *overrides: str):
    return get_preset("smoke").with_overrides([f"backend={backend}", *SMALL_DATA, *overrides])


def make_trainer(backend: str, cfg):
    from sweeps.run.backends import trainer_factory

    return trainer_factory(backend, "cpu")(cfg)


def train_steps(trainer, tokens, lr: float, steps: int = 1, batch_size: int = 4) -> list:
    """Train on windows of `tokens` through the device path; [(loss, grad norm)] per step."""
    import numpy as np

    trainer.set_train_tokens(tokens)
    T = trainer.cfg.model.block_size
    starts = np.linspace(0, len(tokens) - T - 1, batch_size).astype(np.int64)
    return [tuple(v) for v in trainer.read([trainer.train_step(starts, lr) for _ in range(steps)])]


# Module fixtures that train and render a whole ladder (10-25 s each on 2 cores). Every test
# that uses one is slow, so the developer's fast tier (`-m "not slow"`, README) never builds
# them; CI's full suite runs them all.
HEAVY_FIXTURES = {
    "test_charts_read.py": {"ladder"},
    "test_opening.py": {"ladder", "interventions"},
    "test_grown_ladder.py": {"grown"},
}


def pytest_collection_modifyitems(items):
    for item in items:
        if HEAVY_FIXTURES.get(item.path.name, set()) & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)
