"""The ladders' lines in words. LR sensitivity per doubling, on either ladder (descriptive).
The width ladder's lines carried to the core width (384): W1's threshold line,
each arm's critical-LR line under every failure definition and the low-LR gap's line, each
with the 90% interval of the line and of one new seed (sweeps/analysis/trends.py fits them;
docs/STUDY.md section 11 pre-registers what they are compared with). Every core-width value is an
extrapolation beyond the widest rung, and each sentence says so or sits under a head that does.

It reads the typed analysis (sweeps/analysis/model.py) by attribute: a whole analysis
typed; an extrapolation or one of its lines typed or in its JSON form (adapter.read).
"""

from __future__ import annotations

import math

from figures import present
from figures.words import numbers
from sweeps.analysis import model as m
from sweeps.analysis.adapter import read
from sweeps.study import ladders
from sweeps.study.rules import FAILURE_DEFINITIONS

Line = m.Prediction | m.CriticalLine  # a line read at the core width


def _extrapolation(e: m.Extrapolation | dict) -> m.Extrapolation:
    """W1's extrapolation typed; its JSON form (analysis.json's, adapter.record's) read back."""
    return read(m.Extrapolation, e) if isinstance(e, dict) else e


def _line(p: Line | dict) -> Line:
    """A line at the core width typed: its JSON form read back, an arm's critical-LR line (it
    counts its censored values) or the threshold's."""
    if not isinstance(p, dict):
        return p
    return read(m.CriticalLine if "censored" in p else m.Prediction, p)


def extrapolation_head(e: m.Extrapolation | dict) -> str:
    """What W1's line at the core width is: 'width 384, the core width, ...'."""
    e = _extrapolation(e)
    return (
        f"width {e.width}, the core width, {e.doublings:.2f} doublings past the widest "
        "rung: the least-squares line carried beyond the data (an extrapolation, not a "
        "measurement)"
    )


def extrapolation_lines(e: m.Extrapolation | dict) -> list[str]:
    """W1's line read at the core width: the threshold (censored per-seed thresholds at their
    bounds, and moved beyond them where that differs), each compared arm's critical LR and the
    low-LR gap, each with the 90% interval of the line and of one new seed."""
    e = _extrapolation(e)
    t, grid = e.threshold, e.grid
    lines = []
    if t.at_bound is not None:
        lines.append(f"stability threshold {predicted(t.at_bound, grid)}")
        b = t.beyond
        if b is not None and b.ci90 != t.at_bound.ci90:
            lines.append(
                "with the censored per-seed thresholds moved beyond their bounds: "
                + predicted(b, grid)
            )
    crit = e.critical_lr
    if crit is not None:
        lines += critical_lines(crit.definition, crit.arms or {}, grid)
    lines += [_gap_at(g) for g in e.low_lr_gap or []]
    return lines


def critical_lines(
    definition: str, arms: dict[str, m.CriticalLine | dict], grid: list | None = None
) -> list[str]:
    """Each arm's critical-LR line at the core width under one failure definition (grid: the
    lowest and highest LR the rungs ran, to say when the line leaves them)."""
    lines = []
    for arm, p in arms.items():
        p = _line(p)
        said = f"{arm}'s critical LR ({definition})"
        if p.value is None:
            lines.append(
                f"{said}: no line, all {p.n} per-seed values are censored (bounds at the "
                "grid's edge)"
            )
            continue
        censored = f"; {p.censored} of its {p.n} per-seed values censored" if p.censored else ""
        lines.append(f"{said} {predicted(p, grid)}{censored}{_per_doubling(p)}")
    return lines


def other_definitions_lines(e: m.Extrapolation | dict) -> list[str]:
    """The critical-LR lines under the failure definitions other than the primary one (the
    descriptive prediction is for all three; the report's ladder section lists them). Analyses
    written before they were kept have none."""
    e = _extrapolation(e)
    primary = e.critical_lr.definition if e.critical_lr is not None else None
    by = e.critical_lr_by_definition or {}
    return [
        line
        for definition in FAILURE_DEFINITIONS  # the order the tables give them in
        if definition != primary and definition in by
        for line in critical_lines(definition, by[definition], e.grid)
    ]


def _gap_at(g: m.GapLine) -> str:
    """'off - on at LR 0.000316 ~0.120 nats (...); per doubling of width -0.050 nats (...)':
    the low-LR gap's line read at the core width, in nats (analyses written before it was kept
    have none)."""
    lo, hi = g.ci90
    plo, phi = g.point90
    slo, shi = g.slope90
    return (
        f"{g.of} at LR {numbers.lr(g.lr)} ~{g.value:.3f} nats (90% interval of the line "
        f"{lo:.3f} to {hi:.3f}; of one seed {plo:.3f} to {phi:.3f}; {g.n} pairs); per doubling "
        f"of width {g.slope:+.3f} nats (90% interval {slo:+.3f} to {shi:+.3f})"
    )


def gap_line(result: m.Analysis) -> str | None:
    """The width ladder's low-LR gap, narrowest to widest rung, at the two lowest grid LRs:
    the means and their ratio (the analysis's gap_shrink) against the pre-registered shrink
    (descriptive: a ratio of means, no interval). None where the analysis has no such ratio."""
    s, rung, shrink = result.settings, present.ladder_of(result), result.gap_shrink
    if not shrink:
        return None
    parts = [
        f"{g.narrow:.3f} to {g.wide:.3f} nats at LR {numbers.lr(g.lr)} (x{g.ratio:.2f})"
        for g in shrink
    ]
    narrow, wide = rung.label(shrink[0].narrow_rung), rung.label(shrink[0].wide_rung)
    return (
        f"The low-LR gap ({s.reference} - {s.primary}), {narrow} to {wide}: "
        f"{'; '.join(parts)}. Predicted (docs/STUDY.md section 11): "
        f"it shrinks by at least a third (x{ladders.GAP_SHRINK:.2f} or less); a ratio of means, "
        "descriptive."
    )


def _per_doubling(p: m.CriticalLine) -> str:
    """'; per doubling of width -0.290 decades (90% interval ...; 1/width: -0.301)': the line's
    slope against the pre-registered 1/width (docs/STUDY.md section 11). Analyses written
    before the slope was kept have none."""
    if p.slope is None:
        return ""
    if no_scatter(p):
        inverse = ladders.INVERSE_WIDTH
        return f"; per doubling of width {p.slope:+.3f} decades (as 1/width: {inverse:+.3f})"
    lo, hi = p.slope90
    return (
        f"; per doubling of width {p.slope:+.3f} decades (90% interval {lo:+.3f} to "
        f"{hi:+.3f}; as 1/width: {ladders.INVERSE_WIDTH:+.3f})"
    )


# per-seed critical LRs are bracket midpoints: when every seed of every rung sits at the same
# point of its bracket the fit has no residual, and a zero-width interval would read as a
# precision the grid does not have
NO_SCATTER = (
    "every per-seed value lies at the same point of its rung's bracket, so the line has no "
    "scatter to give an interval: each is known only to within its grid bracket"
)


def no_scatter(p: Line | dict) -> bool:
    """The line's 90% interval has no width: its points lie on it exactly."""
    lo, hi = _line(p).ci90
    return math.isclose(lo, hi, rel_tol=1e-9, abs_tol=1e-15)


def predicted(p: Line | dict, grid: list | None = None) -> str:
    """'~0.012 (90% interval of the line 0.006 to 0.024; of one seed 0.004 to 0.035)', and,
    when the value lies outside the LRs the rungs ran (grid: lowest, highest), that no run saw
    it: a line carried past the grid's top says no more than that the runs never failed."""
    p = _line(p)
    lo, hi = p.ci90
    plo, phi = p.point90
    if no_scatter(p):
        return f"~{numbers.lr(p.value)} ({NO_SCATTER})"
    outside = ""
    if grid and p.value > grid[1]:
        outside = f", above the grid's top LR {numbers.lr(grid[1])}, where no run trained"
    elif grid and p.value < grid[0]:
        outside = f", below the grid's lowest LR {numbers.lr(grid[0])}, where no run trained"
    return (
        f"~{numbers.lr(p.value)} (90% interval of the line {numbers.lr(lo)} to "
        f"{numbers.lr(hi)}; of one seed {numbers.lr(plo)} to {numbers.lr(phi)}){outside}"
    )


def sensitivity_trend_line(result: m.Analysis) -> str | None:
    """'LR sensitivity per doubling of depth (descriptive, ...): off +0.068 nats (90% interval
    ...)': each compared arm's and their difference's slope, the number a depth ladder and a
    width ladder can be set side by side on (Wortsman et al. 2023). None in analyses written
    before it was kept."""
    t, rung = result.sensitivity_trend, present.ladder_of(result)
    if t is None or not t.lines:
        return None
    parts = [
        f"{name} {x.value:+.3f} nats (90% interval {x.ci90[0]:+.3f} to "
        f"{x.ci90[1]:+.3f}, {x.n} seed values)"
        for name, x in t.lines.items()
    ]
    return (
        f"LR sensitivity per doubling of {rung.name}, least squares over each seed's value "
        f"at every {rung.name} (descriptive, not pre-registered; Wortsman et al. 2023 report "
        f"it rising faster with depth than with width): {'; '.join(parts)}."
    )


def cost_trend_line(result: m.Analysis) -> str | None:
    """'per doubling of depth (descriptive, ...), off - on changes by -0.032 nats at off's best
    LR (90% interval -0.056 to -0.009, 6 depths). With each arm at its own best LR: ...',
    short sentences: sweeps.analysis.trends.cost_trend's lines, each rung's mean the unit.
    None where there is none."""
    t, rung, s = result.cost_trend, present.ladder_of(result), result.settings
    if t is None or not t.lines:
        return None
    named = {
        "at the reference's best LR": f"at {s.reference}'s best LR",
        "each at its own best LR": "with each arm at its own best LR",
    }
    parts = [
        f"{named.get(name, name)}: {x.value:+.3f} nats (90% interval {x.ci90[0]:+.3f} to "
        f"{x.ci90[1]:+.3f}, {x.n} {rung.plural})"
        for name, x in t.lines.items()
    ]
    return (
        f"per doubling of {rung.name}, {s.reference} - {s.primary} changes as follows "
        f"(descriptive, not pre-registered; each {rung.name}'s mean paired effect the unit; "
        f"negative: QK-norm's cost grows with {rung.name}). "
        + " ".join(p[0].upper() + p[1:] + "." for p in parts)
    )
