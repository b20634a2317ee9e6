"""The analysis in words: sweeps.analysis computes every number and decision of a sweep once,
typed and without prose (sweeps/analysis/model.py's Analysis, which analysis.json holds:
schema 5, sweeps/analysis/adapter.py); `say` words it for the report (figures/report/) and
the terminal as a `Said`, typed and never written: the verdicts (figures/words/verdicts.py),
the practitioner's rule per rung (figures/words/practitioner.py), the interventions' verdicts
(figures/words/intervention_verdicts.py) and the warnings (figures/words/caveats.py). A
token-matched check sweep's "token_check" is the typed analysis's
(sweeps/analysis/token_check.py), worded by figures/words/token_check.py.

`as_json` lays a Said out as one dict, analysis.json's numbers with the words beside them
("verdicts", "rules", "interventions", "budget_warnings", "refinement_warnings"), for reading
a report's words by key (tests, scripts); `analyze` and `read_view` give that dict of a sweep
or of a written report.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from figures import present
from figures.words import caveats, intervention_verdicts
from figures.words.practitioner import practitioner_rules
from figures.words.said import Verdict, Worded
from figures.words.verdicts import judge
from sweeps import analysis as typed
from sweeps.analysis.adapter import from_json, to_json
from sweeps.analysis.model import Analysis
from sweeps.analysis.results import SweepResults
from sweeps.core.files import clean_json


@dataclass(frozen=True)
class Said:
    """An analysis and what figures/words says of it: each registered hypothesis's verdict,
    the practitioner's rule per rung, the interventions' verdicts per rung and arm, and the
    warnings (a budget too short, a grid not refined), one sentence each."""

    analysis: Analysis
    verdicts: dict[str, Verdict]
    rules: dict[str, str]
    interventions: dict[str, dict[str, dict[str, Worded]]]
    budget_warnings: list[str]
    refinement_warnings: list[str]


def say(analysis: Analysis) -> Said:
    """The analysis in words (analysis: as analysis.json holds it, read back: NaN and Inf as
    None, as the report reads it)."""
    rung = present.ladder_of(analysis)
    found = analysis.caveats
    return Said(
        analysis=analysis,
        verdicts=judge(analysis),
        rules=practitioner_rules(analysis),
        interventions=intervention_verdicts.judge(analysis),  # docs/STUDY.md section 9
        budget_warnings=caveats.budget_lines(found.budget, rung) if found else [],
        refinement_warnings=caveats.unrefined_lines(found.unrefined, rung) if found else [],
    )


def as_json(said: Said) -> dict:
    """A Said as one dict: analysis.json's numbers and the words beside them (module
    docstring); a rule per rung as {"text": its sentences}."""
    words = {
        "verdicts": {k: asdict(v) for k, v in said.verdicts.items()},
        "rules": {k: {"text": v} for k, v in said.rules.items()},
        "interventions": {
            rung: {arm: {h: asdict(w) for h, w in hs.items()} for arm, hs in arms.items()}
            for rung, arms in said.interventions.items()
        },
        "budget_warnings": said.budget_warnings,
        "refinement_warnings": said.refinement_warnings,
    }
    return clean_json(to_json(said.analysis) | words)


def analyze(
    results: SweepResults,
    curves: pd.DataFrame,
    sweep_dir: Path | None = None,
    previous: Path | None = None,
) -> dict:
    """as_json of a sweep's analysis (runs table and training curves of
    sweeps.analysis.results): sweeps.analysis.analyze's Analysis as analysis.json writes it,
    read back, and worded. sweep_dir (the sweep's folder) and previous (a re-rendered report's
    folder) are where a token-matched check finds its ladder (sweeps/analysis/token_check.py)."""
    written = from_json(to_json(typed.analyze(results, curves, sweep_dir, previous)))
    return as_json(say(written))


def read_view(report_dir: Path) -> dict:
    """as_json of a written report (its analysis.json, schema 5 or 4, read back and worded
    again)."""
    return as_json(say(read_analysis(report_dir)))


def read_analysis(report_dir: Path) -> Analysis:
    """A written report's analysis.json (schema 5 or 4), read back typed."""
    return from_json(json.loads((Path(report_dir) / "analysis.json").read_text()))
