"""I1-I4: QK-norm against the alternatives, decided from the analysis dict exactly as
docs/STUDY.md section 9 pre-registers them.

Each intervention arm X (figures/interventions.py: an arm the spec compares both with the
reference, `off vs X`, and with the primary, `X vs on`) is judged per depth:
- built on `off` (its qk_norm is the reference's): I1 (X stabilises off), I2 (X matches QK-norm
  where off breaks), I3 (X closes the low-LR gap);
- built on `on` (its qk_norm is the primary's, e.g. on + z-loss): I4 (X adds to QK-norm).
Like H1-H3 (figures/verdicts.py), nothing here raises on odd data: what cannot be decided is
inconclusive and says why. The per-LR calls come from sweeps.study.rules via the analysis
(`necessary`, `lower`, `upper`, `judged`); this module only reads them.
"""

from __future__ import annotations

from figures import fmt
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Comparison

CLAIMS = {
    "I1": "X stabilises `off`.",
    "I2": "X matches QK-norm where `off` breaks.",
    "I3": "X closes the low-LR gap.",
    "I4": "X adds to QK-norm.",
}
RANK = {"below": -1, "": 0, "above": 1}  # a censored critical LR orders beyond its grid end


def intervention_arms(result: dict) -> list[str]:
    """Arms other than reference and primary with both comparisons that switch an
    intervention of sweeps/core/interventions.py on or change it (their values differ from
    their base arm's: the primary when they share its qk_norm, else the reference), in spec
    order. A start-temperature control (`off-warm`, `on-cool`) changes none: it is no
    intervention, and I1-I4 do not judge it."""
    s = result["settings"]
    ref, primary = s["reference"], s["primary"]
    pairs = {tuple(p) for p in s.get("all_comparisons", [])}
    return [
        a
        for a in s["arms"]
        if a not in (ref, primary)
        and (ref, a) in pairs
        and (a, primary) in pairs
        and _switches(
            result, a, primary if _qk_norm(result, a) == _qk_norm(result, primary) else ref
        )
    ]


def _switches(result: dict, arm: str, base: str) -> bool:
    """Whether arm's intervention values (analysis.py, per depth) differ from base's."""
    for depth in result.get("depths", {}).values():
        mine, theirs = (depth["arms"].get(a, {}).get("interventions") for a in (arm, base))
        if mine is not None and theirs is not None:
            return mine != theirs
    return False


def judge(result: dict) -> dict:
    """{depth: {arm: {"I1": {"verdict", "reason"}, ...}}} for the intervention arms; {} when
    the spec has none."""
    s = result["settings"]
    arms = intervention_arms(result)
    out = {}
    for name, depth in result.get("depths", {}).items():
        per_arm = {}
        for arm in arms:
            vs_ref = depth["comparisons"].get(Comparison(s["reference"], arm).key)
            vs_primary = depth["comparisons"].get(Comparison(arm, s["primary"]).key)
            if vs_ref is None or vs_primary is None:
                continue
            if _qk_norm(result, arm) == _qk_norm(result, s["primary"]):
                per_arm[arm] = {"I4": _verdict(*i4(arm, vs_primary, s))}
            else:
                per_arm[arm] = {
                    "I1": _verdict(*i1(depth, arm, vs_ref, s)),
                    "I2": _verdict(*i2(depth, arm, vs_primary, s)),
                    "I3": _verdict(*i3(depth, arm, vs_primary, s)),
                }
        if per_arm:
            out[name] = per_arm
    return out


def i1(depth: dict, arm: str, vs_ref: dict, s: dict) -> tuple[str, str]:
    """Supported: `off vs X` has a necessity threshold in the grid (or at its bottom) and X's
    median critical LR is above off's. Not supported: no threshold while off fails in the grid."""
    off = depth["arms"][s["reference"]]["eta_crit"]["median"]
    mine = depth["arms"][arm]["eta_crit"]["median"]
    t = vs_ref["threshold"]
    crit = f"critical LR {fmt.grid(mine)} against {s['reference']}'s {fmt.grid(off)}"
    if t["kind"] in ("", "below") and _above(mine, off):
        return SUPPORTED, f"needed against {s['reference']} from {fmt.grid(t)}; {crit}"
    if t["kind"] == "none" and off and off["kind"] == "":
        return NOT_SUPPORTED, f"not needed against {s['reference']} at any LR, though " + (
            f"{s['reference']} fails from {fmt.grid(off)}"
        )
    return INCONCLUSIVE, f"threshold against {s['reference']} {fmt.grid(t)}; {crit}"


def i2(depth: dict, arm: str, vs_primary: dict, s: dict) -> tuple[str, str]:
    """Over the judged LRs of `X vs on` at or above off's median critical LR: supported when
    QK-norm is necessary over X at none, not supported at any, inconclusive below 2 LRs."""
    off = depth["arms"][s["reference"]]["eta_crit"]["median"]
    if not off or off["kind"] not in ("", "below"):
        return INCONCLUSIVE, f"{s['reference']} does not break inside the grid"
    high = [
        e
        for e in vs_primary["per_lr"]
        if e["judged"] and (off["kind"] == "below" or e["lr"] >= off["value"])
    ]
    where = f"judged LRs from {s['reference']}'s critical LR {fmt.grid(off)}"
    needed = [e for e in high if e["necessary"]]
    if needed:
        worst = max(needed, key=lambda e: e["mean"])
        return NOT_SUPPORTED, (
            f"{s['primary']} is necessary over it at {fmt.lrs([e['lr'] for e in needed])} "
            f"of the {where} (largest gap {fmt.pm_interval(worst)} at {fmt.lr(worst['lr'])})"
        )
    if len(high) < 2:
        return INCONCLUSIVE, f"{len(high)} {where} (2 needed)"
    return SUPPORTED, f"{s['primary']} is necessary over it at none of the {len(high)} {where}"


def i3(depth: dict, arm: str, vs_primary: dict, s: dict) -> tuple[str, str]:
    """Only where QK-norm is necessary at the lowest base LR on the primary comparison: the gap
    of `X vs on` there negligible (equivalent by TOST, as section 9 spells it; a gap shown
    negative, X better than on, closes it too) or necessary."""
    low = s["base_lrs"][0] if s.get("base_lrs") else None
    primary = depth["comparisons"].get(Comparison(s["reference"], s["primary"]).key)
    at = _entry(primary, low)
    if at is None or not at["judged"]:
        return INCONCLUSIVE, f"the primary comparison is not judged at the lowest LR {fmt.lr(low)}"
    if not at["necessary"]:
        return INCONCLUSIVE, (
            f"no low-LR gap to close: {s['primary']} is not necessary at {fmt.lr(low)} "
            f"({s['reference']} - {s['primary']} {fmt.pm_interval(at)})"
        )
    gap = _entry(vs_primary, low)
    if gap is None or not gap["judged"]:
        return INCONCLUSIVE, f"{arm} vs {s['primary']} is not judged at {fmt.lr(low)}"
    said = f"{arm} - {s['primary']} at {fmt.lr(low)}: {fmt.pm_interval(gap)}"
    if gap["necessary"]:
        return NOT_SUPPORTED, f"{s['primary']} is still necessary over it; {said}"
    if gap["equivalent"] or gap["upper"] < -s["min_effect"]:
        return SUPPORTED, f"the gap is negligible or reversed; {said}"
    return INCONCLUSIVE, f"the gap is neither negligible nor shown; {said}"


def i4(arm: str, vs_primary: dict, s: dict) -> tuple[str, str]:
    """d = L(X) - L(on) per LR: supported when the upper bound of d is below -m at some judged
    LR and LB of d <= m at every one; not supported when LB > m somewhere or no LR qualifies."""
    judged = [e for e in vs_primary["per_lr"] if e["judged"]]
    if not judged:
        return INCONCLUSIVE, f"no LR of {arm} vs {s['primary']} is judged"
    m = s["min_effect"]
    hurts = [e for e in judged if e["lower"] > m]
    helps = [e for e in judged if e["upper"] < -m]
    if hurts:
        worst = max(hurts, key=lambda e: e["mean"])
        return NOT_SUPPORTED, (
            f"it hurts at {fmt.lrs([e['lr'] for e in hurts])} ({arm} - {s['primary']} "
            f"{fmt.pm_interval(worst)} at {fmt.lr(worst['lr'])})"
        )
    if helps:
        best = min(helps, key=lambda e: e["mean"])
        return SUPPORTED, (
            f"better than {s['primary']} by more than m at {fmt.lrs([e['lr'] for e in helps])} "
            f"({arm} - {s['primary']} {fmt.pm_interval(best)} at {fmt.lr(best['lr'])}), worse "
            "at none"
        )
    return NOT_SUPPORTED, f"better than {s['primary']} by more than m at none of {len(judged)} LRs"


def _above(a: dict | None, b: dict | None) -> bool:
    """Is critical LR a above b (GridValue dicts; censored ends order beyond the grid)?"""
    if not a or not b or a["kind"] not in RANK or b["kind"] not in RANK:
        return False
    return (a["value"], RANK[a["kind"]]) > (b["value"], RANK[b["kind"]])


def _entry(comparison: dict | None, lr: float | None) -> dict | None:
    if comparison is None or lr is None:
        return None
    return next((e for e in comparison["per_lr"] if e["lr"] == lr), None)


def _qk_norm(result: dict, arm: str) -> str | None:
    return next((r["qk_norm"] for r in result.get("runs", []) if r["arm"] == arm), None)


def _verdict(verdict: str, reason: str) -> dict:
    return {"verdict": verdict, "reason": reason}
