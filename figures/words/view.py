"""The analysis in words: sweeps.analysis computes every number and decision of a sweep once,
typed and without prose (sweeps/analysis/model.py's Analysis, which analysis.json holds:
schema 5, sweeps/analysis/adapter.py); this module words it for the report
(figures/report/assemble.py)
and the terminal, as a view that is never written.

The view is analysis.json's dict with the words added: "verdicts" (figures/words/verdicts.py),
"rules" (figures/words/practitioner.py), "interventions" (figures/words/intervention_verdicts.py),
"budget_warnings" and "refinement_warnings" (figures/words/caveats.py). A token-matched check
sweep's
"token_check" is the typed analysis's (sweeps/analysis/token_check.py), its reason code worded
by figures/words/token_check.py.

The ladder (figures/ladder.py): settings["ladder"] = {"field", "name"} names the field the
sweep's rungs differ in, n_layer (depth) or n_embd (width). "depths" keeps its name, but its
keys <L> (and those of "rules", "decisions", "early_warning") are the rung values of that
field. The trend over the rungs is "h3" on a depth ladder (H3); on a width ladder "w1" (W1,
with the extrapolation to the core width) and "w2" (W2), with "W1" and "W2" in "verdicts" in
H3's place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from figures import ladder
from figures.words import caveats, intervention_verdicts
from figures.words.practitioner import practitioner_rules
from figures.words.verdicts import judge
from sweeps import analysis as typed
from sweeps.analysis.adapter import from_json, to_json
from sweeps.analysis.model import Analysis
from sweeps.analysis.results import SweepResults
from sweeps.core.files import clean_json


def analyze(
    results: SweepResults,
    curves: pd.DataFrame,
    sweep_dir: Path | None = None,
    previous: Path | None = None,
) -> dict:
    """The worded view of a sweep's analysis (runs table and training curves of
    sweeps.analysis.results): sweeps.analysis.analyze's Analysis as analysis.json writes it,
    read back, and worded (`words`). sweep_dir (the sweep's folder) and previous (a re-rendered
    report's folder) are where a token-matched check finds its ladder
    (sweeps/analysis/token_check.py)."""
    return words(from_json(to_json(typed.analyze(results, curves, sweep_dir, previous))))


def read_view(report_dir: Path) -> dict:
    """The worded view of a written report (its analysis.json, schema 5 or 4, read back typed
    and worded again): what the terminal prints, and what a test reads the verdicts from."""
    return words(from_json(json.loads((Path(report_dir) / "analysis.json").read_text())))


def words(analysis: Analysis) -> dict:
    """An Analysis as analysis.json holds it (read back: NaN and Inf as None), with the
    verdicts, the practitioner's rules, the interventions' verdicts and the warnings in words:
    the view the report's words read; analysis.json itself holds no words."""
    out = to_json(analysis)
    rung = ladder.of(out)
    found = analysis.caveats
    out["budget_warnings"] = caveats.budget_lines(found.budget, rung) if found else []
    out["refinement_warnings"] = caveats.unrefined_lines(found.unrefined, rung) if found else []
    out["verdicts"] = judge(analysis)
    out["rules"] = practitioner_rules(analysis)
    out["interventions"] = intervention_verdicts.judge(analysis)  # docs/STUDY.md section 9
    return clean_json(out)
