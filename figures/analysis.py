"""The analysis in words: sweeps.analysis computes every number of a sweep once, typed and
without prose (sweeps/analysis/model.py's Analysis); this module adds what figures/ says
about it and returns the dict report/analysis.json holds (schema 4), which the report
(figures/report.py) and the charts render from.

Layout (JSON, `schema` 4: the study v4 rules): {"schema", "study_sha256", "sweep",
"settings", "runs": [...], "depths": {"<L>": {"arms": {arm: {...}}, "comparisons": {"B vs
T": {...}}, "h1", "h2a", "h2a_by_definition", "h2b", ...}}, "verdicts": {"H1", "H2a", "H2b",
"H3", "C1"}, "rules": {"<L>": {"text": sentence, "influence": [{run_id, threshold_without}]}},
"compute": {...}, "problems": [...]}: sweeps.analysis.adapter.to_json's numbers, and the
words added here: "verdicts" (figures/verdicts.py), "rules" (figures/practitioner.py),
"interventions" (figures/intervention_verdicts.py), "budget_warnings" and
"refinement_warnings" (figures/caveats.py), and a re-rendered report's "source" (its kind and
gaps, figures/archive.py). A token-matched check sweep's "token_check" is the typed analysis's
(sweeps/analysis/token_check.py), its reason code worded by figures/token_check.py.

The ladder (figures/ladder.py): settings["ladder"] = {"field", "name"} names the field the
sweep's rungs differ in, n_layer (depth) or n_embd (width). "depths" keeps its name, but its
keys <L> (and those of "rules", "decisions", "early_warning") are the rung values of that
field. The trend over the rungs is "h3" on a depth ladder (H3); on a width ladder "w1" (W1,
with the extrapolation to the core width) and "w2" (W2), with "W1" and "W2" in "verdicts" in
H3's place.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from figures import caveats, intervention_verdicts, ladder
from figures.practitioner import practitioner_rules
from figures.verdicts import judge
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
    source: dict | None = None,
) -> dict:
    """The analysis dict of a sweep (runs table and training curves of sweeps.analysis.results):
    sweeps.analysis.analyze's numbers, worded; complete (figures/report.py writes it as is).
    sweep_dir (the sweep's folder) and previous (a re-rendered report's folder) are where a
    token-matched check finds its ladder (sweeps/analysis/token_check.py); source: a re-rendered
    report's (figures.archive.load), recorded where some of it could not be recomputed."""
    return words(typed.analyze(results, curves, sweep_dir, previous), source)


def as_written(analysis: Analysis, out: dict) -> Analysis:
    """analysis as its analysis.json holds it (out: to_json(analysis)), what the words read:
    NaN and Inf as None, as the report reads them back, with the decisions analyze made."""
    return dataclasses.replace(from_json(out), decided=analysis.decided, caveats=analysis.caveats)


def words(analysis: Analysis, source: dict | None = None) -> dict:
    """An Analysis as analysis.json's dict, with the verdicts, the practitioner's rules, the
    interventions' verdicts and the warnings in words; and a re-rendered report's source (its
    kind and what it could not recompute, figures.archive.load) where it has gaps."""
    out = to_json(analysis)
    rung = ladder.of(out)
    found = analysis.caveats
    out["budget_warnings"] = caveats.budget_lines(found.budget, rung) if found else []
    out["refinement_warnings"] = caveats.unrefined_lines(found.unrefined, rung) if found else []
    written = as_written(analysis, out)
    out["verdicts"] = judge(written)
    out["rules"] = practitioner_rules(written)
    out["interventions"] = intervention_verdicts.judge(written)  # docs/STUDY.md section 9
    if source and source["gaps"]:
        out["source"] = {"kind": source["kind"], "gaps": source["gaps"]}
    return clean_json(out)
