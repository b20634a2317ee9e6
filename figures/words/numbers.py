"""Numbers as the report's text, one way everywhere: fixed precision, so text is stable. The
formatters of a record read the typed analysis's records (sweeps/analysis/model.py: a
GridPoint, a Paired effect, a Comparison) by attribute; numbers.lr, lrs, num and pm take
plain numbers."""

from __future__ import annotations

import math

from sweeps.study import stats

# the rules' numbers as the prose states them, formatted from where each is declared
ONE_SIDED = f"{stats.CONFIDENCE:.0%}"  # the one-sided bound that decides (95%)
TWO_SIDED = f"{stats.TWO_SIDED:.0%}"  # the interval its two bounds make (90%)


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def lr(x: float) -> str:
    """A learning rate; inf means 'at no swept LR', NaN 'below the grid or not measured'."""
    if _missing(x):
        return "n/a"
    if math.isinf(x):
        return "none in grid"
    return f"{x:.3g}"


def lrs(values: list[float]) -> str:
    """A list of LRs: '0.01 and 0.0178', '3.16e-4 to 0.0178 (4 LRs)', 'none'."""
    values = sorted(values)
    if not values:
        return "none"
    if len(values) <= 2:
        return " and ".join(lr(v) for v in values)
    return f"{lr(values[0])} to {lr(values[-1])} ({len(values)} LRs)"


def num(x: float, digits: int = 3) -> str:
    if _missing(x):
        return "n/a"
    return f"{x:.{digits}f}"


def target(loss: float | None) -> str:
    """The pre-registered target loss; none for an ad-hoc grid on a corpus no spec sets one
    for (sweeps.sweep.spec.corpus_target)."""
    if _missing(loss):
        return "none (no spec pre-registers one for this corpus)"
    return f"{num(loss, 2)} nats"


def pm(mean: float, sd: float, digits: int = 3) -> str:
    """mean ± sd, or the mean alone when sd is undefined (one seed)."""
    if _missing(sd):
        return num(mean, digits)
    return f"{num(mean, digits)} ± {num(sd, digits)}"


def pm_interval(entry, digits: int = 3) -> str:
    """A paired mean (a typed Paired record: sweeps/analysis/model.py) with the interval that
    decides it, the two-sided 90% one (its ends are the one-sided 95% bounds): '0.123 [0.050,
    0.196], n=3'."""
    ci = entry.ci90 or [None, None]
    if _missing(ci[0]):
        return f"{num(entry.mean, digits)} (n={entry.n or 0})"
    return f"{num(entry.mean, digits)} [{num(ci[0], digits)}, {num(ci[1], digits)}], n={entry.n}"


FLOORED = "†"  # marks an interval the precision floor widened (docs/STUDY.md 4)


def floored(entry) -> str:
    """FLOORED when the precision floor, not this LR's own seeds, set the interval's width: the
    reader then knows the seeds there agree more closely than the interval says."""
    sd, used = entry.sd, entry.sd_used
    return f" {FLOORED}" if not _missing(sd) and not _missing(used) and used > sd else ""


def effect(entry) -> str:
    """One LR of a comparison (an LrEffect) as a table cell: the paired effect with its 90%
    interval (†: widened by the precision floor), the seeds set aside because the baseline's or
    treatment's run failed there, or why it was not judged: 'ceiling' (every run of both arms
    failed), 'both arms fail' (too few pairs without a failure), 'too few pairs' (fewer than 3
    where either arm clearly trained: docs/STUDY.md section 13's failure model)."""
    if entry.ceiling:
        return "ceiling"
    if entry.partial_ceiling:
        return "both arms fail"
    if not entry.judged:
        return f"too few pairs ({num(entry.mean)})"
    aside = entry.set_aside or []
    note = f" (seed {', '.join(str(s) for s in aside)} set aside: a run failed)" if aside else ""
    return pm_interval(entry) + floored(entry) + note


def grid(value) -> str:
    """An LR found on the grid (a GridPoint, or any record with its `value` and `kind`),
    censoring spelled out."""
    if value is None:
        return "n/a"
    if value.kind == "none":
        return "none in the grid"
    if value.kind == "unjudged":
        return "no evidence"
    if value.kind == "above":
        return f"> {lr(value.value)}"
    if value.kind == "below":
        return f"<= {lr(value.value)}"
    return lr(value.value)


def median_range(stat) -> str:
    """'0.0178 (seeds 0.0100 to 0.0316)': the median of per-seed values (CriticalLRs) and their
    range; '0.562 (every seed)' when they agree."""
    if stat is None or stat.median is None:
        return "n/a"
    low, high = grid(stat.min), grid(stat.max)
    return f"{grid(stat.median)} ({'every seed' if low == high else f'seeds {low} to {high}'})"


def seed_grid(seeds: dict) -> str:
    """Each seed's GridPoint, in seed order."""
    return ", ".join(grid(v) for _, v in sorted(seeds.items(), key=lambda kv: int(kv[0])))


def ratio(entry) -> str:
    """A paired mean of log10 ratios (an H2a) as a geometric-mean ratio with its 90% interval."""
    if not entry.n or _missing(entry.mean):
        return "n/a"
    lo, hi = entry.ci90 or [None, None]
    if _missing(lo):
        return f"x{10**entry.mean:.2f}"
    return f"x{10**entry.mean:.2f} [x{10**lo:.2f}, x{10**hi:.2f}]"


def threshold(value) -> str:
    """A stability threshold (a GridPoint) as a sentence part: 'threshold 0.0032', 'no
    threshold in the grid (QK-norm necessary at no LR)', 'threshold <= 0.001 (necessary at
    every LR)'."""
    if value is None or value.kind == "none":
        return "no stability threshold in the grid (necessary at no LR)"
    if value.kind == "below":
        return f"stability threshold {grid(value)} (necessary from the lowest LR)"
    return f"stability threshold {grid(value)}"


def bracket(value) -> str:
    """A grid value (a GridPoint) with its bracket: '(0.0316, 0.0562] (~0.042, the midpoint)',
    '0.0336 in (0.0316, 0.1]' when interpolated; censoring spelled out."""
    if value is None or value.kind != "" or not value.bracket:
        return grid(value)
    lo, hi = value.bracket
    if value.interpolated:
        return f"~{lr(value.value)} in ({lr(lo)}, {lr(hi)}]"
    return f"({lr(lo)}, {lr(hi)}]"


def moved_to(influence: list) -> str:
    """Where leaving out one run at a time (each an Influence) puts the threshold, each place
    once: '~0.0204 in (0.0178, 0.0316]', or '(0.01, 0.0316] or none in the grid' when the runs
    disagree."""
    return " or ".join(dict.fromkeys(bracket(m.threshold_without) for m in influence))


def seed_lrs(values: list[float]) -> str:
    """One LR per seed, seeds that agree counted once, lowest LR first: '0.01 (every seed)',
    '0.01 (3 seeds), 0.0316 (1 seed)'; a seed without one (NaN) is 'none'."""
    counts: dict[str, int] = {}
    for v in sorted(values, key=lambda x: (_missing(x), 0 if _missing(x) else x)):
        text = "none" if _missing(v) else lr(v)
        counts[text] = counts.get(text, 0) + 1
    if len(counts) == 1 and len(values) > 1:
        return f"{next(iter(counts))} (every seed)"
    return ", ".join(f"{t} ({n} seed{'s' if n > 1 else ''})" for t, n in counts.items())


def seed_brackets(seeds: dict) -> str:
    """Per-seed thresholds (GridPoints) as brackets, seeds that agree named once: '(0.003, 0.01]
    (3 seeds)', '(0.01, 0.0316] (seeds 0, 2), none in the grid (seed 1)'."""
    groups: dict[str, list[str]] = {}
    for k, v in sorted(seeds.items(), key=lambda kv: int(kv[0])):
        inside = v is not None and v.kind == "" and v.bracket
        text = f"({lr(v.bracket[0])}, {lr(v.bracket[1])}]" if inside else grid(v)
        groups.setdefault(text, []).append(str(k))
    if len(groups) == 1:
        ((text, ks),) = groups.items()
        return f"{text} (every seed)" if len(ks) > 1 else f"{text} (seed {ks[0]})"
    return ", ".join(
        f"{text} (seed{'s' if len(ks) > 1 else ''} {', '.join(ks)})" for text, ks in groups.items()
    )


def threshold_bracket(c) -> str:
    """A comparison's stability threshold as the bracket it is: 'necessary from 0.0562 up, not
    shown at 0.0316 (the threshold lies in (0.0316, 0.0562])'."""
    t = c.threshold
    if t.kind == "none":
        return "no stability threshold in the grid (necessary at no LR up to the top)"
    if t.kind == "below":
        return f"necessary from the lowest LR judged at or above the best LR, {lr(t.value)}, up"
    if t.kind == "unjudged":
        return "no evidence at or above the best LR (no pair there where a run trained)"
    lo, hi = t.bracket
    return f"necessary from {lr(hi)} up, not shown at {lr(lo)} (threshold {bracket(t)})"


def threshold_with_interval(c) -> str:
    """A comparison's stability threshold, short: its bracket, '(0.0316, 0.0562]', with the
    interpolated crossing when the effect is continuous across it; censoring spelled out."""
    return bracket(c.threshold)
