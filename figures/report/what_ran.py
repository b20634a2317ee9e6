"""The report's sections on what ran and where: its header (the corpus banner, the runs
left out), Setup (data, model, optimizer, grid, budgets, crosscheck, compute), Runs (every
run's outcome) and Provenance (commits, versions, hosts, devices).

The sections read the typed analysis (sweeps/analysis/model.py) by attribute: each public one
takes it. What is not the
analysis stays as it comes: the runs table and its provenance, the sweep's spec and its
crosscheck.json are read by their keys."""

from __future__ import annotations

from collections import Counter
from functools import reduce
from pathlib import Path

import pandas as pd

from figures import present
from figures.report import tables
from figures.words import numbers
from sweeps.analysis import archive, caveats
from sweeps.analysis import model as m
from sweeps.analysis.results import SweepResults
from sweeps.analysis.what_ran import CrosscheckSummary, Host, RunProvenance
from sweeps.data.corpora import CORPORA


def _configs(results: SweepResults) -> list:
    """The RunConfig of every run in the report's table whose config reads."""
    return [c for c in map(results.config, results.runs.run_id) if c is not None]


def corpus_banners(configs: list) -> list[str]:
    """One banner per corpus the runs trained on, in the order first met (each corpus's own,
    sweeps/data/corpora: what its findings are about; two files, two banners)."""
    said: dict[str, None] = {}
    for data in (c.data for c in configs):
        known = CORPORA.get(data.corpus)
        said.setdefault(known.banner(data) if known else f"> **Corpus: {data.corpus}.**")
    return [line for banner in said for line in (banner, "")]


def header(results: SweepResults, analysis: m.Analysis) -> str:
    lines = [f"# QK-norm study: sweep `{results.name}`", ""]
    lines += corpus_banners(_configs(results))
    if results.spec.get("description"):
        lines += [str(results.spec["description"]).strip(), ""]
    if results.ignored:
        lines += [left_out_notice(results), ""]
    unfinished = unfinished_notice(analysis, results.name)
    if unfinished:
        lines += [f"> {unfinished}", ""]
    lines += [
        f"Analysed under {judged_by(analysis)}"
        + (
            ""
            if analysis.settings.preregistered
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


def unfinished_notice(analysis: m.Analysis, name: str) -> str | None:
    """What the report (and the terminal) says first when planned runs have not finished:
    unfinished_words of the analysis's caveats.unfinished; None when every planned run has an
    outcome."""
    counts = caveats.unfinished(analysis)
    return unfinished_words({**counts, "sweep": name}) if counts else None


def unfinished_words(counts: dict | None) -> str | None:
    """How many planned runs have not finished (caveats.unfinished, with the sweep's name),
    that every verdict rests on the rest (the design's power assumed them all) and how to
    finish. A report drawn while a sweep trains overnight would otherwise read as final."""
    if not counts:
        return None
    planned, missing, incomplete = counts["planned"], counts["missing"], counts["incomplete"]
    n = missing + incomplete
    kinds = ", ".join(
        f"{k} {w}" for k, w in ((missing, "not started"), (incomplete, "part-trained")) if k
    )
    return (
        f"**Not finished: {n} of the plan's {planned} runs have not finished training "
        f"({kinds}).** Every verdict and number here rests on the {planned - n} that have; the "
        f"design's power assumed them all, so a verdict may still change. `sweep "
        f"{counts['sweep']}` (the trainer that began it) trains the rest and resumes the "
        "part-trained runs; then run `figures` again."
    )


def setup(results: SweepResults, analysis: m.Analysis) -> str:
    configs, s = _configs(results), analysis.settings

    def values(field: str, f=str, sep=", "):
        """The distinct values of a RunConfig field ("model.n_embd") over the runs, sorted."""
        found = {reduce(getattr, field.split("."), cfg) for cfg in configs}
        return sep.join(f(v) for v in sorted(found))

    def either(field: str) -> str:
        """A setting that may differ by arm: one run has one warmup, "120 or 480"."""
        return values(field, sep=" or ")

    crosscheck = _crosscheck_text(results)
    c = analysis.compute
    hours = "; ".join(
        f"{present.seconds(h * 3600)} of device time on {d}"
        for d, h in sorted(c.device_hours.items())
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
            f"{values('train.lr', numbers.lr)}; seeds {values('seed')}{_rung_lr(analysis)}",
            f"- Token budget: {budgets(analysis)}",
            f"- Pre-registered (docs/STUDY.md): primary comparison {s.reference} vs "
            f"{s.primary}; delta {s.delta:g} nats; LR sensitivity over "
            f"[{s.sensitivity_range[0]:g}, {s.sensitivity_range[1]:g}]; minimum effect "
            f"{s.min_effect:g} nats; negligible below {s.negligible:g} nats; H2b minimum "
            f"effect {s.min_sensitivity:g} nats; target loss {numbers.target(s.target_loss)}",
            *_plateau_line(analysis),
            f"- Backend: {values('backend')}; crosscheck: {crosscheck}",
            f"- Compute spent: {hours or 'n/a'}; {c.tokens / 1e6:,.2f}M tokens; "
            f"{c.flops:.3g} training FLOPs (PaLM's count, sweeps/sweep/estimate.py) over "
            f"{c.runs} runs",
            "",
            "### Arms",
            "",
            tables.arms(results.spec, analysis),
            "",
        ]
    )


def _plateau_line(analysis: m.Analysis) -> list[str]:
    """The spec's plateau reading (docs/STUDY.md section 23) and the runs it counted stuck,
    which the charts still draw by their recorded fate; none without one."""
    margin = analysis.settings.plateau_margin
    if not margin:
        return []
    rung = present.ladder_of(analysis)
    moved = analysis.plateau_stuck or {}
    n = sum(map(len, moved.values()))
    runs = "; ".join(
        f"{rung.label(k)}: {', '.join(f'`{r}`' for r in ids)}"
        for k, ids in sorted(moved.items(), key=lambda kv: int(kv[0]))
    )
    return [
        f"- Plateau reading (docs/STUDY.md section 23): above `{analysis.settings.reference}`'s "
        f"best LR a run that finished less than {margin:g} nats under its stuck cut counts as "
        f"stuck, in both arms; {n} run{'' if n == 1 else 's'} read so"
        + (f" ({runs}; the charts draw them by their recorded fate)" if runs else "")
    ]


def _rung_lr(analysis: m.Analysis) -> str:
    """The spec's [rung_lr] as the grid line reads it ("" without one)."""
    subsets, rung = analysis.settings.rung_lr, present.ladder_of(analysis)
    if not subsets:
        return ""
    each = "; ".join(
        f"{rung.label(r)} {', '.join(numbers.lr(x) for x in lrs)}"
        for r, lrs in sorted(subsets.items(), key=lambda kv: int(kv[0]))
    )
    return f"; [rung_lr] (LR subsets): {each} (the other {rung.plural}: the whole grid)"


def _crosscheck_text(results: SweepResults) -> str:
    cc = CrosscheckSummary.of(results.crosscheck)
    if cc is None:
        return (
            "**not run** (no crosscheck.json in the sweep directory): run `crosscheck "
            f"--sweep {results.name}` before trusting these results"
        )
    return f"**{cc.verdict}** ({cc.checks} checks over {cc.configs} model configs)"


def budgets(analysis: m.Analysis) -> str:
    """Tokens per run, and tokens per parameter at every rung (all parameters)."""
    parts, rung = [], present.ladder_of(analysis)
    for depth in sorted(analysis.depths, key=int):
        t = analysis.depths[depth].tokens_per_param
        per = ", ".join(
            f"{int(b):,} tokens ({r:.3g} per parameter)" for b, r in t.by_budget.items()
        )
        parts.append(f"{rung.label(depth)} ({t.params:,} parameters): {per}")
    return "; ".join(parts) or "n/a"


def runs(analysis: m.Analysis) -> str:
    runs, rung = analysis.runs, present.ladder_of(analysis)
    counts = Counter(r.status for r in runs)
    counts["missing"] = sum(p.status == "missing" for p in analysis.problems)
    order = ["ok", "unstable", "diverged", "failed", "incomplete", "corrupt", "missing"]
    lines = [
        "## Runs",
        "",
        "Outcomes (docs/STUDY.md section 3): **ok**; **unstable** (finished, but its "
        "smoothed train loss ended above its minimum by more than the spike margin"
        + _baseline_clause(analysis)
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
        tables.outcome_grid(analysis),
    ]
    if analysis.problems:
        problems = tables.problems(analysis.problems, rung)
        lines += ["### Runs not in the statistics", "", problems]
    unstable = [r for r in runs if r.status == "unstable"]
    if unstable:
        lines += ["### Why runs are unstable", "", tables.unstable(unstable, rung)]
    return "\n".join(lines)


def _baseline_clause(analysis: m.Analysis) -> str:
    """How the baseline rule reads in the outcome definition: on, or switched off."""
    b, rule = analysis.settings.baselines, analysis.settings.baseline_rule
    if rule == "none":
        value = f" ({b.bigram:.3f} nats)" if b.bigram is not None else ""
        return (
            f"; the baseline rule is **off** for this sweep (train.baseline = none): a run "
            f"worse than the bigram baseline{value} still counts as ok"
        )
    name = rule or "bigram"
    value = getattr(b, name) if name in ("bigram", "unigram") else None
    return f", or its final loss is worse than the data's {name} baseline" + (
        f" ({value:.3f} nats)" if value is not None else ""
    )


def _host(host: Host | None) -> str:
    """One host as the report names it: CPU, its widest vector extension, thread counts and
    a preloaded library (another BLAS: other bits)."""
    if host is None:
        return "not recorded (runs made before hosts were)"
    widest = next((f for f in ("avx512f", "avx2", "avx") if f in host.simd), "")
    threads = ", ".join(f"{k}={v}" for k, v in host.threads)
    return (
        f"{host.cpu or 'unknown CPU'}"
        + (f" ({widest})" if widest else "")
        + f", {host.cpus} CPUs, threads {threads or 'default'}"
        + (f", preloaded {Path(host.preload).name}" if host.preload else "")
    )


def provenance(runs: pd.DataFrame) -> str:
    recorded = [p for p in runs.provenance if isinstance(p, dict)]
    if not any(recorded):  # a report rebuilt from an earlier analysis's runs table
        return (
            "## Provenance\n\nNot kept with these runs' data (rebuilt from an earlier "
            f"analysis's runs table): {archive.OLD_REPORT} beside this report records it.\n"
        )
    prov = [RunProvenance.of(p) for p in recorded]
    commits = Counter(
        (
            p.git_commit or "unknown",
            {True: "dirty", False: "clean"}.get(p.git_dirty, "unknown"),
        )
        for p in prov
    )
    versions: dict[str, set] = {}
    for p in prov:
        for package, version in p.versions:
            versions.setdefault(package, set()).add(version)
    devices = Counter(
        (str(r.backend), RunProvenance.of(r.provenance).device or "unknown")
        for r in runs.itertuples()
        if isinstance(r.provenance, dict)
    )
    hosts = Counter(_host(p.host) for p in prov)
    # a run resumed or restarted by another process trained from then on where that ran
    went_on = Counter(_host(h) for p in prov for h in p.continued)
    started = sorted(p.started_at for p in prov if p.started_at)

    def listing(counter):
        return "; ".join(f"{' '.join(k)} ({n} runs)" for k, n in sorted(counter.items()))

    lines = [
        "## Provenance",
        "",
        f"- Commits: {listing(commits)}",
        f"- Backends and devices: {listing(devices)}",
        "- Package versions: "
        + "; ".join(f"{k} {', '.join(sorted(v))}" for k, v in sorted(versions.items())),
        "- Python: " + ", ".join(sorted({p.python or "unknown" for p in prov})),
        "- Platforms: " + ", ".join(sorted({p.platform or "unknown" for p in prov})),
        # A CPU run is bit-identical only on the same processor kind and thread counts.
        f"- Hosts: {'; '.join(f'{k} ({n} runs)' for k, n in sorted(hosts.items()))}",
    ]
    if went_on:
        n = sum(went_on.values())
        lines.append(
            f"- Resumed or restarted by another process ({n} time{'s' if n > 1 else ''}, "
            "trained from there on its host): "
            + "; ".join(f"{k} ({n})" for k, n in sorted(went_on.items()))
        )
    if started:
        lines.append(f"- Runs started between {started[0]} and {started[-1]}")
    return "\n".join(lines + [""])


def judged_by(analysis: m.Analysis) -> str:
    """The protocol that judged an analysis, as reports cite it (sweeps.study.protocol reads the
    digest back): "docs/STUDY.md sha256 `<16 hex>` (v16)"."""
    version = f" ({analysis.study_version})" if analysis.study_version else ""
    return f"docs/STUDY.md sha256 `{analysis.study_sha256[:16]}`{version}"  # MD_CITATION reads it
