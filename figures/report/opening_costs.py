"""Two blocks of the report's opening (figures/report/opening.py): what QK-norm costs per rung
(docs/STUDY.md section 17), said as plainly as where it helps, and a depth ladder's
attention-logit crossing beside its threshold (section 18, descriptive). Words only."""

from __future__ import annotations

from figures import present
from figures.report.opening_lines import nats
from figures.words import numbers
from figures.words.extrapolation import cost_trend_line
from sweeps.analysis import model as m
from sweeps.study import hypotheses

Item = str | tuple[str, list[str]]
Block = tuple[str, list[Item]]


def costs(a: m.Analysis) -> Block | None:
    """What QK-norm costs, per rung, said as plainly as where it helps (docs/STUDY.md section
    17): the effect at the reference arm's best LR, at each arm's own best LR, and the LRs
    where QK-norm is credibly worse (the harm window) or better."""
    s, rung = a.settings, present.ladder_of(a)
    items: list[Item] = []
    for name in sorted(a.depths, key=int):
        d = a.depths[name]
        c = hypotheses.primary(a, d)
        if c is None or d.h1 is None:
            continue
        parts = []
        if d.h1.stats:
            parts.append(
                f"at {s.reference}'s best LR {numbers.lr(d.h1.lr)}, {cost_text(d.h1.stats, s)}"
            )
        b = d.best_cost
        if b and b.stats and b.off_lr == b.on_lr:
            parts.append(f"both arms' best LR is {numbers.lr(b.off_lr)}")
        elif b and b.stats:
            parts.append(
                f"each arm at its own best LR ({s.reference} {numbers.lr(b.off_lr)}, "
                f"{s.primary} {numbers.lr(b.on_lr)}): {cost_text(b.stats, s)}"
            )
        by_lr = {e.lr: e for e in c.per_lr}
        for lo, hi in c.harm:  # each harmed LR with its effect: the cost, in full
            inside = [e for lr, e in by_lr.items() if lo <= lr <= hi and e.judged]
            effects = ", ".join(f"{numbers.lr(e.lr)}: {nats(e)}" for e in inside)
            parts.append(f"QK-norm is credibly worse at {_span(lo, hi)} ({effects})")
        for lo, hi in c.help:  # where it helps: the range and how much
            means = [e.mean for lr, e in by_lr.items() if lo <= lr <= hi and e.judged]
            parts.append(
                f"credibly better at {_span(lo, hi)} (by {numbers.num(min(means))}"
                + (f" to {numbers.num(max(means))} nats)" if len(means) > 1 else " nats)")
            )
        in_window = [e for e in c.per_lr if e.mark == "harmed"]
        alone = [  # worse at that LR's own 90% interval, short of the window's family-wise bar
            e
            for e in c.per_lr
            if e.judged
            and e.mark != "harmed"
            and e.ci90[1] is not None
            and e.ci90[1] < -s.min_effect
        ]
        if alone:
            effects = ", ".join(f"{numbers.lr(e.lr)}: {nats(e)}" for e in alone)
            parts.append(
                f"QK-norm is worse at {effects} by that LR's own 90% interval, short of the "
                "harm window's bar (two adjacent LRs, or one at the family-wise level)"
            )
        if not in_window and not alone:
            parts.append("no LR where QK-norm is credibly worse")
        # one sentence per point: a reader meets the cost in short sentences
        items.append(f"{rung.cap(name)}: " + ". ".join(p[0].upper() + p[1:] for p in parts) + ".")
    if not items:
        return None
    trend_line = cost_trend_line(a)
    if trend_line:
        items.append(trend_line[0].upper() + trend_line[1:])
    return (
        f"What does QK-norm cost? ({s.reference} - {s.primary}, nats; negative: QK-norm worse; "
        f"credibly: by more than {s.min_effect:g} nats, section 17's rule)",
        items,
    )


def _span(lo: float, hi: float) -> str:
    return f"LR {numbers.lr(lo)}" if lo == hi else f"LRs {numbers.lr(lo)} to {numbers.lr(hi)}"


def cost_text(p: m.Paired, s: m.Settings) -> str:
    """'QK-norm worse by 0.126 [0.106, 0.146] nats' where the interval lies below -m, 'better
    by ...' above m, else the signed effect with 'no difference shown'."""
    lo, hi = p.ci90
    if hi is not None and hi < -s.min_effect:
        return (
            f"QK-norm worse by {numbers.num(-p.mean)} [{numbers.num(-hi)}, {numbers.num(-lo)}] nats"
        )
    if lo is not None and lo > s.min_effect:
        return f"QK-norm better by {nats(p)}"
    return f"{s.reference} - {s.primary} = {nats(p)}, no difference shown"


def logit_growth(a: m.Analysis, rung) -> Item | None:
    """A depth ladder's mechanism beside its threshold (docs/STUDY.md section 18,
    descriptive): per level, the slope of the crossing LR per doubling and each rung's value."""
    g = a.logit_growth
    if g is None:
        return None
    lines = []
    for level, slope in sorted(g.slopes.items(), key=lambda kv: float(kv[0])):
        values = ", ".join(
            f"{rung.label(n)} {numbers.lr(c[level].lr) if c[level].lr else 'none'}"
            + (f" ({c[level].below} seed(s) below the grid)" if c[level].below else "")
            + (f" ({c[level].above} seed(s) never)" if c[level].above else "")
            for n, c in sorted(g.rungs.items(), key=lambda kv: int(kv[0]))
        )
        said = (
            f"{slope.value:+.3f} decades per doubling (90% interval {slope.lower:+.3f} to "
            f"{slope.upper:+.3f})"
            if slope
            else "no slope (fewer than 3 values)"
        )
        lines.append(f"above {level}: {said}. {values[0].upper()}{values[1:]}")
    head = (
        f"Beside it, descriptive (docs/STUDY.md section 18): the LR at which "
        f"{g.arm}'s max attention logit at step {g.step} first exceeds a level, per doubling "
        f"of {rung.name}:"
    )
    return head, lines
