"""The finished runs a committed report holds, for a sweep that grows it
(`sweep NAME --from-report DIR`, then `figures NAME --from-report DIR --add-runs
--in-place`).

A report keeps its runs as a table (runs.parquet, sweeps/analysis/archive.py) but not their run
directories, which stay with the machine that trained them. When the study's rules later ask
for LRs the report lacks (a rung its refinement rule would still grow, figures/words/caveats.py),
the sweep plans its grid as usual and counts each planned run the report already holds as
finished with the summary the report recorded: extension and refinement read them, and only
the runs the report lacks train. Run ids are hashes of the whole config, so a run id the
report holds is that config's run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from sweeps.core.errors import HarnessError
from sweeps.run.outcomes import OUTCOMES

# a report's own data (sweeps/analysis/archive.py writes them; declared here, where a sweep reads
# them)
RUNS_FILE, SWEEP_FILE = "runs.parquet", "sweep.json"
# what the grid rules read of a summary (sweeps.study.rules.build_cells and the baselines)
SUMMARY_FIELDS = ("status", "init_loss", "final_val_loss", "bigram_loss", "unigram_loss")


def archived_summaries(report_dir: Path, sweep_name: str) -> dict[str, dict]:
    """run_id -> the summary fields the report recorded, for its finished runs (ok, unstable,
    diverged). Refuses a directory without a report's runs table and another sweep's report."""
    report_dir = Path(report_dir)
    runs_path, sweep_path = report_dir / RUNS_FILE, report_dir / SWEEP_FILE
    if not (runs_path.is_file() and sweep_path.is_file()):
        raise HarnessError(
            f"{report_dir} holds no report's runs table ({RUNS_FILE} and {SWEEP_FILE}): give a "
            "report directory that `figures` wrote (re-render an older one with `figures NAME "
            "--from-report DIR` first)"
        )
    try:
        sweep = json.loads(sweep_path.read_text())
        runs = pd.read_parquet(runs_path)
    except Exception as e:  # a truncated or foreign file: say which, change nothing
        raise HarnessError(
            f"{report_dir}'s {SWEEP_FILE} or {RUNS_FILE} cannot be read ({type(e).__name__}): "
            "restore the report from git (`git checkout -- DIR`) and run again"
        ) from None
    name = sweep.get("name") if isinstance(sweep, dict) else None
    if name != sweep_name:
        raise HarnessError(
            f"{report_dir} is sweep {name}'s report, not {sweep_name}'s: give this sweep's "
            "report to --from-report"
        )
    out = {}
    for row in runs.to_dict("records"):
        if row.get("status") not in OUTCOMES:
            continue
        out[str(row["run_id"])] = {k: _plain(row.get(k)) for k in SUMMARY_FIELDS if k in row}
    return out


def grown_report(given: str | None, sweep_dir: Path) -> str | None:
    """The report a sweep grows: --from-report, else the one its plan.json records (a sweep
    grown once resumes as one, instead of training the report's runs again)."""
    if given:
        return str(given)
    plan = Path(sweep_dir) / "plan.json"
    try:
        doc = json.loads(plan.read_text()) if plan.is_file() else None
    except (OSError, ValueError):
        doc = None
    if not isinstance(doc, dict):
        return None  # none yet, or a damaged plan.json: the runner's and status's to report
    recorded = doc.get("grows")
    if recorded and not Path(recorded).is_dir():
        raise HarnessError(
            f"{plan} says this sweep grows the report {recorded}, which is not there: give its "
            "folder with --from-report DIR"
        )
    return recorded


def _plain(value):
    """A parquet cell as summary.json holds it: None for a missing number."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value
