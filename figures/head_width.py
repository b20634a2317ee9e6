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

import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import altair as alt
import pandas as pd

from figures import head_width_grid as grid
from figures.charts import head_width as hm
from figures.charts.output import save
from figures.charts.style import chart_title, finish
from figures.head_width_grid import number as num
from figures.report.what_ran import unfinished_words
from sweeps.analysis import head_width_page as hp
from sweeps.analysis.carry_page import plan_for
from sweeps.core.files import clean_json, write_atomic, write_json_atomic

USAGE = (
    "usage: python -m figures.head_width PAGE... --out DIR [--curves-from REF=REPORT] "
    "[--grown REF=REPORT]"
)
WIDTH_COLORS = {64: "#555555", 128: "#CC79A7"}  # not the arms' colours: these are model widths


@dataclass(frozen=True)
class Row:
    """One (model width, head width) of the page: its side and the mechanism at its `off`'s
    best LR."""

    side: hp.Side
    mechanism: hm.Mechanism


def row_record(r: Row) -> dict:
    """A row as head_width.json keeps it."""
    return {**hp.side_record(r.side), **asdict(r.mechanism)}


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


def _curves_of(docs: Path, reference: str, ref_runs: pd.DataFrame, where, curves_from: dict):
    """(folder, where, run ids, CurvesFrom): where a reference side's curves are read. Its own,
    unless it has none and --curves-from names a report that trained the same configurations
    again: then that report's runs whose configuration equals one of the reference's."""
    own = docs / reference / "curves.parquet"
    source = curves_from.get(reference)
    if source is None or (own.is_file() and len(pd.read_parquet(own))):
        return docs / reference, where, None, None
    runs = hp.same_configs(ref_runs, pd.read_parquet(docs / source / "runs.parquet"))
    return docs / source, (), runs, hp.CurvesFrom(source, len(runs), len(ref_runs))


def collect(
    pages: list[Path], docs: Path, curves_from: dict | None = None
) -> tuple[list[Row], pd.DataFrame, dict]:
    """One row per (width, head width): each page's new side, and its reference side once; the
    mechanism chart's table (figures/charts/head_width.by_lr) of every side; and how tight
    the largest gain squared is as the gain product (hm.bound_gap over every run). curves_from:
    {reference: report} whose runs of the same configurations stand in for a reference that kept
    no curves."""
    out: dict[tuple[int, int], Row] = {}
    lr_tables, every_end = [], []

    def add(side: hp.Side, folder: Path, where=(), runs=None) -> None:
        ends = read_ends(folder, side.head_width, where, runs)
        out[(side.width, side.head_width)] = Row(side, hm.at_lr(ends, side.best_lr))
        lr_tables.append(hm.by_lr(ends, side.width, side.head_width))
        every_end.append(ends)

    for folder in pages:
        page = hp.read_page(folder)
        new = hp.head_width(pd.read_parquet(folder / "runs.parquet"))
        ref_runs = hp.reference_runs(docs, page)
        ref = hp.reference_shape(page, ref_runs, plan_for(folder).reference_head_width)
        if ref not in out:
            where = tuple(page.reference_rows.items())
            at, at_where, runs, said = _curves_of(
                docs, page.reference, ref_runs, where, curves_from or {}
            )
            add(hp.side(page, "reference", ref, curves_from=said), at, at_where, runs)
        add(hp.side(page, "new", new, unfinished=page.unfinished), folder)
    rows = [row for _, row in sorted(out.items())]
    tables = [t for t in lr_tables if not t.empty]
    ends = [e for e in every_end if not e.empty]
    check = hm.bound_gap(pd.concat(ends, ignore_index=True) if ends else pd.DataFrame())
    return rows, pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(), check


def render_seed_drop(rows: list[hp.SeedDrop]) -> str:
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
        lo, hi = r.shifts
        lines.append(
            f"| {r.report} | {r.quantity} | {r.outcome} | {r.same} of {r.drops} "
            f"| {lo:+.3f} to {hi:+.3f} |"
        )
    return "\n".join(lines) + "\n"


def _logits(m: hm.Mechanism) -> str:
    """on's max logit against the ceiling it lives under ("<=": the ceiling's upper bound)."""
    if m.on_logit is None:
        return "not recorded"
    if m.ceiling is None:
        return f"{m.on_logit:.1f} / n/a"
    bound = "<=" if m.ceiling_kind == "bound" else ""
    return f"{m.on_logit:.1f} / {bound}{m.ceiling:.1f}"


def _curves_note(s: hp.Side) -> str:
    """Where a side's curves came from, in the mechanism table."""
    f = s.curves_from
    return f"{f.source}: {f.runs} of {s.source}'s {f.of} runs, trained again" if f else s.source


def render(rows: list[Row], command: str = "", check: dict | None = None) -> str:
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
        *(
            f"> `{r.side.source}`: {unfinished_words(r.side.unfinished)}\n"
            for r in rows
            if r.side.unfinished
        ),
        "![QK-norm against head width](head_width.svg)",
        "",
        "| width | head width | from | off's best LR | threshold (x best) | cost at off's best LR "
        "| cost at each arm's own best | on there, at the end: max logit / ceiling |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s, t = r.side, r.side.threshold
        threshold = (
            f"(x{t.lo:.3g}, x{t.hi:.3g}]"
            if t.lo is not None and t.hi is not None
            else s.threshold_kind or "n/a"
        )
        lines.append(
            f"| {s.width} | {s.head_width} | {s.source} | {num(s.best_lr, '.3g')} "
            f"| {threshold} | {_interval(s.cost)} | {_interval(s.cost_own_best)} "
            f"| {_logits(r.mechanism)} |"
        )
    return "\n".join(lines + _mechanism_lines(rows, check or {})) + "\n"


def _interval(e: hp.Estimate) -> str:
    return f"{num(e.value)} [{num(e.lo)}, {num(e.hi)}]"


def _product(m: hm.Mechanism) -> str:
    """The gain product: recorded with the largest gain squared beside it (how tight that bound
    is), or the bound alone ("<=")."""
    product, bound = m.gain_product, m.gain_bound
    if m.ceiling_kind == "bound":
        return f"<={num(bound, '.2f')}"
    if product is None:
        return "n/a"
    return (
        f"{num(product, '.2f')} (<={num(bound, '.2f')})"
        if bound is not None
        else num(product, ".2f")
    )


def render_retrained(rows: list[hp.Retrained]) -> str:
    """The robustness section (retrained): empty without a repeated reference."""
    if not rows:
        return ""
    quantities = [
        q for q in ("T1", "T2", "T5", "T7", "T8", "T9") if any(q in r.outcomes for r in rows)
    ]

    def sh(r: hp.Retrained, q: str) -> str:
        m = r.shifts.get(q)
        return grid.shift_text(m) if m else "n/a"

    def new(r: hp.Retrained) -> str:
        return f"{r.new} (the same runs again)" if r.new_is_repeat else r.new

    def against(r: hp.Retrained) -> str:
        return f"{r.reference}'s repeat" if r.reference_is_repeat else r.reference

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
        cells = " | ".join(r.outcomes.get(q, "n/a") for q in quantities)
        lines.append(f"| {new(r)} | {against(r)} | {cells} | {sh(r, 'T7')} | {sh(r, 'T8')} |")
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


def _mechanism_lines(rows: list[Row], check: dict) -> list[str]:
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
        s, m = r.side, r.mechanism
        lines.append(
            f"| {s.width} | {s.head_width} | {_curves_note(s)} "
            f"| {num(m.off_peak, '.3g')} | {num(m.off_entropy, '.2f')} "
            f"| {num(m.on_peak, '.3g')} | {num(m.on_entropy, '.2f')} "
            f"| {_product(m)} "
            f"| {'>=' if m.ceiling_kind == 'bound' else ''}{num(m.use, '.2f')} |"
        )
    return lines


def chart(rows: list[Row]) -> alt.HConcatChart:
    """Left: the cost at `off`'s best LR with its interval; right: the threshold's bracket as a
    multiple of `off`'s best LR; both against head width, one colour per model width."""
    data = pd.DataFrame([row_record(r) for r in rows]).assign(width=lambda d: d.width.astype(str))
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
    try:
        references = {hp.read_page(p).reference for p in pages}
    except ValueError as e:
        return _error(str(e))
    for option, named in (("--curves-from", curves_from), ("--grown", grown_from)):
        unknown = sorted(set(named) - references)
        if unknown:
            return _error(
                f"{option} {unknown[0]}=...: no page here has {unknown[0]} as its reference "
                f"(theirs: {', '.join(sorted(r for r in references if r))})"
            )
    try:
        rows, by_lr, check = collect(pages, docs, curves_from)
        lr_grids = hp.lr_grids(pages, docs, grown_from)
    except (ValueError, FileNotFoundError) as e:
        return _error(str(e))
    out.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m figures.head_width", *argv])
    again = hp.retrained(pages, docs, curves_from)
    drops = hp.seed_drops(pages)
    doc = {
        "command": command,
        "rows": [row_record(r) for r in rows],
        "bound_check": check,
        "retrained": [hp.record(r) for r in again],
        "seed_drop": [hp.record(r) for r in drops],
        "lr_grids": [hp.record(r) for r in lr_grids],
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
