"""Training throughput of a preset under qktorch, qkmlx with MLX's bundled BLAS, and qkmlx with
OpenBLAS preloaded, measured back to back in one invocation (compare the ratios: shared
machines are noisy).

    python benchmarks/throughput.py --preset tiny --steps 30
"""
import argparse
import json
import os
import subprocess
import sys


WORKER = r"""
import json, sys, time
import numpy as np
from sweeps.presets import get_preset
backend, preset, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = get_preset(preset).with_overrides([f"backend={backend}"])
if backend == "torch":
    from qktorch.train import Trainer
else:
    from qkmlx.train import Trainer
trainer = Trainer(cfg, device="cpu")
rng = np.random.default_rng(0)
shape = (cfg.train.batch_size, cfg.model.block_size)
x = rng.integers(0, cfg.vocab_size, shape).astype(np.int32)
y = rng.integers(0, cfg.vocab_size, shape).astype(np.int32)
for _ in range(3):  # warm up (compilation, allocator)
    trainer.train_step(x, y, 1e-3)
began = time.perf_counter()
for _ in range(steps):
    loss, _ = trainer.train_step(x, y, 1e-3)
elapsed = time.perf_counter() - began
print(json.dumps({"tokens_per_s": steps * cfg.tokens_per_step / elapsed, "loss": loss}))
"""


def measure(backend: str, preset: str, steps: int, preload: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = preload
    out = subprocess.run([sys.executable, "-c", WORKER, backend, preset, str(steps)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    from sweeps.blas import find_openblas

    openblas = find_openblas()
    cases = [("qktorch", "torch", None), ("qkmlx, bundled BLAS", "mlx", None)]
    if openblas:
        cases.append(("qkmlx, OpenBLAS", "mlx", openblas))
    results = {}
    for label, backend, preload in cases:
        results[label] = measure(backend, args.preset, args.steps, preload)["tokens_per_s"]
    base = results["qktorch"]
    print(f"preset {args.preset}, {args.steps} steps after 3 warm-up steps, CPU, float32")
    for label, rate in results.items():
        print(f"{label:22s} {rate:10,.0f} tokens/s   {rate / base:5.2f}x qktorch")


if __name__ == "__main__":
    main()
