"""The answer a practitioner reads first: the report's opening, and what `figures` prints.

It answers what the sweep was built to ask before anything else: QK-norm against each cheaper
fix (a spec with intervention arms: I1-I4), the start temperature (a start-matched control:
C1), the trend along a ladder (with depth: H3; with width: W1, W2 and the line carried to the
core width), whether the calls hold with more tokens (a budget check); then where QK-norm is
necessary against no QK-norm at each rung (depth or width, figures/ladder.py); last every
verdict with what it means and the interval that decided it. Short sentences, one point each. It
words the analysis dict (analysis.json) and decides nothing: every number comes from there.
"""

from __future__ import annotations

from figures import budget, fmt, ladder, present, token_check
from figures.extrapolation import extrapolation_head, extrapolation_lines
from figures.intervention_verdicts import intervention_arms
from figures.practitioner import rule_parts
from figures.verdicts import h2a_call, share_text
from figures.wording import UNREGISTERED, WORDING
from sweeps.study.hypotheses import HYPOTHESES
from sweeps.study.rules import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Comparison

ANSWER = {SUPPORTED: "Yes", NOT_SUPPORTED: "No", INCONCLUSIVE: "Not decided"}

# A bullet: its text, or its text with sub-bullets (the numbers behind it).
Item = str | tuple[str, list[str]]
Block = tuple[str, list[Item]]  # a title and its bullets


def blocks(view: dict) -> list[Block]:
    """The opening, question by question (none before any run finished)."""
    if not view.get("depths"):
        return []
    found = [
        _toy(view),
        _interventions(view),
        _control(view),
        _trend(view),
        _token_check(view),
        _budget(view),
        _off_on(view),
        _verdicts(view),
    ]
    return [b for b in found if b and b[1]]


def terminal(view: dict) -> list[str]:
    """The opening as the terminal prints it: titles, then indented bullets."""
    lines = []
    for title, items in blocks(view):
        lines.append(title)
        for item in items:
            text, subs = (item, []) if isinstance(item, str) else item
            lines += [f"  - {text}", *(f"    - {s}" for s in subs)]
    return lines


def markdown(view: dict) -> list[str]:
    """The opening as report.md shows it: bold titles, then bullet lists."""
    lines = []
    for title, items in blocks(view):
        lines += [f"**{title}**", ""]
        for item in items:
            text, subs = (item, []) if isinstance(item, str) else item
            lines += [f"- {text}", *(f"  - {s}" for s in subs)]
        lines.append("")
    return lines


# -- whether the runs say anything at all -------------------------------------------------------
def _toy(view: dict) -> Block | None:
    """A sweep none of whose arms beats the bigram baseline (analysis.json's "baseline_check",
    decided by sweeps.study.rules.baseline_check): it demonstrates the harness, and says so
    before anything it computed."""
    check = view.get("baseline_check") or {}
    if check.get("beaten") is not False:
        return None
    best = check["best"]
    arms = [a for a in view["settings"]["arms"] if a in best] + sorted(
        set(best) - set(view["settings"]["arms"])
    )
    each = ", ".join(f"{arm} {best[arm]:.3f}" for arm in arms)
    return (
        "A harness demonstration, not an answer: no arm beats the bigram baseline, so nothing "
        "below is about QK-norm",
        [
            f"Every arm's best run (its lowest final loss at any LR and seed) ends worse than "
            f"the corpus's bigram baseline, {check['baseline']:.3f} nats: {each}. These runs "
            "have not learned what counting pairs of tokens gives, so what follows only shows "
            "the harness running end to end; QK-norm's effect on them is no evidence either "
            "way."
        ],
    )


# -- what the sweep was built to ask -------------------------------------------------------------
I_QUESTION = {
    "I1": "Does it stabilise {ref}? (I1: necessary against {ref} somewhere, and its runs fail "
    "at a higher LR than {ref}'s)",
    "I2": "Does it match QK-norm where {ref} breaks? (I2: {primary} necessary over it at no LR "
    "from {ref}'s critical LR up)",
    "I3": "Does it close the low-LR gap? (I3: {primary} no longer necessary over it at the "
    "lowest LR)",
    "I4": "Does it add to QK-norm? (I4: better than {primary} somewhere, worse nowhere)",
}


def _interventions(view: dict) -> Block | None:
    """QK-norm against each cheaper fix (I1-I4): per question the arms it holds for and not,
    then each arm's reason with the interval that decided it (one depth), or where to find
    them (several)."""
    judged = view.get("interventions") or {}
    if not judged:
        return None
    s = view["settings"]
    ref, primary = s["reference"], s["primary"]
    order = intervention_arms(view)
    rung = ladder.of(view)
    depths = sorted(judged, key=int)
    items: list[Item] = []
    for h in ("I1", "I2", "I3", "I4"):
        calls = {
            (arm, d): judged[d][arm][h]
            for d in depths
            for arm in sorted(judged[d], key=order.index)
            if h in judged[d][arm]
        }
        if not calls:
            continue
        question = I_QUESTION[h].format(ref=ref, primary=primary)
        said = []
        for verdict in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE):
            arms = _arms_with(calls, verdict, depths, rung)
            if arms:
                said.append(f"{ANSWER[verdict].lower()}: {arms}")
        subs = (
            [f"{arm}: {v['reason']}" for (arm, _), v in calls.items()] if len(depths) == 1 else []
        )
        answer = "; ".join(said)
        items.append((f"{question} {answer[0].upper()}{answer[1:]}.", subs))
    if len(depths) > 1:
        items.append(
            f"Each arm's reasons and numbers per {rung.name}: Interventions, under Tables."
        )
    where = f", {rung.label(depths[0])}" if len(depths) == 1 else ""
    return (
        f"Would a cheaper fix do instead of QK-norm? ({', '.join(order)}{where}; I1-I4, "
        "docs/STUDY.md section 9)",
        items,
    )


def _arms_with(calls: dict, verdict: str, depths: list[str], rung: ladder.Ladder) -> str:
    """The arms with this verdict, each naming its rungs unless it has it at every rung."""
    by_arm: dict[str, list[str]] = {}
    for (arm, d), v in calls.items():
        if v["verdict"] == verdict:
            by_arm.setdefault(arm, []).append(d)
    every = len(depths)
    return ", ".join(
        arm if len(ds) == every else f"{arm} ({rung.name} {', '.join(ds)})"
        for arm, ds in by_arm.items()
    )


def _control(view: dict) -> Block | None:
    """The start temperature (C1): does off started at on's attention-logit scale close the
    low-LR gap? The answer, then the gaps at each LR where QK-norm is necessary."""
    s = view["settings"]
    control, ref, primary = s["start_control"], s["reference"], s["primary"]
    decided = (view.get("decisions") or {}).get("C1") or {}
    if not control or not decided:
        return None
    items: list[Item] = []
    for name in sorted(decided, key=int):
        prefix = f"{ladder.of(view).cap(name)}: " if len(decided) > 1 else ""
        answer = ANSWER[decided[name]["verdict"]]
        subs = [
            f"LR {fmt.lr(lr)}: {ref} - {primary} {_nats(p)}; {control} - {primary} {_nats(c)}"
            + share_text(p["mean"], c["mean"])
            for lr, p, c in _c1_rows(view["depths"][name], s)
        ]
        items.append((f"{prefix}{answer}: {_c1_says(view, name)}.", subs))
    return (
        f"Is the low-LR gap between {ref} and {primary} the start temperature? (C1: {control} "
        f"is {ref} started at {primary}'s attention-logit scale; [a, b]: 90% interval)",
        items,
    )


def _c1_says(view: dict, name: str, depth: dict | None = None) -> str:
    """C1 at one rung in words, with the largest gap of the control to the primary arm."""
    s = view["settings"]
    control, primary = s["start_control"], s["primary"]
    why = view["decisions"]["C1"][name]["why"]
    rows = _c1_rows(depth or view["depths"][name], s)
    if why == "no gap" or not rows:
        return f"QK-norm is necessary at no LR that {control} ran"
    lr, _, worst = max(rows, key=lambda r: r[2]["mean"])
    largest = f"largest gap {_nats(worst)}, at LR {fmt.lr(lr)}"
    if why == "control worse":
        worse = [x for x, _, c in rows if c["necessary"]]
        return (
            f"{control} is still worse than {primary} by more than {s['min_effect']:g} nats at "
            f"{fmt.lrs(worse)}; {largest}"
        )
    if why == "start":
        return (
            f"{control} - {primary} lies inside ±{s['negligible']:g} nats at all {len(rows)} LRs "
            f"where QK-norm is necessary; {largest}"
        )
    return (
        f"{control} - {primary} is neither inside ±{s['negligible']:g} nats nor above "
        f"{s['min_effect']:g} at some LR where QK-norm is necessary; {largest}"
    )


def _nats(entry: dict) -> str:
    """A paired effect with its 90% interval, in nats: '0.274 [0.211, 0.337] nats'."""
    lo, hi = entry.get("ci90") or (None, None)
    if lo is None:
        return f"{fmt.num(entry.get('mean'))} nats"
    return f"{fmt.num(entry['mean'])} [{fmt.num(lo)}, {fmt.num(hi)}] nats"


def _c1_rows(depth: dict, s: dict) -> list[tuple[float, dict, dict]]:
    """(LR, primary entry, control entry) where C1 looked: both judged, QK-norm necessary."""
    key = Comparison(s["reference"], s["primary"]).key
    primary = {e["lr"]: e for e in depth["comparisons"][key]["per_lr"] if e["judged"]}
    control = depth["comparisons"].get(Comparison(s["start_control"], s["primary"]).key)
    return [
        (e["lr"], primary[e["lr"]], e)
        for e in (control or {}).get("per_lr", [])
        if e["judged"] and e["lr"] in primary and primary[e["lr"]]["necessary"]
    ]


def _trend(view: dict) -> Block | None:
    """A ladder (several rungs): the trend it was built to ask. With depth: does the
    necessity threshold fall as depth grows (H3)? With width: does it fall (W1), does the
    rule's multiple of the best LR carry (W2), and what the line says at the core width,
    marked as the extrapolation it is."""
    rung = ladder.of(view)
    depths = [n for n, d in view["depths"].items() if _primary(view, d) is not None]
    if len(depths) < 2:
        return None
    verdicts = view.get("verdicts") or {}
    items: list[Item] = []
    for name in rung.trends:
        v = verdicts.get(name) or {}
        answer = ANSWER.get(v.get("verdict"), "Not decided")
        asked = question(name, view["settings"]["reference"])
        text = f"{answer}: {_trend_says(view, name)}."
        items.append(text if len(rung.trends) == 1 else f"{asked} ({name}) {text}")
    e = (view.get("w1") or {}).get("extrapolation")
    if rung.is_width and e:
        head = extrapolation_head(e)
        items.append((f"At {head}:", extrapolation_lines(e)))
    rungs = ", ".join(sorted(depths, key=int))
    if rung.is_width:
        title = f"How do the threshold and the rule move with width? (W1, W2; widths {rungs})"
    else:
        title = f"{question('H3', '')} (H3, depths {rungs})"
    return title, items


def _token_check(view: dict) -> Block | None:
    """A depth ladder's token-matched check: does the fall with depth survive matching the
    tokens per parameter (docs/STUDY.md section 11)?"""
    e = view.get("token_check")
    if not e:
        return None
    depth, ref = (e.get("check") or {}).get("depth"), (e.get("reference") or {}).get("depth")
    at = f"depth {depth} at depth {ref}'s tokens per parameter" if depth and ref else "the check"
    title = (
        f"Does the depth trend survive matching tokens per parameter? ({at}, against {e['ladder']})"
    )
    return title, list(token_check.lines(e))


def _budget(view: dict) -> Block | None:
    """A budget check: do the calls hold with more tokens?"""
    items: list[Item] = []
    for name in sorted(view["depths"], key=int):
        d = view["depths"][name]
        lines = budget.summary(ladder.of(view).label(name), d)
        for (small, large), line in zip(budget.pairs(d), lines):
            lrs, differ = budget.held(small, large)
            answer = "No" if len(differ) == len(lrs) else "Partly" if differ else "Yes"
            at = [fmt.threshold_with_interval(c) for c in (small, large)]
            where = (
                f"{at[0]} at both budgets"
                if at[0] == at[1]
                else f"{at[0]} at the smaller budget, {at[1]} at the larger"
            )
            items.append(
                f"{answer}: {line.strip()}. Necessity threshold: {where} (Budget check, under "
                "Tables)."
            )
    return ("Do the calls hold with more tokens?", items) if items else None


# -- QK-norm against no QK-norm ------------------------------------------------------------------
def _primary(view: dict, depth: dict) -> dict | None:
    return depth["comparisons"].get(present.primary_key(view))


def _off_on(view: dict) -> Block | None:
    """Where QK-norm is necessary, per rung: at one rung each point its own bullet (the
    threshold in absolute LRs and in multiples of the best LR without QK-norm, the effect at
    that best LR, where each arm's runs start to fail, the low-LR effect apart, the runs the
    threshold hangs on); at several rungs one bullet each."""
    s = view["settings"]
    rules = (view.get("decisions") or {}).get("rules") or {}
    names = [n for n in sorted(view["depths"], key=int) if n in rules]
    if not names:
        return None
    ref, primary, rung = s["reference"], s["primary"], ladder.of(view)
    if len(names) > 1:
        items: list[Item] = []
        for name in names:
            d = view["depths"][name]
            p = rule_parts(d, _primary(view, d), s, rules[name])
            items.append(
                f"{rung.cap(name)}: {p['head'][0].lower()}{p['head'][1:]} {p['threshold']} "
                f"Critical LR: {_crit(d, [ref, primary])}."
            )
        return f"Where is QK-norm necessary? ({ref} vs {primary}, per {rung.name})", items
    name = names[0]
    d = view["depths"][name]
    c = _primary(view, d)
    p = rule_parts(d, c, s, rules[name])
    others = [a for a in d["arms"] if a not in (ref, primary) and a not in s["subset_arms"]]
    items = [
        f"{p['head']} {p['threshold']} {p['seeds']}".strip(),
        f"At that best LR (H1): {_h1(view, name, d, at=False)}.",
        _failing(view, d, [ref, primary], others),
        p["low"],
        p["fragile"],
    ]
    tokens = d["tokens_per_param"]["by_budget"].get(
        str(int(d["arms"][ref]["budget"])), float("nan")
    )
    return (
        f"Where is QK-norm necessary? ({ref} vs {primary} at {rung.label(name)}, "
        f"{fmt.num(tokens, 2)} tokens/parameter)",
        [i for i in items if i],
    )


def _crit(depth: dict, arms: list[str]) -> str:
    """Each arm's median critical LR, with its seed range where the seeds differ."""
    out = []
    for arm in arms:
        a = depth["arms"].get(arm)
        median = (a or {}).get("eta_crit", {}).get("median")
        if not median:
            continue
        lo, hi, label = present.crit_interval(a["eta_crit"])
        span = (
            f" ({label} {fmt.lr(lo)} to {fmt.lr(hi)})"
            if median["kind"] == "" and lo is not None and lo != hi
            else ""
        )
        out.append(f"{arm} {fmt.grid(median)}{span}")
    return ", ".join(out) or "n/a"


WHEN = {  # the failure definitions (docs/STUDY.md section 3) as a clause
    "stuck": "when a run that diverged or ended worse than the bigram baseline counts",
    "diverged": "when only a divergence counts",
    "degraded": "when a run worse than its seed's best LR by delta ({delta:g} nats) counts too",
}


def _failing(view: dict, depth: dict, main: list[str], others: list[str]) -> str:
    """Where runs start to fail: the compared arms, the other arms, the other definitions;
    'no run failed' where no arm's runs failed inside the grid."""
    s = view["settings"]
    names = present.failure_names(view)
    definition = next(iter(names))  # the one that decides, as the report names it
    said = names[definition] + (
        "; the bigram-baseline rule is off" if present.rule_off(view) else ""
    )
    medians = [((depth["arms"].get(a) or {}).get("eta_crit") or {}).get("median") for a in main]
    medians += [depth["arms"][a]["eta_crit"].get("median") for a in others]
    tops = {m["value"] for m in medians if m and m["kind"] == "above"}
    if len(tops) == 1 and all(m and m["kind"] == "above" for m in medians):
        text = (
            f"No arm's runs failed ({said}) up to LR {fmt.lr(tops.pop())}, the grid's top "
            "(critical LR above it)."
        )
    else:
        text = f"Runs start to fail (critical LR, {said}): {_crit(depth, main)}."
        if others:
            text += f" Other arms: {_crit(depth, others)}."
    for other in names:
        if other == definition:
            continue
        values = []
        for arm in main:
            by = (depth["arms"].get(arm) or {}).get("eta_crit_by_definition") or {}
            if (by.get(other) or {}).get("median"):
                values.append(f"{arm} {fmt.grid(by[other]['median'])}")
        if values:
            when = WHEN[other].format(delta=s["delta"])
            text += f" {when[0].upper()}{when[1:]}: {', '.join(values)}."
    return text


# -- the verdicts in words -----------------------------------------------------------------------
def question(name: str, ref: str) -> str:
    """What the opening asks of a hypothesis (figures/wording.py)."""
    return WORDING[name].question.format(ref=ref)


def _verdicts(view: dict) -> Block | None:
    """Every pre-registered verdict: what it asks, its answer, the interval that decided it;
    at several rungs one sub-bullet per rung."""
    verdicts = view.get("verdicts") or {}
    if not verdicts:
        return None
    s, rung = view["settings"], ladder.of(view)
    says = {"H1": _h1, "H2a": _h2a, "H2b": _h2b, "C1": _c1_says}
    # a question the sweep was built to ask is answered first, with its numbers: not again
    above = {
        "H1": len((view.get("decisions") or {}).get("rules") or {}) == 1,  # _off_on's bullet
        **dict.fromkeys(rung.trends, _trend(view) is not None),
        "C1": _control(view) is not None,
    }
    items: list[Item] = []
    for h in HYPOTHESES:
        if h not in verdicts:
            continue
        v = verdicts[h]
        answer = ANSWER[v["verdict"]]
        head = f"{h} {v['verdict']}. {question(h, s['reference'])}"
        if h == "C1":
            names = sorted((view.get("decisions") or {}).get("C1") or {}, key=int)
        else:
            names = sorted(v.get("per_depth") or {}, key=int)
        if not s["preregistered"]:
            why = [UNREGISTERED]
        elif h == "C1" and not s["start_control"]:
            answer, why = "Not assessed", ["this sweep has no start-matched control arm"]
        elif h in rung.trends or not names:
            why = [_trend_says(view, h) if h in rung.trends else v["reason"]]
        elif h in says:
            why = [says[h](view, name, view["depths"][name]) for name in names]
        else:  # no numbers of its own to say: each rung's reason
            why = [v["per_depth"][name]["reason"] for name in names]
        if above.get(h) and s["preregistered"]:
            items.append(f"{head} {_as_above(view, h, v, answer)}")
        elif len(why) == 1:
            items.append(f"{head} {answer}: {why[0]}.")
        else:
            items.append(
                (
                    f"{head} {answer}:",
                    [f"{rung.label(n)}: {w}" for n, w in zip(names, why, strict=True)],
                )
            )
    sections = "sections 5 and 11" if rung.is_width else "section 5"  # W1, W2: section 11
    return (
        f"Verdicts (pre-registered in docs/STUDY.md {sections}; [a, b]: the 90% interval that "
        "decided; the report's Verdicts section gives each test):",
        items,
    )


def _as_above(view: dict, h: str, v: dict, answer: str) -> str:
    """A verdict whose numbers the opening gave above, as its answer and what the verdict
    found, so the line reads as meant: a bare "No" to H1's "does QK-norm matter only above
    off's best LR?" would read as "it matters below it too" where it matters nowhere
    (docs/STUDY.md section 5: not supported is necessary at the best LR, harmful there, or no
    threshold although off fails). Not decided: the block above says why."""
    if v["verdict"] == INCONCLUSIVE:
        return f"{answer}, as above."
    per = v.get("per_depth") or {}
    if h in ladder.of(view).trends or not per:
        found = v["reason"]
    else:
        reasons = {r["reason"] for r in per.values()}
        rung = ladder.of(view)
        found = (
            reasons.pop()
            if len(reasons) == 1
            else "; ".join(f"{rung.label(n)}: {per[n]['reason']}" for n in sorted(per, key=int))
        )
    return f"{answer}: {found}, as above."


def _h1(view: dict, name: str, depth: dict, at: bool = True) -> str:
    """H1 at one rung: the effect at the reference arm's best LR (named unless `at` is
    False) and what it shows."""
    s = view["settings"]
    ref, primary = s["reference"], s["primary"]
    h = depth.get("h1") or {}
    reason = (view.get("verdicts") or {}).get("H1", {}).get("per_depth", {}).get(name, {})
    if not h.get("stats"):
        return reason.get("reason", "not judged")
    effect = f"{ref} - {primary} = {_nats(h['stats'])}"
    effect = f"at LR {fmt.lr(h['lr'])}, {effect}" if at else f"{effect} (90% interval)"
    bound = f"{s['negligible']:g}"
    c = _primary(view, depth)
    return {
        "negligible": f"{effect}, inside ±{bound} (negligible); "
        f"{fmt.threshold_bracket(c) if c else 'no threshold'}",
        "necessary": f"{effect}: QK-norm already matters there",
        "harms": f"{effect}: QK-norm harms there",
        "neither": f"{effect}: neither negligible (inside ±{bound}) nor shown to matter "
        f"(above {s['min_effect']:g})",
    }.get(h.get("why"), f"{effect}; {reason.get('reason', '')}".rstrip("; "))


def _h2a(view: dict, name: str, depth: dict) -> str:
    """H2a at one rung: the ratio of critical LRs (primary / reference) with its interval,
    under the definition that decides and, as verdicts.py judges them, under the others."""
    s = view["settings"]
    ref, primary = s["reference"], s["primary"]
    h = depth.get("h2a") or {}
    if not h:
        return "not judged"
    definition = h.get("definition", s.get("primary_failure", "stuck"))
    said = _h2a_says(h, ref, primary)
    text = said
    by = depth.get("h2a_by_definition") or {}
    for other in present.failure_names(view):  # with the baseline rule off: not diverged
        if other == definition or other not in by:
            continue
        again = _h2a_says(by[other], ref, primary, short=True)
        same = again == _h2a_says(h, ref, primary, short=True)
        when = WHEN[other].format(delta=s["delta"])
        text += f". {when[0].upper()}{when[1:]}: " + ("the same" if same else again)
    return text


def _h2a_says(h: dict, ref: str, primary: str, short: bool = False) -> str:
    """One definition's H2a: the ratio with its interval (short: and its verdict), or why
    there is none."""
    verdict, why = h2a_call(h, ref)
    if h.get("censored") or h.get("lower") is None:
        return why
    if short:
        return f"{fmt.ratio(h)}, {verdict}"
    return f"{primary}'s critical LR is {fmt.ratio(h)} {ref}'s"


H2B_SAYS = {
    SUPPORTED: "its lower end above the minimum effect {m:g}",
    NOT_SUPPORTED: "not above the minimum effect {m:g}",
    INCONCLUSIVE: "its lower end not above the minimum effect {m:g}",
}


def _h2b(view: dict, name: str, depth: dict) -> str:
    """H2b at one rung: the paired difference of LR sensitivity with its interval."""
    s = view["settings"]
    h = depth.get("h2b") or {}
    reason = (view.get("verdicts") or {}).get("H2b", {}).get("per_depth", {}).get(name, {})
    if h.get("lower") is None or h.get("why") or reason.get("reason", "").startswith("incomplete"):
        return reason.get("reason", "not judged")
    says = H2B_SAYS[reason.get("verdict", h["verdict"])].format(m=s["min_sensitivity"])
    return f"LR sensitivity {s['reference']} - {s['primary']} = {_nats(h)}, {says}"


def _trend_says(view: dict, name: str = "H3") -> str:
    """A ladder's trend (H3, W1, W2): the slope per doubling of the rung with its 90%
    interval, censored per-seed thresholds at their bounds (and moved beyond them, where that
    differs); W2 against its bound."""
    rung = ladder.of(view)
    t = view.get(name.lower()) or {}
    a, b = t.get("at_bound"), t.get("beyond")
    if not a or t.get("why") == "censored alike":  # no slope worth printing
        return (view.get("verdicts") or {}).get(name, {}).get("reason", "not decided")
    of = (
        f"the threshold's bracket top as a multiple of {view['settings']['reference']}'s best LR"
        if name == "W2"
        else "the threshold"
    )
    text = (
        f"{of} changes x{10 ** a['value']:.2f} per doubling of {rung.name} (slope "
        f"{a['value']:.3f} decades per doubling, 90% interval {a['lower']:.3f} to "
        f"{a['upper']:.3f}; {a['n']} per-seed thresholds, {t['censored']} censored)"
    )
    if b and (b["lower"], b["upper"]) != (a["lower"], a["upper"]):
        text += (
            f"; with the censored ones moved beyond their bounds: {b['value']:.3f} "
            f"({b['lower']:.3f} to {b['upper']:.3f})"
        )
    u = t.get("uncensored")
    if u:  # descriptive: what the values inside the grid alone say (not the rule)
        text += (
            f"; without the censored ones (descriptive, not the rule): {u['value']:.3f} "
            f"({u['lower']:.3f} to {u['upper']:.3f}, {u['n']} thresholds)"
        )
    if name == "W2":
        text += f"; it carries when the interval lies inside ±{t.get('bound', 0.15):g}"
    return text
