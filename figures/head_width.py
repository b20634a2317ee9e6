"""QK-norm against head width (docs/STUDY.md section 20), from the head-width sweeps' carry
pages (figures/carry.py): per model width and head width, the stability threshold as a multiple
of `off`'s best LR (its bracket) and QK-norm's cost at `off`'s best LR and at each arm's own best
(off - on, 90% intervals). Heads of 16 are each page's reference side (docs/cpu at width 64,
cpu-width's width-128 rung). Writes <out>/head_width.md, head_width.json and the chart
head_width.svg, and the mechanism across head widths (figures/charts/head_width.py:
head_width_mechanism.svg). With --curves-from, a reference that kept no curves reads another
report's runs of its configurations, and the page adds a robustness section: the carry rule on
that repeat against the reference (a measured null) and on each sweep against the repeat.
Every page also gets the LR-grid check (figures/head_width_grid.py): the cost at each LR a sweep
shares with its reference, and with --grown REF=REPORT, T7 and T8 against REF grown by
REPORT's runs of its configuration at LRs it lacked.

    python -m figures.head_width docs/cpu-head32 docs/cpu-head64 docs/cpu-width128-head64 \
        --out docs/head-width --curves-from cpu=cpu-depth-matched \
        --grown cpu-width=cpu-width128-head16-fill
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import altair as alt
import pandas as pd

from figures import head_width_grid as grid
from figures.charts import head_width as hm
from figures.charts.output import save
from figures.charts.style import chart_title, finish
from figures.head_width_grid import number as num
from figures.report.what_ran import unfinished_words
from sweeps.analysis.carry_page import plan_for
from sweeps.core.files import clean_json, write_atomic, write_json_atomic
from sweeps.study import carry as c

USAGE = (
    "usage: python -m figures.head_width PAGE... --out DIR [--curves-from REF=REPORT] "
    "[--grown REF=REPORT]"
)
WIDTH_COLORS = {64: "#555555", 128: "#CC79A7"}  # not the arms' colours: these are model widths


def head_width(runs: pd.DataFrame) -> tuple[int, int]:
    """(model width, head width) of a run table that holds one of each."""
    shapes = {(int(w), int(w) // int(h)) for w, h in zip(runs.n_embd, runs.n_head)}
    if len(shapes) != 1:
        raise ValueError(f"one width and head width expected, found {sorted(shapes)}")
    return shapes.pop()


def _side(doc: dict, which: str) -> dict:
    """One side of a carry page as a row: T1's bracket and value, T7's and T8's intervals."""
    got = {q["quantity"]: q[which] for q in doc["quantities"]}

    def cost(q: str) -> dict:
        s = got.get(q) or {}
        lo, hi = s.get("interval") or (None, None)
        return {f"{q}": s.get("value"), f"{q}_lo": lo, f"{q}_hi": hi}

    t1 = got.get("T1") or {}
    lo, hi = t1.get("interval") or (None, None)
    return {
        "best_lr": (t1.get("parts") or {}).get("best_lr"),
        "T1": t1.get("value"),
        "T1_lo": lo,
        "T1_hi": hi,
        "T1_kind": t1.get("verdict", ""),
        **cost("T7"),
        **cost("T8"),
    }


def read_ends(
    folder: Path, head_width: int, where=(), runs: set[str] | None = None
) -> pd.DataFrame:
    """run_ends of a report's curves.parquet, its rows filtered by `where` ((column, value)
    pairs) and to `runs` when given; empty where the report holds no curves."""
    path = folder / "curves.parquet"
    if not path.is_file():
        return pd.DataFrame()
    curves = pd.read_parquet(path)
    for column, value in where:
        curves = curves[curves[column] == value]
    if runs is not None:
        curves = curves[curves.run_id.isin(runs)]
    if curves.empty or "max_attn_logit" not in curves:
        return pd.DataFrame()
    return hm.run_ends(curves, head_width)


def reference_runs(docs: Path, doc: dict) -> pd.DataFrame:
    """A carry page's reference runs: the reference report's run table, only the rows the page
    compared with (its reference_rows: cpu-width's width 128)."""
    runs = pd.read_parquet(docs / doc["reference"] / "runs.parquet")
    for column, value in (doc.get("reference_rows") or {}).items():
        runs = runs[runs[column] == value]
    return runs


def _curves_of(docs: Path, reference: str, ref_runs: pd.DataFrame, where, curves_from: dict):
    """(folder, where, run ids, said): where a reference side's curves are read. Its own, unless
    it has none and --curves-from names a report that trained the same configurations again:
    then that report's runs whose configuration equals one of the reference's."""
    own = docs / reference / "curves.parquet"
    source = curves_from.get(reference)
    if source is None or (own.is_file() and len(pd.read_parquet(own))):
        return docs / reference, where, None, None
    runs = hm.same_configs(ref_runs, pd.read_parquet(docs / source / "runs.parquet"))
    said = f"{source}: {len(runs)} of {reference}'s {len(ref_runs)} runs, trained again"
    return docs / source, (), runs, said


def collect(
    pages: list[Path], docs: Path, curves_from: dict | None = None
) -> tuple[list[dict], pd.DataFrame, dict]:
    """One row per (width, head width): each page's new side, and its reference side once; the
    mechanism chart's table (figures/charts/head_width.by_lr) of every side; and how tight
    the largest gain squared is as the gain product (hm.bound_gap over every run). curves_from:
    {reference: report} whose runs of the same configurations stand in for a reference that kept
    no curves."""
    out: dict[tuple[int, int], dict] = {}
    lr_tables, every_end = [], []

    def side(key, which, doc, folder, where=(), runs=None, **extra) -> None:
        row = _side(doc, which)
        ends = read_ends(folder, key[1], where, runs)
        out[key] = {**extra, **row, **hm.at_lr(ends, row["best_lr"])}
        lr_tables.append(hm.by_lr(ends, *key))
        every_end.append(ends)

    for page in pages:
        doc = json.loads((page / "carry.json").read_text())
        if doc.get("predictions", {}).get("section") != 20:
            raise ValueError(f"{page}/carry.json is not section 20's (run figures.carry on it)")
        new = head_width(pd.read_parquet(page / "runs.parquet"))
        where = tuple((doc.get("reference_rows") or {}).items())
        ref_runs = reference_runs(docs, doc)
        # an older run table has no n_head: the page's plan names the reference's heads
        ref = (
            head_width(ref_runs)
            if "n_head" in ref_runs
            else (int(ref_runs.n_embd.iloc[0]), int(doc["reference_head_width"]))
        )
        if ref not in out:
            folder, at, runs, said = _curves_of(
                docs, doc["reference"], ref_runs, where, curves_from or {}
            )
            side(ref, "reference", doc, folder, at, runs, source=doc["reference"], curves_from=said)
        side(
            new,
            "new",
            doc,
            page,
            source=doc["report"],
            unfinished=unfinished_words(doc.get("unfinished")),  # still trains: said first
        )
    rows = [{"width": w, "head_width": h, **v} for (w, h), v in sorted(out.items())]
    tables = [t for t in lr_tables if not t.empty]
    ends = [e for e in every_end if not e.empty]
    check = hm.bound_gap(pd.concat(ends, ignore_index=True) if ends else pd.DataFrame())
    return rows, pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(), check


def retrained(pages: list[Path], docs: Path, curves_from: dict) -> list[dict]:
    """The robustness check a reference trained again allows (--curves-from REF=SOURCE, whose
    runs of REF's configurations are REF's runs repeated later, on the machine and code the
    head-width sweeps trained on): section 20's carry rule applied (1) to the repeat against REF,
    a measured null where every quantity should carry, and (2) to each head-width sweep against
    the repeat instead of REF. One row per comparison: each quantity's outcome, and T7's and
    T8's shifts (new - reference, Welch's 90% interval)."""
    out, seen = [], set()
    for page in pages:
        doc = json.loads((page / "carry.json").read_text())
        source = curves_from.get(doc["reference"])
        if source is None:
            continue
        plan = plan_for(page)
        ref = reference_runs(docs, doc)
        repeat = pd.read_parquet(docs / source / "runs.parquet")
        repeat = repeat[repeat.run_id.isin(hm.same_configs(ref, repeat))]
        pairs = [(f"{source} (the same runs again)", doc["reference"], ref, repeat)]
        pairs = [x for x in pairs if x[0] not in seen]
        seen.update(x[0] for x in pairs)
        new = pd.read_parquet(page / "runs.parquet")
        pairs.append((doc["report"], f"{source}'s repeat", repeat, new))
        for name, against, a, b in pairs:
            judged = c.carry(a.to_dict("records"), b.to_dict("records"), None, plan.predictions)
            row = {"new": name, "reference": against}
            for x in judged:
                row[x.quantity] = x.outcome
                if x.quantity in ("T7", "T8") and x.reference.values and x.new.values:
                    sh = c.shift(x.reference.values, x.new.values, plan.predictions.study.precision)
                    row[f"{x.quantity}_shift"] = (sh.mean, sh.lower, sh.upper)
            out.append(row)
    return out


def grids(pages: list[Path], docs: Path, grown_from: dict) -> list[dict]:
    """The LR-grid robustness section (figures/head_width_grid.py): per page, the cost at every
    LR it shares with its reference, and with --grown REF=REPORT, T7 and T8 against REF grown by
    REPORT's runs at the LRs REF lacks (and the costs against that grown reference)."""
    out = []
    for page in pages:
        doc = json.loads((page / "carry.json").read_text())
        predictions = plan_for(page).predictions
        ref = reference_runs(docs, doc)
        new = pd.read_parquet(page / "runs.parquet")
        row = {"report": doc["report"], "reference": doc["reference"]}
        source = grown_from.get(doc["reference"])
        if source is not None:
            more = reference_runs(docs, {**doc, "reference": source})
            ref = grid.grown_reference(ref, more)
            row["grown"] = {"source": source, "judged": grid.judged(ref, new, predictions)}
        row["costs"] = grid.costs_by_lr(ref, new, predictions.study)
        out.append(row)
    return out


def seed_drop(pages: list[Path]) -> list[dict]:
    """The other robustness check a 4-seed cost verdict needs: T7's and T8's rule (Welch's shift
    against the page's reference) with each of the new sweep's seeds left out in turn, from the
    per-seed values carry.json holds. One row per page and quantity: its outcome with every seed,
    and with each left out (how many of those say the same, and the shifts' range)."""
    out = []
    for page in pages:
        doc = json.loads((page / "carry.json").read_text())
        floor = plan_for(page).predictions.study.precision
        for q in doc["quantities"]:
            ref, new = q["reference"].get("values") or [], q["new"].get("values") or []
            if q["quantity"] not in ("T7", "T8") or len(new) <= 3 or len(ref) < 3:
                continue  # left out, fewer than 3 seeds would remain: no interval
            drops = [c.shift(ref, new[:i] + new[i + 1 :], floor) for i in range(len(new))]
            outcomes = [c.decide_shift(d)[0] for d in drops]
            out.append(
                {
                    "report": doc["report"],
                    "quantity": q["quantity"],
                    "outcome": q["outcome"],
                    "same": sum(o == q["outcome"] for o in outcomes),
                    "drops": len(drops),
                    "shifts": [min(d.mean for d in drops), max(d.mean for d in drops)],
                }
            )
    return out


def render_seed_drop(rows: list[dict]) -> str:
    if not rows:
        return ""
    lines = [
        "",
        "## Robustness: each seed left out",
        "",
        "T7 and T8 rest on 4 seeds a side. Each of the new sweep's seeds left out in turn, the "
        "shift against the page's reference and section 20's rule on it: a verdict that most "
        "drops keep is not one seed's.",
        "",
        "| report | quantity | outcome, every seed | the same, one seed left out | shifts then |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["shifts"]
        lines.append(
            f"| {r['report']} | {r['quantity']} | {r['outcome']} | {r['same']} of {r['drops']} "
            f"| {lo:+.3f} to {hi:+.3f} |"
        )
    return "\n".join(lines) + "\n"


def _logits(r: dict) -> str:
    """on's max logit against the ceiling it lives under ("<=": the ceiling's upper bound)."""
    if r.get("on_logit") is None:
        return "not recorded"
    if r.get("ceiling") is None:
        return f"{r['on_logit']:.1f} / n/a"
    bound = "<=" if r["ceiling_kind"] == "bound" else ""
    return f"{r['on_logit']:.1f} / {bound}{r['ceiling']:.1f}"


def render(rows: list[dict], command: str = "", check: dict | None = None) -> str:
    lines = [
        "# QK-norm against head width",
        "",
        "docs/STUDY.md section 20: each width's heads of 16 (the reference side of its carry "
        "page) beside heads of 32 and 64. Threshold: the pooled stability threshold as a "
        "multiple of `off`'s best LR; cost: `off` - `on` (negative: QK-norm worse), 90% "
        "intervals. What carries and what differs, by section 20's rules, is on each carry "
        "page. The last column is the mechanism: `on`'s max attention logit at `off`'s best LR "
        "at the end of training against the ceiling QK-norm's gains allow there, sqrt(head "
        "width) x max |g_q g_k| (medians over seeds; <=: the runs kept only the gains' maximum, "
        "which bounds it from above).",
        "",
        *([f"Regenerate: `{command}`", ""] if command else []),
        *(f"> `{r['source']}`: {r['unfinished']}\n" for r in rows if r.get("unfinished")),
        "![QK-norm against head width](head_width.svg)",
        "",
        "| width | head width | from | off's best LR | threshold (x best) | cost at off's best LR "
        "| cost at each arm's own best | on there, at the end: max logit / ceiling |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        threshold = (
            f"(x{r['T1_lo']:.3g}, x{r['T1_hi']:.3g}]"
            if r["T1_lo"] is not None and r["T1_hi"] is not None
            else r["T1_kind"] or "n/a"
        )
        lines.append(
            f"| {r['width']} | {r['head_width']} | {r['source']} | {num(r['best_lr'], '.3g')} "
            f"| {threshold} | {num(r['T7'])} [{num(r['T7_lo'])}, {num(r['T7_hi'])}] "
            f"| {num(r['T8'])} [{num(r['T8_lo'])}, {num(r['T8_hi'])}] | {_logits(r)} |"
        )
    return "\n".join(lines + _mechanism_lines(rows, check or {})) + "\n"


def _product(r: dict) -> str:
    """The gain product: recorded with the largest gain squared beside it (how tight that bound
    is), or the bound alone ("<=")."""
    product, bound = r.get("gain_product"), r.get("gain_bound")
    if r.get("ceiling_kind") == "bound":
        return f"<={num(bound, '.2f')}"
    if product is None:
        return "n/a"
    return (
        f"{num(product, '.2f')} (<={num(bound, '.2f')})"
        if bound is not None
        else num(product, ".2f")
    )


def render_retrained(rows: list[dict]) -> str:
    """The robustness section (retrained): empty without a repeated reference."""
    if not rows:
        return ""
    quantities = [q for q in ("T1", "T2", "T5", "T7", "T8", "T9") if any(q in r for r in rows)]

    def sh(r: dict, q: str) -> str:
        m = r.get(f"{q}_shift")
        if not m:
            return "n/a"
        return grid.shift_text(m)

    lines = [
        "",
        "## Robustness: heads of 16 trained again",
        "",
        "docs/cpu's configurations were trained again later, on the machine and code the "
        "head-width sweeps trained on (the rows named; only the LRs both grids hold). Section "
        "20's carry rule, applied first to that repeat against docs/cpu (nothing changed: every "
        "quantity should carry, and a 'differs' is the rule's false alarm on real runs), then to "
        "each head-width sweep against the repeat instead of docs/cpu. Shift: new - reference of "
        "`off` - `on` (up: QK-norm costs less), Welch's 90% interval. T1, T2, T5 and T9 are "
        "judged by section 20's fixed windows, so a sweep's read as on its carry page; T7 and "
        "T8 compare with the reference's runs, so they are the ones the repeat can move.",
        "",
        "| new | against | " + " | ".join(quantities) + " | T7 shift | T8 shift |",
        "|---|---|" + "---|" * (len(quantities) + 2),
    ]
    for r in rows:
        cells = " | ".join(r.get(q, "n/a") for q in quantities)
        lines.append(f"| {r['new']} | {r['reference']} | {cells} | {sh(r, 'T7')} | {sh(r, 'T8')} |")
    return "\n".join(lines) + "\n"


def _tightness(check: dict) -> str:
    if not check.get("runs"):
        return ""
    return (
        f" In the {check['runs']} runs that recorded both, the gain product and the largest gain "
        f"squared differ by at most {check['max_gap']:.1e} (relative): q's and k's gains start "
        "equal and get the same gradient, so they stay equal, and by the same argument the "
        "bound read where a sweep kept only the largest gain is the product itself."
    )


def _mechanism_lines(rows: list[dict], check: dict) -> list[str]:
    """The mechanism at `off`'s best LR, every side (section 20: descriptive, no verdict)."""
    lines = [
        "",
        "## The mechanism at off's best LR",
        "",
        "Medians over seeds at each side's `off` best LR. Peak: the largest max attention logit "
        "of any evaluation; entropy: the mean attention entropy at the end (nats; low: sharp). "
        "Gain product: `on`'s max_i |g_q,i g_k,i| at the end (1 as initialized; the ceiling is "
        "sqrt(head width) times it); share: `on`'s max logit over that ceiling at the end (1: "
        "the bound binds; <= and >=: from the largest single gain, an upper bound on the "
        "product and so a lower bound on the share; beside a recorded product, that bound in "
        "brackets shows how tight it is). Every LR: head_width_mechanism.svg." + _tightness(check),
        "",
        "![Attention and QK-norm's gains against head width](head_width_mechanism.svg)",
        "",
        "| width | head width | curves from | off: peak logit | off: entropy | on: peak logit "
        "| on: entropy | on: gain product | on: share of the ceiling |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        bound = r.get("ceiling_kind") == "bound"
        lines.append(
            f"| {r['width']} | {r['head_width']} | {r.get('curves_from') or r['source']} "
            f"| {num(r.get('off_peak'), '.3g')} | {num(r.get('off_entropy'), '.2f')} "
            f"| {num(r.get('on_peak'), '.3g')} | {num(r.get('on_entropy'), '.2f')} "
            f"| {_product(r)} "
            f"| {'>=' if bound else ''}{num(r.get('use'), '.2f')} |"
        )
    return lines


def chart(rows: list[dict]) -> alt.HConcatChart:
    """Left: the cost at `off`'s best LR with its interval; right: the threshold's bracket as a
    multiple of `off`'s best LR; both against head width, one colour per model width."""
    data = pd.DataFrame(rows).assign(width=lambda d: d.width.astype(str))
    widths = sorted(set(data.width), key=int)
    # widths that share a head width sit a few pixels apart (2^0.06: about 6 px here)
    middle = (len(widths) - 1) / 2
    step = {w: 2 ** (0.06 * (i - middle)) for i, w in enumerate(widths)}
    data = data.assign(x=data.head_width * data.width.map(step))
    color = alt.Color(
        "width:N",
        title="model width",
        sort=widths,
        scale=alt.Scale(domain=widths, range=[WIDTH_COLORS.get(int(w), "#000") for w in widths]),
        legend=alt.Legend(orient="bottom"),
    )
    x = alt.X(
        "x:Q",
        title="head width",
        scale=alt.Scale(type="log", base=2, domain=[12, 84], nice=False),
        axis=alt.Axis(values=[16, 32, 64], format="d"),
    )
    base = alt.Chart(data).encode(x=x, color=color)
    cost = alt.layer(
        alt.Chart().mark_rule(strokeDash=[4, 3], color="#777").encode(y=alt.datum(0)),
        base.mark_rule(strokeWidth=2)
        .encode(y=alt.Y("T7_lo:Q", title="off - on at off's best LR (nats)"), y2="T7_hi:Q")
        .properties(name="cost_intervals"),
        base.mark_point(filled=True, size=50)
        .encode(y="T7:Q", tooltip=["source:N", "head_width:Q", alt.Tooltip("T7:Q", format="+.3f")])
        .properties(name="cost_points"),
    ).properties(width=260, height=220, title="QK-norm's cost at off's best LR")
    threshold = alt.layer(
        base.mark_rule(strokeWidth=5, opacity=0.6)
        .encode(
            y=alt.Y(
                "T1_lo:Q",
                title="stability threshold (x off's best LR)",
                scale=alt.Scale(type="log"),
            ),
            y2="T1_hi:Q",
        )
        .properties(name="threshold_brackets"),
    ).properties(width=260, height=220, title="Stability threshold, bracket")
    return finish(
        alt.hconcat(cost, threshold).properties(
            title=chart_title(
                "QK-norm against head width (docs/STUDY.md section 20)",
                "left: off - on with its 90% interval (below 0: QK-norm worse); right: the "
                "threshold's bracket",
            )
        )
    )


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str], docs: Path = Path("docs")) -> int:
    pages, out, curves_from, grown_from = [], None, {}, {}
    it = iter(argv)
    for a in it:
        if a == "--out":
            out = next(it, None)
            if out is None:
                return _error(f"--out needs a folder; {USAGE}")
            out = Path(out)
        elif a == "--curves-from":
            pair = next(it, "")
            reference, _, source = pair.partition("=")
            if not reference or not source:
                return _error(
                    f"--curves-from needs REF=REPORT (e.g. cpu=cpu-depth-matched); {USAGE}"
                )
            if not (docs / source / "runs.parquet").is_file():
                return _error(
                    f"--curves-from: {docs / source} holds no runs.parquet; build its report"
                )
            curves_from[reference] = source
        elif a == "--grown":
            reference, _, source = next(it, "").partition("=")
            if not reference or not source:
                return _error(
                    f"--grown needs REF=REPORT (e.g. cpu-width=cpu-width128-head16-fill); {USAGE}"
                )
            if not (docs / source / "runs.parquet").is_file():
                return _error(f"--grown: {docs / source} holds no runs.parquet; build its report")
            grown_from[reference] = source
        elif a.startswith("-"):
            return _error(f"unknown option {a}; {USAGE}")
        else:
            pages.append(Path(a))
    if not pages or out is None:
        return _error(f"carry pages and --out expected; {USAGE}")
    for page in pages:
        for name in ("carry.json", "runs.parquet"):
            if not (page / name).is_file():
                return _error(f"{page} holds no {name}; run `python -m figures.carry {page}`")
    references = {json.loads((p / "carry.json").read_text()).get("reference") for p in pages}
    for option, named in (("--curves-from", curves_from), ("--grown", grown_from)):
        unknown = sorted(set(named) - references)
        if unknown:
            return _error(
                f"{option} {unknown[0]}=...: no page here has {unknown[0]} as its reference "
                f"(theirs: {', '.join(sorted(r for r in references if r))})"
            )
    try:
        rows, by_lr, check = collect(pages, docs, curves_from)
        lr_grids = grids(pages, docs, grown_from)
    except (ValueError, FileNotFoundError) as e:
        return _error(str(e))
    out.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m figures.head_width", *argv])
    again = retrained(pages, docs, curves_from)
    drops = seed_drop(pages)
    doc = {
        "command": command,
        "rows": rows,
        "bound_check": check,
        "retrained": again,
        "seed_drop": drops,
        "lr_grids": lr_grids,
    }
    write_json_atomic(out / "head_width.json", clean_json(doc))
    write_atomic(
        out / "head_width.md",
        render(rows, command, check)
        + render_retrained(again)
        + render_seed_drop(drops)
        + grid.render(lr_grids),
    )
    save(chart(rows), out, "head_width", ("svg",))
    if not by_lr.empty:
        save(hm.chart(by_lr), out, "head_width_mechanism", ("svg",))
    print(f"{out}/head_width.md: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
