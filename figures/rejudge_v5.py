"""A committed report re-judged under study v5 (docs/STUDY.md section 13) from its own run table
(runs.parquet) and pre-registration (analysis.json's settings): per rung the stability
threshold (pooled and per seed), the low-LR effect, H1, H2a, each arm's failure edges with
intervals and the borderline runs; the trend over the rungs with its power; and v4's verdicts
beside v5's where they differ. Writes docs/<report>/v5.md and v5.json.

    python -m figures.rejudge_v5 docs/cpu-depth docs/cpu-width ...

sweeps/study decides everything; this module only collects and words it.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd

from sweeps.core.files import clean_json, write_atomic, write_json_atomic
from sweeps.study import ladders, rules, trend
from sweeps.study.cells import build_cells, with_borderline_as
from sweeps.study.rung import Rung, judge_rung
from sweeps.study.stats import STUDY_SHA256, GridValue
from sweeps.study.trend import RULED_OUT

PREDICTIONS = {"n_layer": ("H3", -0.25), "n_embd": ("W1", -0.3)}


def load(report: Path) -> tuple[dict, dict[int, object], rules.Study, str]:
    """(the committed analysis, cells per rung, the study, the ladder's field)."""
    analysis = json.loads((report / "analysis.json").read_text())
    runs = pd.read_parquet(report / "runs.parquet")
    rows = []
    for r in runs.to_dict("records"):
        r["baseline_loss"] = rules.recorded_baseline(r.get("baseline") or "bigram", r)
        rows.append(r)
    settings = analysis.get("settings", {})
    field = (settings.get("ladder") or {}).get("field", "n_layer")
    study = rules.Study.from_dict(settings, [float(x) for x in settings.get("base_lrs", [])])
    return analysis, build_cells(rows, rung=field), study, field


def grid_text(v: GridValue) -> str:
    if v.kind == "unjudged":
        return "no evidence"
    if v.kind == "none":
        return f"not shown (above {v.value:.3g})" if math.isfinite(v.value) else "not shown"
    if v.kind == "below":
        return f"<= {v.value:.3g}"
    if v.kind == "above":
        return f"> {v.value:.3g}"
    lo, hi = v.bracket
    return f"({lo:.3g}, {hi:.3g}]"


def edge_text(e) -> str:
    if e.censored:
        beyond = [v for v in e.per_seed if not v.inside]
        side = ">" if beyond[0].kind == "above" else "<="
        return f"{e.censored} of {len(e.per_seed)} seeds {side} {beyond[0].value:.3g}"
    if math.isnan(e.value):
        return "n/a"
    return f"{e.value:.3g} [{e.lower:.3g}, {e.upper:.3g}]"


def rung_record(size: int, r: Rung) -> dict:
    th = r.threshold
    lrs = sorted(set(th.judged) | set(r.low.lrs))
    edge = ""
    if r.best_lr is not None and lrs and r.best_lr >= max(lrs) * (1 - 1e-9):
        edge = "top"
    elif r.best_lr is not None and lrs and r.best_lr <= min(lrs) * (1 + 1e-9):
        edge = "bottom"
    return {
        "rung": size,
        "best_lr": r.best_lr,
        "best_at_grid_edge": edge,
        "stability_threshold": grid_text(th.pooled),
        "per_seed": [grid_text(v) for v in th.per_seed],
        "pooled_meets_per_seed": th.agree,
        "low_lr": {
            "verdict": r.low.verdict,
            "per_lr": [
                {"lr": lr, "mean": st.mean, "lower": lo, "upper": hi}
                for lr, st, lo, hi in zip(r.low.lrs, r.low.stats, r.low.lower, r.low.upper)
            ],
        },
        "h1": {"verdict": r.h1.verdict, "why": r.h1.why, "at_best": _paired(r.h1.stats)},
        "h2a": {"verdict": r.h2a, "ratio": 10**r.h2a_ratio.mean if r.h2a_ratio.n else None},
        "edges": {arm: {d: edge_text(e) for d, e in by.items()} for arm, by in r.edges.items()},
        "borderline": list(r.borderline),
        "both_ways": {k: list(v) for k, v in r.both_ways.items()},
    }


def _paired(p) -> dict | None:
    if p is None:
        return None
    return {"mean": p.mean, "ci90": [p.lower, p.upper], "n": p.n}


def trend_record(t: trend.Trend) -> dict:
    def s(x):
        return None if x is None else {"slope": x.slope, "ci90": [x.lower, x.upper]}

    return {
        "verdict": t.verdict,
        "why": t.why,
        "prediction": t.prediction,
        "at_bound": s(t.at_bound),
        "beyond": s(t.beyond),
        "rungs": [
            {"log2_size": v.x, "mean_log10": v.at_bound, "seeds": v.seeds, "censored": v.censored}
            for v in t.rungs
        ],
        "dropped": list(t.dropped),
        "power": t.power,
        "left_out": [
            {
                "size": lo.size,
                "verdict": lo.verdict,
                "slope": s(lo.slope),
                "influence": lo.influence,
            }
            for lo in t.left_out
        ],
        "reversed_by": list(t.reversed_by),
        "fragile": list(t.fragile),
    }


def _v4_verdicts(analysis: dict) -> dict:
    """The committed report's verdicts under the v4 rules: schema 5's decisions, or the verdicts
    schema 4 wrote in words."""
    said = analysis.get("decided") or analysis.get("verdicts") or {}
    return {k: v.get("verdict") for k, v in said.items()}


def _v4(report: Path, analysis: dict) -> dict:
    """v4's verdicts and thresholds: from an analysis.json v4 judged (schema 5 or earlier), else
    (schema 6, judged by the rulebook) as the committed v5.json recorded them."""
    if analysis.get("schema", 0) >= 6:
        old = json.loads((report / "v5.json").read_text()) if (report / "v5.json").exists() else {}
        return {"v4": old.get("v4", {}), "v4_thresholds": old.get("v4_thresholds", {})}
    return {
        "v4": _v4_verdicts(analysis),
        "v4_thresholds": {
            k: (d.get("comparisons", {}).get("off vs on", {}).get("threshold") or {})
            for k, d in (analysis.get("depths") or {}).items()
        },
    }


def rejudge(report: Path) -> dict:
    analysis, cells, study, field = load(report)
    rungs = {size: judge_rung(c, study) for size, c in cells.items()}
    out = {
        "report": report.name,
        "study_sha256": STUDY_SHA256,
        "ladder": field,
        "settings": {"seed_margin": study.seed_margin, "fate_margin": study.fate_margin},
        "rungs": [rung_record(size, r) for size, r in rungs.items()],
        **_v4(report, analysis),
    }
    name, prediction = PREDICTIONS[field]
    # section 17 (v10): the per-seed thresholds with every borderline run stuck and trained
    ways = [
        {
            size: list(
                judge_rung(with_borderline_as(c, study.fate_margin, way), study).threshold.per_seed
            )
            for size, c in cells.items()
        }
        for way in (True, False)
    ]
    seeds = max((len(c.seeds) for c in cells.values()), default=4)
    trends = {name: trend.robust(ways, trend.decide, trend.OPPOSITE, prediction, seeds)}
    if field == "n_embd":
        best = {size: r.best_lr for size, r in rungs.items()}
        trends["W2"] = trend.robust(ways, trend.carry, trend.CARRY_OPPOSITE, best, seeds)
    out["trends"] = {k: trend_record(t) for k, t in trends.items()}
    out["v5"] = v5_verdicts(rungs, trends)
    check = (analysis.get("token_check") or {}) if field == "n_layer" else {}
    if check.get("ladder") and len(rungs) == 1:
        out["token_check"] = token_check(report.parent / check["ladder"], check, rungs)
        out["v5"]["token check"] = out["token_check"]["verdict"]
        out["v4"]["token check"] = check.get("verdict")
    return clean_json(out)


def token_check(ladder: Path, committed: dict, rungs: dict[int, Rung]) -> dict:
    """The token-matched check (STUDY.md section 11) on v5's thresholds: this report's one rung
    against the ladder report's reference rung, with the bracket rule of sweeps.study.ladders
    unchanged (the check lies below only where every LR it allows is under every LR the
    reference allows)."""
    _, cells, study, _ = load(ladder)
    depth = int(committed["reference"]["depth"])
    reference = judge_rung(cells[depth], study)
    check = next(iter(rungs.values()))

    def stuck(r: Rung):
        return list(r.edges["off"]["stuck"].per_seed)

    t = ladders.token_check(
        reference.threshold.pooled, check.threshold.pooled, stuck(reference), stuck(check)
    )
    return {
        "verdict": t.verdict,
        "why": t.why,
        "reference": f"{ladder.name} depth {depth}",
        "threshold": [grid_text(reference.threshold.pooled), grid_text(check.threshold.pooled)],
        "threshold_below": t.threshold_below,
        "critical_below": t.critical_below,
    }


def v5_verdicts(rungs: dict[int, Rung], trends: dict[str, trend.Trend]) -> dict[str, str]:
    """Each hypothesis's verdict over the rungs: every rung agrees, else inconclusive."""

    def combine(values):
        values = set(values)
        return values.pop() if len(values) == 1 else rules.INCONCLUSIVE

    out = {
        "H1": combine(r.h1.verdict for r in rungs.values()),
        "H2a": combine(r.h2a for r in rungs.values()),
    }
    out.update({k: t.verdict for k, t in trends.items()})
    return out


def _signed(x) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _fragility_lines(name: str, t: dict, label: str) -> list[str]:
    """The trend with each rung left out (docs/STUDY.md section 17): a verdict one rung
    reverses is inconclusive, one a rung's removal leaves undecided is fragile."""
    if not t.get("left_out"):
        return []

    def sl(x):
        return "n/a" if not x else f"{x['slope']:+.3f} [{x['ci90'][0]:+.3f}, {x['ci90'][1]:+.3f}]"

    out = []
    if t["reversed_by"]:
        named = ", ".join(f"{label} {s}" for s in t["reversed_by"])
        out.append(
            f"  **One rung decides** ({named}): without it the verdict is the opposite one, so "
            "these rules make it inconclusive (docs/STUDY.md section 17)."
        )
    elif t["fragile"]:
        named = ", ".join(f"{label} {s}" for s in t["fragile"])
        out.append(f"  Fragile: without {named} the verdict is not reached.")
    out += [
        "",
        f"  | {label} left out | {name} | slope per doubling | influence |",
        "  |---|---|---|---|",
    ]
    out += [
        f"  | {lo['size']} | {lo['verdict']} | {sl(lo['slope'])} | {_signed(lo['influence'])} |"
        for lo in t["left_out"]
    ]
    return out


def render(doc: dict) -> str:
    label = "depth" if doc["ladder"] == "n_layer" else "width"
    lines = [
        f"# {doc['report']} re-judged under study v5",
        "",
        f"These runs were first judged by study v4; report.md now judges them by docs/STUDY.md's "
        f"rulebook (sections 13 and 17, sha256 `{doc['study_sha256'][:16]}`), as this page "
        f"does from the same runs.parquet (trends with borderline runs both ways, each rung left "
        f"out), and keeps v4's verdicts and thresholds beside them. Regenerate with "
        f"`python -m figures.rejudge_v5 docs/{doc['report']}`. "
        f"Seed margin {doc['settings']['seed_margin']} nats, fate margin "
        f"{doc['settings']['fate_margin']} nats.",
        "",
        "## Verdicts, v4 and v5",
        "",
        "| hypothesis | v4 | v5 |",
        "|---|---|---|",
    ]
    for key in sorted(set(doc["v4"]) | set(doc["v5"])):
        if (
            key == "H3"
            and doc["ladder"] == "n_embd"
            or key in ("C1", "H2b")
            and key not in doc["v5"]
        ):
            continue
        v4, v5 = doc["v4"].get(key, "-"), doc["v5"].get(key, "-")
        mark = " (changed)" if v4 != v5 and v4 != "-" and v5 != "-" else ""
        lines.append(f"| {key} | {v4} | {v5}{mark} |")
    lines += [
        "",
        "C1 and H2b are unchanged by v5 (see report.md).",
        "",
        f"## Per {label}",
        "",
        f"| {label} | off's best LR | stability threshold (pooled) | per seed | v4 threshold "
        "| low-LR effect | H1 | H2a (on/off critical LR) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["rungs"]:
        v4 = doc["v4_thresholds"].get(str(r["rung"])) or {}
        v4_text = (
            grid_text(
                GridValue(
                    v4.get("value", math.nan) if v4.get("value") is not None else math.nan,
                    v4.get("kind", "none"),
                    tuple(v4["bracket"]) if v4.get("bracket") else None,
                )
            )
            if v4
            else "-"
        )
        h2a = r["h2a"]
        ratio = f" (x{h2a['ratio']:.2f})" if h2a["ratio"] else ""
        agree = "" if r["pooled_meets_per_seed"] else " (pooled above every seed)"
        lines.append(
            f"| {r['rung']} | {r['best_lr']:.3g} | {r['stability_threshold']}{agree} "
            f"| {', '.join(r['per_seed'])} | {v4_text} | {r['low_lr']['verdict']} "
            f"| {r['h1']['verdict']} ({r['h1']['why']}) | {h2a['verdict']}{ratio} |"
        )
    for r in doc["rungs"]:
        if r["best_at_grid_edge"] == "top":
            lines += [
                "",
                f"At {label} {r['rung']} off's best LR is the grid's top LR: this grid does not "
                "reach where `off` breaks, so its stability threshold and H1 say nothing about "
                "stability (the grid was built for another question).",
            ]
        elif r["best_at_grid_edge"] == "bottom":
            lines += [
                "",
                f"At {label} {r['rung']} off's best LR is the grid's lowest LR: the true best "
                "may lie lower, and no low-LR effect is measured.",
            ]
    lines += [
        "",
        "Low-LR effect (off - on, nats; Bonferroni 90% interval over the LRs below the best):",
        "",
    ]
    for r in doc["rungs"]:
        parts = [
            f"{x['lr']:.3g}: {x['mean']:+.3f} [{x['lower']:+.3f}, {x['upper']:+.3f}]"
            for x in r["low_lr"]["per_lr"]
        ]
        at = r["h1"]["at_best"]
        best = (
            f"; at the best LR {r['best_lr']:.3g}: {at['mean']:+.3f} "
            f"[{at['ci90'][0]:+.3f}, {at['ci90'][1]:+.3f}]"
            if at
            else ""
        )
        lines.append(f"- {label} {r['rung']}: {'; '.join(parts) or 'none'}{best}")
    lines += ["", "## Failure edges (90% interval over seeds)", ""]
    lines += [f"| {label} | arm | diverged | stuck | degraded |", "|---|---|---|---|---|"]
    for r in doc["rungs"]:
        for arm, e in r["edges"].items():
            lines.append(
                f"| {r['rung']} | {arm} | {e['diverged']} | {e['stuck']} | {e['degraded']} |"
            )
    lines += ["", "## Borderline runs (within the fate margin of the cut)", ""]
    any_border = False
    for r in doc["rungs"]:
        if r["borderline"]:
            any_border = True
            moved = "; ".join(
                f"{k}: {a} if stuck, {b} if trained" for k, (a, b) in r["both_ways"].items()
            )
            lines.append(
                f"- {label} {r['rung']}: {', '.join(r['borderline'])}. "
                f"{'Moves ' + moved if moved else 'No verdict or edge moves.'}"
            )
    if not any_border:
        lines.append("None.")
    if doc.get("token_check"):
        tc = doc["token_check"]
        lines += [
            "",
            "## The token-matched check",
            "",
            f"**{tc['verdict']}** ({tc['why']}), against {tc['reference']}: stability threshold "
            f"{tc['threshold'][0]} there, {tc['threshold'][1]} here (below: "
            f"{tc['threshold_below']}); `off`'s stuck edge below: {tc['critical_below']}.",
        ]
    if doc["trends"]:
        lines += ["", "## Trend over the rungs (the rung is the unit)", ""]
    for name, t in doc["trends"].items():

        def sl(x):
            return (
                "n/a" if not x else f"{x['slope']:+.3f} [{x['ci90'][0]:+.3f}, {x['ci90'][1]:+.3f}]"
            )

        rungs = ", ".join(
            f"{2 ** v['log2_size']:.0f}: {10 ** v['mean_log10']:.3g}" for v in t["rungs"]
        )
        goal = (
            f"prediction {t['prediction']:+.2f} decades per doubling"
            if name != "W2"
            else "within +-0.15 decades per doubling"
        )
        power = "n/a" if t["power"] is None else f"{100 * t['power']:.0f}%"
        lines.append(
            f"- **{name}: {t['verdict']}** ({t['why']}). Slope per doubling, censored values at "
            f"their bound: {sl(t['at_bound'])}; moved beyond: {sl(t['beyond'])}; {goal}. "
            f"Rung values (geometric mean of the seeds): {rungs}. "
            + (
                f"Power of this design at the prediction (analytic): {power}."
                if name != "W2"
                else f"Chance this design shows a multiple that truly carries (slope 0): {power}."
            )
            + (f" Rungs without 2 seeds' values: {t['dropped']}." if t["dropped"] else "")
        )
        if t["verdict"] == RULED_OUT:
            lines.append(
                f"  A fall of {-t['prediction']:.2f} decades per doubling is ruled out "
                "at this scale."
            )
        lines += _fragility_lines(name, t, label)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    for arg in argv:
        report = Path(arg)
        if not (report / "runs.parquet").exists() or not (report / "analysis.json").exists():
            print(f"error: {report} holds no runs.parquet and analysis.json (a committed report)")
            return 2
        doc = rejudge(report)
        write_json_atomic(report / "v5.json", doc)
        write_atomic(report / "v5.md", render(doc))
        print(f"{report}/v5.md: {doc['v5']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
