"""The mechanism beside head width: the chart and the numbers it shows (docs/STUDY.md section
20, "What the mechanism should show"; descriptive, no verdict; figures/head_width.py reads the
reports and writes the page). Per model width, head width, arm and LR, read from each sweep's
curves at the end of training. `off`: the largest max attention logit of any evaluation (its
failure is the growth of these logits) and the attention entropy at the end. `on`: the same,
its gain product max_i |g_q,i g_k,i| (1 as initialized; above 1 the gains have grown to lift the
logit ceiling sqrt(head width) x that product) and the share of the ceiling its attention uses
(1: the bound binds). Runs that kept only the largest single gain (cpu-width) give the product's
upper bound, max |g|^2, and with it a lower bound on the share: said as "bound".

"""

from __future__ import annotations

import math
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from figures.charts.curves import attention_ends
from figures.charts.style import chart_title, finish, log_axis, lr_axis, lr_scale

# the head widths' colours (not the arms': every panel here is one arm)
HEAD_COLORS = {16: "#555555", 32: "#009E73", 64: "#CC79A7"}
FIELDS = {
    "off_peak": "off's peak max attention logit",
    "gain_product": "on's gain product max|g_q g_k| at the end",
    "use": "on's max logit / ceiling at the end",
}


def run_ends(curves: pd.DataFrame, head_width: int) -> pd.DataFrame:
    """One row per run: arm, lr, seed, its peak max attention logit over training and its
    attention entropy at the end (figures.charts.curves.attention_ends), and for runs with
    QK-norm gains the gain product at the end and the ceiling's share; `kind` says whether the
    product was recorded (qk_logit_ceiling) or bounded by the largest gain squared."""
    ends = attention_ends(curves)
    if ends.empty:
        return ends
    # the last evaluation that measured attention (a step's loss-only rows carry no diagnostics)
    measured = curves.dropna(subset=["max_attn_logit"]).sort_values(["run_id", "step"])
    last = measured.groupby("run_id").tail(1).set_index("run_id")
    # the largest gain squared first (all a sweep kept before qk_logit_ceiling existed); a
    # recorded ceiling replaces it where there is one
    none = pd.Series(np.nan, index=last.index)
    bound = last.qk_gain_max**2 if "qk_gain_max" in last else none
    product = bound
    kind = pd.Series(None, index=last.index, dtype=object).where(bound.isna(), "bound")
    if "qk_logit_ceiling" in last:
        recorded = last.qk_logit_ceiling.notna()
        product = product.where(~recorded, last.qk_logit_ceiling / math.sqrt(head_width))
        kind = kind.where(~recorded, "recorded")
    ceiling = math.sqrt(head_width) * product
    end = last.max_attn_logit
    use = end / ceiling
    if "qk_ceiling_use" in last:  # each layer's logit over its own ceiling, where recorded
        use = last.qk_ceiling_use.where(last.qk_ceiling_use.notna() & (kind == "recorded"), use)
    extra = pd.DataFrame(
        {
            "end_logit": end,
            "ceiling": ceiling,
            "gain_product": product,
            "gain_bound": bound,  # kept beside a recorded product: how tight the bound is
            "use": use,
            "kind": kind,
        }
    )
    return ends.join(extra, on="run_id")


def bound_gap(ends: pd.DataFrame) -> dict:
    """Over the runs that recorded the gain product and the largest gain: how many, and the
    largest relative gap between the product and that gain squared. q's and k's gains start
    equal and get the same gradient (each one's is the other's times the same sum), so they stay
    equal and the gap is rounding: then the bound read where only the gain was kept is exact."""
    both = ends[(ends.kind == "recorded") & ends.gain_bound.notna()] if not ends.empty else ends
    if both.empty:
        return {"runs": 0, "max_gap": None}
    gap = (both.gain_product / both.gain_bound - 1).abs().max()
    return {"runs": int(len(both)), "max_gap": float(gap)}


@dataclass(frozen=True)
class Mechanism:
    """Medians over seeds at one LR: each arm's peak logit and end entropy; `on`'s end logit,
    the ceiling sqrt(head width) x gain product, the product, the largest gain squared, the
    share of the ceiling it uses, and whether the product was recorded or bounded. None where
    nothing was recorded."""

    off_peak: float | None = None
    off_entropy: float | None = None
    on_peak: float | None = None
    on_entropy: float | None = None
    on_logit: float | None = None
    ceiling: float | None = None
    gain_product: float | None = None
    gain_bound: float | None = None
    use: float | None = None
    ceiling_kind: str | None = None  # "recorded" or "bound"


def at_lr(ends: pd.DataFrame, lr) -> Mechanism:
    """The mechanism's medians over seeds at one LR (Mechanism)."""
    if lr is None or ends.empty:
        return Mechanism()
    here = ends[np.isclose(ends.lr, lr, rtol=1e-6)]
    out: dict = {}
    for arm in ("off", "on"):
        mine = here[here.arm == arm]
        if not mine.empty:
            out[f"{arm}_peak"] = float(mine.peak.median())
            out[f"{arm}_entropy"] = float(mine.entropy.median())
    on = here[(here.arm == "on") & here.gain_product.notna()]
    if not on.empty:
        for name in ("gain_product", "gain_bound", "use", "ceiling"):
            out[name] = float(on[name].median())
        out["on_logit"] = float(on.end_logit.median())
        out["ceiling_kind"] = "recorded" if (on.kind == "recorded").all() else "bound"
    return Mechanism(**out)


def by_lr(ends: pd.DataFrame, width: int, head_width: int) -> pd.DataFrame:
    """The chart's rows for one (width, head width): per LR, each field's median over seeds
    (kind: 'median') and each run's value (kind: 'run'); off_peak from `off`, the rest from
    `on`."""
    if ends.empty:
        return pd.DataFrame()
    off = ends[ends.arm == "off"].assign(off_peak=lambda d: d.peak)[["lr", "seed", "off_peak"]]
    on = ends[(ends.arm == "on") & ends.gain_product.notna()]
    on = on[["lr", "seed", "gain_product", "use", "kind"]]
    out = []
    for field, data in (("off_peak", off), ("gain_product", on), ("use", on)):
        if data.empty:
            continue
        kind = data.kind.iloc[0] if "kind" in data and field != "off_peak" else "recorded"
        runs = data[["lr", field]].rename(columns={field: "value"}).assign(kind="run")
        medians = data.groupby("lr", as_index=False)[field].median()
        medians = medians.rename(columns={field: "value"}).assign(kind="median")
        out.append(pd.concat([runs, medians]).assign(field=field, measure=kind))
    return pd.concat(out, ignore_index=True).assign(width=width, head_width=head_width)


def _panel(data: pd.DataFrame, field: str, width: int, heads, px: int) -> alt.LayerChart:
    """One field at one model width against the LR; the y axis spans the field's values at
    every width, so a row's panels read on one scale."""
    every = data[data.field == field]
    here = every[every.width == width]
    lrs = sorted(set(data.lr[data.width == width]))
    color = alt.Color(
        "head_width:O",
        title="head width",
        scale=alt.Scale(domain=heads, range=[HEAD_COLORS.get(h, "#000") for h in heads]),
    )
    if field == "use":
        top = max(1.0, float(every.value.max())) * 1.05
        scale, axis = alt.Scale(domain=[0, top], nice=False), alt.Axis(title=FIELDS[field])
    else:
        values = list(every.value[every.value > 0]) + ([1.0] if field == "gain_product" else [])
        lo, hi = min(values), max(values)
        scale = alt.Scale(type="log", domain=[lo / 1.3, hi * 1.3], nice=False)
        axis = log_axis(values, FIELDS[field])
    y = alt.Y("value:Q", scale=scale, axis=axis)
    x = alt.X("lr:Q", scale=lr_scale(lrs), axis=lr_axis(lrs, px))
    base = alt.Chart(here).encode(x=x, y=y, color=color)
    dash = alt.StrokeDash(
        "measure:N",
        scale=alt.Scale(domain=["recorded", "bound"], range=[[1, 0], [5, 3]]),
        legend=None,  # said in the subtitle
    )
    name = f"{field}_w{width}"
    layers = [
        base.transform_filter("datum.kind == 'run'")
        .mark_point(filled=True, size=14, opacity=0.45)
        .properties(name=f"{name}_runs"),
        base.transform_filter("datum.kind == 'median'")
        .mark_line(point=True, strokeWidth=2)
        .encode(
            strokeDash=dash, tooltip=["head_width:O", "lr:Q", alt.Tooltip("value:Q", format=".3g")]
        )
        .properties(name=f"{name}_medians"),
    ]
    if field != "off_peak":  # 1: the gains as initialized / the bound binding
        layers.insert(
            0, alt.Chart().mark_rule(strokeDash=[4, 3], color="#777").encode(y=alt.datum(1))
        )
    return alt.layer(*layers).properties(width=px, height=170, title=f"width {width}")


def chart(data: pd.DataFrame) -> alt.VConcatChart:
    """Rows: off's peak logit, on's gain product, on's share of the ceiling, each against the
    LR; columns: model widths; colour: head width; dots: runs, line: the median over seeds
    (dashed where the product is the largest gain squared, an upper bound)."""
    widths = sorted(set(data.width))
    heads = sorted(set(data.head_width))
    px = 260 if len(widths) > 1 else 520
    rows = []
    for field in FIELDS:
        if (data.field == field).any():
            panels = [_panel(data, field, w, heads, px) for w in widths]
            rows.append(alt.hconcat(*panels))
    return finish(
        alt.vconcat(*rows).properties(
            title=chart_title(
                "Attention and QK-norm's gains against head width",
                "top: off's largest max attention logit over training (log)",
                "middle: on's gain product at the end (1: as initialized; ceiling = sqrt(head "
                "width) x product)",
                "bottom: on's max logit over that ceiling (1: the bound binds); dots: runs, "
                "line: median",
                "dashed: read from the largest gain squared, where a sweep kept only that gain",
            )
        )
    )
