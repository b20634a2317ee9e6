"""make_report: run directories -> analysis.json -> charts -> report.md, all from disk.

Every number the report prints comes from the typed analysis (sweeps.analysis.analyze),
written beside it as analysis.json (numbers and decisions, no prose) and read back from that
form once; the sections read the typed Analysis (sweeps/analysis/model.py) by attribute. The
words (verdicts, rules, warnings) come from figures/words/view.py's worded view of it, which the
sections that still take a dict read. Deterministic: the same run
directories give a byte-identical report.md, analysis.json and chart specs (everything sorted,
numbers at fixed precision, no clock reads).
"""

from __future__ import annotations

import json
from pathlib import Path

from figures import charts
from figures.formats import DEFAULT_FORMATS
from figures.report import (
    answer,
    budget,
    edges,
    figure_set,
    interventions,
    rejudged,
    tables_section,
    what_ran,
)
from figures.words.view import Said, say
from sweeps.analysis import analyze, archive
from sweeps.analysis.adapter import from_json, to_json
from sweeps.analysis.results import load_curves, load_results
from sweeps.core.files import write_atomic
from sweeps.study.hypotheses import HYPOTHESES
from sweeps.study.protocol import earlier_json, judged_under


def make_report(
    sweep_dir: Path | None,
    out_dir: Path | None = None,
    formats=DEFAULT_FORMATS,
    from_report: Path | None = None,
    add_runs: bool = False,
) -> Path:
    """Write analysis.json, the figure set (in `formats`), report.md and the report's own data
    (sweeps.analysis.archive) for runs/<sweep> into out_dir (default: the sweep's report/); or, with
    from_report, re-render a committed report from its own data (default out_dir: in place,
    keeping a pre-v4 report's analysis and report.md beside it, sweeps.analysis.archive.OLD_*); with
    add_runs, also the finished runs of sweep_dir the report lacks (archive.add_runs)."""
    source = None
    if from_report is not None:
        results, curves, source = archive.load(from_report)
        if add_runs:  # the runs a sweep grown from this report trained (sweeps.sweep.archived)
            results, curves, _ = archive.add_runs(results, curves, Path(sweep_dir))
        out_dir = Path(out_dir) if out_dir is not None else Path(from_report)
    else:
        results = load_results(sweep_dir)
        out_dir = Path(out_dir) if out_dir is not None else Path(sweep_dir) / "report"
        curves = load_curves(results.runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    if source:
        _keep_previous(Path(from_report), out_dir, source.kind)
    # complete as returned, a token-matched check's judgement against its ladder (found beside
    # sweep_dir or from_report) included; analysis.json holds it as is, no words
    written = to_json(analyze(results, curves, sweep_dir, from_report))
    # the rules that first judged these numbers keep naming them (sweeps.study.protocol)
    earlier = earlier_json((Path(from_report) if source else out_dir) / "analysis.json")
    written = judged_under(written, earlier)
    write_atomic(out_dir / "analysis.json", json.dumps(written, indent=1, sort_keys=True) + "\n")
    archive.write(out_dir, results, curves, source.gaps if source else "")
    a = from_json(written)  # as analysis.json holds it: NaN and Inf as None
    said = say(a)  # the words: verdicts, rules, interventions, warnings
    sections = [what_ran.header(results, a)]
    if not a.depths:
        sections += [
            what_ran.setup(results, a),
            what_ran.runs(a),
            "## Results\n\nNo run has finished yet (ok, unstable or diverged): "
            "nothing to analyse. Rerun this command when runs have finished.\n",
        ]
    else:
        figures = figure_set.figure_set(a, curves)
        if source:  # the earlier report's charts of what its runs' curves drew, where kept
            figure_set.keep_charts(
                Path(from_report), out_dir, [n for n, (_, c) in figures.items() if c is None]
            )
        if "html" in formats:
            charts.write_vega_js(out_dir)
        for name, (_, chart) in figures.items():
            if chart is not None:
                charts.save(chart, out_dir, name, formats)
        sections += [
            answer.answer(results, said, figures, formats),
            rejudged.section(source, said),
            what_ran.setup(results, a),
            what_ran.runs(a),
            _verdicts(said),
            edges.section(a),
            figure_set.section(figures, formats, out_dir, curves_gone=curves.empty),
            tables_section.section(a, curves),
        ]
        # specs with intervention arms, or one comparison at two token budgets
        sections += filter(None, [interventions.section(a), budget.section(a)])
    sections.append(what_ran.provenance(results.runs))
    path = out_dir / "report.md"
    write_atomic(path, "\n".join(sections))
    return path


# -- sections ----------------------------------------------------------------------------------
def _keep_previous(report_dir: Path, out_dir: Path, kind: str) -> None:
    """A re-judged report keeps its analysis.json and report.md, renamed by the rules that made
    them (a pre-v4 report's as v3's, a v4 report's as v4's), so the earlier verdicts stay beside
    the current ones (never overwritten once kept); a report re-rendered elsewhere (--out)
    takes the ones it kept along, as the report it renders cites them."""
    for name, kept in (("analysis.json", archive.OLD_ANALYSIS), ("report.md", archive.OLD_REPORT)):
        new = out_dir / kept
        if new.exists():
            continue
        for old in (report_dir / kept, report_dir / name if kind == "analysis" else None):
            if old is not None and old.is_file():
                write_atomic(new, old.read_text())
                break
    # a report v4 judged (schema 4 or 5) keeps its analysis and report as v4's, once
    analysis = report_dir / "analysis.json"
    v4 = analysis.is_file() and json.loads(analysis.read_text()).get("schema") in (4, 5)
    for name, kept in (("analysis.json", archive.V4_ANALYSIS), ("report.md", archive.V4_REPORT)):
        new = out_dir / kept
        if new.exists():
            continue
        for old in (report_dir / kept, report_dir / name if v4 else None):
            if old is not None and old.is_file():
                write_atomic(new, old.read_text())
                break


def _verdicts(said: Said) -> str:
    """The verdicts and the practitioner's rules, in words (figures/words/verdicts.py,
    practitioner.py)."""
    lines = [
        "## Verdicts",
        "",
        "Decided by the rules docs/STUDY.md fixed before the runs "
        "(section 5); each with its reason and the numbers behind it.",
        "",
    ]
    for name in (h for h in HYPOTHESES if h in said.verdicts):  # the registry's order
        v = said.verdicts[name]
        lines += [
            f"### {name}: {v.claim}",
            "",
            f"**Verdict: {v.verdict}.** {v.reason}",
            "",
            f"*Test:* {v.test}",
            "",
        ]
        lines += [f"- {e}" for e in v.evidence] + [""]
    lines += ["### The practitioner's rule", ""]
    lines += [f"- {said.rules[k]}" for k in sorted(said.rules, key=int)] or ["- n/a"]
    return "\n".join(lines + [""])
