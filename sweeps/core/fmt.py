"""Numbers as text for the command line, one way everywhere: counts with SI prefixes and
durations (the estimate, the sweep's progress and plan). The report's own number formats
(learning rates, losses at fixed precision) are figures/words/numbers.py's."""

from __future__ import annotations

import math


def si(x: float, unit: str = "") -> str:
    """3 significant digits with an SI prefix: si(13.9e6) = '13.9M', si(2.3e15, 'FLOPs') =
    '2.3 PFLOPs'."""
    exp = 0
    if x and math.isfinite(x):
        exp = min(max(math.floor(math.log10(abs(x)) / 3), 0), 6)
    prefix, value = " kMGTPE"[exp].strip(), f"{x / 10 ** (3 * exp):.3g}"
    return f"{value} {prefix}{unit}" if unit else f"{value}{prefix}"


def duration(seconds: float) -> str:
    """'42.0 s', '1.5 min', '2.3 h', '4.0 days': the largest unit that keeps the number
    readable."""
    if seconds < 90:
        return f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
