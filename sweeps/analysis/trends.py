"""The trend over a ladder's rungs, as analysis.json records it (docs/STUDY.md sections 5
and 11): H3 on a depth ladder; W1 and W2 on a width ladder, with W1's line carried to the core
width (an extrapolation); the points a decided trend was fitted to, for its chart; and, on
either ladder, LR sensitivity per doubling (descriptive). The
rules themselves (trend_decision, carry_decision, trend_points, the lines) live in
sweeps/study/ladders.py; this module lays them out as sweeps/analysis/model.py's Trend."""

from __future__ import annotations

import dataclasses
import math

from sweeps.analysis import model as m
from sweeps.core.presets import PRESETS
from sweeps.study import ladders, rules

# the width the width ladder's line is read at (docs/STUDY.md section 11): the `core` preset's
CORE_WIDTH = PRESETS["core"].model.n_embd


def study_of(settings: dict) -> rules.Study:
    """The pre-registration as sweeps.study.rules reads it, from the analysis settings."""
    return rules.Study.from_dict(settings, settings["base_lrs"])


def trends(cells: dict, settings: dict, rungs: list[str]) -> dict:
    """The trend over the ladder's rungs, over the rungs with both arms of the primary
    comparison (per-seed thresholds, censored ones kept at and beyond their bounds): on a depth
    ladder {"h3"} (sweeps.study.ladders.trend_decision); on a width ladder {"w1"} (the same
    rule on widths, with the extrapolation to the core width) and {"w2"}
    (sweeps.study.ladders.carry_decision on the thresholds as multiples of each seed's best LR of
    the reference arm), docs/STUDY.md sections 5 and 11."""
    study = study_of(settings)
    seeds: dict = {}
    judged: dict = {}
    best: dict = {}
    for name in rungs:
        c = cells[int(name)]
        if not (c.has(study.reference) and c.has(study.primary)):
            continue
        n = rules.compare(c, study.primary_comparison, study, influence=False).necessity
        seeds[int(name)], judged[int(name)] = n.seed_thresholds, n.lrs
        best[int(name)] = ladders.seed_best_lrs(c, study.reference)
    t = ladders.trend_decision(seeds, judged)
    # the chart's points: bounds alone (censored alike) would draw a line that measures nothing
    drawn = t.at_bound is not None and t.why != "censored alike"
    first = {**_trend(t, seeds), **(_points(seeds, judged) if drawn else {})}
    if t.at_bound is not None:
        first["uncensored"] = _uncensored(ladders.uncensored_line(seeds, judged))
    found = sensitivity_trend(cells, study, settings, sorted(seeds))
    sensitivity = {"sensitivity_trend": found} if found else {}  # one rung: no slope, no key
    if settings["ladder"]["field"] != "n_embd":
        return {"h3": m.Trend(**first), **sensitivity}
    if t.at_bound is not None:  # decided (enough widths and points): its line reads at 384
        first["extrapolation"] = extrapolation(cells, settings, seeds, judged)
        if t.why == "censored alike":  # a line through bounds alone reads nothing at 384
            first["extrapolation"] = dataclasses.replace(
                first["extrapolation"], threshold=m.ThresholdLines(None, None)
            )
    carry = ladders.carry_decision(seeds, best, judged)
    w2 = {**_trend(carry, seeds), "bound": ladders.CARRY_BOUND}
    if carry.at_bound is not None:
        w2["uncensored"] = _uncensored(ladders.uncensored_line(seeds, judged, best, top=True))
    w2["seed_best"] = {str(k): v for k, v in best.items()}
    return {"w1": m.Trend(**first), "w2": m.Trend(**w2), **sensitivity}


def sensitivity_trend(
    cells: dict, study: rules.Study, settings: dict, sizes: list
) -> m.SensitivityTrend | None:
    """LR sensitivity per doubling of the ladder's size, descriptive and not pre-registered:
    Wortsman et al. (2023) report it rising faster with depth than with width, which a depth
    ladder's slope beside a width ladder's can show. Each compared arm's per-seed S (H2b's,
    over the pre-registered LR range) and the seeds' paired difference, on log2 size: nats per
    doubling with the slope's 90% interval. None with fewer than two sizes."""
    lrs = rules.sensitivity_lrs(settings["base_lrs"], settings["sensitivity_range"])
    ref, primary = study.reference, study.primary
    per = {
        arm: {size: rules.sensitivities(cells[size], arm, lrs) for size in sizes}
        for arm in (ref, primary)
    }
    per[f"{ref} - {primary}"] = {
        size: {k: v - per[primary][size].get(k, math.nan) for k, v in per[ref][size].items()}
        for size in sizes
    }
    lines = {}
    for name, values in per.items():
        line = ladders.sensitivity_line(values)
        if line is not None:
            lower, upper = line.slope_bounds()
            lines[name] = m.SensitivityLine(n=line.n, value=line.slope, ci90=[lower, upper])
    return m.SensitivityTrend(sizes=sizes, lines=lines) if lines else None


def _trend(t: ladders.Trend, seeds: dict) -> dict:
    return {
        "verdict": t.verdict,
        "why": t.why,
        "at_bound": _slope(t.at_bound),
        "beyond": _slope(t.beyond),
        "censored": t.censored,
        "short": t.short,
        "depths": sorted(seeds),  # the rungs it was fitted over (module docstring)
    }


def _points(seeds: dict, judged: dict) -> dict:
    """The points a decided trend was fitted to (its chart): per seed and rung the threshold
    (a censored one at its bound, and where it is moved beyond), and the least-squares line
    of log10 LR on log2 rung with them at their bounds."""
    points, _ = ladders.trend_points(seeds, judged)
    line, _ = ladders.trend_lines(seeds, judged)
    return {
        "points": [
            m.TrendPoint(rung=round(2**x), lr=10**y, beyond=10**yb, censored=bool(c))
            for x, y, yb, c in points
        ],
        "line": m.Line(line.slope, line.intercept) if line else None,
    }


def extrapolation(cells: dict, settings: dict, seeds: dict, judged: dict) -> m.Extrapolation:
    """The width ladder's line for the core width (docs/STUDY.md section 11, an
    extrapolation): W1's least-squares line of log10 threshold on log2 width read at
    CORE_WIDTH, censored per-seed thresholds at their bounds and moved beyond them; and, as
    simply, each arm's per-seed critical LRs (primary failure definition, a censored one at
    its bound) read there. Each with the 90% interval of the line (the expected value) and of
    one new seed."""
    study = study_of(settings)
    x0 = math.log2(CORE_WIDTH)
    at_bound, beyond = ladders.trend_lines(seeds, judged)
    by_definition = {
        d: _critical_lines(cells, study, seeds, d, x0) for d in rules.FAILURE_DEFINITIONS
    }
    lrs = [lr for w, c in cells.items() if w in seeds for lr in c.lrs]
    return m.Extrapolation(
        width=CORE_WIDTH,
        doublings=x0 - math.log2(max(seeds)),
        # the LRs the rungs ran: a line read outside them says what no run at any width saw
        grid=[min(lrs), max(lrs)] if lrs else None,
        threshold=m.ThresholdLines(
            at_bound=_prediction(at_bound.at(x0), at_bound.n) if at_bound else None,
            beyond=_prediction(beyond.at(x0), beyond.n) if beyond else None,
        ),
        critical_lr=m.CriticalLines(rules.PRIMARY_FAILURE, by_definition[rules.PRIMARY_FAILURE]),
        # the descriptive prediction is for every failure definition (docs/STUDY.md section 11)
        critical_lr_by_definition=by_definition,
        low_lr_gap=_gaps(cells, study, seeds, settings, x0),
    )


def _critical_lines(
    cells: dict, study: rules.Study, seeds: dict, definition: str, x0: float
) -> dict[str, m.CriticalLine]:
    """Each compared arm's per-seed critical LRs under one failure definition (a censored one
    at its bound) on log2 width, read at x0, with the slope per doubling."""
    arms = {}
    for arm in (study.reference, study.primary):
        per = {
            w: list(rules.critical_lrs(c, arm, definition, study.delta).values())
            for w, c in cells.items()
            if w in seeds and c.has(arm)
        }
        line, censored = ladders.critical_lr_line(per)
        if line is not None and censored == line.n:  # every value a bound: no line to read
            arms[arm] = m.CriticalLine(value=None, n=line.n, censored=censored)
        elif line is not None:
            arms[arm] = m.CriticalLine(
                **dataclasses.asdict(_prediction(line.at(x0), line.n)),
                censored=censored,
                # decades per doubling of width, against the 1/width the study predicts
                slope=line.slope,
                slope90=list(line.slope_bounds()),
            )
    return arms


def _gaps(
    cells: dict, study: rules.Study, seeds: dict, settings: dict, x0: float
) -> list[m.GapLine]:
    """The low-LR gap (reference - primary, nats) at the two lowest grid LRs on log2 width,
    read at the core width (docs/STUDY.md section 11: it shrinks as off starts warmer): per LR
    the slope per doubling with its 90% interval and the line's reading, in nats."""
    out = []
    judged = {w: c for w, c in cells.items() if w in seeds}
    for lr in ladders.gap_lrs(settings.get("base_lrs")):
        line = ladders.gap_line(judged, study.reference, study.primary, lr)
        if line is None:
            continue
        p = line.at(x0)
        out.append(
            m.GapLine(
                lr=lr,
                of=f"{study.reference} - {study.primary}",
                value=p.mean,
                ci90=[p.lower, p.upper],
                point90=[p.point_lower, p.point_upper],
                n=line.n,
                slope=line.slope,
                slope90=list(line.slope_bounds()),
            )
        )
    return out


def _prediction(p, n: int) -> m.Prediction:
    """A line's reading at an x, as an LR (the line is of log10 LR): the value, the 90%
    interval of the line there and of one new point, and the points it was fitted to."""
    return m.Prediction(
        log10=p.mean,
        value=10**p.mean,
        ci90=[10**p.lower, 10**p.upper],
        point90=[10**p.point_lower, 10**p.point_upper],
        n=n,
    )


def _uncensored(line) -> m.Uncensored | None:
    """The slope without the censored per-seed thresholds (descriptive: the report prints it
    beside the rule) and its line (the trend chart draws it); None when none was censored."""
    if line is None:
        return None
    lower, upper = line.slope_bounds()
    return m.Uncensored(
        n=line.n,
        value=line.slope,
        lower=lower,
        upper=upper,
        ci90=[lower, upper],
        line=m.Line(line.slope, line.intercept),
    )


def _slope(s) -> m.Slope | None:
    if s is None:
        return None
    return m.Slope(n=s.n, value=s.slope, lower=s.lower, upper=s.upper, ci90=[s.lower, s.upper])


def gap_shrink(a: m.Analysis) -> list[m.GapShrink] | None:
    """A width ladder's low-LR gap at its narrowest and widest rung, at each of the gap's LRs
    (ladders.gap_lrs), with their ratio. None on a depth ladder, with fewer than two rungs or
    no LR to read it at, or where an end lacks the primary comparison or the gap at one of
    those LRs, or the narrowest gap is not positive (no ratio to read)."""
    if a.settings.ladder.field != "n_embd":
        return None
    widths, lrs = sorted(a.depths, key=int), ladders.gap_lrs(a.settings.base_lrs)
    if len(widths) < 2 or not lrs:
        return None
    key = rules.Comparison(a.settings.reference, a.settings.primary).key
    ends = [a.depths[w].comparisons.get(key) for w in (widths[0], widths[-1])]
    if any(c is None for c in ends):
        return None
    out = []
    for lr in lrs:
        narrow, wide = ({e.lr: e.mean for e in c.per_lr}.get(lr) for c in ends)
        if not (_finite(narrow) and _finite(wide) and narrow > 0):
            return None
        out.append(m.GapShrink(lr, widths[0], widths[-1], narrow, wide, wide / narrow))
    return out


def _finite(x) -> bool:
    return x is not None and math.isfinite(x)
