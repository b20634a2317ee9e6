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
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from figures import charts, ladder, present
from figures.formats import DEFAULT_FORMATS
from figures.report import (
    archive,
    budget,
    interventions,
    opening,
    rejudged,
    tables,
    what_ran,
)
from figures.words import extrapolation, numbers
from figures.words.view import Said, say
from sweeps.analysis import analyze
from sweeps.analysis import model as m
from sweeps.analysis.adapter import from_json, record, to_json
from sweeps.analysis.results import SweepResults, load_curves, load_results
from sweeps.core.config import TrainConfig
from sweeps.core.diagnostics import DIAGNOSTICS
from sweeps.core.files import write_atomic
from sweeps.study import stats
from sweeps.study.hypotheses import HYPOTHESES
from sweeps.study.rules import Comparison

CURVE_LRS = 4  # training-curve columns: this many LRs spread evenly over the grid
HEADLINE = ("final_loss_vs_lr", "necessity_map")  # the figures the answer shows
# the rules' numbers as the prose states them, formatted from where each is declared
ONE_SIDED = f"{stats.CONFIDENCE:.0%}"  # the one-sided bound that decides (95%)
TWO_SIDED = f"{stats.TWO_SIDED:.0%}"  # the interval its two bounds make (90%)
AUC_LEVEL = f"{stats.AUC_QUANTILES[1] - stats.AUC_QUANTILES[0]:.0%}"  # the AUC's (90%)
EARLY = f"{stats.EARLY_FRACTION:.0%}"  # the early-warning step: this far into the run (10%)
LOSS_EVAL = f"{TrainConfig.loss_eval_fraction:.0%}"  # the quick val loss's interval (2%)


def make_report(
    sweep_dir: Path | None,
    out_dir: Path | None = None,
    formats=DEFAULT_FORMATS,
    from_report: Path | None = None,
    add_runs: bool = False,
) -> Path:
    """Write analysis.json, the figure set (in `formats`), report.md and the report's own data
    (figures.report.archive) for runs/<sweep> into out_dir (default: the sweep's report/); or, with
    from_report, re-render a committed report from its own data (default out_dir: in place,
    keeping a pre-v4 report's analysis and report.md beside it, figures.report.archive.OLD_*); with
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
        _keep_previous(Path(from_report), out_dir, source["kind"])
    # complete as returned, a token-matched check's judgement against its ladder (found beside
    # sweep_dir or from_report) included; analysis.json holds it as is, no words
    written = to_json(analyze(results, curves, sweep_dir, from_report))
    write_atomic(out_dir / "analysis.json", json.dumps(written, indent=1, sort_keys=True) + "\n")
    archive.write(out_dir, results, curves, source["gaps"] if source else "")
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
        figures = _figures(a, curves)
        if source:  # the earlier report's charts of what its runs' curves drew, where kept
            _keep_charts(
                Path(from_report), out_dir, [n for n, (_, c) in figures.items() if c is None]
            )
        if "html" in formats:
            charts.write_vega_js(out_dir)
        for name, (_, chart) in figures.items():
            if chart is not None:
                charts.save(chart, out_dir, name, formats)
        sections += [
            _answer(results, said, figures, formats),
            rejudged.section(source["previous"] if source else None, said, source),
            what_ran.setup(results, a),
            what_ran.runs(a),
            _verdicts(said),
            _figure_section(figures, formats, out_dir),
            _tables(a, curves),
        ]
        # specs with intervention arms, or one comparison at two token budgets
        sections += filter(None, [interventions.section(a), budget.section(a)])
    sections.append(what_ran.provenance(results.runs))
    path = out_dir / "report.md"
    write_atomic(path, "\n".join(sections))
    return path


def _figures(analysis: m.Analysis | dict, curves: pd.DataFrame) -> dict:
    """name -> (caption, chart or None), in report order; analysis: the typed analysis, or the dict
    of one (present.typed reads it back)."""
    a = present.typed(analysis)
    arms = a.settings.arms
    runs = _finished(a)
    lrs = sorted(runs.lr.unique())
    picks = sorted(
        {lrs[i] for i in np.linspace(0, len(lrs) - 1, min(CURVE_LRS, len(lrs))).round().astype(int)}
    )
    differ = _most_different_lr(a)
    if differ is not None and differ not in picks:  # where the arms differ most, always
        nearest = min(picks, key=lambda lr: abs(np.log(lr) - np.log(differ)))
        picks = sorted({*picks, differ} - ({nearest} if len(picks) >= CURVE_LRS else set()))
    high = _high_stable_lr(a)
    y_max = float(pd.to_numeric(runs.init_loss).max()) * 1.15
    outcomes = {r.run_id: r.outcome for r in a.runs}
    trained = "train_loss" in curves and curves.train_loss.notna().any()
    unit = present.loss_unit(a.settings)
    rung = ladder.of_analysis(a)
    # the trend's points: only on a ladder (one rung has no trend to draw) whose trend placed
    # some (the verdict says why when none: too few, or all censored alike)
    trend = {
        "threshold_trend": (
            f"Each seed's necessity threshold vs {rung.name}: the points "
            f"{rung.trends[0]} is decided on",
            charts.trend(a),
        )
    }
    return {
        "final_loss_vs_lr": ("Final loss vs learning rate", charts.final_loss(a)),
        "necessity_map": ("Where QK-norm is necessary", charts.necessity_map(a)),
        "stability_vs_depth": (  # the file's name from before ladders had a width
            f"Critical learning rate and necessity threshold vs {rung.name}",
            charts.stability(a),
        ),
        **(trend if trend["threshold_trend"][1] is not None else {}),
        "paired_effect": ("Paired effect per learning rate", charts.paired_effect(a)),
        "eta_max_ratio": (
            "How the max-LR ratio depends on the margin delta",
            charts.eta_max_ratio(a),
        ),
        "lr_sensitivity": ("LR sensitivity per arm", charts.sensitivity(a)),
        "training_curves": (
            "Training curves at a few learning rates",
            charts.training_curves(curves, arms, picks, y_max, outcomes, unit, rung)
            if trained
            else None,
        ),
        "attention": (
            f"Attention logits and entropy over training at LR {high:.3g}",
            charts.attention(curves, arms, high, _capped(a), rung) if trained else None,
        ),
        "residual_kurtosis": (
            "Residual-stream kurtosis over training",
            charts.kurtosis(curves, arms, sorted({lrs[0], high}), rung) if trained else None,
        ),
    }


def _finished(a: m.Analysis) -> pd.DataFrame:
    """The runs with an outcome (ok, unstable, diverged), one row each as analysis.json writes
    it."""
    return pd.DataFrame([record(r) for r in a.runs if r.outcome])


def _capped(a: m.Analysis) -> dict:
    """{arm: its attention soft cap} for the arms that cap their attention logits."""
    out = {}
    for d in a.depths.values():
        for arm, x in d.arms.items():
            cap = (x.interventions or {}).get("attn-softcap")  # keyed by intervention name
            if cap:
                out[arm] = cap
    return out


def _most_different_lr(analysis: m.Analysis | dict) -> float | None:
    """The LR where the primary comparison's paired effect is largest (any depth), or where
    the arms' outcomes differ most when no LR has two pairs."""
    a = present.typed(analysis)
    key = Comparison(a.settings.reference, a.settings.primary).key
    best, size = None, -1.0
    for d in a.depths.values():
        c = d.comparisons.get(key)
        for e in c.per_lr if c else []:
            if e.n >= 1 and not e.ceiling and e.mean is not None and abs(e.mean) > size:
                best, size = e.lr, abs(e.mean)
    return best


def _high_stable_lr(a: m.Analysis) -> float:
    """The largest LR at which every run of the primary treatment arm is ok, at every depth:
    where it still trains and the reference arm's trouble, if any, shows."""
    primary = a.settings.primary
    runs = _finished(a)
    on = runs[runs.arm == primary]
    calm = on.groupby("lr").outcome.apply(lambda s: (s == "ok").all())
    lrs = sorted(runs.lr.unique())
    return float(calm[calm].index.max()) if calm.any() else float(lrs[len(lrs) // 2])


# -- sections ----------------------------------------------------------------------------------
def _keep_previous(report_dir: Path, out_dir: Path, kind: str) -> None:
    """A pre-v4 report re-judged keeps its analysis.json and report.md, renamed, so v3's
    verdicts stay beside v4's (never overwritten once kept); a report re-rendered elsewhere
    (--out) takes the ones it kept along, as the report it renders cites them."""
    for name, kept in (("analysis.json", archive.OLD_ANALYSIS), ("report.md", archive.OLD_REPORT)):
        new = out_dir / kept
        if new.exists():
            continue
        for old in (report_dir / kept, report_dir / name if kind == "analysis" else None):
            if old is not None and old.is_file():
                write_atomic(new, old.read_text())
                break


def _keep_charts(report_dir: Path, out_dir: Path, names: list[str]) -> None:
    """A re-judged report re-rendered elsewhere (--out): the charts it keeps from the earlier
    report (its curves are gone with the run directories, _figure_section), copied along, so
    the re-render holds the committed report's charts. Only beside a kept earlier report."""
    if out_dir.resolve() == report_dir.resolve() or not (out_dir / archive.OLD_REPORT).is_file():
        return
    for name in names:
        for ext in ("svg", "png"):
            old, new = report_dir / f"{name}.{ext}", out_dir / f"{name}.{ext}"
            if old.is_file() and not new.exists():
                shutil.copyfile(old, new)


EFFECTIVE_LOSS = (
    "*Effective loss*: a finished run's final validation loss capped at its loss at "
    "initialization, min(final, L0), as Wortsman et al. count it; only a run that stopped "
    "(diverged) counts at L0. A run *fails* at its LR, for the critical LR and H2a, when it is "
    "*stuck*: it diverged or finished worse than the bigram baseline. The critical LR is also "
    "shown when only a divergence counts (*diverged*) and when a run worse than its seed's best "
    "LR by delta counts (*degraded*)."
)
# the same with the bigram-baseline rule off (train.baseline = none): no run is stuck
EFFECTIVE_LOSS_RULE_OFF = (
    "*Effective loss*: a finished run's final validation loss capped at its loss at "
    "initialization, min(final, L0), as Wortsman et al. count it; only a run that stopped "
    "(diverged) counts at L0. A run *fails* at its LR, for the critical LR and H2a, when it "
    "*diverged*: the bigram-baseline rule is off, so no run counts as stuck. The critical LR is "
    "also shown when a run worse than its seed's best LR by delta counts (*degraded*)."
)


def answer_lines(view: Said | dict) -> list[str]:
    """The answer as the terminal prints it: the report's opening (figures/report/opening.py;
    view: the analysis in words, or figures.words.view.as_json's dict of it)."""
    return opening.terminal(view)


def _answer(results: SweepResults, said: Said, figures: dict, formats) -> str:
    """The opening: what the sweep says, on what data and budget, and the headline figures
    (said: the analysis in words, figures/words/view.py)."""
    a = said.analysis
    s = a.settings
    runs = results.runs
    corpus = ", ".join(sorted(map(str, runs.corpus.dropna().unique()))) if "corpus" in runs else "?"
    tokenizer = (
        ", ".join(sorted(map(str, runs.tokenizer.dropna().unique())))
        if "tokenizer" in runs
        else "?"
    )
    seeds = ", ".join(str(int(x)) for x in sorted(runs.seed.dropna().unique()))
    lines = ["## The answer", "", *opening.markdown(said)]
    lines += [
        f"These runs: corpus {corpus} (tokenizer {tokenizer}), {what_ran.budgets(a)}, seeds "
        f"{seeds}; {len(a.runs)} runs, primary comparison {s.reference} vs "
        f"{s.primary}, minimum effect {s.min_effect:g} nats.",
        "",
    ]
    for warning in said.budget_warnings:  # figures/words/caveats.py
        lines += [f"**Budget warning:** {warning}.", ""]
    for warning in said.refinement_warnings:
        lines += [f"**Refinement warning:** {warning}.", ""]
    lines += [
        (EFFECTIVE_LOSS_RULE_OFF if present.rule_off_of(a) else EFFECTIVE_LOSS)
        + f" QK-norm is *necessary* at an LR when the one-sided {ONE_SIDED} lower "
        f"bound of the paired effect ({s.reference} - {s.primary} effective loss) exceeds "
        f"{s.min_effect:g} nats. The *necessity threshold* is the LR from which it "
        "stays necessary; an arm's *critical LR* is where its runs start to fail.",
        "",
    ]
    bigram_loss = s.baselines.bigram
    if present.rule_off_of(a):
        lines += [
            "The bigram-baseline rule is **off** for this sweep (train.baseline = none): "
            "runs are unstable only by a loss spike, not by ending worse than the bigram "
            "baseline" + (f" ({bigram_loss:.3f} nats)" if bigram_loss is not None else "") + ".",
            "",
        ]
    image = next((ext for ext in ("png", "svg") if ext in formats), None)
    for name in HEADLINE:
        caption, chart = figures.get(name, ("", None))
        if chart is not None and image:
            lines += [f"![{caption}]({name}.{image})", ""]
    bigram = "; dotted: the bigram baseline" if bigram_loss is not None else ""
    ref, primary, least = s.reference, s.primary, s.min_effect
    lines += [
        "Reading the two figures:",
        "",
        "- *Final loss vs learning rate*: per arm a line, the seed median of the effective "
        "loss, and a band, the range over seeds (a cell whose seeds split shows them, not a "
        "mean no seed had); arms that coincide are set a few pixels apart.",
        "- Each run is a glyph by its fate: circle ok, triangle unstable, "
        + (
            ""
            if present.rule_off_of(a)
            else "square stuck (finished worse than the bigram baseline), "
        )
        + "cross diverged (on the top edge).",
        "- A triangle on the bottom edge is an arm's critical LR, drawn only where its runs "
        f"failed; the bar above the data is the bracket the necessity threshold lies in{bigram}.",
        f"- *Where QK-norm is necessary*: one cell per LR, coloured by the paired effect {ref} "
        f"- {primary} (blue: QK-norm better; orange: better without), full colour at the span "
        "its legend gives; larger effects (where runs failed) are clamped to it.",
        f"- A dot: QK-norm is necessary there (the interval's lower end clears {least:g} nats). A "
        "strong colour without a dot: a large mean whose interval still reaches below that (the "
        "seeds disagree).",
        "- Grey: every run of both arms failed, so there is no effect to measure. Light grey "
        "with an x: not judged (too few pairs to test, e.g. where most runs of both arms "
        "failed). The black bar on top: the threshold's bracket.",
        "",
    ]
    return "\n".join(lines)


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


def _figure_section(figures: dict, formats, out_dir: Path | None = None) -> str:
    """The figures, each under its caption; a chart with no data says why, and a re-judged
    report whose curves are gone links the earlier report's chart of them where it is kept
    (training curves do not depend on the study's rules)."""
    image = next((ext for ext in ("png", "svg") if ext in formats), None)
    names = {"svg": "SVG", "html": "interactive HTML", "vl.json": "Vega-Lite spec"}
    lines = ["## Figures", ""]
    for name, (caption, chart) in figures.items():
        lines += [f"### {caption}", ""]
        kept = next(
            (
                f"{name}.{ext}"
                for ext in ("svg", "png")
                if out_dir and (out_dir / f"{name}.{ext}").is_file()
            ),
            None,
        )
        if chart is None and kept and (out_dir / archive.OLD_REPORT).is_file():
            lines += [
                f"_Kept from the earlier report ({archive.OLD_REPORT}), drawn from the run "
                f"directories, which are gone; its curves do not depend on the rules._",
                "",
                f"![{caption}]({kept})",
                "",
            ]
            continue
        if chart is None:
            lines += ["_Not drawn: the finished runs hold no data for it._", ""]
            continue
        if name in HEADLINE:
            lines += ["_Shown under The answer, above._", ""]
        elif image:
            lines += [f"![{caption}]({name}.{image})", ""]
        links = [
            f"[{label}]({name}.{ext})"
            for ext, label in names.items()
            if ext in formats and ext != image
        ]
        if links:
            lines += [" | ".join(links), ""]
    return "\n".join(lines)


def _tables(analysis: m.Analysis, curves: pd.DataFrame) -> str:
    s, rung = analysis.settings, ladder.of_analysis(analysis)
    lines = [
        "## Tables",
        "",
        "Every number here is in analysis.json beside this report.",
        "",
        *_ladder_section(analysis),
        f"### Effective loss ({present.loss_unit(analysis.settings)}, mean ± sd over seeds, "
        "perplexity; [runs that failed])",
        "",
        tables.final_loss(analysis),
        "### Critical learning rate (the max stable LR)",
        "",
        "The first LR above a seed's best LR at which its run fails, interpolated "
        "(geometric midpoint of the last LR that did not fail and the first that did); median "
        "and range over seeds, under each failure definition: "
        + (
            "*diverged* (stopped; the bigram-baseline rule is off, so no run is stuck and it "
            "decides H2a)"
            if present.rule_off_of(analysis)
            else "*stuck* (diverged or worse than the bigram baseline; it decides H2a), "
            "*diverged* (stopped)"
        )
        + ", *degraded* (worse "
        "than the seed's best LR by delta). '>': no failure above the best LR in the grid (a "
        "lower bound); '<=': even the best LR fails. Best LR: the arm's lowest seed-mean "
        "effective loss.",
        "",
        tables.critical_lr(analysis),
        f"### eta_max(delta = {s.delta:g} nats)",
        "",
        "The largest LR (log-interpolated) at which every seed ends within delta of L*, the "
        f"best seed-mean loss of all arms at that {rung.name} and budget.",
        "",
        tables.eta_max(analysis),
        "### LR sensitivity (Wortsman et al. 2023)",
        "",
        f"mean - min of the effective loss over the base-grid LRs in "
        f"[{s.sensitivity_range[0]:g}, {s.sensitivity_range[1]:g}], per seed; "
        "'incomplete' when one of those runs is missing.",
        "",
        tables.sensitivity(analysis),
    ]
    fails_as = next(iter(present.failures_of(analysis).values()))  # stuck, or diverged
    for key in _comparison_keys(analysis):
        lines += [
            f"### Paired effect, {key} (nats; bold: QK-norm necessary)",
            "",
            f"Mean over seeds of the baseline minus treatment effective loss with its "
            f"two-sided {TWO_SIDED} t interval from that LR's own seeds, whose lower end is the "
            f"one-sided {ONE_SIDED} bound that decides: necessary where it exceeds "
            f"{s.min_effect:g}. Where a run failed ({fails_as}), the LR rests on the pairs "
            f"without a failure when {stats.MIN_PAIRS} remain (the others are named, set aside); "
            f"'ceiling': "
            f"every run of both arms failed; 'both arms fail': too few pairs without a "
            f"failure (docs/STUDY.md section 4). Speed-up: steps to reach "
            f"{numbers.num(s.target_loss, 2)} nats, baseline / treatment. {numbers.FLOORED}: the "
            f"interval is as wide as the precision floor ({s.precision:g} nats), "
            f"wider than this LR's seeds would make it.",
            "",
            tables.effects(analysis, key),
        ]
    lines += [
        "### Necessity thresholds",
        "",
        "The threshold is a bracket: the last LR where QK-norm was not shown necessary and the "
        "first from which it stays necessary; '~x in (a, b]' where the effect is continuous "
        "across it (interpolated), '(a, b]' where a run changes failure class between a and b.",
        "",
        tables.thresholds(analysis),
        f"### Steps to the target loss {numbers.num(s.target_loss, 2)} nats / to the bigram "
        "baseline",
        "",
        f"Seed mean of the step where the quick validation loss (every {LOSS_EVAL} of the run) "
        "first reaches the target, interpolated; '-' when not every seed reaches it.",
        "",
        tables.steps(analysis),
    ]
    if analysis.early_warning:
        lines += [
            "### Early warning: does early logit growth predict a failure?",
            "",
            "Per arm, each run's largest max attention logit over layers and its max output "
            f"logit at its first evaluation at or after {EARLY} of the run, against whether the "
            f"run failed ({fails_as}): the AUC (the chance a failing run's value exceeds "
            f"another's; 0.5: no signal) with a {AUC_LEVEL} bootstrap interval (docs/STUDY.md "
            "section 4; "
            "it decides nothing).",
            "",
            tables.early_warning(analysis),
        ]
    finished = {r.run_id for r in analysis.runs if r.outcome in ("ok", "unstable")}
    curves = curves[curves.run_id.isin(finished)]  # a diverged run's last eval is mid-run
    if not curves.empty:
        columns = {d.name: d.label for d in DIAGNOSTICS.values() if d.in_report}
        lines += [
            "### Diagnostics at the end of training (median over seeds, last eval)",
            "",
            "Runs that trained to the end (ok or unstable); per layer the largest value "
            "(the lowest for entropy).",
            "",
            tables.diagnostics(
                _final_diagnostics(curves, list(columns), rung.field), columns, s.arms, rung
            ),
        ]
    return "\n".join(lines)


def _ladder_section(analysis: m.Analysis) -> list[str]:
    """A ladder's rungs side by side (several rungs): what each says, and on a width ladder
    the line carried to the core width, said as the extrapolation it is."""
    rung, s = ladder.of_analysis(analysis), analysis.settings
    if len(analysis.depths) < 2:
        return []
    lines = [
        f"### The ladder: per {rung.name}",
        "",
        f"Descriptive (docs/STUDY.md section 11): tokens per parameter, the necessity "
        f"threshold's bracket, each compared arm's median critical LR under each failure "
        f"definition, {s.reference}'s initial attention-logit std (the "
        f"start temperature) and the low-LR gap ({s.reference} - "
        f"{s.primary} effective loss at the two lowest grid LRs, nats, with "
        f"its {TWO_SIDED} interval) at each {rung.name}.",
        "",
        tables.ladder_rungs(analysis),
    ]
    gap = extrapolation.gap_line(analysis) if rung.is_width else None
    if gap:
        lines += ["", gap, ""]
    sensitivity = extrapolation.sensitivity_trend_line(analysis)
    if sensitivity:
        lines += ["", sensitivity, ""]
    e = analysis.w1.extrapolation if analysis.w1 else None
    if rung.is_width and e:
        head = extrapolation.extrapolation_head(e)
        lines += [
            f"**At {head}.** It assumes each trend stays a straight line per doubling of width "
            "that far (in log LR; the low-LR gap in nats, which a line can carry below 0); the "
            f"line's {TWO_SIDED} interval is its uncertainty there, one seed's adds the seeds' "
            "scatter.",
            "",
            *(f"- {x}" for x in extrapolation.extrapolation_lines(e)),
            "",
        ]
        others = extrapolation.other_definitions_lines(e)
        if others:
            lines += [
                "Under the other failure definitions (each arm's critical LR, read the same way; "
                "the prediction that it falls about as 1/width is for all three):",
                "",
                *(f"- {x}" for x in others),
                "",
            ]
    return lines


def _comparison_keys(analysis: m.Analysis) -> list[str]:
    keys = []
    for d in analysis.depths.values():
        keys += [k for k in d.comparisons if k not in keys]
    return keys


def _final_diagnostics(
    curves: pd.DataFrame, columns: list[str], rung: str = "n_layer"
) -> pd.DataFrame:
    """Per (arm, rung, lr): the median over seeds of each diagnostic at the run's last
    eval step (the last row that has val_loss); rung: the ladder's field."""
    last = (
        curves.dropna(subset=["val_loss"])
        .sort_values("step")
        .drop_duplicates("run_id", keep="last")
    )
    out = last.groupby(["arm", rung, "lr"])[columns].median()
    return out.reset_index().sort_values([rung, "lr", "arm"], ignore_index=True)
