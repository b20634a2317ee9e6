"""How the report and the charts read the analysis dict's decided quantities: one place that
knows the keys, so a chart and the table beside it print the same interval.

The analysis (figures/analysis.py, sweeps/study/stats.py) is moving to intervals that say
which decision they belong to: `lower` (the one-sided 95% bound that decided) and `ci90`
([lo, hi], two-sided 90%) on every decided quantity, `threshold_ci90` per depth, and
`settings["baselines"]` ({"bigram", "unigram", "unit", "tokenizer"}). Each reader here takes
those keys first and falls back to the older ones (`lb`, `lo`/`hi` two-sided 95%, the
per-seed range of thresholds and critical LRs, the runs' bigram_loss), naming the interval it
found so the text says what it shows.
"""
from __future__ import annotations

import math

import pandas as pd


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def effect_interval(entry: dict) -> tuple[float | None, float | None, str]:
    """A paired effect's interval: (lo, hi, label) - ci90 when the analysis has it."""
    if entry.get("ci90"):
        lo, hi = entry["ci90"]
        return _num(lo), _num(hi), "90%"
    return _num(entry.get("lo")), _num(entry.get("hi")), "95%"


def lower_bound(entry: dict) -> float | None:
    """The one-sided 95% lower bound that decided necessity."""
    return _num(entry["lower"] if "lower" in entry else entry.get("lb"))


def threshold_interval(comparison: dict, depth: dict | None = None
                       ) -> tuple[float | None, float | None, str]:
    """The necessity threshold's interval: threshold_ci90 (on the comparison, else the depth)
    when the analysis has it, else the range of the per-seed thresholds inside the grid."""
    for holder in (comparison, depth or {}):
        ci = holder.get("threshold_ci90")
        if ci and ci[0] is not None and ci[1] is not None:
            return float(ci[0]), float(ci[1]), "90%"
    inside = [t["value"] for t in comparison.get("seed_thresholds", {}).values()
              if t and t.get("kind") == "" and t.get("value") is not None]
    if not inside:
        return None, None, ""
    return min(inside), max(inside), "seed range"


def crit_interval(eta_crit: dict) -> tuple[float | None, float | None, str]:
    """A critical LR's interval: ci90 when the analysis has it, else the range over seeds."""
    if eta_crit.get("ci90"):
        lo, hi = eta_crit["ci90"]
        return _num(lo), _num(hi), "90%"
    lo, hi = eta_crit.get("min") or {}, eta_crit.get("max") or {}
    return _num(lo.get("value")), _num(hi.get("value")), "seed range"


def baselines(analysis: dict) -> dict:
    """{"bigram": nats or None, "unigram": ..., "rule": the train.baseline the runs used}."""
    b = analysis["settings"].get("baselines") or {}
    return {"bigram": _num(b.get("bigram")), "unigram": _num(b.get("unigram")),
            "rule": analysis["settings"].get("baseline_rule")}


def with_fallbacks(analysis: dict, runs: pd.DataFrame) -> dict:
    """The analysis dict as the report draws it: settings["baselines"] from the run summaries
    when the analysis has none (older analysis.json), and settings["baseline_rule"] (the
    train.baseline of the runs: bigram, unigram or none). Never written to analysis.json."""
    settings = dict(analysis["settings"])
    if not settings.get("baselines"):
        found = {}
        for key in ("bigram", "unigram"):
            column = f"{key}_loss"
            values = pd.to_numeric(runs[column], errors="coerce").dropna() \
                if column in runs else pd.Series(dtype=float)
            found[key] = float(values.median()) if len(values) else None
        settings["baselines"] = {**found, "unit": "nats/token"}
    rules = sorted(set(runs["baseline"].dropna())) if "baseline" in runs else []
    settings["baseline_rule"] = rules[0] if len(rules) == 1 else (
        ", ".join(rules) if rules else None)
    return {**analysis, "settings": settings}


def primary_key(analysis: dict) -> str:
    s = analysis["settings"]
    return f"{s['reference']} vs {s['primary']}"


def seconds(total: float) -> str:
    """Compute in a unit a person reads: '22 s', '4.5 min', '1 h 58 min'."""
    if total < 90:
        return f"{total:.0f} s"
    if total < 90 * 60:
        return f"{total / 60:.1f} min"
    hours, minutes = divmod(round(total / 60), 60)
    return f"{hours} h {minutes:02d} min"
