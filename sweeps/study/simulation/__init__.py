"""The study's simulations: simulated sweeps, rungs and ladders with known answers, judged by
the study's own rules before those rules judge real runs (docs/STUDY.md sections 7, 13, 17,
22 and 25).

- `sweep`: one simulated sweep (two arms on a log LR grid, n seeds) under the noise conditions
  real sweeps have, and section 7's rates: false and recovered thresholds, refinement by the
  runner's loop, the hypotheses' null rates. It also keeps v4's necessity rule, which section
  7's tables were computed with.
- `rungs`: rungs and depth ladders built on those draws (a low-LR gap, clustered failures,
  plateaus, borderline fates), judged by the rulebook, with v4 judging the same draws beside
  it for section 13's comparison; H3's power and false rates (`design_power`, `ladder_rates`).
"""
