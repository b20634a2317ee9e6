"""A re-judged report's comparison with the analysis it had: every verdict, threshold,
critical LR and LR sensitivity under the earlier rules (analysis-v4.json, or a pre-v4 report's
analysis-v3.json, kept beside the report) next to the same quantity under the current ones,
the changes marked."""

from __future__ import annotations

from figures import present
from figures.report.archive import OLD_ANALYSIS, OLD_REPORT, V4_ANALYSIS, V4_REPORT
from figures.report.tables import markdown
from figures.report.what_ran import judged_by
from figures.words import numbers
from figures.words.view import Said
from sweeps.analysis import model as m
from sweeps.study.hypotheses import HYPOTHESES


def rows(previous: dict, said: Said) -> list[list[str]]:
    """[quantity, before, now, changed] for everything both analyses decided (previous: the
    earlier analysis.json, untyped as the earlier rules wrote it; said: the analysis now)."""
    a = said.analysis
    out, rung = [], present.ladder_of(a)
    for h in HYPOTHESES:
        said_then = (
            previous.get("decided") if _is_v4(previous) else previous.get("verdicts")
        ) or {}
        before = said_then.get(h, {}).get("verdict")
        now = said.verdicts[h].verdict if h in said.verdicts else None
        if before or now:
            out.append([h, before or "-", now or "-"])
    for depth, d in a.depths.items():
        old = (previous.get("depths") or {}).get(depth, {})
        for k, c in d.comparisons.items():
            o = (old.get("comparisons") or {}).get(k)
            if o is not None:
                out.append(
                    [
                        f"threshold (v4: necessity; now: stability), {k}, {rung.label(depth)}",
                        _old_threshold(o),
                        numbers.bracket(c.threshold),
                    ]
                )
        for arm, x in d.arms.items():
            o = (old.get("arms") or {}).get(arm)
            if o is None:
                continue
            by = x.eta_crit_by_definition or {}
            now = f"{numbers.grid(x.eta_crit.median)} (stuck)" + "".join(
                f"; {k} {numbers.grid(v.median)}"
                for k, v in by.items()
                if k != "stuck" and v.median
            )
            out.append(
                [
                    f"critical LR, {arm}, {rung.label(depth)}",
                    numbers.grid(_old_grid(o["eta_crit"]["median"])),
                    now,
                ]
            )
            out.append(
                [
                    f"LR sensitivity, {arm}, {rung.label(depth)}",
                    numbers.num(o["sensitivity"].get("mean")),
                    numbers.num(x.sensitivity.mean),
                ]
            )
    for depth, arms in said.interventions.items():
        old = (
            previous.get("interventions")
            or (previous.get("decisions") or {}).get("interventions")
            or {}
        ).get(depth, {})
        for arm, hs in arms.items():
            for h, v in hs.items():
                before = old.get(arm, {}).get(h, {}).get("verdict", "-")
                out.append([f"{h}, {arm}, {rung.label(depth)}", before, v.verdict])
    return [r + ["**yes**" if _differs(r[1], r[2]) else ""] for r in out]


def section(previous: dict | None, said: Said, source: dict | None) -> str:
    """The report's "Re-judged" section; "" for a report not re-judged from an earlier one."""
    if not previous:
        return ""
    v4 = _is_v4(previous)
    kept = f"{V4_REPORT}, {V4_ANALYSIS}" if v4 else f"{OLD_REPORT}, {OLD_ANALYSIS}"
    why = "sections 13 and 17" if v4 else "section 10"
    lines = [
        "## Re-judged under the current rules",
        "",
        f"These runs were first reported under earlier rules ({'v4' if v4 else 'v3'}: {kept} "
        f"beside this report, docs/STUDY.md sha256 "
        f"`{str(previous.get('study_sha256', ''))[:16]}`). This report judges the same runs, "
        f"without retraining, under {judged_by(said.analysis)}; what changed and why: its {why}.",
        "",
    ]
    if source and source.get("gaps"):
        lines += [
            "It was made from the earlier analysis's runs table (the run directories are gone), "
            f"so it could not recompute {source['gaps']}.",
            "",
        ]
    table = rows(previous, said)
    changed = sum(bool(r[3]) for r in table)
    lines += [
        f"{changed} of {len(table)} quantities differ:",
        "",
        markdown(["quantity", f"before ({'v4' if v4 else 'v3'})", "now", "changed"], table),
    ]
    return "\n".join(lines)


def _is_v4(previous: dict) -> bool:
    """The earlier analysis is v4's (schema 4 or 5), not a pre-v4 one (no schema)."""
    return previous.get("schema") in (4, 5)


def _old_grid(value: dict | None) -> m.GridPoint | None:
    """An earlier analysis's grid value (its value and kind; a bracket and whether the value
    was interpolated where it wrote them) as a GridPoint."""
    if not value:
        return None
    bracket = value.get("bracket")
    return m.GridPoint(
        value.get("value"), value.get("kind", ""), bracket, value.get("interpolated", True)
    )


def _old_threshold(c: dict) -> str:
    """An earlier analysis's threshold: its value with its 90% interval when it had one."""
    t = c.get("threshold") or {}
    if t.get("kind") != "":
        return numbers.grid(_old_grid(t))
    if t.get("bracket"):  # v4's: a bracket, interpolated inside it where the effect is continuous
        return numbers.bracket(_old_grid(t))
    lo, hi = c.get("threshold_ci90") or [None, None]
    low = "<= bottom" if lo is None else numbers.lr(lo)
    return f"{numbers.lr(t['value'])} (90% {low} to {numbers.lr(hi)})"


def _differs(before: str, now: str) -> bool:
    """Changed: another verdict, or another value (the v4 text may add definitions after ';')."""
    return before.split(" (")[0].split(";")[0].strip() != now.split(" (")[0].split(";")[0].strip()
