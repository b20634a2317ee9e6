"""Whether section 20's cost verdicts rest on the LR grids (docs/STUDY.md section 20, T7 and T8;
an analysis beside the section, not a rule of it). A head-width sweep and its reference need not
hold the same LRs: cpu-width's width-128 rung was trained on half decades and refined, while
cpu-width128-head64 runs quarter decades, so `off`'s best LR can land where the reference never
trained, and T7 then compares costs at different LRs. Two reads answer it:

- the cost, off - on per seed, at every LR both sweeps hold, with section 20's shift (Welch's
  90% interval) at each: whether the cost moved at a fixed LR;
- section 20's carry rule again with the reference grown by another report's runs at the LRs it
  lacks (figures/head_width.py --grown REF=REPORT), each of which must be the reference's own
  configuration at another LR (head_width_page.grown_reference checks it).

sweeps/analysis/head_width_page.py computes both (lr_grids); this module words them, and
figures/head_width.py writes this section of the head-width page.
"""

from __future__ import annotations

import math

from sweeps.analysis import head_width_page as hp


def number(x: float | None, fmt: str = "+.3f") -> str:
    """A number for the page's tables; n/a where there is none."""
    return "n/a" if x is None or not math.isfinite(x) else format(x, fmt)


def shift_text(m) -> str:
    """A shift (mean, lower, upper) as the page writes it: +0.123 [+0.045, +0.201]."""
    return f"{number(m[0])} [{number(m[1])}, {number(m[2])}]"


def _lrs(parts: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in parts.items())


def _harm(window) -> str:
    """A harm window as carry.t9_side keeps it: its first (lowest LR, highest LR), or None."""
    return "none" if not window else f"LRs {window[0]:g} to {window[1]:g}"


def _detail(j: hp.GrownQuantity) -> str:
    if j.shift is not None:
        return (
            f", shift {shift_text(j.shift)} (reference: {_lrs(j.reference_lrs)}; new: "
            f"{_lrs(j.new_lrs)})"
        )
    if j.harm_judged:
        return f" (harm window: reference {_harm(j.reference_harm)}, new {_harm(j.new_harm)})"
    return ""


def render(rows: list[hp.LRGrid]) -> str:
    """The page's grid section: per head-width sweep, the cost at each LR both grids hold, and
    T7/T8 against a grown reference where there is one. Empty without rows."""
    if not rows:
        return ""
    lines = [
        "",
        "## Robustness: the LR grids",
        "",
        "T7 reads QK-norm's cost at each sweep's own `off`'s best LR, so where the two grids "
        "differ it compares costs at different LRs. Here the cost off - on at every LR both "
        "sweeps hold (means over seeds, capped losses; `*`: that side's `off` is best there; "
        "shift: new - reference, Welch's 90% interval, up: QK-norm costs less at the new "
        "head width), and T7 and T8 again where a report grows the reference by its own "
        "configuration at LRs it lacked (an analysis, not a rule of section 20). The "
        "outcome at one LR is not a verdict: the rule says 'differs' about 9% of the time "
        "when nothing moved (section 20), so across a page's 7-8 LRs about one false "
        "'differs' is expected.",
    ]
    for r in rows:
        lines += [
            "",
            f"### {r.report} against {r.reference}",
            "",
            "| LR | reference: off - on | new: off - on | shift | outcome |",
            "|---|---|---|---|---|",
        ]
        for x in r.costs:
            ref_star, new_star = ("*" if k in x.best else "" for k in ("reference", "new"))
            lines.append(
                f"| {x.lr:g} | {number(x.reference)}{ref_star} "
                f"| {number(x.new)}{new_star} | {shift_text(x.shift)} | {x.outcome} |"
            )
        if r.grown_by is not None:
            lines += ["", f"With {r.reference} grown by {r.grown_by}:", ""]
            for q, j in (r.grown or {}).items():
                lines.append(f"- {q}: {j.outcome}{_detail(j)}")
    return "\n".join(lines) + "\n"
