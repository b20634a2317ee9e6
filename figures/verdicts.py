"""H1, H2a, H2b, H3 and the control C1, decided from the analysis dict exactly as
docs/STUDY.md section 5 pre-registers them; and the practitioner's rule per depth.

A verdict is supported, not supported or inconclusive, with its reason and the numbers behind
it. Each hypothesis is judged per depth; depths that agree give that verdict, depths that
disagree give inconclusive naming each one. Nothing here raises on odd data: what cannot be
decided is inconclusive, and says why.
"""

from __future__ import annotations

import math

from figures import fmt
from sweeps.study import rules
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from sweeps.study.stats import Paired, slope

MIN_DEPTHS = 3
CLAIMS = {
    "H1": "The effect of QK-norm is learning-rate-conditional: negligible (or slightly negative) "
    "at low LR, decisive at high LR.",
    "H2a": "QK-norm raises the critical learning rate (the max stable LR).",
    "H2b": "QK-norm lowers LR sensitivity.",
    "H3": "The necessity threshold falls as depth grows.",
    "C1": "The low-LR gap between QK-norm off and on is a start-temperature effect: it goes "
    "away when QK-norm off starts with on's attention-logit scale.",
}
TESTS = {
    "H1": "Per depth, primary comparison, lowest base-grid LR: negligible (|mean difference| "
    "below `negligible`, neither a benefit nor a harm beyond m shown by the 90% interval) "
    "there, and a necessity threshold inside the grid.",
    "H2a": "Per depth: one-sided 95% t lower bound of mean log10(eta_crit on / eta_crit off) "
    "over paired seeds (sd at least the grid's resolution) above 0.",
    "H2b": "Per depth: one-sided 95% t lower bound of mean (S off - S on) over paired seeds "
    "above the pre-registered minimum effect `min_sensitivity`.",
    "H3": "Least squares of log10(per-seed threshold) on log2(n_layer) over >= 3 depths: the "
    "one-sided 95% upper bound of the slope below 0.",
    "C1": "At every LR where QK-norm is necessary on the primary comparison, the start-matched "
    "control's gap to QK-norm on is negligible.",
}


def judge(analysis: dict) -> dict:
    settings = analysis["settings"]
    verdicts = {
        "H1": h1(analysis),
        "H2a": h2a(analysis),
        "H2b": h2b(analysis),
        "H3": h3(analysis),
        "C1": c1(analysis),
    }
    if not settings["preregistered"]:
        for v in verdicts.values():
            v.update(
                verdict=INCONCLUSIVE,
                reason="the plan has no pre-registered [study] "
                "(docs/STUDY.md section 6); " + v["reason"],
            )
    return verdicts


def _verdict(name: str, per_depth: dict, evidence: list[str]) -> dict:
    """Depth verdicts -> one: all agree, or inconclusive naming each depth's outcome."""
    outcomes = {v for v, _ in per_depth.values()}
    reasons = "; ".join(f"depth {d}: {v} ({why})" for d, (v, why) in per_depth.items())
    verdict = outcomes.pop() if len(outcomes) == 1 else INCONCLUSIVE
    if not per_depth:
        verdict, reasons = INCONCLUSIVE, "no depth has both arms of the comparison"
    return {
        "hypothesis": name,
        "claim": CLAIMS[name],
        "test": TESTS[name],
        "verdict": verdict,
        "reason": reasons,
        "evidence": evidence,
        "per_depth": {d: {"verdict": v, "reason": why} for d, (v, why) in per_depth.items()},
    }


def _primary(analysis: dict, depth: dict) -> dict | None:
    s = analysis["settings"]
    return depth["comparisons"].get(rules.Comparison(s["reference"], s["primary"]).key)


def _judged(comparison: dict) -> list[dict]:
    """The LRs the necessity rule judged (sweeps.study.rules: enough pairs, not a common
    ceiling, failures not mixed)."""
    return [e for e in comparison["per_lr"] if e["judged"]]


def _paired(entry: dict) -> Paired:
    nan = math.nan
    return Paired(
        entry["n"],
        *(
            nan if entry.get(k) is None else entry[k]
            for k in ("mean", "sd", "sd_used", "lower", "upper", "lower75")
        ),
    )


def _negligible(entry: dict, settings: dict) -> bool:
    return rules.negligible(_paired(entry), settings["min_effect"], settings["negligible"])


# -- H1 ------------------------------------------------------------------------------------------
def h1(analysis: dict) -> dict:
    s = analysis["settings"]
    per_depth, evidence = {}, []
    for name, depth in analysis["depths"].items():
        c = _primary(analysis, depth)
        entries = c["per_lr"] if c else []
        lowest = min(s["base_lrs"]) if s["base_lrs"] else math.nan
        low = next((e for e in entries if math.isclose(e["lr"], lowest)), None)
        if low is None or not low["judged"]:
            why = (
                "no pairs"
                if low is None
                else "a common ceiling"
                if low["ceiling"]
                else "failures mixed across the arms"
                if low["mixed"]
                else f"{low['n']} pair(s), fewer than {rules.MIN_SEEDS}"
                if low["n"] < rules.MIN_SEEDS
                else "the pairs tie: no spread to bound"
            )
            per_depth[name] = (
                INCONCLUSIVE,
                f"the rule cannot judge the lowest base-grid LR {fmt.lr(lowest)} ({why})",
            )
            continue
        t = c["threshold"]
        evidence.append(
            f"depth {name}: at the lowest LR {fmt.lr(low['lr'])} off - on = "
            f"{fmt.pm_interval(low)} (90% interval); necessity threshold "
            f"{fmt.threshold_with_interval(c)}"
        )
        off_fails = any(
            v["kind"] in ("", "below")
            for v in depth["arms"][s["reference"]]["eta_crit"]["seeds"].values()
        )
        caveat = (
            ""
            if s["start_control"]
            else "; no start-matched control in this sweep: a low-LR gap may be start "
            "temperature (see the control sweep)"
        )
        if low["lower"] > s["min_effect"]:
            per_depth[name] = (NOT_SUPPORTED, "QK-norm already matters at the lowest LR" + caveat)
        elif t["kind"] == "none" and off_fails:
            per_depth[name] = (
                NOT_SUPPORTED,
                "QK-norm is necessary at no LR although the off arm fails inside the grid",
            )
        elif _negligible(low, s) and t["kind"] == "":
            per_depth[name] = (
                SUPPORTED,
                f"negligible at {fmt.lr(low['lr'])}, necessary from {fmt.grid(t)}",
            )
        elif t["kind"] == "none":
            per_depth[name] = (
                INCONCLUSIVE,
                "the off arm never fails and QK-norm is never necessary: extend the LR grid upward",
            )
        elif low["upper"] < -s["min_effect"]:
            per_depth[name] = (
                NOT_SUPPORTED,
                f"QK-norm harms at the lowest LR (90% interval "
                f"{fmt.pm_interval(low)} lies below "
                f"-{fmt.num(s['min_effect'], 2)})",
            )
        else:
            per_depth[name] = (
                INCONCLUSIVE,
                f"the low-LR effect ({fmt.num(low['mean'])} nats) "
                f"is neither necessary nor negligible in both "
                f"directions (bound {fmt.num(s['negligible'], 2)})",
            )
    return _verdict("H1", per_depth, evidence)


# -- H2a, H2b --------------------------------------------------------------------------------
def _arm_pairs(analysis: dict, field: str):
    """(depth, the reference arm's field, the primary arm's field) at every depth with both."""
    s = analysis["settings"]
    for name, depth in analysis["depths"].items():
        arms = depth["arms"]
        if s["reference"] in arms and s["primary"] in arms:
            yield name, arms[s["reference"]][field], arms[s["primary"]][field]


def h2a(analysis: dict) -> dict:
    per_depth, evidence = {}, []
    for name, off_crit, on_crit in _arm_pairs(analysis, "eta_crit"):
        off, on = off_crit["seeds"], on_crit["seeds"]
        seeds = sorted(set(off) & set(on))
        h = analysis["depths"][name]["h2a"]
        evidence.append(
            f"depth {name}: critical LR off {fmt.median_range(off_crit)}, on "
            f"{fmt.median_range(on_crit)}; ratio on/off {fmt.ratio(h)} (90% "
            f"interval) over {h['n']} paired seeds"
        )
        kinds = [off[k]["kind"] for k in seeds] + [on[k]["kind"] for k in seeds]
        if any(off[k]["kind"] == "above" for k in seeds):
            per_depth[name] = (
                INCONCLUSIVE,
                "the off arm does not fail inside the grid in "
                "every seed: extend the LR grid upward",
            )
        elif "below" in kinds or "none" in kinds:
            per_depth[name] = (
                INCONCLUSIVE,
                "a critical LR lies below the grid: extend it downward",
            )
        else:
            per_depth[name] = _paired_verdict(
                h, "critical LR raised", "not raised", lambda x: f"x{10**x:.2f}"
            )
    return _verdict("H2a", per_depth, evidence)


def h2b(analysis: dict) -> dict:
    per_depth, evidence = {}, []
    m = analysis["settings"]["min_sensitivity"]
    for name, off, on in _arm_pairs(analysis, "sensitivity"):
        h = analysis["depths"][name]["h2b"]
        evidence.append(
            f"depth {name}: LR sensitivity off {fmt.pm(off['mean'], off['sd'])}, "
            f"on {fmt.pm(on['mean'], on['sd'])} nats; off - on "
            f"{fmt.pm_interval(h)} (90% interval; minimum effect {fmt.num(m)})"
        )
        if not (off["complete"] and on["complete"]):
            per_depth[name] = (
                INCONCLUSIVE,
                "incomplete: a run of the sensitivity range is missing or failed",
            )
        else:
            per_depth[name] = _paired_verdict(h, "sensitivity lowered", "not lowered", m=m)
    return _verdict("H2b", per_depth, evidence)


def _paired_verdict(h: dict, yes: str, no: str, show=fmt.num, m: float = 0.0) -> tuple[str, str]:
    """The verdict sweeps.study.rules.paired_verdict decided, with its reason. show: how a
    value reads (a log10 ratio reads as a ratio, 0 as x1.00)."""
    verdict = h["verdict"]
    lower = h.get("lower")
    if h["n"] < rules.MIN_SEEDS:
        return INCONCLUSIVE, f"{h['n']} paired seed(s): at least {rules.MIN_SEEDS} are needed"
    if lower is None:
        return INCONCLUSIVE, "the paired values tie and no floor bounds their spread"
    if verdict == SUPPORTED:
        return SUPPORTED, f"{yes} (one-sided 95% lower bound {show(lower)} > {show(m)})"
    if verdict == NOT_SUPPORTED:
        if h["mean"] <= 0:
            return NOT_SUPPORTED, f"{no} (mean {show(h['mean'])} <= {show(0.0)})"
        return NOT_SUPPORTED, (
            f"{no} by the minimum effect (one-sided 95% upper bound {show(h['upper'])} < {show(m)})"
        )
    return INCONCLUSIVE, (
        f"in the predicted direction (mean {show(h['mean'])}) but the "
        f"one-sided 95% lower bound {show(lower)} does not exceed {show(m)}"
    )


# -- H3 ------------------------------------------------------------------------------------------
def h3(analysis: dict) -> dict:
    depths = {int(name): _primary(analysis, d) for name, d in analysis["depths"].items()}
    depths = {k: v for k, v in sorted(depths.items()) if v is not None}
    evidence = [
        f"depth {k}: "
        + (
            f"necessity threshold {fmt.threshold_with_interval(c)}"
            if c["threshold"]["kind"] == ""
            else fmt.threshold(c["threshold"])
        )
        + f"; per seed: {fmt.per_seed(c['seed_thresholds'])}"
        for k, c in depths.items()
    ]
    base = {
        "hypothesis": "H3",
        "claim": CLAIMS["H3"],
        "test": TESTS["H3"],
        "evidence": evidence,
        "per_depth": {},
    }
    if len(depths) < MIN_DEPTHS:
        return {
            **base,
            "verdict": INCONCLUSIVE,
            "reason": f"{len(depths)} depth(s) with both arms: a trend needs at least "
            f"{MIN_DEPTHS}; the depth spec runs 3",
        }
    x, y, problems = [], [], []
    for depth, c in depths.items():
        inside = [t["value"] for t in c["seed_thresholds"].values() if t["kind"] == ""]
        if c["threshold"]["kind"] != "" or len(inside) < 2:
            problems.append(
                f"depth {depth}: threshold {fmt.grid(c['threshold'])}, "
                f"{len(inside)} per-seed threshold(s) inside the grid"
            )
        x += [math.log2(depth)] * len(inside)
        y += [math.log10(v) for v in inside]
    if problems:
        return {**base, "verdict": INCONCLUSIVE, "reason": "; ".join(problems)}
    s = slope(x, y)
    base["evidence"].append(
        f"slope of log10 threshold per doubling of depth: "
        f"{fmt.num(s.slope)} (90% interval {fmt.num(s.lower)} to "
        f"{fmt.num(s.upper)}, {s.n} per-seed thresholds); the threshold "
        f"changes by x{fmt.num(10**s.slope, 2)} per doubling"
    )
    base["slope"] = {
        "n": s.n,
        "value": s.slope,
        "lower": s.lower,
        "upper": s.upper,
        "ci90": [s.lower, s.upper],
    }
    if s.upper < 0:
        verdict, reason = SUPPORTED, "the slope's one-sided 95% upper bound lies below 0"
    elif s.slope >= 0:
        verdict, reason = NOT_SUPPORTED, "the threshold does not fall with depth (slope >= 0)"
    else:
        verdict, reason = (
            INCONCLUSIVE,
            ("the slope is negative but its one-sided 95% upper bound is not below 0"),
        )
    return {**base, "verdict": verdict, "reason": reason}


# -- C1 ------------------------------------------------------------------------------------------
def c1(analysis: dict) -> dict:
    s = analysis["settings"]
    if not s["start_control"]:
        return {
            "hypothesis": "C1",
            "claim": CLAIMS["C1"],
            "test": TESTS["C1"],
            "verdict": INCONCLUSIVE,
            "evidence": [],
            "per_depth": {},
            "reason": "not assessed: the spec names no start-matched control arm",
        }
    per_depth, evidence = {}, []
    for name, depth in analysis["depths"].items():
        primary = _primary(analysis, depth)
        control = depth["comparisons"].get(rules.Comparison(s["start_control"], s["primary"]).key)
        if primary is None or control is None:
            continue
        by_lr = {e["lr"]: e for e in _judged(primary)}
        outcomes = []
        for e in _judged(control):
            p = by_lr.get(e["lr"])
            if p is None:
                continue
            evidence.append(
                f"depth {name}, LR {fmt.lr(e['lr'])}: off - on "
                f"{fmt.pm_interval(p)}; {s['start_control']} - on "
                f"{fmt.pm_interval(e)}"
            )
            if p["lower"] <= s["min_effect"]:
                continue  # no gap to explain at this LR
            outcomes.append(
                NOT_SUPPORTED
                if e["lower"] > s["min_effect"]
                else SUPPORTED
                if _negligible(e, s)
                else INCONCLUSIVE
            )
        if not outcomes:
            per_depth[name] = (INCONCLUSIVE, "QK-norm is necessary at no LR the control ran")
        elif NOT_SUPPORTED in outcomes:
            per_depth[name] = (
                NOT_SUPPORTED,
                "the start-matched control is itself worse than QK-norm on",
            )
        elif set(outcomes) == {SUPPORTED}:
            per_depth[name] = (
                SUPPORTED,
                f"the gap vanishes with the start matched at all {len(outcomes)} such LR(s)",
            )
        else:
            per_depth[name] = (
                INCONCLUSIVE,
                "the control's gap is neither negligible nor necessary at some LR",
            )
    return _verdict("C1", per_depth, evidence)


# -- the rule a practitioner can use ---------------------------------------------------------
def practitioner_rules(analysis: dict) -> dict:
    """Per depth: {"text": the rule a practitioner can use, "influence": the runs whose removal
    alone moves the threshold (leave-one-run-out), each with the threshold without it}."""
    s = analysis["settings"]
    out = {}
    for name, depth in analysis["depths"].items():
        c = _primary(analysis, depth)
        if c is None:
            continue
        out[name] = {"text": _rule_text(name, depth, c, s), "influence": c["influence"]}
    return out


def _rule_text(name: str, depth: dict, c: dict, s: dict) -> str:
    t, ref = c["threshold"], depth["arms"][s["reference"]]
    judged = _judged(c)
    # the budget of the compared arms (a budget spec also runs arms with more tokens)
    tokens = depth["tokens_per_param"]["by_budget"].get(str(int(ref["budget"])), math.nan)
    failing = _failing(ref["eta_crit"]["median"])
    head = f"At depth {name} ({fmt.num(tokens, 2)} tokens/parameter)"
    movers = {str(m["run_id"]) for m in c["influence"]}
    at = sorted({m["lr"] for m in c["influence"] if m.get("lr") is not None})
    fragile = (
        f" Leave-one-run-out: {len(movers)} run(s)"
        + (f" at LR {fmt.lrs(at)}" if at else "")
        + " alone move the threshold (named in the thresholds table)."
        if movers
        else ""
    )
    if t["kind"] == "":
        below = [e for e in judged if e["lr"] < t["value"]]
        free = [e["lr"] for e in below if not e["necessary"]]
        helped = [e["lr"] for e in below if e["necessary"]]
        return (
            f"{head}: QK-norm is necessary from LR ~{fmt.threshold_with_interval(c)} up "
            f"(per-seed thresholds {fmt.seed_range(c['seed_thresholds'])}); "
            f"below it, QK-norm was not shown to matter by more than "
            f"{fmt.num(s['min_effect'], 2)} nats at LR {fmt.lrs(free)}"
            + (
                f", but it helped at LR {fmt.lrs(helped)} too"
                + (
                    ""
                    if s["start_control"]
                    else " (start temperature or stability? see the control sweep)"
                )
                if helped
                else ""
            )
            + f"; {failing}."
            + fragile
        )
    if t["kind"] == "below":
        return (
            f"{head}: QK-norm helped already at the lowest LR judged "
            f"({fmt.lr(t['value'])}): keep it at every LR of this grid"
            + (
                ""
                if s["start_control"]
                else " (or check whether a start-matched init does as well)"
            )
            + "."
            + fragile
        )
    top = judged[-1]["lr"] if judged else math.nan
    return (
        f"{head}: QK-norm was not shown necessary at any LR judged up to "
        f"{fmt.lr(top)}; {failing}." + fragile
    )


def _failing(median: dict | None) -> str:
    """Where the reference arm's runs start to fail (its median critical LR), censoring said
    in words: a critical LR above the grid means its runs did not fail at all."""
    if not median or median["kind"] == "none":
        return "without it no critical LR could be found"
    if median["kind"] == "above":
        return f"without it runs did not fail up to LR {fmt.lr(median['value'])}, the grid's top"
    if median["kind"] == "below":
        return f"without it runs fail already at the lowest LR, {fmt.lr(median['value'])}"
    return f"without it runs fail from LR ~{fmt.grid(median)}"
