"""QK-norm against head width (docs/STUDY.md section 20), from the head-width sweeps' carry
pages (figures/carry.py): per model width and head width, the stability threshold as a multiple
of `off`'s best LR (its bracket) and QK-norm's cost at `off`'s best LR and at each arm's own best
(off - on, 90% intervals). Heads of 16 are each page's reference side (docs/cpu at width 64,
cpu-width's width-128 rung). Writes <out>/head_width.md, head_width.json and the chart
head_width.svg.

    python -m figures.head_width docs/cpu-head32 docs/cpu-head64 docs/cpu-width128-head64 \
        --out docs/head-width
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from figures.charts.output import save
from figures.charts.style import chart_title, finish
from sweeps.core.files import clean_json, write_atomic, write_json_atomic

USAGE = "usage: python -m figures.head_width PAGE... --out DIR"
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


def mechanism(folder: Path, head_width: int, best_lr, where=()) -> dict:
    """What bounds `on`'s attention at `off`'s best LR, at the end of training (medians over
    seeds, from the report's curves.parquet): its max attention logit and the logit ceiling
    QK-norm allows, qk_logit_ceiling where the runs recorded it, else its upper bound
    sqrt(head width) x max gain^2 ("bound"; max_i |g_q,i g_k,i| <= max |g|^2). None where the
    report holds no curves (docs/cpu's runs kept none)."""
    none = {"on_logit": None, "ceiling": None, "ceiling_kind": None}
    path = folder / "curves.parquet"
    if best_lr is None or not path.is_file():
        return none
    curves = pd.read_parquet(path)
    for column, value in where:
        curves = curves[curves[column] == value]
    on = curves[(curves.arm == "on") & np.isclose(curves.lr, best_lr, rtol=1e-6)]
    if on.empty or "max_attn_logit" not in on:
        return none
    end = on.sort_values("step").groupby("run_id").tail(1)
    if "qk_logit_ceiling" in end and end.qk_logit_ceiling.notna().any():
        ceiling, kind = end.qk_logit_ceiling.median(), "recorded"
    elif "qk_gain_max" in end and end.qk_gain_max.notna().any():
        ceiling, kind = math.sqrt(head_width) * (end.qk_gain_max**2).median(), "bound"
    else:
        ceiling, kind = None, None
    return {
        "on_logit": float(end.max_attn_logit.median()),
        "ceiling": ceiling,
        "ceiling_kind": kind,
    }


def rows_of(pages: list[Path], docs: Path) -> list[dict]:
    """One row per (width, head width): each page's new side, and its reference side once."""
    out: dict[tuple[int, int], dict] = {}
    for page in pages:
        doc = json.loads((page / "carry.json").read_text())
        if doc.get("section") != 20:
            raise ValueError(f"{page}/carry.json is not section 20's (run figures.carry on it)")
        new = head_width(pd.read_parquet(page / "runs.parquet"))
        ref_runs = pd.read_parquet(docs / doc["reference"] / "runs.parquet")
        for column, value in (doc.get("reference_rows") or {}).items():
            ref_runs = ref_runs[ref_runs[column] == value]
        # an older run table has no n_head: the page's plan names the reference's heads
        ref = (
            head_width(ref_runs)
            if "n_head" in ref_runs
            else (int(ref_runs.n_embd.iloc[0]), int(doc["reference_head_width"]))
        )
        if ref not in out:
            side = _side(doc, "reference")
            where = (doc.get("reference_rows") or {}).items()
            found = mechanism(docs / doc["reference"], ref[1], side["best_lr"], where)
            out[ref] = {"source": doc["reference"], **side, **found}
        side = _side(doc, "new")
        out[new] = {
            "source": doc["report"],
            "unfinished": doc.get("unfinished"),  # its sweep still trains: said first
            **side,
            **mechanism(page, new[1], side["best_lr"]),
        }
    return [{"width": w, "head_width": h, **v} for (w, h), v in sorted(out.items())]


def _num(x, fmt: str = "+.3f") -> str:
    return "n/a" if x is None or not math.isfinite(x) else format(x, fmt)


def _logits(r: dict) -> str:
    """on's max logit against the ceiling it lives under ("<=": the ceiling's upper bound)."""
    if r.get("on_logit") is None:
        return "not recorded"
    if r.get("ceiling") is None:
        return f"{r['on_logit']:.1f} / n/a"
    bound = "<=" if r["ceiling_kind"] == "bound" else ""
    return f"{r['on_logit']:.1f} / {bound}{r['ceiling']:.1f}"


def render(rows: list[dict]) -> str:
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
            f"| {r['width']} | {r['head_width']} | {r['source']} | {_num(r['best_lr'], '.3g')} "
            f"| {threshold} | {_num(r['T7'])} [{_num(r['T7_lo'])}, {_num(r['T7_hi'])}] "
            f"| {_num(r['T8'])} [{_num(r['T8_lo'])}, {_num(r['T8_hi'])}] | {_logits(r)} |"
        )
    return "\n".join(lines) + "\n"


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
    pages, out = [], None
    it = iter(argv)
    for a in it:
        if a == "--out":
            out = next(it, None)
            if out is None:
                return _error(f"--out needs a folder; {USAGE}")
            out = Path(out)
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
        rows = rows_of(pages, docs)
    except (ValueError, FileNotFoundError) as e:
        return _error(str(e))
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "head_width.json", clean_json({"rows": rows}))
    write_atomic(out / "head_width.md", render(rows))
    save(chart(rows), out, "head_width", ("svg",))
    print(f"{out}/head_width.md: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
