"""Markdown tables of the analysis, rows and columns sorted so the text is deterministic.

The tables read the typed analysis (sweeps/analysis/model.py's Analysis) by attribute, as
analysis.json holds it (NaN and Inf as None; sweeps.analysis.adapter.from_json reads the file
back). The shared formatters of figures/words/numbers.py still read the JSON form of a record
(sweeps.analysis.adapter.record). One table reads a dict that is not the analysis: `arms`, the
sweep's spec.

A rung (a depth or a width) is named by the sweep's ladder (sweeps/core/ladder.py) in every
header: "depth 4 off" on a depth ladder, "width 96 off" on a width ladder."""

from __future__ import annotations

import math

import pandas as pd

from figures import present
from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.analysis.early_warning import without_early_value
from sweeps.core.ladder import DEFAULT_LADDER, Ladder
from sweeps.core.norms import qk_norm
from sweeps.study import ladders
from sweeps.study.rules import Comparison, left_out_lrs, spans

LETTERS = {"ok": "o", "unstable": "u", "diverged": "d"}


def markdown(header: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "_no data_\n"
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _depths(analysis: m.Analysis) -> list[str]:
    return sorted(analysis.depths, key=int)


def _arm_columns(analysis: m.Analysis) -> list[tuple[str, str]]:
    """(rung, arm) pairs: rung ascending, arms in spec order."""
    return [
        (d, a)
        for d in _depths(analysis)
        for a in analysis.settings.arms
        if a in analysis.depths[d].arms
    ]


def qk_display(kind: str) -> str:
    """How tables name a QK-norm kind (its registry entry; unknown kinds are refused)."""
    return qk_norm(kind).display


def arms(spec: dict, analysis: m.Analysis) -> str:
    """Each arm: its QK-norm, settings, LRs, and the attention-logit std it starts with. spec
    is the sweep's spec (sweep.toml as a dict), not the analysis: read by its keys."""
    rows = []
    kinds = {r.arm: r.qk_norm for r in analysis.runs}
    for arm in analysis.settings.arms:
        body = (spec.get("arms") or {}).get(arm, {})
        settings = ", ".join(f"{k}={v}" for k, v in body.get("set", {}).items()) or "-"
        lrs = ", ".join(numbers.lr(x) for x in body["lr"]) if body.get("lr") else "whole grid"
        rows.append(
            [
                arm,
                qk_display(kinds[arm]) if arm in kinds else "-",
                settings,
                lrs,
                _start_std(analysis, arm),
            ]
        )
    return markdown(["arm", "QK-norm", "settings", "LRs", "initial attention-logit std"], rows)


ALIKE = 1.05  # rungs whose initial logit stds lie within 5% start alike (seed noise)


def _start_std(analysis: m.Analysis, arm: str) -> str:
    """An arm's initial attention-logit std (mean over its runs, per rung): one number (the
    rungs' mean) where every rung starts alike, else each rung's ('0.025 (width 64), 0.050
    (width 128)': a width ladder's off starts warmer as it widens, the start temperature the
    low-LR gap follows)."""
    rung = present.ladder_of(analysis)
    per = {}
    for d in _depths(analysis):
        a = analysis.depths[d].arms.get(arm)
        if a is not None and a.init_logit_std is not None:
            per[d] = float(a.init_logit_std)
    if not per:
        return "n/a"
    if max(per.values()) <= ALIKE * min(per.values()):
        return numbers.num(sum(per.values()) / len(per), 3)
    return ", ".join(f"{numbers.num(v, 3)} ({rung.label(d)})" for d, v in per.items())


def outcome_grid(analysis: m.Analysis) -> str:
    """One row per LR, one column per (rung, arm): a letter per seed."""
    cols, rung = _arm_columns(analysis), present.ladder_of(analysis)
    cells: dict = {}
    for r in analysis.runs:
        value = getattr(r, rung.field)
        key = (str(value and int(value)), r.arm, r.lr)
        cells.setdefault(key, []).append((r.seed, LETTERS.get(r.outcome, "-")))
    lrs = sorted({lr for (_, _, lr) in cells if lr is not None})
    rows = [
        [numbers.lr(lr)]
        + ["".join(x for _, x in sorted(cells.get((d, a, lr), []))) or " " for d, a in cols]
        for lr in lrs
    ]
    return markdown(["LR"] + [f"{rung.label(d)} {a}" for d, a in cols], rows)


def problems(items: list[m.Problem], rung: Ladder = DEFAULT_LADDER) -> str:
    """One row per run not in the statistics: its status, id, arm, rung, LR, seed and error."""
    rows = [
        [
            p.status,
            f"`{p.run_id}`",
            str(p.arm),
            str(getattr(p, rung.field)),
            numbers.lr(p.lr),
            str(p.seed),
            p.error,
        ]
        for p in items
    ]
    return markdown(["status", "run", "arm", rung.name, "LR", "seed", "error"], rows)


def unstable(runs: list[m.Run], rung: Ladder = DEFAULT_LADDER) -> str:
    """One row per unstable run, with its rung: run ids name the depth but not the width,
    so on a width ladder three runs would otherwise read alike."""

    def key(r):
        return (getattr(r, rung.field) or 0, str(r.arm), r.lr, r.seed)

    rows = [
        [
            f"`{r.run_id}`",
            str(getattr(r, rung.field)),
            str(r.arm),
            numbers.lr(r.lr),
            str(r.seed),
            "; ".join(r.unstable_reasons or []),
        ]
        for r in sorted(runs, key=key)
    ]
    return markdown(["run", rung.name, "arm", "LR", "seed", "why"], rows)


def _by_lr(analysis: m.Analysis, cell) -> str:
    """A table with one row per LR and one column per (rung, arm); cell(m.Cell)."""
    cols, rung = _arm_columns(analysis), present.ladder_of(analysis)
    lrs = sorted({c.lr for d, a in cols for c in analysis.depths[d].arms[a].cells})
    rows = []
    for lr in lrs:
        row = [numbers.lr(lr)]
        for d, a in cols:
            found = [c for c in analysis.depths[d].arms[a].cells if c.lr == lr]
            row.append(cell(found[0]) if found else "-")
        rows.append(row)
    return markdown(["LR"] + [f"{rung.label(d)} {a}" for d, a in cols], rows)


def final_loss(analysis: m.Analysis) -> str:
    """Per LR and arm: the effective loss (capped, every finished run), mean ± sd over seeds,
    its perplexity, and how many runs ended unstable or diverged."""

    def cell(c: m.Cell):
        text = numbers.pm(c.loss_mean, c.loss_sd) if c.loss_mean is not None else ""
        if c.perplexity is not None:
            text += f" (ppl {c.perplexity:.2f})"
        failed = [f"{c.outcomes[o]} {o}" for o in ("unstable", "diverged") if c.outcomes[o]]
        return " ".join(filter(None, [text, f"[{', '.join(failed)}]" if failed else ""]))

    return _by_lr(analysis, cell)


def steps(analysis: m.Analysis) -> str:
    """Steps to the spec's target loss / to the bigram baseline, seed means."""

    # One decimal: steps are interpolated, and the speed-up (two decimals) is their ratio.
    def cell(c: m.Cell):
        return " / ".join(
            "-" if x is None else numbers.num(x, 1)
            for x in (c.steps_to_target, c.steps_to_baseline)
        )

    return _by_lr(analysis, cell)


def critical_lr(analysis: m.Analysis) -> str:
    """Per arm, the critical LR under each failure definition (docs/STUDY.md section 3), the
    primary one first with its per-seed values."""
    names = present.failures_of(analysis)  # the deciding one first
    primary = next(iter(names))
    rows = []
    for d, a in _arm_columns(analysis):
        arm = analysis.depths[d].arms[a]
        by = arm.eta_crit_by_definition or {primary: arm.eta_crit}
        rows.append(
            [d, a, numbers.lr(arm.best_lr)]
            + [numbers.median_range(by[x]) if x in by else "-" for x in names]
            + [numbers.seed_grid(arm.eta_crit.seeds)]
        )
    header = [present.ladder_of(analysis).name, "arm", "best LR"] + [
        f"critical LR, {name}{' (decides)' if x == primary else ''}" for x, name in names.items()
    ]
    return markdown(header + [f"per seed ({names[primary]})"], rows)


# the early predictors (sweeps.analysis.early_warning.EARLY_PREDICTORS) as the table names them
PREDICTOR_WORDS = {"max_attn_logit": "max attention logit", "logit_max": "max output logit"}


def early_warning(analysis: m.Analysis) -> str:
    """Per rung, arm and early predictor: the AUC of telling failing runs from the others."""
    rows = []
    for d, arms in sorted(analysis.early_warning.items(), key=lambda kv: int(kv[0])):
        for a, predictors in arms.items():
            for name, p in predictors.items():
                lo, hi = p.ci90
                value = (
                    "n/a (one class)"
                    if p.auc is None
                    else f"{numbers.num(p.auc, 2)} [{numbers.num(lo, 2)}, {numbers.num(hi, 2)}]"
                )
                at = p.step_fraction
                unseen, stopped = without_early_value(analysis, d, a, p.n_fail + p.n_ok)
                why = "stopped before it: no early value" if stopped else "without an early value"
                rows.append(
                    [
                        d,
                        a,
                        PREDICTOR_WORDS[name],
                        value,
                        f"{p.n_fail} / {p.n_ok}" + (f" (+{unseen} {why})" if unseen else ""),
                        "-" if at is None else f"{at:.0%}",
                    ]
                )
    return markdown(
        [
            present.ladder_of(analysis).name,
            "arm",
            "predictor",
            "AUC [90%]",
            "failing / other runs",
            "at (of the run)",
        ],
        rows,
    )


def eta_max(analysis: m.Analysis) -> str:
    rows = []
    for d, a in _arm_columns(analysis):
        e = analysis.depths[d].arms[a].eta_max
        rows.append([d, a, numbers.num(e.l_star), numbers.grid(e)])
    return markdown([present.ladder_of(analysis).name, "arm", "L* (nats)", "eta_max(delta)"], rows)


def sensitivity(analysis: m.Analysis) -> str:
    rung_lr = analysis.settings.rung_lr or {}
    rows = []
    for d, a in _arm_columns(analysis):
        s = analysis.depths[d].arms[a].sensitivity
        seeds = ", ".join(numbers.num(v) for _, v in sorted(s.seeds.items(), key=lambda kv: kv[0]))
        value = numbers.pm(s.mean, s.sd) if s.complete else "incomplete"
        count = str(len(s.lrs))
        # a rung on a [rung_lr] subset that leaves out LRs of the range: not judged (H2b)
        left = left_out_lrs(s.lrs, rung_lr.get(d))
        if not spans(list(s.lrs), tuple(analysis.settings.sensitivity_range)):
            value = "not judged (the grid does not reach both ends of the range)"
        elif left:
            value, count = "not judged ([rung_lr])", f"{len(s.lrs) - len(left)} of {count}"
        rows.append([d, a, value, seeds, count])
    header = [
        present.ladder_of(analysis).name,
        "arm",
        "sensitivity (nats, mean ± sd)",
        "per seed",
        "LRs",
    ]
    return markdown(header, rows)


def effects(analysis: m.Analysis, key: str) -> str:
    depths = [d for d in _depths(analysis) if key in analysis.depths[d].comparisons]
    entries = {d: {e.lr: e for e in analysis.depths[d].comparisons[key].per_lr} for d in depths}
    lrs = sorted({lr for d in depths for lr in entries[d]})
    rows = []
    for lr in lrs:
        row = [numbers.lr(lr)]
        for d in depths:
            e = entries[d].get(lr)
            if e is None:
                row += ["-", "-"]
                continue
            text = numbers.effect(e)
            row += [
                f"**{text}**" if e.necessary else text,
                "-" if e.speedup is None else f"x{e.speedup:.2f}",
            ]
        rows.append(row)
    label, rung = "90%", present.ladder_of(analysis)
    header = ["LR"] + [
        h
        for d in depths
        for h in (f"{rung.label(d)} effect [{label} CI]", f"{rung.label(d)} speed-up")
    ]
    return markdown(header, rows)


def thresholds(analysis: m.Analysis) -> str:
    """Per rung and comparison, the stability threshold, each seed's, the ceilings and the runs
    that alone move it."""
    rows = []
    for d in sorted(analysis.depths, key=int):
        for key, c in analysis.depths[d].comparisons.items():
            # each run once, with where the threshold lies without it
            movers = {
                str(run.run_id): numbers.bracket(run.threshold_without) for run in c.influence
            }
            rows.append(
                [
                    d,
                    key,
                    numbers.threshold_with_interval(c),
                    ", ".join(
                        f"{k}: {numbers.bracket(v)}" for k, v in sorted(c.seed_thresholds.items())
                    ),
                    ", ".join(numbers.lr(x) for x in c.ceiling) or "-",
                    ", ".join(numbers.lr(x) for x in c.partial_ceiling) or "-",
                    ", ".join(f"`{run}` (without it: {to})" for run, to in sorted(movers.items()))
                    or "none",
                ]
            )
    return markdown(
        [
            present.ladder_of(analysis).name,
            "comparison",
            "stability threshold (bracket)",
            "per seed",
            "common ceiling",
            "both arms fail",
            "runs that alone move it",
        ],
        rows,
    )


def diagnostics(
    table: pd.DataFrame,
    columns: dict[str, str],
    arm_order: list[str],
    rung: Ladder = DEFAULT_LADDER,
) -> str:
    """One row per (rung, LR); for each diagnostic one column per arm."""
    arms = [a for a in arm_order if a in set(table.arm)]
    index = table.set_index([rung.field, "arm", "lr"])
    rows = []
    for d, lr in sorted(set(zip(table[rung.field], table.lr))):
        row = [str(d), numbers.lr(lr)]
        for col in columns:
            row += [
                _num(index.loc[(d, a, lr), col]) if (d, a, lr) in index.index else "-" for a in arms
            ]
        rows.append(row)
    header = [rung.name, "LR"] + [f"{name} {a}" for name in columns.values() for a in arms]
    return markdown(header, rows)


def ladder_rungs(analysis: m.Analysis) -> str:
    """A ladder's rungs side by side (docs/STUDY.md section 11, descriptive): per rung the
    tokens per parameter, the primary comparison's threshold bracket, each compared arm's
    median critical LR under each failure definition, the reference arm's initial
    attention-logit std (its start temperature), the low-LR gap (reference minus primary at
    the two lowest grid LRs, with its 90% interval) and what QK-norm costs at the best LR."""
    s, rung = analysis.settings, present.ladder_of(analysis)
    ref, primary = s.reference, s.primary
    names = present.failures_of(analysis)
    definitions = [x for x in s.failure_definitions or [present.STUCK] if x in names]
    low = ladders.gap_lrs(s.base_lrs)
    key = Comparison(ref, primary).key
    rows = []
    for d in _depths(analysis):
        depth = analysis.depths[d]
        c = depth.comparisons.get(key)
        if c is None:
            continue
        by_lr = {e.lr: e for e in c.per_lr}
        budget = str(int(depth.arms[ref].budget))
        tokens = depth.tokens_per_param.by_budget.get(budget)
        per = "n/a" if tokens is None else f"{tokens:.3g}"
        row = [rung.label(d), per, numbers.threshold_with_interval(c)]
        for arm in (ref, primary):
            by = depth.arms[arm].eta_crit_by_definition or {}
            row.append(
                " / ".join(numbers.grid(by[x].median) if x in by else "-" for x in definitions)
            )
        row.append(numbers.num(depth.arms[ref].init_logit_std, 3))
        row += [numbers.effect(by_lr[lr]) if lr in by_lr else "-" for lr in low]
        row += _costs(depth)
        rows.append(row)
    words = " / ".join(names[x] for x in definitions)
    header = [
        rung.name,
        "tokens/parameter",
        f"stability threshold, {key}",
        f"{ref} critical LR ({words})",
        f"{primary} critical LR ({words})",
        f"{ref}'s initial attention-logit std",
        *(f"{ref} - {primary} at LR {numbers.lr(lr)} [90% CI]" for lr in low),
        f"best LR, {ref} / {primary}",
        f"{ref} - {primary} at {ref}'s best LR [90% CI]",
        f"{ref} - {primary}, each at its own best LR [90% CI]",
    ]
    return markdown(header, rows)


def _costs(depth: m.Rung) -> list[str]:
    """A rung's cost columns (docs/STUDY.md section 17): each arm's best LR, and the paired
    effect at the reference arm's best LR and with each arm at its own."""
    b = depth.best_cost
    at_best = depth.h1.stats if depth.h1 and depth.h1.stats else None
    return [
        f"{numbers.lr(b.off_lr)} / {numbers.lr(b.on_lr)}" if b and b.off_lr and b.on_lr else "-",
        numbers.pm_interval(at_best) if at_best else "-",
        numbers.pm_interval(b.stats) if b and b.stats else "-",
    ]


def _num(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else numbers.num(x, 2)
