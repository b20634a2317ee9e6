"""The fast paths compute what the plain ones did: the multi-tensor AdamW and clipping against
the per-tensor formula (bit for bit), the compiled steps against the eager ones (crosscheck's
train-loss tolerance), uint16 tokens against numpy's windows; and the cost estimate and the
benchmark run at smoke scale."""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from crosscheck.tolerances import TOLERANCES
from sweeps.cli import make_cli
from sweeps.core.config import TrainConfig
from sweeps.core.params import count_params, decays, init_params
from sweeps.core.presets import get_preset
from sweeps.core.schedule import decay_per_lr, lr_at
from sweeps.data import batch_starts, windows
from sweeps.platform.devices import peak_flops
from sweeps.run.backends import Execution
from sweeps.sweep.estimate import (
    describe,
    estimate_sweep,
    evaluations,
    flops_per_token,
    measure,
    sweep_estimate,
)
from sweeps.sweep.runner import Sweep
from sweeps.sweep.spec import load_spec
from tests.conftest import BACKENDS, SMALL_DATA, make_trainer, smoke_config

ROOT = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the optimizer against the per-tensor loop both optim.py files were before ----------------
def per_tensor_step(xp, params, state, grads, lr, train: TrainConfig):
    """One AdamW step tensor by tensor, as the optimizers were written before they became
    multi-tensor (xp: torch or mlx.core; lr a Python float, as it was then)."""
    b1, b2 = train.beta1, train.beta2
    state["step"] = state["step"] + 1
    bias1 = 1 - b1 ** state["step"]
    bias2 = 1 - b2 ** state["step"]
    for name, p in params.items():
        g = grads[name]
        m = b1 * state["m"][name] + (1 - b1) * g
        v = b2 * state["v"][name] + (1 - b2) * g * g
        state["m"][name], state["v"][name] = m, v
        if decays(name, p.shape):
            p = p * (1 - lr * decay_per_lr(train))
        params[name] = p - lr * (m / bias1) / (xp.sqrt(v / bias2) + train.adam_eps)


def optimizer_steps(backend, cfg, grads_per_step, lrs, multi_tensor: bool):
    """The backend's AdamW (multi_tensor) or the per-tensor loop, and nothing else, from the
    init weights on the given gradients; params and m, v as numpy."""
    init = init_params(cfg.model, cfg.vocab_size, cfg.seed)
    if backend == "torch":
        import torch as xp

        from qktorch.optim import AdamW, flatten

        def array(a):
            return xp.from_numpy(a.copy())

        def numpy(t):
            return t.detach().numpy().copy()
    else:
        import mlx.core as xp

        from qkmlx.optim import AdamW

        array, numpy = xp.array, np.array
    params = {n: array(p) for n, p in init.items()}
    if not multi_tensor:
        state = {
            "step": xp.zeros(()),
            "m": {n: xp.zeros_like(p) for n, p in params.items()},
            "v": {n: xp.zeros_like(p) for n, p in params.items()},
        }
        for grads, lr in zip(grads_per_step, lrs):
            per_tensor_step(
                xp, params, state, {n: array(g) for n, g in grads.items()}, lr, cfg.train
            )
        moments = {f"{k}.{n}": numpy(a) for k in ("m", "v") for n, a in state[k].items()}
        return {n: numpy(p) for n, p in params.items()}, moments
    if backend == "torch":
        params = {n: xp.nn.Parameter(p) for n, p in params.items()}
        opt = AdamW(params, cfg.train)
        for grads, lr in zip(grads_per_step, lrs):
            flat = flatten([xp.from_numpy(grads[n]) for n in opt.params], out=opt.grad)
            opt.update(opt.params, flat, opt.lr_tensor(lr))
    else:
        opt = AdamW(params, cfg.train)
        for grads, lr in zip(grads_per_step, lrs):
            params = opt.update(
                params, {n: xp.array(g) for n, g in grads.items()}, opt.lr_tensor(lr)
            )
    state = opt.state_numpy()
    assert state["step"][0] == len(lrs)
    return {n: numpy(p) for n, p in params.items()}, {k: v for k, v in state.items() if k != "step"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["coupled", "independent"])
def test_multi_tensor_adamw_is_the_per_tensor_loop_bit_for_bit(backend, mode):
    cfg = smoke_config(
        backend, "model.qk_norm=rms", f"train.weight_decay_mode={mode}", "train.weight_decay=0.1"
    )
    shapes = {n: p.shape for n, p in init_params(cfg.model, cfg.vocab_size, 0).items()}
    rng = np.random.default_rng(0)
    grads = [
        {n: (rng.standard_normal(s) * 0.3).astype(np.float32) for n, s in shapes.items()}
        for _ in range(6)
    ]
    lrs = [3e-3 * (i + 1) / 6 for i in range(6)]
    params, moments = optimizer_steps(backend, cfg, grads, lrs, multi_tensor=True)
    expected_params, expected_moments = optimizer_steps(backend, cfg, grads, lrs, False)
    assert set(params) == set(shapes) and set(moments) == set(expected_moments)
    for name in params:
        np.testing.assert_array_equal(params[name], expected_params[name], err_msg=name)
    for name in moments:
        np.testing.assert_array_equal(moments[name], expected_moments[name], err_msg=name)
    decayed = [n for n in shapes if decays(n, shapes[n])]
    assert decayed and len(decayed) < len(shapes)  # both kinds were exercised


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", [0.01, 100.0])  # under and over the clip
def test_clipping_scales_by_the_global_norm(backend, size):
    rng = np.random.default_rng(1)
    grads = {f"w{i}": (rng.standard_normal((17, 5)) * size).astype(np.float32) for i in range(3)}
    norm64 = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads.values()))
    if backend == "torch":
        import torch

        from qktorch.optim import clip_gradients, flatten

        flat = flatten([torch.from_numpy(g) for g in grads.values()])
        clipped, norm = clip_gradients(flat, 1.0)
        clipped = dict(zip(grads, np.split(clipped.numpy(), 3)))
    else:
        import mlx.core as mx

        from qkmlx.optim import clip_gradients

        clipped, norm = clip_gradients({n: mx.array(g) for n, g in grads.items()}, 1.0)
    assert float(norm) == pytest.approx(norm64, rel=1e-6)
    scale = np.float32(min(1.0, 1.0 / (float(norm) + 1e-6)))
    for name, g in grads.items():
        np.testing.assert_allclose(np.array(clipped[name]).reshape(g.shape), g * scale, rtol=1e-6)


# -- batches on the device ------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_device_batches_are_numpys_windows(backend, dtype):
    """uint16 (the token cache's dtype, ids up to 65535) stays uint16, int32 works too."""
    cfg = smoke_config(backend)
    trainer = make_trainer(backend, cfg)
    tokens = (
        np.random.default_rng(2)
        .integers(0, 65536 if dtype == np.uint16 else 2**31 - 1, 5000)
        .astype(dtype)
    )
    trainer.set_train_tokens(tokens)
    for step in range(3):
        starts = batch_starts(len(tokens), 0, step, 8, cfg.model.block_size)
        x, y = windows(tokens.astype(np.int64), starts, cfg.model.block_size)
        batch = trainer.batch(starts)
        got = batch.numpy() if backend == "torch" else np.array(batch)
        np.testing.assert_array_equal(got[:, :-1], x)
        np.testing.assert_array_equal(got[:, 1:], y)


def test_torch_keeps_a_cpu_token_array_without_copying_it():
    trainer = make_trainer("torch", smoke_config("torch"))
    tokens = np.arange(5000, dtype=np.uint16)
    tokens.setflags(write=False)  # like the read-only memmap of the token cache
    trainer.set_train_tokens(tokens)
    assert trainer.tokens.data_ptr() == tokens.ctypes.data


# -- compiled steps --------------------------------------------------------------------------
def losses(backend, compile: bool, steps: int = 12):
    """Per-step (loss, grad norm) over smoke steps with a new LR every step."""
    from qkmlx.train import Trainer as MLXTrainer
    from qktorch.train import Trainer as TorchTrainer

    cfg = smoke_config(backend, "model.qk_norm=rms", "train.lr=1e-2")
    trainer = {"torch": TorchTrainer, "mlx": MLXTrainer}[backend](
        cfg, device="cpu", compile=compile
    )
    tokens = np.random.default_rng(3).integers(0, cfg.vocab_size, 20000).astype(np.uint16)
    trainer.set_train_tokens(tokens)
    B, T = cfg.train.batch_size, cfg.model.block_size
    return trainer.read(
        [
            trainer.train_step(batch_starts(len(tokens), 0, i, B, T), lr_at(i, cfg.train))
            for i in range(steps)
        ]
    )


@pytest.mark.slow
def test_the_compiled_torch_step_is_one_graph_and_matches_the_eager_step():
    """One small model, compiled once (inductor on the CPU takes a while): forward, backward,
    clipping and AdamW in a single graph that twelve different LRs do not recompile."""
    from torch._dynamo.utils import counters

    eager = losses("torch", compile=False)
    before = counters["stats"]["unique_graphs"]
    compiled = losses("torch", compile=True)
    assert counters["stats"]["unique_graphs"] - before == 1
    assert not counters["graph_break"]
    rel = np.abs(compiled - eager) / np.abs(eager)
    assert rel[:, 0].max() <= TOLERANCES["train_loss"].rel
    assert rel[:, 1].max() <= TOLERANCES["train_grad_norm"].rel


def test_the_compiled_mlx_step_matches_the_uncompiled_one():
    compiled, plain = losses("mlx", compile=True), losses("mlx", compile=False)
    rel = np.abs(compiled - plain) / np.abs(plain)
    assert rel[:, 0].max() <= TOLERANCES["train_loss"].rel
    assert rel[:, 1].max() <= TOLERANCES["train_grad_norm"].rel


# -- the estimate ----------------------------------------------------------------------------
def test_flops_per_token_is_palms_formula_over_the_matmul_weights():
    cfg = get_preset("core")
    m, V = cfg.model, cfg.vocab_size
    C, L, T = m.n_embd, m.n_layer, m.block_size
    per_layer = 4 * C * C + 8 * C * C + 2 * C  # attention, MLP, the two block norms' gains
    assert count_params(m, V)["non_embedding"] == L * per_layer + C
    assert flops_per_token(m, V) == 6 * (L * per_layer + C + V * C) + 12 * L * T * C
    tied = dataclasses.replace(m, tie_embeddings=True)
    assert flops_per_token(tied, V) == flops_per_token(m, V)  # the head's matmul still runs


@pytest.mark.parametrize(
    "device,name,dtype,tf32,expected",
    [
        ("cuda", "NVIDIA H100 80GB HBM3", "bfloat16", False, 989e12),
        ("cuda", "NVIDIA H100 PCIe", "float32", False, 51e12),
        ("cuda", "NVIDIA H200", "float32", True, 495e12),
        ("cuda", "NVIDIA A100-SXM4-80GB", "bfloat16", False, 312e12),
        ("cuda", "NVIDIA L4", "float32", False, 30.3e12),
        ("cuda", "NVIDIA L40S", "bfloat16", False, None),  # not an L4
        ("gpu", "Apple M4 Pro", "float32", False, 9.2e12),
        ("cpu", "Apple M4 Pro", "float32", False, None),  # its CPU: no peak
        ("cuda", "NVIDIA GeForce RTX 4090", "bfloat16", False, None),
    ],
)
def test_peak_flops_of_known_devices(device, name, dtype, tf32, expected):
    assert peak_flops(device, name, dtype, tf32)[0] == expected


def test_evaluations_follow_the_loops_schedule():
    cfg = smoke_config("torch")  # 60 steps, full every 20, quick every 6 (10%)
    assert evaluations(cfg) == (4, 9)
    longer = cfg.with_overrides(["train.max_steps=50"])  # full at 0, 20, 40 and the end
    assert evaluations(longer)[0] == 4


@pytest.fixture(scope="module")
def smoke_probe(tmp_path_factory):
    sweep = Sweep(load_spec("smoke"), "torch", SMALL_DATA, tmp_path_factory.mktemp("runs"))
    cfg = next(iter(sweep.configs.values()))
    return sweep, measure(lambda c: make_trainer("torch", c), cfg, seconds=0.3)


@pytest.mark.slow
def test_a_sweep_estimate_adds_up(smoke_probe, monkeypatch):
    sweep, probe = smoke_probe
    configs = list(sweep.configs.values())
    result = sweep_estimate(configs, 3, probe)
    assert probe.step_s > 0 and probe.eval_s > 0 and probe.steps >= 2
    assert result["runs"] == len(configs) == 36
    assert result["planned"]["tokens"] == 36 * 60 * 256
    assert result["planned"]["flops"] == sum(
        60 * 256 * flops_per_token(c.model, 256) for c in configs
    )
    per_run = result["per_run"]  # the probed config; QK-norm's gains add 0.3% FLOPs
    assert result["planned"]["seconds"] == pytest.approx(36 * per_run["seconds"], rel=0.01)
    assert result["worst"]["seconds"] == pytest.approx(39 * per_run["seconds"], rel=0.01)
    assert result["worst"]["seconds"] > result["planned"]["seconds"] + 3 * per_run["seconds"]
    text = "\n".join(describe(result, probe, "torch"))
    assert "planned: 36 runs" in text and "worst case: 39 runs (+3" in text
    assert "no known peak" in text  # a CPU


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_estimate_sweep_probes_the_largest_config_and_asks_the_grid(backend, tmp_path, monkeypatch):
    import sweeps.sweep.grid

    monkeypatch.setattr(sweeps.sweep.grid, "max_extra_runs", lambda spec: 4)
    spec = tmp_path / "two.toml"
    spec.write_text(
        'preset = "smoke"\n[grid]\nqk_norm = ["none", "rms"]\nlr = [1e-3, 1e-2]\n'
        "n_layer = [1, 3]\nseed = [0, 1, 2]\n[study]\ndelta = 0.1\n"
        "sensitivity_range = [1e-3, 1e-2]\ntarget_loss = 3.0\n"
    )
    sweep = Sweep(load_spec(str(spec)), backend, SMALL_DATA, tmp_path / "runs")
    lines = []
    result = estimate_sweep(sweep, Execution(backend, "cpu"), seconds=0.3, echo=lines.append)
    assert result["runs"] == 24 and result["extra_runs"] == 4
    assert "n_layer 3" in lines[0] and "worst case: 28 runs" in "\n".join(lines)
    largest = max(60 * 256 * flops_per_token(c.model, 256) for c in sweep.configs.values())
    assert result["per_run"]["flops"] == largest  # n_layer 3 with QK-norm's gains


@pytest.mark.slow
def test_the_sweep_command_estimates_before_a_dry_run(tmp_path):
    result = CliRunner().invoke(
        make_cli("torch"),
        [
            "sweep",
            "smoke",
            "--dry-run",
            "--estimate",
            "--device",
            "cpu",
            "--runs-dir",
            str(tmp_path),
            *(a for s in SMALL_DATA for a in ("--set", s)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"estimate: torch on cpu .* ms/step", result.output)
    assert re.search(r"planned: 36 runs, .* device-hours", result.output)
    assert "worst case: 48 runs (+12" in result.output  # 2 extension LRs x 2 arms x 3 seeds
    assert result.output.rstrip().endswith("dry run: nothing was written")
    assert not (tmp_path / "smoke").exists()


def test_an_estimate_without_a_dry_run_says_the_sweep_trains_next(tmp_path, monkeypatch):
    """--estimate alone previews and then trains (its help says so): the line between the
    two is said before the first run starts, so one who meant only the estimate can stop."""
    import sweeps.sweep.command as command

    order = []
    monkeypatch.setattr(command, "_preview", lambda *a: order.append("preview"))
    monkeypatch.setattr(command, "_run", lambda *a: order.append("run") or {})
    args = ["sweep", "smoke", "--device", "cpu", "--runs-dir", str(tmp_path)]
    args += [a for s in SMALL_DATA for a in ("--set", s)]
    result = CliRunner().invoke(make_cli("torch"), [*args, "--estimate"])
    assert result.exit_code == 0, result.output
    assert order == ["preview", "run"]
    said = "the estimate is done; training the sweep now"
    assert said in result.output
    order.clear()
    dry = CliRunner().invoke(make_cli("torch"), [*args, "--estimate", "--dry-run"])
    assert dry.exit_code == 0 and order == ["preview"] and said not in dry.output


def test_sweeps_estimate_imports_no_trainer():
    code = (
        "import sys, sweeps.sweep.estimate; print(sorted(m for m in sys.modules if "
        "m.split('.')[0] in ('mlx', 'torch', 'qkmlx', 'qktorch')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


# -- the benchmark ---------------------------------------------------------------------------
@pytest.mark.slow
def test_the_benchmark_runs_at_smoke_scale():
    out = subprocess.run(
        [
            sys.executable,
            "benchmarks/throughput.py",
            "--preset",
            "smoke",
            "--backends",
            "torch",
            "--reference",
            "--threads",
            "1",
            "--steps",
            "2",
            "--rounds",
            "2",
            "--warmup",
            "1",
            "--workers",
            "1,2",
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(re.match(r"qktorch\s+[\d,]+\s+[\d,]+\s+\S+\s+-\s+1\.000x", line) for line in lines)
    assert any(line.startswith("reference, fused qkv") for line in lines)
    assert any("2 worker(s):" in line for line in lines)
    assert "failed" not in out.stdout
