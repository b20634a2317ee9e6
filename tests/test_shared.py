"""The small pieces both backends and every command share: the optimizer's checkpoint
format, the number formats, the JSON sanitiser, how runs execute, offline data."""

import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest

from sweeps.core.config import DataConfig, RunConfig, arm_label
from sweeps.core.files import clean_json
from sweeps.core.fmt import duration, si
from sweeps.data import offline_tokens
from sweeps.run.backends import Execution, trainer_factory
from sweeps.run.checkpoint import pack_optimizer, unpack_optimizer
from tests.conftest import BACKENDS, smoke_config


def test_the_optimizer_state_packs_step_first_then_each_parameters_moments():
    m = {"b": np.ones(2, np.float32), "a": np.zeros(3, np.float32)}
    v = {"b": np.full(2, 2, np.float32), "a": np.full(3, 3, np.float32)}
    packed = pack_optimizer(7.0, m, v)
    assert list(packed) == ["step", "m.b", "v.b", "m.a", "v.a"]
    assert packed["step"].dtype == np.float32 and packed["step"].tolist() == [7.0]
    step, m2, v2 = unpack_optimizer(packed, ["a", "b"])
    assert step == 7.0 and list(m2) == ["a", "b"]
    np.testing.assert_array_equal(v2["a"], v["a"])
    with pytest.raises(KeyError, match="m.c"):
        unpack_optimizer(packed, ["c"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend_writes_the_shared_format(backend):
    trainer = trainer_factory(backend, "cpu")(smoke_config(backend))
    params, optimizer = trainer.get_state()
    assert list(optimizer)[0] == "step" and len(optimizer) == 1 + 2 * len(params)
    assert {k[2:] for k in optimizer if k != "step"} == set(params)


def test_numbers_read_the_same_everywhere():
    assert si(13.9e6) == "13.9M" and si(2.3e15, "FLOPs") == "2.3 PFLOPs" and si(512) == "512"
    assert si(0) == "0" and si(math.inf) == "inf"
    assert duration(42) == "42.0 s" and duration(90) == "1.5 min"
    assert duration(2 * 3600) == "2.0 h" and duration(4 * 86400) == "4.0 days"


def test_clean_json_makes_strict_json_of_numpy_pandas_and_non_string_keys():
    out = clean_json(
        {
            1: pd.NA,
            "x": [np.float32(1.5), float("nan"), np.int64(3), pd.NaT, np.bool_(True), -math.inf],
        }
    )
    assert out == {"1": None, "x": [1.5, None, 3, None, True, None]}
    json.dumps(out, allow_nan=False)  # strict


def test_execution_is_one_frozen_hashable_picklable_value():
    execution = Execution("torch", "cpu", compile=False, tf32=False, retry_failed=True)
    assert pickle.loads(pickle.dumps(execution)) == execution  # what a worker receives
    assert {execution: 1}[Execution("torch", "cpu", False, False, True)] == 1
    with pytest.raises(AttributeError):
        execution.device = "cuda"


def test_arm_label_falls_back_to_the_qk_norm_kind():
    cfg = RunConfig()
    assert arm_label(cfg) == f"qk{cfg.model.qk_norm}"
    assert arm_label(cfg.with_overrides(["arm=on"])) == "on"
    assert f"-{arm_label(cfg)}-" in cfg.run_id


def test_offline_tokens_leave_an_unprepared_download_alone():
    assert offline_tokens(DataConfig(corpus="tinystories", tokenizer="bytes")) is None
    splits = offline_tokens(DataConfig(builtin_stories=300))
    assert len(splits.train) > 0 and len(splits.val) > 0
