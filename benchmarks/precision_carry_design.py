"""Section 24's design: the paired cost rule of section 21 (T7, T8) looked at a second time,
on eight seeds, after four were inconclusive. Simulated with the project's own rule
(sweeps.study.carry.paired_shift, decide_paired_shift), pairs drawn as section 21 drew them
(reference costs sd 0.065, the pairs' sd as measured at depth 2, 0.068, and 0.03 / 0.09 beside
it), the shift bfloat16 - float32 planted at 0, at the depth-2 estimate +0.039, at the bound
0.1 and at 0.2.

    python benchmarks/precision_carry_design.py --draws 4000

Per cell: the two-look procedure's rates (first look: 4 seeds at 95% one-sided, as section 21
judged; second look, only when the first was neither "carries" nor "differs": all 8 seeds at
the second look's level) and, beside them, the second look's rates given a first look that was
inconclusive (what section 24 will see). A false "carries" is one at a true shift of 0.1 or
more; the procedure keeps it at most 5% when the second look asks 99% each side (the first
look, at 95%, already spends nearly all of it).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sweeps.study import carry as c  # noqa: E402

REFERENCE_SD = 0.065  # section 21: the reference costs' spread at these rungs
FLOOR = 0.01  # the study's precision
BOUND = 0.1  # the study's delta: section 21's equivalence bound
SECOND_LOOK = 0.99  # section 24: each one-sided test at 1%: the first look spent nearly all of 5%


def look(ref: np.ndarray, new: np.ndarray, seeds: int, confidence: float) -> str:
    ids = tuple(range(seeds))
    r = c.Side(values=tuple(ref[:seeds]), seeds=ids)
    n = c.Side(values=tuple(new[:seeds]), seeds=ids)
    return c.decide_paired_shift(c.paired_shift(r, n, FLOOR, confidence), BOUND)[0]


def rates(pair_sd: float, shift: float, draws: int, rng, second: float = SECOND_LOOK):
    either = {c.CARRIES: 0, c.DIFFERS: 0}
    given, inconclusive_first = {c.CARRIES: 0, c.DIFFERS: 0}, 0
    for _ in range(draws):
        ref = rng.normal(0, REFERENCE_SD, 8)
        new = ref + shift + rng.normal(0, pair_sd, 8)
        first = look(ref, new, 4, c.CONFIDENCE)
        if first != c.INCONCLUSIVE:
            either[first] += 1
            continue
        inconclusive_first += 1
        again = look(ref, new, 8, second)
        if again != c.INCONCLUSIVE:
            either[again] += 1
            given[again] += 1
    share = max(inconclusive_first, 1)
    return (
        {k: v / draws for k, v in either.items()},
        {k: v / share for k, v in given.items()},
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=4000)
    args = ap.parse_args()
    rng = np.random.default_rng(24)
    print(
        f"Section 24's two looks at T7/T8 ({args.draws} draws a cell; second look at "
        f"{SECOND_LOOK:.0%} each side)\n"
    )
    print(
        "| pairs' sd | true shift | carries (either look) | differs (either look) | "
        "second look given an inconclusive first: carries | differs |"
    )
    print("|---|---|---|---|---|---|")
    for sd in (0.03, 0.068, 0.09):
        for shift in (0.0, 0.039, 0.1, 0.2):
            either, given = rates(sd, shift, args.draws, rng)
            print(
                f"| {sd:g} | {shift:g} | {either[c.CARRIES]:.1%} | {either[c.DIFFERS]:.1%} | "
                f"{given[c.CARRIES]:.1%} | {given[c.DIFFERS]:.1%} |"
            )
    print("\nThe same procedure with the second look at 95% (no correction), at the bound:")
    for sd in (0.03, 0.068, 0.09):
        either, _ = rates(sd, BOUND, args.draws, rng, second=c.CONFIDENCE)
        print(f"- pairs' sd {sd:g}: false carries {either[c.CARRIES]:.1%}")


if __name__ == "__main__":
    main()
