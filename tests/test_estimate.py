"""`sweep --estimate`: a bounded probe on a fake slow device, the range over repeats and what
it says of a busy machine, and the evaluations a run's cost counts."""

import dataclasses
import re
import time

import numpy as np
import pytest

from sweeps.core.presets import get_preset
from sweeps.sweep import estimate


class SlowTrainer:
    """A trainer whose step costs 25 ms per sequence (and an eval batch the same): a device
    too slow for a full probe."""

    PER_SEQUENCE = 0.025

    def __init__(self, cfg):
        self.cfg, self.device, self.device_name = cfg, "cpu", "a slow test device"

    def set_train_tokens(self, tokens):
        pass

    def train_step(self, starts, lr):
        time.sleep(self.PER_SEQUENCE * len(starts))
        return 0

    def read(self, handles):
        return np.zeros((len(handles), 2))

    def eval_loss(self, x, y):
        time.sleep(self.PER_SEQUENCE * len(x))
        return 1.0


def test_the_estimate_probe_is_bounded_and_scales_a_smaller_batch():
    cfg = get_preset("smoke").with_overrides(["train.batch_size=32"])  # 0.8 s per step
    said = []
    began = time.perf_counter()
    probe = estimate.measure(SlowTrainer, cfg, seconds=3.0, budget_s=1.0, progress=said.append)
    took = time.perf_counter() - began
    assert took < 2.5, took  # a full-batch probe would take over 4 s
    assert probe.batch < 32 and said and "pilot" in said[0]
    assert probe.step_s == pytest.approx(32 * SlowTrainer.PER_SEQUENCE, rel=0.3)
    assert probe.eval_s == pytest.approx(32 * SlowTrainer.PER_SEQUENCE, rel=0.3)
    text = "\n".join(estimate.describe(estimate.sweep_estimate([cfg], 0, probe), probe, "torch"))
    assert f"timed at batch {probe.batch} of 32, scaled" in text


def test_a_plan_over_a_month_warns():
    cfg = get_preset("core")
    probe = estimate.Measurement(
        cfg, "cpu", "slow", step_s=60.0, eval_s=1.0, startup_s=1.0, steps=2
    )
    text = "\n".join(estimate.describe(estimate.sweep_estimate([cfg] * 10, 0, probe), probe, "mlx"))
    assert "more than a month" in text
    quick = estimate.Measurement(
        cfg, "cpu", "fast", step_s=0.01, eval_s=0.01, startup_s=1.0, steps=2
    )
    assert "month" not in "\n".join(
        estimate.describe(estimate.sweep_estimate([cfg], 0, quick), quick, "mlx")
    )


def test_the_estimate_skips_the_pilot_on_an_accelerator():
    cfg = get_preset("smoke").with_overrides(["train.batch_size=4"])
    said = []
    probe = estimate.measure(
        SlowTrainer, cfg, seconds=0.2, budget_s=5.0, progress=said.append, pilot=False
    )
    assert probe.batch == 4 and not any("pilot" in s for s in said)


class UnsteadyTrainer(SlowTrainer):
    """Steps of 2 ms, and of 6 ms every other call: a machine whose speed comes and goes."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.calls = 0

    def train_step(self, starts, lr):
        self.calls += 1
        time.sleep(0.006 if self.calls % 2 == 0 and self.calls > 20 else 0.002)
        return 0


@pytest.mark.slow
def test_the_estimate_is_a_range_over_repeats_and_says_when_the_machine_looked_busy():
    cfg = get_preset("smoke")
    probe = estimate.measure(UnsteadyTrainer, cfg, seconds=0.6, pilot=False)
    low, high = probe.step_range
    assert probe.repeats == estimate.REPEATS and low < probe.step_s < high
    result = estimate.sweep_estimate([cfg] * 10, 2, probe)
    (p_low, p_high), (w_low, w_high) = result["range"]["planned"], result["range"]["worst"]
    assert p_low < result["planned"]["seconds"] < p_high and p_high < w_high
    assert w_low == pytest.approx(p_low * 12 / 10, rel=0.01)  # 2 more runs of the same
    busy = dataclasses.replace(probe, spread=(low, 2.5 * low), load=2.4, cpus=2, threads="1")
    idle = dataclasses.replace(busy, spread=(low, 1.1 * low), load=0.3)
    assert busy.busy and busy.unsteady and not idle.busy and not idle.unsteady
    result = {**estimate.sweep_estimate([cfg] * 10, 0, busy), "workers": 2, "parallel": 2}
    text = "\n".join(estimate.describe(result, busy, "torch"))
    assert "busy: load average 2.40 on 2 CPU(s) before the probe" in text
    assert "unsteady: the repeats spread x2.50" in text
    assert "1 CPU thread(s), as each of 2 worker(s)" in text
    # the range in device-hours and in wall time with 2 workers at once: half of it
    shown = re.search(
        r"planned: .*: ([0-9.]+)-([0-9.]+) device-hours of cpu; (.+) wall with 2", text
    )
    assert shown and float(shown[1]) < float(shown[2]), text
    assert shown[3] == estimate._span(*(s / 2 for s in result["range"]["planned"]))
    quiet = {**estimate.sweep_estimate([cfg] * 10, 0, idle), "workers": 1, "parallel": 1}
    calm = "\n".join(estimate.describe(quiet, idle, "torch"))
    # an idle CPU is not called busy, but the load it was timed under is said (issue 72)
    assert "busy" not in calm and "unsteady" not in calm
    assert "load average 0.30 on 2 CPU(s) before the probe: the range holds" in calm


def test_the_estimate_counts_early_evaluations_and_the_final_one(monkeypatch):
    cfg = get_preset("cpu")  # 1200 steps: full every 200 and every 12 up to 120, quick every 24
    assert estimate.evaluations(cfg) == (17, 43)  # 7 periodic + 10 early; 50 quick - 7 shared
    monkeypatch.setattr(estimate, "val_tokens", lambda data: 1_407_284)  # the builtin split
    assert estimate.final_eval_batches(cfg) == -(-(1_407_283 // 128) // 16)  # 688 batches
    capped = get_preset("smoke")  # 2^14 tokens of 32-token windows, 8 a batch
    assert estimate.final_eval_batches(capped) == 2**14 // 32 // 8
    probe = estimate.Measurement(cfg, "cpu", "x", step_s=0.1, eval_s=0.05, startup_s=0, steps=2)
    cost = estimate.run_cost(cfg, probe)
    assert cost["final_eval_s"] == pytest.approx(688 * 0.05)
    assert cost["eval_s"] == pytest.approx((17 * (8 + 1) + 43 * 2) * 0.05)
    assert cost["seconds"] == pytest.approx(120 + cost["eval_s"] + cost["final_eval_s"])
    monkeypatch.setattr(estimate, "val_tokens", lambda data: None)  # not prepared
    result = {**estimate.sweep_estimate([cfg], 0, probe), "workers": 1, "parallel": 1}
    assert estimate.run_cost(cfg, probe)["final_eval_s"] == 0 and not result["final_known"]
    text = "\n".join(estimate.describe(result, probe, "torch"))
    assert "final evaluation not counted" in text and "prepare the data first" in text
