"""The report's Tables section: every table of figures/report/tables.py in order, each under
its heading with what its numbers are (the ladder's lines, the effective losses, the paired
effects, the thresholds, steps to target, the diagnostics and the early warning)."""

from __future__ import annotations

import pandas as pd

from figures import present
from figures.report import tables
from figures.words import extrapolation, numbers
from figures.words.numbers import ONE_SIDED, TWO_SIDED
from sweeps.analysis import model as m
from sweeps.core.config import TrainConfig
from sweeps.core.diagnostics import DIAGNOSTICS
from sweeps.study import stats

AUC_LEVEL = f"{stats.AUC_QUANTILES[1] - stats.AUC_QUANTILES[0]:.0%}"  # the AUC's (90%)


EARLY = f"{stats.EARLY_FRACTION:.0%}"  # the early-warning step: this far into the run (10%)


LOSS_EVAL = f"{TrainConfig.loss_eval_fraction:.0%}"  # the quick val loss's interval (2%)


def section(analysis: m.Analysis, curves: pd.DataFrame) -> str:
    s, rung = analysis.settings, present.ladder_of(analysis)
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
            f"{numbers.target(s.target_loss)}, baseline / treatment. {numbers.FLOORED}: the "
            f"interval is as wide as the precision floor ({s.precision:g} nats), "
            f"wider than this LR's seeds would make it.",
            "",
            tables.effects(analysis, key),
        ]
    lines += [
        "### Stability thresholds",
        "",
        "The threshold is a bracket: the last LR where QK-norm was not shown necessary and the "
        "first from which it stays necessary; '~x in (a, b]' where the effect is continuous "
        "across it (interpolated), '(a, b]' where a run changes failure class between a and b.",
        "",
        tables.thresholds(analysis),
        f"### Steps to the target loss {numbers.target(s.target_loss)} / to the bigram baseline",
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
    rung, s = present.ladder_of(analysis), analysis.settings
    if len(analysis.depths) < 2:
        return []
    lines = [
        f"### The ladder: per {rung.name}",
        "",
        f"Descriptive (docs/STUDY.md section 11): tokens per parameter, the stability "
        f"threshold's bracket, each compared arm's median critical LR under each failure "
        f"definition, {s.reference}'s initial attention-logit std (the "
        f"start temperature), the low-LR gap ({s.reference} - "
        f"{s.primary} effective loss at the two lowest grid LRs, nats, with "
        f"its {TWO_SIDED} interval) and what QK-norm costs at the best LR (section 17: "
        f"each arm's best LR, the paired effect at {s.reference}'s and with each arm at its "
        f"own) at each {rung.name}.",
        "",
        tables.ladder_rungs(analysis),
    ]
    gap = extrapolation.gap_line(analysis) if rung.is_width else None
    if gap:
        lines += ["", gap, ""]
    sensitivity = extrapolation.sensitivity_trend_line(analysis)
    if sensitivity:
        lines += ["", sensitivity, ""]
    cost = extrapolation.cost_trend_line(analysis)
    if cost:
        lines += [*([""] if lines[-1] else []), cost[0].upper() + cost[1:], ""]
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
