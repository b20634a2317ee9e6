"""How precisely one run's final validation loss is measured: the evidence behind the study's
precision floor (docs/STUDY.md section 4, `[study] precision`, 0.01 nats).

Trains one `cpu`-preset run (qktorch, one thread), then evaluates its final weights on
disjoint slices of the validation split the size of v3's final evaluation (train.eval_batches
x batch_size x block_size = 16,384 bytes) and prints the spread of those slice means: the
sampling sd of a v3 final loss. It also prints the sd of the difference between two runs
(two seeds) evaluated on the same slices, the precision of a paired difference, and the
sampling sd of the whole-split evaluation v4 runs use (the slice sd over sqrt(slices)).

    OMP_NUM_THREADS=1 python benchmarks/eval_precision.py --steps 600
"""

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sweeps.core.presets import get_preset  # noqa: E402
from sweeps.data import load_tokens  # noqa: E402
from sweeps.run.backends import trainer_factory  # noqa: E402
from sweeps.run.loop import eval_window_starts, final_val_loss, train_run  # noqa: E402
from sweeps.run.rundir import RunDir  # noqa: E402


def slice_means(trainer, val: np.ndarray, cfg, slice_tokens: int) -> np.ndarray:
    """The mean loss on each disjoint slice of slice_tokens validation tokens."""
    t = cfg.model.block_size
    per_slice = slice_tokens // t
    starts = eval_window_starts(len(val), t)
    out = []
    for i in range(0, len(starts) - per_slice + 1, per_slice):
        part = val[starts[i] : starts[i + per_slice - 1] + t + 1]
        loss, _ = final_val_loss(trainer, part, t, cfg.train.batch_size)
        out.append(loss)
    return np.array(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600, help="training steps per run")
    parser.add_argument("--lr", type=float, default=1e-2)
    args = parser.parse_args(argv)
    start = time.time()
    make = trainer_factory("torch", "cpu")
    means = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (0, 1):
            cfg = get_preset("cpu").with_overrides(
                [
                    f"train.max_steps={args.steps}",
                    f"train.lr={args.lr}",
                    f"seed={seed}",
                    "train.weight_decay_mode=independent",
                    "train.weight_decay=1e-4",
                ]
            )
            summary = train_run(cfg, Path(tmp) / str(seed), make)
            trainer = make(cfg)
            trainer.set_params(RunDir(Path(tmp) / str(seed)).load_checkpoint()[0])
            val = load_tokens(cfg.data).val
            v3 = cfg.train.eval_batches * cfg.train.batch_size * cfg.model.block_size
            means.append(slice_means(trainer, val, cfg, v3))
            print(
                f"seed {seed}: {args.steps} steps at LR {args.lr:g}, final val loss "
                f"{summary['final_val_loss']:.4f} over {summary['final_val_tokens']:,} tokens"
            )
    a, b = means
    n = min(len(a), len(b))
    print(f"\n{n} disjoint slices of {v3:,} validation tokens (v3's final evaluation):")
    print(f"  sd of one run's slice means:            {a.std(ddof=1):.4f} nats (seed 0)")
    print(f"                                          {b.std(ddof=1):.4f} nats (seed 1)")
    diff = a[:n] - b[:n]
    print(f"  sd of the paired difference per slice:  {diff.std(ddof=1):.4f} nats")
    print(
        f"  the whole split ({n} slices): sd of one run's loss about "
        f"{a.std(ddof=1) / math.sqrt(n):.4f}, of a difference {diff.std(ddof=1) / math.sqrt(n):.4f}"
    )
    print(f"\n{time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
