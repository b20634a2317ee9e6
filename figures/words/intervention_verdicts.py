"""I1-I4 in words: QK-norm against the alternatives, as sweeps.study.alternatives decided them
per depth and arm (the typed analysis's decisions), each with its reason and the numbers behind
it (docs/STUDY.md section 9). Nothing here decides: it reads the decision's code, the LRs it
names and the per-LR entries of the comparisons it quotes.
"""

from __future__ import annotations

from figures.words import numbers
from figures.words.said import Worded
from sweeps.analysis import model as m
from sweeps.study.alternatives import Decision
from sweeps.study.rules import Comparison

CLAIMS = {
    "I1": "X stabilises `off`.",
    "I2": "X matches QK-norm where `off` breaks.",
    "I3": "X closes the low-LR gap.",
    "I4": "X adds to QK-norm.",
}


def intervention_arms(a: m.Analysis) -> list[str]:
    """The arms I1-I4 judged, in spec order (sweeps.study.alternatives.intervention_arms)."""
    judged = set()
    for arms in a.decisions.interventions.values():
        judged |= set(arms)
    return [x for x in a.settings.arms if x in judged]


def judge(a: m.Analysis) -> dict[str, dict[str, dict[str, Worded]]]:
    """{rung: {arm: {"I1": its verdict and reason, ...}}} for the intervention arms; {} when
    the spec has none."""
    s = a.settings
    out = {}
    for name, arms in a.decisions.interventions.items():
        depth = a.depths[name]
        out[name] = {
            arm: {h: Worded(d.verdict, REASONS[h](d, depth, arm, s)) for h, d in hs.items()}
            for arm, hs in arms.items()
        }
    return out


def _entry(depth: m.Rung, baseline: str, treatment: str, lr) -> m.LrEffect | None:
    """The per-LR entry of baseline vs treatment at lr, or None."""
    c = depth.comparisons.get(Comparison(baseline, treatment).key)
    if c is None or lr is None:
        return None
    return next((e for e in c.per_lr if e.lr == lr), None)


def _crit(depth: m.Rung, arm: str) -> m.GridPoint | None:
    return depth.arms[arm].eta_crit.median


def _i1(d: Decision, depth: m.Rung, arm: str, s: m.Settings) -> str:
    ref = s.reference
    t = depth.comparisons[Comparison(ref, arm).key].threshold
    crit = (
        f"critical LR {numbers.grid(_crit(depth, arm))} against {ref}'s "
        f"{numbers.grid(_crit(depth, ref))}"
    )
    if d.why == "needed":
        return f"needed against {ref} from {numbers.bracket(t)}; {crit}"
    if d.why == "not needed":
        fails = numbers.grid(_crit(depth, ref))
        return f"not needed against {ref} at any LR, though {ref} fails from {fails}"
    return f"threshold against {ref} {numbers.bracket(t)}; {crit}"


def _i2(d: Decision, depth: m.Rung, arm: str, s: m.Settings) -> str:
    ref, primary = s.reference, s.primary
    where = f"judged LRs from {ref}'s critical LR {numbers.grid(_crit(depth, ref))}"
    if d.why == "off does not break":
        return f"{ref} does not break inside the grid"
    if d.why == "necessary":
        worst = _entry(depth, arm, primary, d.at)
        return (
            f"{primary} is necessary over it at {numbers.lrs(d.lrs)}, of {d.n} {where} up "
            f"(largest gap {numbers.pm_interval(worst)} at {numbers.lr(d.at)})"
        )
    if d.why == "too few":
        return f"{d.n} {where} up (2 needed)"
    return f"{primary} is necessary over it at none of the {d.n} {where} up"


def _i3(d: Decision, depth: m.Rung, arm: str, s: m.Settings) -> str:
    ref, primary, low = s.reference, s.primary, d.at
    if d.why == "primary not judged":
        return f"the primary comparison is not judged at the lowest LR {numbers.lr(low)}"
    if d.why == "no gap":
        at = _entry(depth, ref, primary, low)
        return (
            f"no low-LR gap to close: {primary} is not necessary at {numbers.lr(low)} "
            f"({ref} - {primary} {numbers.pm_interval(at)})"
        )
    if d.why == "not judged":
        return f"{arm} vs {primary} is not judged at {numbers.lr(low)}"
    entry = _entry(depth, arm, primary, low)
    said = f"{arm} - {primary} at {numbers.lr(low)}: {numbers.pm_interval(entry)}"
    if d.why == "necessary":
        return f"{primary} is still necessary over it; {said}"
    if d.why == "closes":
        return f"the gap is negligible or reversed; {said}"
    return f"the gap is neither negligible nor shown; {said}"


def _i4(d: Decision, depth: m.Rung, arm: str, s: m.Settings) -> str:
    primary = s.primary
    if d.why == "none judged":
        return f"no LR of {arm} vs {primary} is judged"
    if d.why in ("hurts", "helps"):
        quoted = f"{arm} - {primary} {numbers.pm_interval(_entry(depth, arm, primary, d.at))}"
        if d.why == "hurts":
            return f"it hurts at {numbers.lrs(d.lrs)} ({quoted} at {numbers.lr(d.at)})"
        return (
            f"better than {primary} by more than {s.min_effect:g} nats at "
            f"{numbers.lrs(d.lrs)} ({quoted} at {numbers.lr(d.at)}), worse at none"
        )
    return (
        f"neither better nor worse than {primary} by more than {s.min_effect:g} nats at any "
        f"of {d.n} judged LRs"
    )


REASONS = {"I1": _i1, "I2": _i2, "I3": _i3, "I4": _i4}
