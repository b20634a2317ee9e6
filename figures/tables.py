"""Markdown tables of the metrics, rows and columns sorted so the text is deterministic."""
from __future__ import annotations

import math

import pandas as pd

from figures import fmt
from figures.results import qk_key
from sweeps.norms import qk_norm as qk_norm_kind


def markdown(header: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "_no data_\n"
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def arm_columns(df: pd.DataFrame) -> list[tuple[int, str]]:
    """(n_layer, qk_norm) pairs: depth ascending, QK-norm off first within a depth."""
    pairs = df[["n_layer", "qk_norm"]].drop_duplicates().itertuples(index=False)
    return sorted(pairs, key=lambda p: (p[0], qk_key(p[1])))


def arm_name(qk_norm: str) -> str:
    return qk_norm_kind(qk_norm).display


def by_lr(cells: pd.DataFrame, cell) -> str:
    """A table with one row per LR and one column per (depth, arm); cell(row) -> text."""
    cols = arm_columns(cells)
    index = cells.set_index(["n_layer", "qk_norm", "lr"])
    rows = []
    for lr in sorted(cells.lr.unique()):
        rows.append([fmt.lr(lr)] + [cell(index.loc[(d, q, lr)]) if (d, q, lr) in index.index
                                    else "-" for d, q in cols])
    return markdown(["LR"] + [f"L{d} {arm_name(q)}" for d, q in cols], rows)


def loss_cell(r) -> str:
    """'1.234 ± 0.010', with '(k/n div)' when seeds diverged, 'diverged' when all did."""
    n, n_div = int(r.n), int(r.n_diverged)  # a row read back through .loc comes as floats
    if n_div == n:
        return f"diverged ({n}/{n})"
    return fmt.pm(r.loss_mean, r.loss_sd) + (f" ({n_div}/{n} div)" if n_div else "")


def ppl_cell(r) -> str:
    n, n_div = int(r.n), int(r.n_diverged)
    if n_div == n:
        return f"diverged ({n}/{n})"
    return fmt.num(r.ppl_mean, 2) + (f" ({n_div}/{n} div)" if n_div else "")


def stable_lr(stable: pd.DataFrame) -> str:
    rows = [[str(r.n_layer), arm_name(r.qk_norm),
             (">= " if r.at_top else "") + _below(r.max_stable_lr),
             f"{_below(r.seed_lo)} - {_below(r.seed_hi)}", str(r.n_seeds)]
            for r in stable.itertuples()]
    return markdown(["n_layer", "QK-norm", "max stable LR", "per-seed range", "seeds"], rows)


def sensitivity(stats: pd.DataFrame, per_seed: pd.DataFrame) -> str:
    n_lr = per_seed.groupby(["qk_norm", "n_layer"]).n_lr.agg(["min", "max"])
    rows = []
    for r in stats.itertuples():
        lo, hi = n_lr.loc[(r.qk_norm, r.n_layer)]
        rows.append([str(r.n_layer), arm_name(r.qk_norm), fmt.pm(r.mean, r.sd),
                     f"{fmt.num(r.min)} - {fmt.num(r.max)}", str(r.n),
                     str(lo) if lo == hi else f"{lo}-{hi}"])
    return markdown(["n_layer", "QK-norm", "sensitivity (nats, mean ± sd)", "seed range",
                     "seeds", "LRs used"], rows)


def thresholds(table: pd.DataFrame) -> str:
    rows = [[str(r.n_layer), arm_name(r.on_arm), _threshold(r.threshold, r.lr_top),
             f"[{_threshold(r.lo, r.lr_top)}, {_threshold(r.hi, r.lr_top)}]", str(r.n_seeds),
             (">= " if r.off_at_top else "") + _below(r.off_max_stable_lr)]
            for r in table.itertuples()]
    return markdown(["n_layer", "vs", "necessity threshold", "95% bootstrap interval", "seeds",
                     "off arm's max stable LR"], rows)


def effect(table: pd.DataFrame) -> str:
    """off - on loss per LR and depth with the seed spread; necessary cells in bold."""
    depths = sorted(table.n_layer.unique())
    index = table.set_index(["n_layer", "lr"])
    rows = []
    for lr in sorted(table.lr.unique()):
        row = [fmt.lr(lr)]
        for d in depths:
            if (d, lr) not in index.index:
                row.append("-")
                continue
            r = index.loc[(d, lr)]
            text = f"{fmt.num(r.delta)} ({fmt.num(r.spread)})"
            row.append(f"**{text}**" if r.necessary else text)
        rows.append(row)
    return markdown(["LR"] + [f"L{d} off - on (spread)" for d in depths], rows)


def steps(fastest: pd.DataFrame) -> str:
    rows = [[str(r.n_layer), arm_name(r.qk_norm), fmt.lr(r.lr),
             "not reached" if math.isnan(r.steps) else fmt.num(r.steps, 0)]
            for r in fastest.itertuples()]
    return markdown(["n_layer", "QK-norm", "fastest LR", "steps to target (seed mean)"], rows)


def diagnostics(table: pd.DataFrame, columns: dict[str, str]) -> str:
    """One row per (depth, LR); for each diagnostic an off and an on column."""
    arms = sorted(table.qk_norm.unique(), key=qk_key)
    index = table.set_index(["n_layer", "qk_norm", "lr"])
    rows = []
    for d, lr in sorted(set(zip(table.n_layer, table.lr))):
        row = [str(d), fmt.lr(lr)]
        for col in columns:
            row += [fmt.num(index.loc[(d, q, lr), col], 2) if (d, q, lr) in index.index
                    else "-" for q in arms]
        rows.append(row)
    header = ["n_layer", "LR"] + [f"{name} {arm_name(q)}" for name in columns.values()
                                  for q in arms]
    return markdown(header, rows)


def _below(x: float) -> str:
    """NaN max stable LR: no swept LR was stable."""
    return "below grid" if isinstance(x, float) and math.isnan(x) else fmt.lr(x)


def _threshold(x: float, lr_top: float) -> str:
    """inf: necessary at no swept LR, so above the largest one."""
    return f"> {fmt.lr(lr_top)}" if math.isinf(x) else fmt.lr(x)
