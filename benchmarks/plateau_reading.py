"""What docs/STUDY.md section 23's plateau reading would change in every committed report: each
report re-analysed from its own data (runs.parquet) with `[study] plateau_margin = 0.15` (above
`off`'s best LR a run that finished less than 0.15 nats under its stuck cut counts as stuck),
set beside the analysis.json it was judged by (its rules read fates as recorded). The committed
reports stay judged as recorded; this is the robustness check section 23 reports.

    python benchmarks/plateau_reading.py            # every committed report (~10 min, 2 cores)
    python benchmarks/plateau_reading.py cpu cpu-depth-matched

Prints one markdown table per report of what moved: each comparison's pooled stability
threshold and each arm's stuck edge per rung, each hypothesis's verdict (per rung and
overall), each trend's slope and interval, the token check's and the interventions' verdicts;
and how many such items held.
"""

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sweeps.analysis import analyze, archive  # noqa: E402
from sweeps.analysis.adapter import to_json  # noqa: E402
from sweeps.study.simulation.rungs import PLATEAU_MARGIN  # noqa: E402

DOCS = ROOT / "docs"


def threshold_words(t: dict | None) -> str:
    if not t:
        return "-"
    if t.get("kind") == "none":
        return f"none up to {t['value']:.3g}"
    if t.get("kind"):
        return f"{t['kind']} {t['value']:.3g}"
    lo, hi = t["bracket"]
    return f"({lo:.3g}, {hi:.3g}]"


def slope_words(s: dict | None) -> str:
    if not s:
        return "-"
    lo, hi = s["ci90"]
    return f"{s['value']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def edge_words(e: dict | None) -> str:
    if not e or e.get("value") is None:
        return f"{e['censored']} of {e['seeds']} seeds beyond the grid" if e else "-"
    return f"{e['value']:.3g} [{e['lower']:.3g}, {e['upper']:.3g}]"


def items(a: dict) -> dict[str, str]:
    """The judged quantities of one analysis.json, by name."""
    out = {}
    for rung, r in a.get("depths", {}).items():
        for name, c in r.get("comparisons", {}).items():
            out[f"{rung}: {name}, stability threshold"] = threshold_words(c.get("threshold"))
        for arm, e in (r.get("edges") or {}).items():
            out[f"{rung}: {arm}'s stuck edge"] = edge_words(e.get("stuck"))
    for h, d in a.get("decided", {}).items():
        out[f"{h} verdict"] = d["verdict"]
        for rung, v in (d.get("per_rung") or {}).items():
            out[f"{rung}: {h} verdict"] = v.get("verdict", "-")
    for trend in ("h3", "w1", "w2"):
        t = a.get(trend)
        if t:
            out[f"{trend.upper()} slope, borderline runs stuck"] = slope_words(t.get("at_bound"))
    if a.get("token_check"):
        out["token check verdict"] = a["token_check"]["verdict"]
    for rung, arms in (a.get("decisions", {}).get("interventions") or {}).items():
        for arm, hs in arms.items():
            for h, v in hs.items():
                out[f"{rung}: {arm} {h} verdict"] = v["verdict"]
    return out


def with_plateaus(name: str) -> dict:
    results, curves, _ = archive.load(DOCS / name)
    study = {**results.spec.get("study", {}), "plateau_margin": PLATEAU_MARGIN}
    results = dataclasses.replace(results, spec={**results.spec, "study": study})
    return json.loads(json.dumps(to_json(analyze(results, curves, None, DOCS / name))))


def main(names: list[str]) -> None:
    names = names or sorted(p.parent.name for p in DOCS.glob("*/runs.parquet"))
    print(
        "# Section 23's plateau reading on the committed reports\n\n"
        f"Written by `python benchmarks/plateau_reading.py`: each report re-analysed from its own "
        f"runs with `[study] plateau_margin = {PLATEAU_MARGIN}` (docs/STUDY.md section 23) beside "
        "the analysis.json that judged it (fates as recorded). The reports stay judged as "
        "recorded; this is the robustness check.\n"
    )
    for name in names:
        before = items(json.loads((DOCS / name / "analysis.json").read_text()))
        after = items(with_plateaus(name))
        moved = [k for k in before if before[k] != after.get(k)]
        print(f"### docs/{name}: {len(moved)} of {len(before)} moved\n")
        if moved:
            print("| quantity | as recorded | plateaus stuck |\n|---|---|---|")
            for k in moved:
                print(f"| {k} | {before[k]} | {after.get(k, '-')} |")
            print()
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
