"""A re-judged report's comparison with the analysis it had: every verdict, threshold,
critical LR and LR sensitivity under the earlier rules (analysis-v4.json, or a pre-v4 report's
analysis-v3.json, kept beside the report) next to the same quantity under the current ones,
the changes marked."""

from __future__ import annotations

from figures import present
from figures.report.tables import markdown
from figures.report.what_ran import judged_by
from figures.words import numbers
from figures.words.view import Said
from sweeps.analysis.archive import OLD_ANALYSIS, OLD_REPORT, V4_ANALYSIS, V4_REPORT, Source
from sweeps.analysis.previous import Previous, Threshold
from sweeps.study.hypotheses import HYPOTHESES


def rows(previous: Previous, said: Said) -> list[list[str]]:
    """[quantity, before, now, changed] for everything both analyses decided (previous: the
    earlier analysis as sweeps.analysis.previous reads it; said: the analysis now)."""
    a = said.analysis
    out, rung = [], present.ladder_of(a)
    for h in HYPOTHESES:
        before = previous.verdicts.get(h)
        now = said.verdicts[h].verdict if h in said.verdicts else None
        if before or now:
            out.append([h, before or "-", now or "-"])
    for depth, d in a.depths.items():
        thresholds = previous.thresholds.get(depth, {})
        for k, c in d.comparisons.items():
            if k in thresholds:
                out.append(
                    [
                        f"threshold (v4: necessity; now: stability), {k}, {rung.label(depth)}",
                        _old_threshold(thresholds[k]),
                        numbers.bracket(c.threshold),
                    ]
                )
        arms = previous.arms.get(depth, {})
        for arm, x in d.arms.items():
            o = arms.get(arm)
            if o is None:
                continue
            by = x.eta_crit_by_definition or {}
            now = f"{numbers.grid(x.eta_crit.median)} (stuck)" + "".join(
                f"; {k} {numbers.grid(v.median)}"
                for k, v in by.items()
                if k != "stuck" and v.median
            )
            label = rung.label(depth)
            out.append([f"critical LR, {arm}, {label}", numbers.grid(o.critical_lr), now])
            out.append(
                [
                    f"LR sensitivity, {arm}, {rung.label(depth)}",
                    numbers.num(o.sensitivity),
                    numbers.num(x.sensitivity.mean),
                ]
            )
    for depth, arms in said.interventions.items():
        old = previous.interventions.get(depth, {})
        for arm, hs in arms.items():
            for h, v in hs.items():
                before = old.get(arm, {}).get(h, "-")
                out.append([f"{h}, {arm}, {rung.label(depth)}", before, v.verdict])
    return [r + ["**yes**" if _differs(r[1], r[2]) else ""] for r in out]


def section(source: Source | None, said: Said) -> str:
    """The report's "Re-judged" section; "" for a report not re-judged from an earlier one
    (source: where a re-rendered report's data came from, with the analysis it had)."""
    previous = source.previous if source else None
    if previous is None:
        return ""
    v4 = previous.rules == "v4"
    kept = f"{V4_REPORT}, {V4_ANALYSIS}" if v4 else f"{OLD_REPORT}, {OLD_ANALYSIS}"
    why = "sections 13 and 17" if v4 else "section 10"
    lines = [
        "## Re-judged under the current rules",
        "",
        f"These runs were first reported under earlier rules ({previous.rules}: {kept} "
        f"beside this report, docs/STUDY.md sha256 "
        f"`{previous.study_sha256[:16]}`). This report judges the same runs, "
        f"without retraining, under {judged_by(said.analysis)}; what changed and why: its {why}.",
        "",
    ]
    if source.gaps:
        lines += [
            "It was made from the earlier analysis's runs table (the run directories are gone), "
            f"so it could not recompute {source.gaps}.",
            "",
        ]
    table = rows(previous, said)
    changed = sum(bool(r[3]) for r in table)
    lines += [
        f"{changed} of {len(table)} quantities differ:",
        "",
        markdown(["quantity", f"before ({previous.rules})", "now", "changed"], table),
    ]
    return "\n".join(lines)


def _old_threshold(t: Threshold) -> str:
    """An earlier analysis's threshold: its value with its 90% interval when it had one."""
    point = t.point
    if point is None or point.kind != "":
        return numbers.grid(point)
    if point.bracket:  # v4's: a bracket, interpolated inside it where the effect is continuous
        return numbers.bracket(point)
    lo, hi = t.ci90
    low = "<= bottom" if lo is None else numbers.lr(lo)
    return f"{numbers.lr(point.value)} (90% {low} to {numbers.lr(hi)})"


def _differs(before: str, now: str) -> bool:
    """Changed: another verdict, or another value (the v4 text may add definitions after ';')."""
    return before.split(" (")[0].split(";")[0].strip() != now.split(" (")[0].split(";")[0].strip()
