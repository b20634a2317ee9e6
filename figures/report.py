"""make_report: run directories -> metrics -> charts -> report.md, all regenerated from disk.

Deterministic: the same run directories give a byte-identical report.md and chart specs
(everything sorted, numbers at fixed precision, no clock reads, fixed bootstrap seed).
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from figures import charts, fmt, metrics, tables
from figures.results import SweepResults, load_curves, load_results, qk_key
from figures.verdicts import Verdict, judge
from sweeps.diagnostics import DIAGNOSTICS

CURVE_LRS = 4  # training-curve columns: this many LRs spread evenly over the grid


def make_report(sweep_dir: Path, out_dir: Path | None = None) -> Path:
    """Write the figure set and report.md for runs/<sweep> into out_dir (default sweep/report)."""
    sweep = load_results(sweep_dir)
    out_dir = Path(out_dir) if out_dir is not None else Path(sweep_dir) / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    sections = [_header(sweep), _setup(sweep), _run_status(sweep)]
    if metrics.finished(sweep.runs).empty:
        sections.append("## Results\n\nNo run has finished yet (ok or diverged): nothing to "
                        "analyse. Rerun this command when runs have finished.\n")
    else:
        sections += _analysis(sweep, out_dir)
    sections.append(_provenance(sweep.runs))
    path = out_dir / "report.md"
    path.write_text("\n".join(sections))
    return path


def _analysis(sweep: SweepResults, out_dir: Path) -> list[str]:
    """Metrics, verdicts, figures (saved into out_dir) and tables, as report sections."""
    runs, curves = sweep.runs, load_curves(sweep.runs)
    margin = float(sweep.spec.get("max_stable_margin", metrics.DEFAULT_MARGIN))
    target = sweep.spec.get("target_loss")
    source = ("from the spec" if target is not None else
              "default: every arm and depth reaches it in all seeds at some LR")
    target = float(target) if target is not None else metrics.default_target(runs)
    done = metrics.finished(runs)
    on_arms = sorted(set(done.qk_norm) - {"none"}, key=qk_key)
    thresholds = pd.DataFrame(columns=[*metrics.THRESHOLD_COLUMNS, "on_arm"])
    if on_arms:
        thresholds = pd.concat([metrics.necessity_threshold(runs, a, margin).assign(on_arm=a)
                                for a in on_arms], ignore_index=True)
    stable = metrics.max_stable_lr(runs, margin)
    sens = metrics.lr_sensitivity(runs)
    figures = _figures(done, curves, stable, thresholds, sens)
    for name, (_, chart) in figures.items():
        if chart is not None:
            charts.save(chart, out_dir, name)
    settings = (
        f"Settings: stable = not diverged and final loss within {margin} nats of the arm's "
        f"best; QK-norm is necessary where off - on > max(seed range, {metrics.MIN_EFFECT} "
        f"nats), diverged runs counting as their loss at initialization and the seed range "
        f"taken over non-diverged runs; bootstrap {metrics.N_BOOT} "
        f"resamples of seeds, RNG seed {metrics.BOOT_SEED}; target loss "
        f"{fmt.num(target, 2)} nats ({source}).\n")
    return [_verdicts({a: judge(runs, a, margin) for a in on_arms}, settings),
            _figure_section(figures),
            _tables(runs, curves, stable, sens, thresholds, on_arms, target)]


def _figures(done, curves, stable, thresholds, sens) -> dict:
    """name -> (caption, chart or None), in report order."""
    lrs = sorted(done.lr.unique())
    picks = sorted({lrs[i] for i in np.linspace(0, len(lrs) - 1, min(CURVE_LRS, len(lrs)))
                    .round().astype(int)})
    high = metrics.high_stable_lr(done)
    y_max = float(done.loss0.max()) * 1.15
    return {
        "final_loss_vs_lr": ("Final validation loss vs learning rate", charts.final_loss(done)),
        "stability_vs_depth": ("Max stable learning rate and necessity threshold vs depth",
                               charts.stability_vs_depth(stable, thresholds)),
        "lr_sensitivity": ("LR sensitivity, QK-norm on vs off", charts.sensitivity(sens)),
        "training_curves": ("Training curves at a few learning rates",
                            charts.training_curves(curves, picks, y_max)),
        "attention": (f"Attention logits and entropy over training at LR {high:.3g}",
                      charts.attention(curves, high)),
        "residual_kurtosis": ("Residual-stream kurtosis over training",
                              charts.kurtosis(curves, sorted({lrs[0], high}))),
    }


def _header(sweep: SweepResults) -> str:
    runs = sweep.runs
    lines = [f"# QK-norm study: sweep `{sweep.name}`", ""]
    if (runs.corpus == "builtin").any():
        lines += ["> **SYNTHETIC built-in corpus.** These runs trained on the project's generated "
                  "stories, not on TinyStories: they show the harness and the mechanism, not "
                  "results about natural text.", ""]
    if sweep.spec.get("description"):
        lines += [str(sweep.spec["description"]).strip(), ""]
    return "\n".join(lines)


def _setup(sweep: SweepResults) -> str:
    runs = sweep.runs

    def values(col, f=str, key=None):
        return ", ".join(f(v) for v in sorted(runs[col].dropna().unique(), key=key))

    budget = sorted({(int(r.max_steps), int(r.batch_size), int(r.block_size))
                     for r in runs.itertuples()})
    budget_text = "; ".join(f"{s} steps x {b} sequences x {t} tokens = {s * b * t:,} tokens"
                            for s, b, t in budget)
    seen = runs.tokens_seen.dropna().sum()
    cc = sweep.crosscheck
    if cc is None:
        crosscheck = ("**not run** (no crosscheck.json in the sweep directory): run `crosscheck` "
                      "before trusting these results")
    else:
        # crosscheck.json holds its checks per model config (crosscheck/report.py)
        n_checks = sum(len(c.get("checks", [])) for c in cc.get("configs", []))
        crosscheck = (f"**{cc.get('verdict', 'unknown')}** ({n_checks} checks over "
                      f"{len(cc.get('configs', []))} model configs)")
    return "\n".join([
        "## Setup", "",
        f"- Data: corpus {values('corpus')}, tokenizer {values('tokenizer')}",
        f"- Model: nanoGPT-style pre-norm decoder, width {values('n_embd')}, heads "
        f"{values('n_head')}, context {values('block_size')}, block norm {values('norm')}",
        "- Parametrization: standard (no muP: it transfers learning rates by design and would "
        "confound the result)",
        f"- Grid: QK-norm {values('qk_norm', key=qk_key)}; depths (n_layer) "
        f"{values('n_layer')}; {runs.lr.nunique()} peak LRs {values('lr', fmt.lr)}; seeds "
        f"{values('seed')}",
        f"- Token budget per run: {budget_text}; {int(seen):,} tokens trained over all "
        "finished runs",
        f"- Optimizer: AdamW (betas {values('beta1')}/{values('beta2')}, weight decay "
        f"{values('weight_decay')} on 2-D weights), warmup {values('warmup_steps')} steps then "
        f"cosine to {values('min_lr_ratio')} x peak, gradient clip {values('grad_clip')}",
        f"- Backend: {values('backend')}; crosscheck: {crosscheck}", ""])


def _run_status(sweep: SweepResults) -> str:
    runs = sweep.runs
    counts = Counter(runs.status)
    counts["missing"] = len(sweep.missing)
    order = ["ok", "diverged", "failed", "incomplete", "missing"]
    lines = ["## Runs", "", tables.markdown(order + ["total"], [
        [str(counts[s]) for s in order] + [str(sum(counts[s] for s in order))]])]
    if not sweep.has_plan:
        lines.append("No plan.json in the sweep directory: runs that never started cannot be "
                     "named.\n")
    problems = pd.concat([runs[runs.status.isin(["failed", "incomplete"])],
                          sweep.missing.assign(status="missing")], ignore_index=True)
    if not problems.empty:
        problems = problems.sort_values(["status", "qk_norm", "n_layer", "lr", "seed", "run_id"])
        lines += ["Runs that are not in the results (diverged runs are):", "", tables.markdown(
            ["status", "run", "QK-norm", "n_layer", "LR", "seed", "error"],
            [[r.status, f"`{r.run_id}`", r.qk_norm, str(r.n_layer), fmt.lr(r.lr), str(r.seed),
              _first_line(getattr(r, "error", None))] for r in problems.itertuples()])]
    if sweep.ignored:
        lines += [f"Ignored {len(sweep.ignored)} run director(ies) not in plan.json (an older "
                  f"spec?): " + ", ".join(f"`{r}`" for r in sweep.ignored), ""]
    return "\n".join(lines)


def _verdicts(by_arm: dict[str, list[Verdict]], settings: str) -> str:
    lines = ["## Verdicts", "", settings]
    if not by_arm:
        lines.append("No QK-norm-on runs finished: nothing to compare.\n")
    for on_arm, verdicts in by_arm.items():
        vs = "" if len(by_arm) == 1 else f" (off vs {on_arm})"
        for v in verdicts:
            lines += [f"### {v.hypothesis}{vs}: {v.claim}", "",
                      f"**Verdict: {v.verdict}.** {v.reason}", "", f"*Test:* {v.test}", ""]
            lines += [f"- {e}" for e in v.evidence] + [""]
    return "\n".join(lines)


def _figure_section(figures: dict) -> str:
    lines = ["## Figures", ""]
    for name, (caption, chart) in figures.items():
        lines += [f"### {caption}", ""]
        if chart is None:
            lines += ["_Not drawn: the finished runs hold no data for it._", ""]
        else:
            lines += [f"![{caption}]({name}.png)", "",
                      f"[SVG]({name}.svg) | [interactive HTML]({name}.html) | "
                      f"[Vega-Lite spec]({name}.vl.json)", ""]
    return "\n".join(lines)


def _tables(runs, curves, stable, sens, thresholds, on_arms, target) -> str:
    losses = metrics.loss_table(runs)
    lines = ["## Tables", "",
             "### Final validation loss (nats/token, mean ± sd over ok seeds)", "",
             tables.by_lr(losses, tables.loss_cell),
             "### Perplexity (exp of the final validation loss, mean over ok seeds)", "",
             tables.by_lr(losses, tables.ppl_cell),
             "### Max stable learning rate", "",
             "'>=': stable at the largest swept LR, so the true value may be higher.", "",
             tables.stable_lr(stable),
             "### LR sensitivity (Wortsman et al. 2023)", "",
             tables.sensitivity(metrics.across_seeds(sens, "sensitivity"), sens),
             "### Necessity threshold", "",
             "Below the off arm's max stable LR you can drop QK-norm at that depth; the "
             "threshold is where dropping it starts to cost loss or stability.", "",
             tables.thresholds(thresholds)]
    for on_arm in on_arms:
        lines += [f"### Off - on final loss per LR (vs {on_arm}); bold: QK-norm necessary", "",
                  "Diverged runs count as their loss at initialization; in brackets the larger "
                  "seed range of the two arms' non-diverged runs.", "",
                  tables.effect(metrics.necessity(runs, on_arm))]
    if not math.isnan(target) and not curves.empty:
        fastest = metrics.fastest_to_target(metrics.steps_to_target(curves, target))
        lines += [f"### Steps to target loss {fmt.num(target, 2)} nats", "",
                  "At the LR that gets there fastest, among LRs where every seed reaches it.", "",
                  tables.steps(fastest)]
    if not curves.empty:
        # The registry's in_report diagnostics, by label (sweeps.diagnostics).
        columns = {d.name: d.label for d in DIAGNOSTICS.values() if d.in_report}
        lines += ["### Diagnostics at the end of training (median over seeds, last eval)", "",
                  "Max attention logit and residual kurtosis: the largest over layers; "
                  "attention entropy: the lowest head-level minimum over layers.", "",
                  tables.diagnostics(metrics.final_diagnostics(curves, list(columns)), columns)]
    return "\n".join(lines)


def _provenance(runs: pd.DataFrame) -> str:
    prov = runs.provenance
    commits = Counter((p.get("git_commit") or "unknown",
                       {True: "dirty", False: "clean"}.get(p.get("git_dirty"), "unknown"))
                      for p in prov)
    versions: dict[str, set] = {}
    for p in prov:
        for package, version in (p.get("versions") or {}).items():
            versions.setdefault(package, set()).add(version)
    devices = Counter((r.backend, r.provenance.get("device") or "unknown")
                      for r in runs.itertuples())
    started = sorted(p["started_at"] for p in prov if p.get("started_at"))

    def listing(counter):
        return "; ".join(f"{' '.join(k)} ({n} runs)" for k, n in sorted(counter.items()))

    lines = ["## Provenance", "",
             f"- Commits: {listing(commits)}",
             f"- Backends and devices: {listing(devices)}",
             "- Package versions: " + "; ".join(f"{k} {', '.join(sorted(v))}"
                                                for k, v in sorted(versions.items())),
             "- Python: " + ", ".join(sorted({p.get("python") or "unknown" for p in prov})),
             "- Platforms: " + ", ".join(sorted({p.get("platform") or "unknown" for p in prov}))]
    if started:
        lines.append(f"- Runs started between {started[0]} and {started[-1]}")
    return "\n".join(lines + [""])


def _first_line(error) -> str:
    if not isinstance(error, str) or not error.strip():
        return ""
    return error.strip().splitlines()[0].replace("|", "\\|")[:160]
