"""The study's one home (docs/STUDY.md): rules.py (the pre-registered Study, each run's
effective loss, the (arm, LR, seed) table, paired differences, the necessity rule with its
leave-one-run-out check, critical LRs, refinement brackets, the paired verdicts), stats.py (the
bounds, critical LR, eta_max, sensitivity, slopes) and simulation/ (simulated sweeps, rungs
and ladders with known answers). The runner's refinement and the report both use these; nothing
is re-derived."""
