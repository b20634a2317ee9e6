"""Number formatting shared by verdicts and the report: fixed precision, so text is stable."""

from __future__ import annotations

import math
from collections import Counter


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


def pm(mean: float, sd: float, digits: int = 3) -> str:
    """mean ± sd, or the mean alone when sd is undefined (one seed)."""
    if _missing(sd):
        return num(mean, digits)
    return f"{num(mean, digits)} ± {num(sd, digits)}"


def interval(lo: float, hi: float) -> str:
    return f"[{lr(lo)}, {lr(hi)}]"


def pm_interval(entry: dict, digits: int = 3) -> str:
    """A paired mean with the interval that decides it, the two-sided 90% one (its ends are
    the one-sided 95% bounds): '0.123 [0.050, 0.196], n=3'."""
    ci = entry.get("ci90") or [None, None]
    if _missing(ci[0]):
        return f"{num(entry.get('mean'), digits)} (n={entry.get('n', 0)})"
    return (
        f"{num(entry['mean'], digits)} [{num(ci[0], digits)}, {num(ci[1], digits)}], n={entry['n']}"
    )


FLOORED = "†"  # marks an interval the comparison's noise floor widened (docs/STUDY.md 4)


def floored(entry: dict) -> str:
    """FLOORED when the noise floor, not this LR's own seeds, set the interval's width: the
    reader then knows the seeds there agree more closely than the interval says."""
    sd, used = entry.get("sd"), entry.get("sd_used")
    return f" {FLOORED}" if not _missing(sd) and not _missing(used) and used > sd else ""


def grid(value: dict | None) -> str:
    """An LR found on the grid (sweeps.study.stats.GridValue as a dict), censoring spelled out."""
    if not value:
        return "n/a"
    kind = value.get("kind", "")
    if kind == "none":
        return "none in the grid"
    if kind == "above":
        return f"> {lr(value['value'])}"
    if kind == "below":
        return f"<= {lr(value['value'])}"
    return lr(value["value"])


def median_range(stat: dict) -> str:
    """'0.0178 (seeds 0.0100 to 0.0316)': the median of per-seed values and their range;
    '0.562 (every seed)' when they agree."""
    if not stat.get("median"):
        return "n/a"
    low, high = grid(stat["min"]), grid(stat["max"])
    return f"{grid(stat['median'])} ({'every seed' if low == high else f'seeds {low} to {high}'})"


def seed_grid(seeds: dict) -> str:
    return ", ".join(grid(v) for _, v in sorted(seeds.items(), key=lambda kv: int(kv[0])))


def seed_range(seeds: dict) -> str:
    """'0.0105 to 0.0177, <= 3.16e-4': the range of the seeds' values inside the grid, then
    each censored value once, with how many seeds have it when more than one."""
    inside = sorted(v["value"] for v in seeds.values() if v["kind"] == "")
    outside = Counter(grid(v) for v in seeds.values() if v["kind"] != "")
    text = (
        ""
        if not inside
        else lr(inside[0])
        if inside[0] == inside[-1]
        else (f"{lr(inside[0])} to {lr(inside[-1])}")
    )
    censored = [v if n == 1 else f"{v} ({n} seeds)" for v, n in outside.items()]
    return ", ".join(filter(None, [text, *censored])) or "n/a"


def ratio(entry: dict) -> str:
    """A paired mean of log10 ratios as a geometric-mean ratio with its 90% interval."""
    if not entry.get("n") or _missing(entry.get("mean")):
        return "n/a"
    lo, hi = entry.get("ci90") or [None, None]
    if _missing(lo):
        return f"x{10 ** entry['mean']:.2f}"
    return f"x{10 ** entry['mean']:.2f} [x{10**lo:.2f}, x{10**hi:.2f}]"


def threshold(value: dict) -> str:
    """A necessity threshold as a sentence part: 'threshold 0.0032', 'no threshold in the
    grid (QK-norm necessary at no LR)', 'threshold <= 0.001 (necessary at every LR)'."""
    if not value or value.get("kind") == "none":
        return "no necessity threshold in the grid (necessary at no LR)"
    if value.get("kind") == "below":
        return f"necessity threshold {grid(value)} (necessary from the lowest LR)"
    return f"necessity threshold {grid(value)}"


def per_seed(seeds: dict) -> str:
    """'seed 0 none in the grid, seed 1 0.318': each seed named with its value."""
    return ", ".join(
        f"seed {k} {grid(v)}" for k, v in sorted(seeds.items(), key=lambda kv: int(kv[0]))
    )


def threshold_with_interval(c: dict) -> str:
    """A comparison's necessity threshold with its 90% interval: 'necessary from 0.0256 (the
    effect reaches m at ~0.015, 90% interval <= 0.001 to 0.0256)'."""
    t = c["threshold"]
    if t["kind"] != "":
        return grid(t)
    lo, hi = c.get("threshold_ci90") or [None, None]
    low = f"<= {lr(c['per_lr'][0]['lr'])}" if _missing(lo) and c.get("per_lr") else lr(lo)
    return (
        f"{lr(t['value'])} (the effect reaches m at ~{grid(c['threshold_estimate'])}, "
        f"90% interval {low} to {lr(hi)})"
    )
