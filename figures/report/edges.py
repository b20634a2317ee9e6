"""The report's section on where each arm fails and what lies near a cut (docs/STUDY.md section
13): each arm's failure edge under every failure definition with its 90% interval, the effect
below the reference arm's best LR with Bonferroni bounds, and the borderline runs with every
verdict or edge they move. Words only: the analysis computed every number."""

from __future__ import annotations

from figures import present
from figures.report.tables import markdown
from figures.words import numbers
from sweeps.analysis import model as m


def edge_text(e: m.Edge) -> str:
    """'0.0649 [0.0463, 0.0911]', or how many seeds lie beyond the grid."""
    if e.censored:
        return f"{e.censored} of {e.seeds} seeds beyond the grid"
    if e.value is None:
        return "n/a"
    return f"{numbers.lr(e.value)} [{numbers.lr(e.lower)}, {numbers.lr(e.upper)}]"


def section(a: m.Analysis) -> str:
    """'' where no rung has the edges (a report read from an older schema)."""
    rung = present.ladder_of(a)
    names = [n for n in sorted(a.depths, key=int) if a.depths[n].edges]
    if not names:
        return ""
    # the definitions the report shows, by the names it prints them with (with the
    # bigram-baseline rule off, `stuck` is `diverged` and shown once: present.failures_of)
    shown = present.failures_of(a)
    rows = [
        [rung.label(n), arm, *(edge_text(by[d]) for d in shown if d in by)]
        for n in names
        for arm, by in a.depths[n].edges.items()
    ]
    lines = [
        "## Failure edges and borderline runs",
        "",
        "Each arm's failure edge: the geometric mean of its seeds' critical LRs with a 90% "
        "interval (the sd at least the grid's resolution), under each failure definition "
        "(docs/STUDY.md section 13).",
        "",
        markdown([rung.name, "arm", *shown.values()], rows),
        "",
        f"Below {a.settings.reference}'s best LR ({a.settings.reference} - {a.settings.primary}, "
        "nats; Bonferroni-adjusted 90% intervals over the LRs there):",
        "",
    ]
    for n in names:
        low = a.depths[n].low_lr
        if low is None:
            continue
        parts = [
            f"{numbers.lr(lr)}: {numbers.num(x)} [{numbers.num(lo)}, {numbers.num(hi)}]"
            for lr, x, lo, hi in zip(low.lrs, low.means, low.lower, low.upper)
        ]
        lines.append(
            f"- {rung.label(n)}: {low.verdict}" + (f"; {'; '.join(parts)}" if parts else "")
        )
    lines += ["", "Borderline runs (trained within the fate margin of their cut):", ""]
    found = False
    for n in names:
        d = a.depths[n]
        if not d.borderline:
            continue
        found = True
        moved = "; ".join(
            f"{k}: {was} if failed, {now} if trained"
            for k, (was, now) in (d.both_ways or {}).items()
        )
        lines.append(
            f"- {rung.label(n)}: {', '.join(d.borderline)}. "
            + (f"Moves {moved}." if moved else "No verdict or edge moves.")
        )
    if not found:
        lines.append("None.")
    return "\n".join(lines + [""])
