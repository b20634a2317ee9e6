"""How the report and the charts read the typed analysis's decided quantities
(sweeps/analysis/model.py): one place, so a chart and the table beside it print the same
interval.

The analysis gives intervals that say which decision they belong to: `lower` (the one-sided
95% bound that decided) and `ci90` ([lo, hi], two-sided 90%: its ends are the one-sided 95%
bounds) on every decided quantity, `threshold_bracket` per comparison, and the settings'
`baselines` (bigram, unigram, unit, tokenizer). A critical LR has no interval of its own: its
seed range is shown, named so.
"""

from __future__ import annotations

import math

from sweeps.analysis import model as m
from sweeps.core.ladder import DEFAULT_LADDER, Ladder
from sweeps.study import hypotheses
from sweeps.study.rules import DIVERGED, STUCK


def ladder_of(analysis: m.Analysis) -> Ladder:
    """The ladder of a typed analysis, from its settings (the analysis decided it once from
    the runs); a reader reaches a rung through it, never through n_layer."""
    return Ladder(analysis.settings.ladder.field)


def ladder_of_json(analysis: dict) -> Ladder:
    """The ladder an untyped analysis dict records (settings["ladder"], as an earlier report
    wrote it); depth when it records none (written before ladders had a width)."""
    found = (analysis.get("settings") or {}).get("ladder") or {}
    return Ladder(found["field"]) if "field" in found else DEFAULT_LADDER


def trends(rung: Ladder) -> tuple[str, ...]:
    """The verdicts a ladder's trend decides, in report order (the registry's)."""
    return hypotheses.trends(rung.field)


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def effect_interval(entry) -> tuple[float | None, float | None, str]:
    """A paired effect's interval (a Paired record): (lo, hi, "90%"), the two-sided 90%
    interval whose ends are the one-sided 95% bounds that decide (docs/STUDY.md)."""
    lo, hi = entry.ci90 or (None, None)
    return _num(lo), _num(hi), "90%"


def lower_bound(entry) -> float | None:
    """The one-sided 95% lower bound that decided necessity (a Paired record's)."""
    return _num(entry.lower)


def threshold_interval(comparison: m.Comparison) -> tuple[float | None, float | None, str]:
    """The stability threshold's bracket (threshold_bracket): the last LR where QK-norm was not
    shown necessary and the first from which it stays necessary; none when the threshold is
    censored or absent."""
    bracket = comparison.threshold_bracket
    if not bracket:
        return None, None, ""
    return float(bracket[0]), float(bracket[1]), "bracket"


def crit_interval(eta_crit: m.CriticalLRs) -> tuple[float | None, float | None, str]:
    """A critical LR's interval: the range of its seeds' values."""
    lo, hi = eta_crit.min, eta_crit.max
    return _num(lo.value if lo else None), _num(hi.value if hi else None), "seed range"


def crit_span(eta_crit: m.CriticalLRs) -> tuple[float | None, float | None]:
    """Where a critical LR can lie, as its chart bar: from the lowest seed's last LR that held
    to the highest seed's first that failed (each seed's value is only a midpoint of that
    bracket); a seed without a bracket (censored, or no interpolation) at its value, as
    crit_interval gives it."""
    lo, hi, _ = crit_interval(eta_crit)
    low, high = eta_crit.min, eta_crit.max
    if low is not None and low.bracket:
        lo = _num(low.bracket[0])
    if high is not None and high.bracket:
        hi = _num(high.bracket[1])
    return lo, hi


def baselines(settings: m.Settings) -> dict:
    """{"bigram": nats or None, "unigram": ..., "rule": the train.baseline the runs used}."""
    b = settings.baselines
    return {
        "bigram": _num(b.bigram if b else None),
        "unigram": _num(b.unigram if b else None),
        "rule": settings.baseline_rule,
    }


def failures_shown(definitions: list[str], primary: str, no_rule: bool) -> dict[str, str]:
    """failures_of from its parts: the definitions, the one that decides, and whether the
    runs had no bigram-baseline rule."""
    order = [primary] + [x for x in definitions if x != primary]
    if not no_rule:
        return {x: x for x in order}
    return {x: DIVERGED if x == STUCK else x for x in order if x != DIVERGED or STUCK not in order}


def failures_of(analysis: m.Analysis) -> dict[str, str]:
    """The failure definitions (docs/STUDY.md section 3) the report shows, the one that decides
    first, each with the name it prints. With the bigram-baseline rule off (train.baseline =
    none) no run can finish stuck: `stuck` holds exactly the runs `diverged` does, so it
    prints as `diverged` and `diverged` is not shown again beside it."""
    s = analysis.settings
    definitions = s.failure_definitions or [STUCK]
    return failures_shown(definitions, s.primary_failure, rule_off_of(analysis))


def rule_off_of(analysis: m.Analysis) -> bool:
    """The runs had no bigram-baseline rule (train.baseline = none): none of them is stuck."""
    return analysis.settings.baseline_rule == "none"


def loss_unit(settings: m.Settings) -> str:
    """The loss's unit as the tokenizer makes it: nats/byte for the byte-level tokenizer (a
    token is a byte), else nats/token."""
    b = settings.baselines
    return "nats/byte" if b and b.tokenizer == "bytes" else "nats/token"


# A run's fate as the headline draws it: its failure kind (docs/STUDY.md section 3).
FATES = ("ok", "unstable", "stuck", "diverged")


def fate(run: m.Run, settings: m.Settings) -> str:
    """'diverged' (stopped), 'stuck' (finished worse than the bigram baseline the runs were
    held to: the `stuck` definition's other half), 'unstable' (another reason: a late loss
    spike), 'ok'."""
    if run.outcome == "diverged":
        return "diverged"
    b = baselines(settings)
    final = _num(run.final_val_loss)
    if (
        b["rule"] != "none"
        and b["bigram"] is not None
        and final is not None
        and final > b["bigram"]
    ):
        return "stuck"
    return "unstable" if run.outcome == "unstable" else "ok"


def primary_effect(s: m.Settings) -> str:
    """The primary comparison's paired effect as the charts and verdicts name it: 'off - on'
    (baseline minus treatment)."""
    return f"{s.reference} - {s.primary}"


def seconds(total: float) -> str:
    """Compute in a unit a person reads: '22 s', '4.5 min', '1 h 58 min'."""
    if total < 90:
        return f"{total:.0f} s"
    if total < 90 * 60:
        return f"{total / 60:.1f} min"
    hours, minutes = divmod(round(total / 60), 60)
    return f"{hours} h {minutes:02d} min"
