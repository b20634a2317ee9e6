"""A sweep's analysis as a typed layer: its runs read once (results), the run table
(run_table), every number of the study computed under docs/STUDY.md's rules (compute, with
trends, early_warning and caveats) into the frozen dataclasses of model, and analysis.json
written and read (adapter). No prose: figures/ words the Analysis.

It sits above sweeps/sweep (it reads sweep directories and the FLOPs of sweeps.sweep.estimate)
and below the command line; figures/ imports it, never the reverse."""

from sweeps.analysis.compute import analyze

__all__ = ["analyze"]
