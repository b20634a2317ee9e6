"""The head-width carry's cost rule on simulated data before any of its runs (docs/STUDY.md
section 20): how often Welch's 90% interval of the shift new - reference (per-seed off - on at
a best LR, 4 seeds a side) says "differs" when nothing moved, and how often it finds a planted
shift, under the noise real sweeps have: the measured per-seed spreads (docs/cpu at its best
LR, sd 0.059 nats; cpu-width's width 128, sd 0.091), a new side twice as noisy, a seed lost to
a failure, heavy tails (t with 3 df) and seeds that persist across the two sweeps (the same
data order per seed: correlation 0.5).

    python benchmarks/head_width_design.py --trials 20000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sweeps.study.carry import CARRIES, DIFFERS, SMALLER, decide_shift, shift  # noqa: E402

FLOOR = 0.01  # the specs' precision
SEEDS = 4
SHIFTS = (0.0, 0.1, 0.15, 0.2, 0.25)
SPREADS = {"width 64 (sd 0.059)": 0.059, "width 128 (sd 0.091)": 0.091}
CONDITIONS = (
    "normal",
    "new side 2x noisier",
    "a seed lost (3 new)",
    "heavy tails",
    "seeds persist",
)


def draw(rng, condition: str, sd: float, planted: float) -> tuple[np.ndarray, np.ndarray]:
    """(reference, new) per-seed values for one simulated pair of sweeps."""
    if condition == "heavy tails":  # t with 3 df, scaled to the same sd
        noise = rng.standard_t(3, size=(2, SEEDS)) * sd / np.sqrt(3.0)
    elif condition == "seeds persist":  # each seed's offset shared by both sweeps
        common = rng.normal(0, sd * np.sqrt(0.5), SEEDS)
        noise = common + rng.normal(0, sd * np.sqrt(0.5), (2, SEEDS))
    else:
        noise = rng.normal(0, sd, (2, SEEDS))
    if condition == "new side 2x noisier":
        noise[1] *= 2
    ref, new = noise[0], noise[1] + planted
    if condition == "a seed lost (3 new)":
        new = new[:3]
    return ref, new


def rates(rng, condition: str, sd: float, planted: float, trials: int) -> tuple[float, float]:
    """(P(differs, shifted up), P(carries)) over simulated pairs."""
    up = carries = 0
    for _ in range(trials):
        outcome, reason = decide_shift(shift(*draw(rng, condition, sd, planted), FLOOR))
        up += outcome == DIFFERS and reason == SMALLER
        carries += outcome == CARRIES
    return up / trials, carries / trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"Section 20's cost rule: {args.trials} simulated pairs of sweeps a cell, 4 seeds a side")
    print("P(differs, shifted up) at each planted shift (nats); at 0 also P(differs either way)")
    for label, sd in SPREADS.items():
        print(f"\n{label}")
        print(f"{'condition':24s}" + "".join(f"{s:>9.2f}" for s in SHIFTS) + "  either@0")
        for condition in CONDITIONS:
            cells = [rates(rng, condition, sd, s, args.trials) for s in SHIFTS]
            either = 1 - cells[0][1]
            row = "".join(f"{100 * up:8.1f}%" for up, _ in cells)
            print(f"{condition:24s}{row}  {100 * either:7.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
