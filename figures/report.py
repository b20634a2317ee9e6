"""make_report: run directories -> analysis.json -> charts -> report.md, all from disk.

Every number the report prints comes from the analysis dict (figures/analysis.py), written
beside it as analysis.json. Deterministic: the same run directories give a byte-identical
report.md, analysis.json and chart specs (everything sorted, numbers at fixed precision, no
clock reads).
"""

from __future__ import annotations

import json
from collections import Counter
from functools import reduce
from pathlib import Path

import numpy as np
import pandas as pd

from figures import analysis as study
from figures import (
    archive,
    budget,
    charts,
    extrapolation,
    fmt,
    interventions,
    ladder,
    opening,
    present,
    rejudged,
    tables,
    token_check,
)
from figures.formats import DEFAULT_FORMATS
from figures.results import SweepResults, load_curves, load_results
from sweeps.core.diagnostics import DIAGNOSTICS
from sweeps.core.files import write_atomic
from sweeps.study.stats import STUDY_SHA256

CURVE_LRS = 4  # training-curve columns: this many LRs spread evenly over the grid
HYPOTHESES = opening.HYPOTHESES  # those a sweep decides (its ladder's trend: H3, or W1, W2)
HEADLINE = ("final_loss_vs_lr", "necessity_map")  # the figures the answer shows


def make_report(
    sweep_dir: Path | None,
    out_dir: Path | None = None,
    formats=DEFAULT_FORMATS,
    from_report: Path | None = None,
) -> Path:
    """Write analysis.json, the figure set (in `formats`), report.md and the report's own data
    (figures.archive) for runs/<sweep> into out_dir (default: the sweep's report/); or, with
    from_report, re-render a committed report from its own data (default out_dir: in place,
    keeping a pre-v4 report's analysis and report.md beside it, figures.archive.OLD_*)."""
    source = None
    if from_report is not None:
        results, curves, source = archive.load(from_report)
        out_dir = Path(out_dir) if out_dir is not None else Path(from_report)
    else:
        results = load_results(sweep_dir)
        out_dir = Path(out_dir) if out_dir is not None else Path(sweep_dir) / "report"
        curves = load_curves(results.runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    if source and source["kind"] == "analysis":
        _keep_previous(Path(from_report), out_dir)
    result = study.analyze(results, curves)
    check = (results.spec or {}).get("token_check")
    if check:  # a depth ladder's token-matched check (docs/STUDY.md section 11)
        result["token_check"] = token_check.entry(result, check, sweep_dir, from_report)
    if source and source["gaps"]:
        result["source"] = {"kind": source["kind"], "gaps": source["gaps"]}
    write_atomic(out_dir / "analysis.json", json.dumps(result, indent=1, sort_keys=True) + "\n")
    archive.write(out_dir, results, curves, source["gaps"] if source else "")
    view = present.with_fallbacks(result, results.runs)  # what the charts and text draw
    sections = [_header(results, result)]
    if not result["depths"]:
        sections += [
            _setup(results, result),
            _runs(view),
            "## Results\n\nNo run has finished yet (ok, unstable or diverged): "
            "nothing to analyse. Rerun this command when runs have finished.\n",
        ]
    else:
        figures = _figures(view, curves)
        if "html" in formats:
            charts.write_vega_js(out_dir)
        for name, (_, chart) in figures.items():
            if chart is not None:
                charts.save(chart, out_dir, name, formats)
        sections += [
            _answer(results, view, figures, formats),
            rejudged.section(source["previous"] if source else None, result, source),
            _setup(results, result),
            _runs(view),
            _verdicts(result),
            _figure_section(figures, formats, out_dir),
            _tables(result, curves),
        ]
        # specs with intervention arms, or one comparison at two token budgets
        sections += filter(None, [interventions.section(result), budget.section(result)])
    sections.append(_provenance(results.runs))
    path = out_dir / "report.md"
    write_atomic(path, "\n".join(sections))
    return path


def _figures(result: dict, curves: pd.DataFrame) -> dict:
    """name -> (caption, chart or None), in report order."""
    arms = result["settings"]["arms"]
    runs = pd.DataFrame([r for r in result["runs"] if r["outcome"]])
    lrs = sorted(runs.lr.unique())
    picks = sorted(
        {lrs[i] for i in np.linspace(0, len(lrs) - 1, min(CURVE_LRS, len(lrs))).round().astype(int)}
    )
    differ = _most_different_lr(result)
    if differ is not None and differ not in picks:  # where the arms differ most, always
        nearest = min(picks, key=lambda lr: abs(np.log(lr) - np.log(differ)))
        picks = sorted({*picks, differ} - ({nearest} if len(picks) >= CURVE_LRS else set()))
    high = _high_stable_lr(result)
    y_max = float(pd.to_numeric(runs.init_loss).max()) * 1.15
    outcomes = {r["run_id"]: r["outcome"] for r in result["runs"]}
    trained = "train_loss" in curves and curves.train_loss.notna().any()
    unit = present.loss_unit(result)
    rung = ladder.of(result)
    # the trend's points: only on a ladder (one rung has no trend to draw)
    trend = {
        "threshold_trend": (
            f"Each seed's necessity threshold vs {rung.name}: the points "
            f"{rung.trends[0]} is decided on",
            charts.trend(result),
        )
    }
    return {
        "final_loss_vs_lr": ("Final loss vs learning rate", charts.final_loss(result)),
        "necessity_map": ("Where QK-norm is necessary", charts.necessity_map(result)),
        "stability_vs_depth": (  # the file's name from before ladders had a width
            f"Critical learning rate and necessity threshold vs {rung.name}",
            charts.stability(result),
        ),
        **(trend if len(result["depths"]) > 1 else {}),
        "paired_effect": ("Paired effect per learning rate", charts.paired_effect(result)),
        "eta_max_ratio": (
            "How the max-LR ratio depends on the margin delta",
            charts.eta_max_ratio(result),
        ),
        "lr_sensitivity": ("LR sensitivity per arm", charts.sensitivity(result)),
        "training_curves": (
            "Training curves at a few learning rates",
            charts.training_curves(curves, arms, picks, y_max, outcomes, unit, rung)
            if trained
            else None,
        ),
        "attention": (
            f"Attention logits and entropy over training at LR {high:.3g}",
            charts.attention(curves, arms, high, _capped(result), rung) if trained else None,
        ),
        "residual_kurtosis": (
            "Residual-stream kurtosis over training",
            charts.kurtosis(curves, arms, sorted({lrs[0], high}), rung) if trained else None,
        ),
    }


def _capped(result: dict) -> dict:
    """{arm: its attention soft cap} for the arms that cap their attention logits."""
    out = {}
    for d in result["depths"].values():
        for arm, a in d["arms"].items():
            cap = (a.get("interventions") or {}).get("attn-softcap")
            if cap:
                out[arm] = cap
    return out


def _most_different_lr(result: dict) -> float | None:
    """The LR where the primary comparison's paired effect is largest (any depth), or where
    the arms' outcomes differ most when no LR has two pairs."""
    key = present.primary_key(result)
    best, size = None, -1.0
    for d in result["depths"].values():
        c = d["comparisons"].get(key)
        for e in (c or {}).get("per_lr", []):
            if e["n"] >= 1 and not e["ceiling"] and e["mean"] is not None and abs(e["mean"]) > size:
                best, size = e["lr"], abs(e["mean"])
    return best


def _high_stable_lr(result: dict) -> float:
    """The largest LR at which every run of the primary treatment arm is ok, at every depth:
    where it still trains and the reference arm's trouble, if any, shows."""
    primary = result["settings"]["primary"]
    runs = pd.DataFrame([r for r in result["runs"] if r["outcome"]])
    on = runs[runs.arm == primary]
    calm = on.groupby("lr").outcome.apply(lambda s: (s == "ok").all())
    lrs = sorted(runs.lr.unique())
    return float(calm[calm].index.max()) if calm.any() else float(lrs[len(lrs) // 2])


# -- sections ----------------------------------------------------------------------------------
def _configs(results: SweepResults) -> list:
    """The RunConfig of every run in the report's table whose config reads."""
    return [c for c in map(results.config, results.runs.run_id) if c is not None]


def _header(results: SweepResults, result: dict) -> str:
    lines = [f"# QK-norm study: sweep `{results.name}`", ""]
    if any(c.data.corpus == "builtin" for c in _configs(results)):
        lines += [
            "> **SYNTHETIC built-in corpus.** These runs trained on the project's generated "
            "stories, not on TinyStories: they show the harness and the mechanism, not "
            "results about natural text.",
            "",
        ]
    if results.spec.get("description"):
        lines += [str(results.spec["description"]).strip(), ""]
    if results.ignored:
        lines += [left_out_notice(results), ""]
    lines += [
        f"Analysed under docs/STUDY.md sha256 `{STUDY_SHA256[:16]}`"
        + (
            ""
            if result["settings"]["preregistered"]
            else " (the plan has no pre-registered [study]: verdicts are inconclusive)"
        )
        + ".",
        "",
    ]
    return "\n".join(lines)


def left_out_notice(results: SweepResults) -> str:
    """The report (and the terminal) says when it covers fewer run directories than the
    sweep folder holds: those its plan.json does not plan (another definition's or another
    backend's runs)."""
    by_backend = Counter(rid.split("-", 1)[0] for rid in results.ignored)
    held = len(results.runs) + len(results.ignored)
    kinds = ", ".join(f"{n} {b}" for b, n in sorted(by_backend.items()))
    return (
        f"> **This report covers {len(results.runs)} of the {held} run directories in "
        f"`{results.name}`**: {len(results.ignored)} ({kinds}) are not in its plan.json (runs "
        f"of an earlier definition, another preset, grid or --set, or of another backend) and "
        f"are left out of everything below; `status {results.name}` names the planned runs."
    )


def _setup(results: SweepResults, result: dict) -> str:
    configs, s = _configs(results), result["settings"]

    def values(field: str, f=str, sep=", "):
        """The distinct values of a RunConfig field ("model.n_embd") over the runs, sorted."""
        found = {reduce(getattr, field.split("."), cfg) for cfg in configs}
        return sep.join(f(v) for v in sorted(found))

    def either(field: str) -> str:
        """A setting that may differ by arm: one run has one warmup, "120 or 480"."""
        return values(field, sep=" or ")

    crosscheck = _crosscheck_text(results)
    c = result["compute"]
    hours = "; ".join(
        f"{present.seconds(h * 3600)} of device time on {d}"
        for d, h in sorted(c["device_hours"].items())
    )
    return "\n".join(
        [
            "## Setup",
            "",
            f"- Data: corpus {values('data.corpus')}, tokenizer {values('data.tokenizer')}",
            f"- Model: nanoGPT-style pre-norm decoder, width {values('model.n_embd')}, heads "
            f"{values('model.n_head')}, context {values('model.block_size')}, block norm "
            f"{values('model.norm')}; depths (layers) {values('model.n_layer')}",
            "- Parametrization: standard (no muP: it transfers learning rates by design and would "
            "confound the result)",
            f"- Optimizer: AdamW (betas {either('train.beta1')}/{either('train.beta2')}), "
            f"weight decay {either('train.weight_decay')} ({either('train.weight_decay_mode')}) "
            f"on 2-D weights, warmup {either('train.warmup_steps')} steps then cosine to "
            f"{either('train.min_lr_ratio')} x peak, gradient clip {either('train.grad_clip')}",
            f"- Grid: {len({cfg.train.lr for cfg in configs})} peak LRs "
            f"{values('train.lr', fmt.lr)}; seeds {values('seed')}",
            f"- Token budget: {_budgets(result)}",
            f"- Pre-registered (docs/STUDY.md): primary comparison {s['reference']} vs "
            f"{s['primary']}; delta {s['delta']:g} nats; LR sensitivity over "
            f"[{s['sensitivity_range'][0]:g}, {s['sensitivity_range'][1]:g}]; minimum effect "
            f"{s['min_effect']:g} nats; negligible below {s['negligible']:g} nats; H2b minimum "
            f"effect {s['min_sensitivity']:g} nats; target loss "
            f"{fmt.num(s['target_loss'], 2)} nats",
            f"- Backend: {values('backend')}; crosscheck: {crosscheck}",
            f"- Compute spent: {hours or 'n/a'}; {c['tokens'] / 1e6:,.2f}M tokens; "
            f"{c['flops']:.3g} training FLOPs (PaLM's count, sweeps/sweep/estimate.py) over "
            f"{c['runs']} runs",
            "",
            "### Arms",
            "",
            tables.arms(results.spec, result),
            "",
        ]
    )


def _crosscheck_text(results: SweepResults) -> str:
    cc = results.crosscheck
    if cc is None:
        return (
            "**not run** (no crosscheck.json in the sweep directory): run `crosscheck "
            f"--sweep {results.name}` before trusting these results"
        )
    n_checks = sum(len(c.get("checks", [])) for c in cc.get("configs", []))
    return (
        f"**{cc.get('verdict', 'unknown')}** ({n_checks} checks over "
        f"{len(cc.get('configs', []))} model configs)"
    )


def _budgets(result: dict) -> str:
    """Tokens per run, and tokens per parameter at every rung (all parameters)."""
    parts, rung = [], ladder.of(result)
    for depth in sorted(result["depths"], key=int):
        t = result["depths"][depth]["tokens_per_param"]
        per = ", ".join(
            f"{int(b):,} tokens ({r:.3g} per parameter)" for b, r in t["by_budget"].items()
        )
        parts.append(f"{rung.label(depth)} ({t['params']:,} parameters): {per}")
    return "; ".join(parts) or "n/a"


def _runs(result: dict) -> str:
    runs = result["runs"]
    counts = Counter(r["status"] for r in runs)
    counts["missing"] = sum(p["status"] == "missing" for p in result["problems"])
    order = ["ok", "unstable", "diverged", "failed", "incomplete", "corrupt", "missing"]
    lines = [
        "## Runs",
        "",
        "Outcomes (docs/STUDY.md section 3): **ok**; **unstable** (finished, but its "
        "smoothed train loss ended above its minimum by more than the spike margin"
        + _baseline_clause(result)
        + "); **diverged** (stopped: "
        "non-finite or far above its initial loss). Failed, incomplete, corrupt and "
        "missing runs are left out of every statistic.",
        "",
        tables.markdown(
            order + ["total"],
            [[str(counts[s]) for s in order] + [str(sum(counts[s] for s in order))]],
        ),
        "### The outcome of every run",
        "",
        "One letter per seed: o ok, u unstable, d diverged, - not in the statistics.",
        "",
        tables.outcome_grid(result),
    ]
    if result["problems"]:
        problems = tables.problems(result["problems"], ladder.of(result))
        lines += ["### Runs not in the statistics", "", problems]
    unstable = [r for r in runs if r["status"] == "unstable"]
    if unstable:
        lines += ["### Why runs are unstable", "", tables.unstable(unstable)]
    return "\n".join(lines)


def _keep_previous(report_dir: Path, out_dir: Path) -> None:
    """A pre-v4 report re-judged in place keeps its analysis.json and report.md, renamed, so
    v3's verdicts stay beside v4's (never overwritten once kept)."""
    for name, kept in (("analysis.json", archive.OLD_ANALYSIS), ("report.md", archive.OLD_REPORT)):
        old, new = report_dir / name, out_dir / kept
        if old.is_file() and not new.exists():
            write_atomic(new, old.read_text())


def _baseline_clause(view: dict) -> str:
    """How the baseline rule reads in the outcome definition: on, or switched off."""
    b = present.baselines(view)
    rule = b["rule"]
    if rule == "none":
        value = f" ({b['bigram']:.3f} nats)" if b["bigram"] is not None else ""
        return (
            f"; the baseline rule is **off** for this sweep (train.baseline = none): a run "
            f"worse than the bigram baseline{value} still counts as ok"
        )
    name = rule or "bigram"
    value = b.get(name) if name in ("bigram", "unigram") else None
    return f", or its final loss is worse than the data's {name} baseline" + (
        f" ({value:.3f} nats)" if value is not None else ""
    )


EFFECTIVE_LOSS = (
    "*Effective loss*: a finished run's final validation loss capped at its loss at "
    "initialization, min(final, L0), as Wortsman et al. count it; only a run that stopped "
    "(diverged) counts at L0. A run *fails* at its LR, for the critical LR and H2a, when it is "
    "*stuck*: it diverged or finished worse than the bigram baseline. The critical LR is also "
    "shown when only a divergence counts (*diverged*) and when a run worse than its seed's best "
    "LR by delta counts (*degraded*)."
)


def answer_lines(view: dict) -> list[str]:
    """The answer as the terminal prints it: the report's opening (figures/opening.py)."""
    return opening.terminal(view)


def _answer(results: SweepResults, view: dict, figures: dict, formats) -> str:
    """The opening: what the sweep says, on what data and budget, and the headline figures."""
    s = view["settings"]
    runs = results.runs
    corpus = ", ".join(sorted(map(str, runs.corpus.dropna().unique()))) if "corpus" in runs else "?"
    tokenizer = (
        ", ".join(sorted(map(str, runs.tokenizer.dropna().unique())))
        if "tokenizer" in runs
        else "?"
    )
    seeds = ", ".join(str(int(x)) for x in sorted(runs.seed.dropna().unique()))
    lines = ["## The answer", "", *opening.markdown(view)]
    lines += [
        f"These runs: corpus {corpus} (tokenizer {tokenizer}), {_budgets(view)}, seeds "
        f"{seeds}; {len(view['runs'])} runs, primary comparison {s['reference']} vs "
        f"{s['primary']}, minimum effect {s['min_effect']:g} nats.",
        "",
    ]
    for warning in view.get("budget_warnings") or []:
        lines += [f"**Budget warning:** {warning}.", ""]
    lines += [
        EFFECTIVE_LOSS + " QK-norm is *necessary* at an LR when the one-sided 95% lower "
        f"bound of the paired effect ({s['reference']} - {s['primary']} effective loss) exceeds "
        f"{s['min_effect']:g} nats. The *necessity threshold* is the LR from which it "
        "stays necessary; an arm's *critical LR* is where its runs start to fail.",
        "",
    ]
    b = present.baselines(view)
    if b["rule"] == "none":
        lines += [
            "The bigram-baseline rule is **off** for this sweep (train.baseline = none): "
            "runs are unstable only by a loss spike, not by ending worse than the bigram "
            "baseline" + (f" ({b['bigram']:.3f} nats)" if b["bigram"] is not None else "") + ".",
            "",
        ]
    image = next((ext for ext in ("png", "svg") if ext in formats), None)
    for name in HEADLINE:
        caption, chart = figures.get(name, ("", None))
        if chart is not None and image:
            lines += [f"![{caption}]({name}.{image})", ""]
    bigram = "; dotted: the bigram baseline" if b["bigram"] is not None else ""
    ref, primary, m = s["reference"], s["primary"], s["min_effect"]
    lines += [
        "Reading the two figures:",
        "",
        "- *Final loss vs learning rate*: per arm a line, the seed median of the effective "
        "loss, and a band, the range over seeds (a cell whose seeds split shows them, not a "
        "mean no seed had); arms that coincide are set a few pixels apart.",
        "- Each run is a glyph by its fate: circle ok, triangle unstable, square stuck "
        "(finished worse than the bigram baseline), cross diverged (on the top edge).",
        "- A triangle on the bottom edge is an arm's critical LR, drawn only where its runs "
        f"failed; the bar above the data is the bracket the necessity threshold lies in{bigram}.",
        f"- *Where QK-norm is necessary*: one cell per LR, coloured by the paired effect {ref} "
        f"- {primary} (blue: QK-norm better; orange: better without), full colour at the span "
        "its legend gives; larger effects (where runs failed) are clamped to it.",
        f"- A dot: QK-norm is necessary there (the interval's lower end clears {m:g} nats). A "
        "strong colour without a dot: a large mean whose interval still reaches below that (the "
        "seeds disagree).",
        "- Grey: every run of both arms failed, so there is no effect to measure. Light grey "
        "with an x: not judged (too few pairs to test, e.g. where most runs of both arms "
        "failed). The black bar on top: the threshold's bracket.",
        "",
    ]
    return "\n".join(lines)


def _verdicts(result: dict) -> str:
    lines = [
        "## Verdicts",
        "",
        "Decided by the rules docs/STUDY.md fixed before the runs "
        "(section 5); each with its reason and the numbers behind it.",
        "",
    ]
    for name in (h for h in HYPOTHESES if h in result["verdicts"]):
        v = result["verdicts"][name]
        lines += [
            f"### {name}: {v['claim']}",
            "",
            f"**Verdict: {v['verdict']}.** {v['reason']}",
            "",
            f"*Test:* {v['test']}",
            "",
        ]
        lines += [f"- {e}" for e in v["evidence"]] + [""]
    lines += ["### The practitioner's rule", ""]
    lines += [
        f"- {rule['text']}"
        for _, rule in sorted(result["rules"].items(), key=lambda kv: int(kv[0]))
    ] or ["- n/a"]
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


def _tables(result: dict, curves: pd.DataFrame) -> str:
    s, rung = result["settings"], ladder.of(result)
    lines = [
        "## Tables",
        "",
        "Every number here is in analysis.json beside this report.",
        "",
        *_ladder_section(result),
        f"### Effective loss ({present.loss_unit(result)}, mean ± sd over seeds, perplexity; "
        "[runs that failed])",
        "",
        tables.final_loss(result),
        "### Critical learning rate (the max stable LR)",
        "",
        "The first LR above a seed's best LR at which its run fails, interpolated "
        "(geometric midpoint of the last LR that did not fail and the first that did); median "
        "and range over seeds, under each failure definition: *stuck* (diverged or worse "
        "than the bigram baseline; it decides H2a), *diverged* (stopped), *degraded* (worse "
        "than the seed's best LR by delta). '>': no failure above the best LR in the grid (a "
        "lower bound); '<=': even the best LR fails. Best LR: the arm's lowest seed-mean "
        "effective loss.",
        "",
        tables.critical_lr(result),
        f"### eta_max(delta = {s['delta']:g} nats)",
        "",
        "The largest LR (log-interpolated) at which every seed ends within delta of L*, the "
        f"best seed-mean loss of all arms at that {ladder.of(result).name} and budget.",
        "",
        tables.eta_max(result),
        "### LR sensitivity (Wortsman et al. 2023)",
        "",
        f"mean - min of the effective loss over the base-grid LRs in "
        f"[{s['sensitivity_range'][0]:g}, {s['sensitivity_range'][1]:g}], per seed; "
        "'incomplete' when one of those runs is missing.",
        "",
        tables.sensitivity(result),
    ]
    for key in _comparison_keys(result):
        lines += [
            f"### Paired effect, {key} (nats; bold: QK-norm necessary)",
            "",
            f"Mean over seeds of the baseline minus treatment effective loss with its "
            f"two-sided 90% t interval from that LR's own seeds, whose lower end is the "
            f"one-sided 95% bound that decides: necessary where it exceeds "
            f"{s['min_effect']:g}. Where a run failed (stuck), the LR rests on the pairs "
            f"without a failure when 3 remain (the others are named, set aside); 'ceiling': "
            f"every run of both arms failed; 'both arms fail': too few pairs without a "
            f"failure (docs/STUDY.md section 4). Speed-up: steps to reach "
            f"{fmt.num(s['target_loss'], 2)} nats, baseline / treatment. {fmt.FLOORED}: the "
            f"interval is as wide as the precision floor ({s.get('precision', 0.01):g} nats), "
            f"wider than this LR's seeds would make it.",
            "",
            tables.effects(result, key),
        ]
    lines += [
        "### Necessity thresholds",
        "",
        "The threshold is a bracket: the last LR where QK-norm was not shown necessary and the "
        "first from which it stays necessary; '~x in (a, b]' where the effect is continuous "
        "across it (interpolated), '(a, b]' where a run changes failure class between a and b.",
        "",
        tables.thresholds(result),
        f"### Steps to the target loss {fmt.num(s['target_loss'], 2)} nats / to the bigram "
        "baseline",
        "",
        "Seed mean of the step where the quick validation loss (every 2% of the run) first "
        "reaches the target, interpolated; '-' when not every seed reaches it.",
        "",
        tables.steps(result),
    ]
    if result.get("early_warning"):
        lines += [
            "### Early warning: does early logit growth predict a failure?",
            "",
            "Per arm, each run's largest max attention logit over layers and its max output "
            "logit at its first evaluation at or after 10% of the run, against whether the run "
            "failed (stuck): the AUC (the chance a failing run's value exceeds another's; 0.5: "
            "no signal) with a 90% bootstrap interval (docs/STUDY.md section 4; it decides "
            "nothing).",
            "",
            tables.early_warning(result),
        ]
    finished = {r["run_id"] for r in result["runs"] if r["outcome"] in ("ok", "unstable")}
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
                _final_diagnostics(curves, list(columns), rung.field), columns, s["arms"], rung
            ),
        ]
    return "\n".join(lines)


def _ladder_section(result: dict) -> list[str]:
    """A ladder's rungs side by side (several rungs): what each says, and on a width ladder
    the line carried to the core width, said as the extrapolation it is."""
    rung = ladder.of(result)
    if len(result["depths"]) < 2:
        return []
    lines = [
        f"### The ladder: per {rung.name}",
        "",
        f"Descriptive (docs/STUDY.md section 11): tokens per parameter, the necessity "
        f"threshold's bracket, each compared arm's median critical LR under each failure "
        f"definition, {result['settings']['reference']}'s initial attention-logit std (the "
        f"start temperature) and the low-LR gap ({result['settings']['reference']} - "
        f"{result['settings']['primary']} effective loss at the two lowest grid LRs, nats, with "
        f"its 90% interval) at each {rung.name}.",
        "",
        tables.ladder_rungs(result),
    ]
    gap = extrapolation.gap_line(result) if rung.is_width else None
    if gap:
        lines += ["", gap, ""]
    e = (result.get("w1") or {}).get("extrapolation")
    if rung.is_width and e:
        head = extrapolation.extrapolation_head(e)
        lines += [
            f"**At {head}.** It assumes each trend stays a straight line per doubling of width "
            "that far (in log LR; the low-LR gap in nats, which a line can carry below 0); the "
            "line's 90% interval is its uncertainty there, one seed's adds the seeds' scatter.",
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


def _comparison_keys(result: dict) -> list[str]:
    keys = []
    for d in result["depths"].values():
        keys += [k for k in d["comparisons"] if k not in keys]
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


def _host(host) -> str:
    """One host as the report names it: CPU, its widest vector extension, thread counts."""
    if not isinstance(host, dict):
        return "not recorded (runs made before hosts were)"
    simd = host.get("simd") or []
    widest = next((f for f in ("avx512f", "avx2", "avx") if f in simd), "")
    threads = ", ".join(f"{k}={v}" for k, v in sorted((host.get("threads") or {}).items()))
    return (
        f"{host.get('cpu') or 'unknown CPU'}"
        + (f" ({widest})" if widest else "")
        + f", {host.get('cpus')} CPUs, threads {threads or 'default'}"
    )


def _provenance(runs: pd.DataFrame) -> str:
    prov = [p for p in runs.provenance if isinstance(p, dict)]
    if not any(prov):  # a report rebuilt from an earlier analysis's runs table
        return (
            "## Provenance\n\nNot kept with these runs' data (rebuilt from an earlier "
            f"analysis's runs table): {archive.OLD_REPORT} beside this report records it.\n"
        )
    commits = Counter(
        (
            p.get("git_commit") or "unknown",
            {True: "dirty", False: "clean"}.get(p.get("git_dirty"), "unknown"),
        )
        for p in prov
    )
    versions: dict[str, set] = {}
    for p in prov:
        for package, version in (p.get("versions") or {}).items():
            versions.setdefault(package, set()).add(version)
    devices = Counter(
        (str(r.backend), (r.provenance or {}).get("device") or "unknown")
        for r in runs.itertuples()
        if isinstance(r.provenance, dict)
    )
    hosts = Counter(_host(p.get("host")) for p in prov)
    started = sorted(p["started_at"] for p in prov if p.get("started_at"))

    def listing(counter):
        return "; ".join(f"{' '.join(k)} ({n} runs)" for k, n in sorted(counter.items()))

    lines = [
        "## Provenance",
        "",
        f"- Commits: {listing(commits)}",
        f"- Backends and devices: {listing(devices)}",
        "- Package versions: "
        + "; ".join(f"{k} {', '.join(sorted(v))}" for k, v in sorted(versions.items())),
        "- Python: " + ", ".join(sorted({p.get("python") or "unknown" for p in prov})),
        "- Platforms: " + ", ".join(sorted({p.get("platform") or "unknown" for p in prov})),
        # A CPU run is bit-identical only on the same processor kind and thread counts.
        f"- Hosts: {'; '.join(f'{k} ({n} runs)' for k, n in sorted(hosts.items()))}",
    ]
    if started:
        lines.append(f"- Runs started between {started[0]} and {started[-1]}")
    return "\n".join(lines + [""])
