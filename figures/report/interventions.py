"""The report's interventions table: QK-norm against the alternatives a spec runs as arms
(z-loss, attention soft cap, QK-clip, longer warmup; sweeps/core/interventions.py).

Rendered from the typed analysis alone (sweeps/analysis/model.py): each arm's critical LR and LR
sensitivity, its best loss, and two of the spec's pre-registered comparisons, `reference vs
ARM` (where ARM is needed against no intervention: its stability threshold) and `ARM vs
primary` (where QK-norm still beats it: the gap across the grid), decided by the rules of
docs/STUDY.md like every other comparison. A spec that does not list both comparisons for some
arm gets no table.
"""

from __future__ import annotations

from figures import present
from figures.report.tables import markdown
from figures.words import intervention_verdicts, numbers
from figures.words.intervention_verdicts import CLAIMS, intervention_arms
from sweeps.analysis import model as m
from sweeps.study.rules import Comparison


def section(a: m.Analysis) -> str:
    """The markdown section, or "" when the spec compares no intervention arm both ways."""
    arms = intervention_arms(a)
    if not arms or not a.depths:
        return ""
    s = a.settings
    ref, primary = s.reference, s.primary
    return "\n".join(
        [
            "### Interventions: each arm against no intervention and against QK-norm",
            "",
            f"Per arm: its critical LR (median and seed range) and LR sensitivity; its best "
            f"seed-mean effective loss and the LR of it; its stability threshold against "
            f"`{ref}` (the smallest LR from which the arm beats `{ref}` by more than "
            f"{s.min_effect:g} nats, docs/STUDY.md section 4); and its gap to `{primary}` "
            f"across the grid: where `{primary}` still beats it (the threshold of `ARM vs "
            f"{primary}`) and the largest mean gap (arm minus {primary}, nats) with its two-sided "
            f"90% t interval, whose ends are the one-sided 95% bounds that decide.",
            "",
            table(a, [ref, primary, *arms]),
            "",
            verdicts(a),
        ]
    )


def verdicts(a: m.Analysis) -> str:
    """I1-I4 per rung and arm as figures/words/intervention_verdicts.py words them (analysis.json's
    "interventions", worded again from the typed analysis's decisions)."""
    lines = [
        "#### Verdicts (docs/STUDY.md section 9)",
        "",
        " ".join(f"{h}: {claim}" for h, claim in CLAIMS.items())
        + " I1-I3 judge an arm built on off, I4 one built on QK-norm.",
        "",
    ]
    arms = intervention_arms(a)  # in spec order (analysis.json sorts its keys)
    rung = present.ladder_of(a)
    for depth, per_arm in sorted(intervention_verdicts.judge(a).items(), key=lambda kv: int(kv[0])):
        for arm in sorted(per_arm, key=arms.index):
            judged = per_arm[arm]
            lines.append(f"- {rung.label(depth)}, `{arm}`:")
            lines += [f"  - {h} **{v.verdict}**: {v.reason}" for h, v in judged.items()]
    return "\n".join(lines) + "\n"


def table(a: m.Analysis, arms: list[str]) -> str:
    s = a.settings
    ref, primary = s.reference, s.primary
    rows = []
    for depth in sorted(a.depths, key=int):
        d = a.depths[depth]
        for arm in arms:
            x = d.arms.get(arm)
            if x is None:
                continue
            against_ref = d.comparisons.get(Comparison(ref, arm).key)
            against_primary = d.comparisons.get(Comparison(arm, primary).key)
            rows.append(
                [
                    depth,
                    arm,
                    numbers.median_range(x.eta_crit),
                    _sensitivity(x),
                    _best(x),
                    "-" if arm == ref else _threshold(against_ref),
                    "-" if arm in (ref, primary) else _gap(against_primary),
                ]
            )
    return markdown(
        [
            present.ladder_of(a).name,
            "arm",
            "critical LR: median (seeds)",
            "LR sensitivity (nats)",
            "best loss (LR)",
            f"threshold vs {ref}",
            f"gap to {primary}",
        ],
        rows,
    )


def _sensitivity(arm: m.Arm) -> str:
    s = arm.sensitivity
    return numbers.pm(s.mean, s.sd) if s.complete else "incomplete"


def _best(arm: m.Arm) -> str:
    cells = [c for c in arm.cells if c.loss_mean is not None]
    if not cells:
        return "n/a"
    best = min(cells, key=lambda c: c.loss_mean)
    return f"{numbers.num(best.loss_mean)} ({numbers.lr(best.lr)})"


def _threshold(comparison: m.Comparison | None) -> str:
    if comparison is None:
        return "n/a"
    seeds = comparison.seed_thresholds
    spread = f"; per seed {numbers.seed_brackets(seeds)}" if seeds else ""
    return numbers.threshold_with_interval(comparison) + spread


def _gap(comparison: m.Comparison | None) -> str:
    """Where the primary arm is still necessary over this one, and the largest gap."""
    if comparison is None:
        return "n/a"
    judged = [e for e in comparison.per_lr if e.judged and e.mean is not None]
    if not judged:
        return "n/a"
    widest = max(judged, key=lambda e: e.mean)
    return (
        f"{numbers.threshold_with_interval(comparison)}; largest "
        f"{numbers.pm_interval(widest)} at {numbers.lr(widest.lr)}"
    )
