"""The trend over a ladder's rungs, as analysis.json records it (docs/STUDY.md sections 5
and 11): H3 on a depth ladder; W1 and W2 on a width ladder, with W1's line carried to the core
width (an extrapolation); the points a decided trend was fitted to, for its chart; and, on
either ladder, LR sensitivity per doubling (descriptive). The
rules themselves live in sweeps/study/trend.py (the verdicts) and sweeps/study/ladders.py (the
descriptive lines); this module lays them out as sweeps/analysis/model.py's Trend."""

from __future__ import annotations

import dataclasses
import math

from sweeps.analysis import model as m
from sweeps.core.presets import PRESETS
from sweeps.study import ladders, rules, trend
from sweeps.study.rung import Rung
from sweeps.study.simulation import rungs as simulated
from sweeps.study.stats import line_fit

# the width the width ladder's line is read at (docs/STUDY.md section 11): the `core` preset's
CORE_WIDTH = PRESETS["core"].model.n_embd


def study_of(settings: dict) -> rules.Study:
    """The pre-registration as sweeps.study.rules reads it, from the analysis settings."""
    return rules.Study.from_dict(settings, settings["base_lrs"])


def trends(cells: dict, settings: dict, verdicts: dict[int, Rung]) -> dict:
    """The trend over the ladder's rungs with both arms of the primary comparison (verdicts:
    each rung as sweeps.study.rung decided it, keyed by its size), judged by the rulebook
    (docs/STUDY.md sections 13 and 17: rung values from the per-seed stability thresholds,
    borderline runs both ways, each rung left out; sweeps.study.trend): on a depth ladder
    {"h3"}; on a width ladder {"w1"} (with the extrapolation to the core width) and {"w2"}
    (the threshold as a multiple of each rung's best LR of the reference arm)."""
    study = study_of(settings)
    sizes = sorted(verdicts)
    seeds = {k: verdicts[k].judgement.necessity.seed_thresholds for k in sizes}
    judged = {k: verdicts[k].judgement.necessity.lrs for k in sizes}
    best = {k: verdicts[k].judgement.best_lr for k in sizes}
    seed_best = {k: ladders.seed_best_lrs(cells[k], study.reference) for k in sizes}
    # every borderline run stuck, trained; each reading's pooled threshold (section 25's guard)
    ways = [
        {k: verdicts[k].ways[i].judgement.necessity.seed_thresholds for k in sizes} for i in (0, 1)
    ]
    pooled = [{k: verdicts[k].ways[i].judgement.necessity.threshold for k in sizes} for i in (0, 1)]
    width = settings["ladder"]["field"] == "n_embd"
    n_seeds = max((len(cells[k].seeds) for k in seeds), default=rules.STUDY_SEEDS)
    grid = sorted({lr for size in seeds for lr in cells[size].lrs})
    # section 22: rungs the spec sets apart train beside the ladder, outside its verdict
    apart = sorted(set(study.set_apart) & set(seeds))
    every_way, every_pooled = ways, pooled
    if apart:
        ways = [_without(w, apart) for w in ways]
        pooled = [_without(p, apart) for p in pooled]
        seeds, judged = _without(seeds, apart), _without(judged, apart)
        best, seed_best = _without(best, apart), _without(seed_best, apart)
    found = trend.judged_trends(
        ways, "W1" if width else "H3", n_seeds, best if width else None, pooled
    )
    t = simulated_powers(found["W1" if width else "H3"], n_seeds, grid)
    first = {**_trend(t, seeds), **_points(t, seeds)}
    if apart:
        first["with_apart"] = with_apart(
            every_way, every_pooled, apart, t.prediction, n_seeds, grid
        )
    line = ladders.uncensored_line(seeds, judged)
    if t.at_bound is not None and line is not None:
        first["uncensored"] = _uncensored(line)
    found_s = sensitivity_trend(cells, study, settings, sorted(seeds))
    sensitivity = {"sensitivity_trend": found_s} if found_s else {}  # one rung: no slope, no key
    if not width:
        return {"h3": m.Trend(**first), **sensitivity}
    if t.at_bound is not None:  # decided (enough widths): its line reads at 384
        first["extrapolation"] = extrapolation(cells, settings, seeds, judged)
        if t.why == "censored alike":  # a line through bounds alone reads nothing at 384
            first["extrapolation"] = dataclasses.replace(
                first["extrapolation"], threshold=m.ThresholdLines(None, None)
            )
    carry = found["W2"]
    w2 = {**_trend(carry, seeds), "bound": ladders.CARRY_BOUND}
    line = ladders.uncensored_line(seeds, judged, seed_best, top=True)
    if carry.at_bound is not None and line is not None:
        w2["uncensored"] = _uncensored(line)
    w2["seed_best"] = {str(k): v for k, v in seed_best.items()}
    return {"w1": m.Trend(**first), "w2": m.Trend(**w2), **sensitivity}


def _without(by_rung: dict, apart) -> dict:
    return {k: v for k, v in by_rung.items() if k not in apart}


def with_apart(ways, pooled, apart: list[int], prediction: float, seeds: int, grid) -> m.AddedRungs:
    """The trend over every rung, the set-apart ones included (section 22), beside the
    verdict: its verdict and slope (the rulebook's, both borderline readings), and that
    design's simulated power."""
    every = trend.robust(ways, trend.decide, trend.OPPOSITE, prediction, seeds, pooled=pooled)
    sizes = [round(2**r.x) for r in every.rungs]
    powers = simulated.design_power(
        sizes, seeds, grid, prediction, trend.POWER_RUNG_SDS, seed_scatter(every)
    )
    return m.AddedRungs(apart, every.verdict, _slope(every.at_bound), _powers(powers))


def seed_scatter(t: trend.Trend) -> float:
    """The sd of a seed's threshold about its rung (decades), as the ladder's own rungs show it
    (root mean of their seed variances); the pre-registered trend.SEED_SD without two seeds."""
    var = [r.mean_var * r.seeds for r in t.rungs if math.isfinite(r.mean_var)]
    return math.sqrt(sum(var) / len(var)) if var else trend.SEED_SD


def simulated_powers(t: trend.Trend, seeds: int, grid: list[float]) -> trend.Trend:
    """H3's or W1's power as the report states it (docs/STUDY.md section 22): simulated, under
    the reversal rule, at the seed scatter the ladder's own rungs show, on the LRs it trained,
    at each of trend.POWER_RUNG_SDS; for the whole ladder and with each rung left out."""
    sizes = [round(2**r.x) for r in t.rungs]
    if len(sizes) < ladders.MIN_RUNGS:
        return t
    scatter = seed_scatter(t)

    def at(rungs) -> tuple[float, ...]:
        return simulated.design_power(
            rungs, seeds, grid, t.prediction, trend.POWER_RUNG_SDS, scatter
        )

    powers = at(sizes)
    left = tuple(
        dataclasses.replace(lo, powers=at([s for s in sizes if s != lo.size])) for lo in t.left_out
    )
    main = powers[trend.POWER_RUNG_SDS.index(trend.RUNG_SD)]
    return dataclasses.replace(t, powers=powers, power=main, left_out=left, seed_scatter=scatter)


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


def _trend(t: trend.Trend, seeds: dict) -> dict:
    return {
        "verdict": t.verdict,
        "why": t.why,
        "at_bound": _slope(t.at_bound),
        "beyond": _slope(t.beyond),
        "as_recorded": _slope(t.recorded),
        "censored": sum(r.censored for r in t.rungs),
        "short": list(t.dropped),
        "depths": sorted(seeds),  # the rungs it was fitted over (module docstring)
        "prediction": t.prediction if t.prediction else None,
        "power": None if math.isnan(t.power) else t.power,
        "powers": _powers(t.powers),
        "rung_values": [
            m.RungValue(round(2**r.x), 10**r.at_bound, 10**r.beyond, r.seeds, r.censored)
            for r in t.rungs
        ],
        "left_out": [
            m.LeftOutRung(lo.size, lo.verdict, _slope(lo.slope), lo.influence, _powers(lo.powers))
            for lo in t.left_out
        ],
        "reversed_by": list(t.reversed_by),
        "fragile": list(t.fragile),
        "seed_scatter": t.seed_scatter,
    }


def _powers(powers: tuple[float, ...]) -> dict[str, float] | None:
    """A trend's power per rung sd (trend.POWER_RUNG_SDS), keyed by the sd; None without."""
    at = {f"{sd:g}": p for sd, p in zip(trend.POWER_RUNG_SDS, powers) if not math.isnan(p)}
    return at or None


def _points(t: trend.Trend, seeds: dict) -> dict:
    """The points a decided trend rests on (its chart): per seed and rung the threshold (a
    censored one at its bound, and where it is moved beyond), and the least-squares line of the
    rung values (log10 LR on log2 rung, censored values at their bounds) the verdict reads."""
    if t.at_bound is None or t.why == "censored alike":  # bounds alone: a line measures nothing
        return {}
    points = [
        m.TrendPoint(rung=size, lr=10 ** found[0], beyond=10 ** found[1], censored=bool(found[2]))
        for size, values in sorted(seeds.items())
        if size not in t.dropped
        for found in (trend.seed_log(v) for v in values)
        if found is not None
    ]
    line = line_fit([r.x for r in t.rungs], [r.at_bound for r in t.rungs])
    return {"points": points, "line": m.Line(line.slope, line.intercept) if line else None}


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


# the two costs cost_trend follows (section 17): the comparison at the reference arm's best LR
# (the rung's H1 effect) and with each arm at its own best LR
COSTS = {"at the reference's best LR": "h1", "each at its own best LR": "best_cost"}


def cost_trend(a: m.Analysis) -> m.SensitivityTrend | None:
    """What QK-norm costs at the best LR per doubling of the rung, descriptive and not
    pre-registered (docs/STUDY.md section 17 gives the cost per rung; section 18 asks whether
    depth 8's survives a matched budget): each rung's mean paired effect (reference - primary,
    nats) on log2 size, the rung the unit as H3's, the residual sd floored by the seeds'
    scatter (trend.floored_slope), for the effect at the reference arm's best LR and with each
    arm at its own. None below trend.MIN_RUNGS rungs with the effect."""
    lines = {}
    for name, field in COSTS.items():
        x, y, var = [], [], []
        for size in sorted(a.depths, key=int):
            held = getattr(a.depths[size], field)
            stats = held.stats if held is not None else None
            if stats is None or not _finite(stats.mean) or not stats.n:
                continue
            x.append(math.log2(int(size)))
            y.append(stats.mean)
            var.append((stats.sd or 0.0) ** 2 / stats.n)
        if len(x) < trend.MIN_RUNGS:
            continue
        slope = trend.floored_slope(x, y, math.sqrt(sum(var) / len(var)))
        lines[name] = m.SensitivityLine(
            n=slope.n, value=slope.slope, ci90=[slope.lower, slope.upper]
        )
    sizes = sorted(int(k) for k in a.depths)
    return m.SensitivityTrend(sizes=sizes, lines=lines) if lines else None
