"""Number formatting shared by verdicts and the report: fixed precision, so text is stable."""
from __future__ import annotations

import math


def lr(x: float) -> str:
    """A learning rate; inf means 'at no swept LR', NaN 'below the grid or not measured'."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return "none in grid"
    return f"{x:.3g}"


def num(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def pm(mean: float, sd: float, digits: int = 3) -> str:
    """mean ± sd, or the mean alone when sd is undefined (one seed)."""
    if sd is None or (isinstance(sd, float) and math.isnan(sd)):
        return num(mean, digits)
    return f"{num(mean, digits)} ± {num(sd, digits)}"


def interval(lo: float, hi: float) -> str:
    return f"[{lr(lo)}, {lr(hi)}]"
