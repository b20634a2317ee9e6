"""H1-H3 (DESIGN.md) judged from the metrics: the test, the numbers, and a verdict.

A verdict is never more confident than the sweep allows: with one seed the seed spread is
unknown, with fewer than MIN_LRS learning rates "LR-conditional" cannot be told from noise,
and a trend over depth needs MIN_DEPTHS depths. Those cases are inconclusive and say why.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from figures import fmt
from figures.metrics import (DEFAULT_MARGIN, MIN_EFFECT, across_seeds, finished, lr_sensitivity,
                             max_stable_lr, max_stable_lr_per_seed, necessity,
                             necessity_threshold)

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not supported", "inconclusive"
MIN_SEEDS = 2
MIN_LRS = 3
MIN_DEPTHS = 3


@dataclass(frozen=True)
class Verdict:
    hypothesis: str  # H1, H2, H3
    claim: str
    test: str
    evidence: list[str]  # one line of numbers per depth (or for the whole trend)
    verdict: str  # supported | not supported | inconclusive
    reason: str


def judge(runs: pd.DataFrame, on_arm: str, margin: float = DEFAULT_MARGIN) -> list[Verdict]:
    """H1, H2, H3 for QK-norm off against the qk_norm value `on_arm`."""
    limits = _limits(runs, on_arm)
    thresholds = necessity_threshold(runs, on_arm, margin)
    return [h1(runs, on_arm, thresholds, limits), h2(runs, on_arm, margin, limits),
            h3(thresholds, limits)]


def h1(runs, on_arm, thresholds, limits) -> Verdict:
    effect = necessity(runs, on_arm)
    per_depth, evidence = {}, []
    for t in thresholds.itertuples():
        low = effect[effect.n_layer == t.n_layer].sort_values("lr").iloc[0]
        evidence.append(
            f"n_layer {t.n_layer}: at the lowest LR {fmt.lr(low.lr)} off - on = "
            f"{fmt.num(low.delta)} nats (seed spread {fmt.num(low.spread)}); necessity "
            f"threshold {fmt.lr(t.threshold)}")
        if low.necessary:
            per_depth[t.n_layer] = (NOT_SUPPORTED, "QK-norm already matters at the lowest LR")
        elif np.isfinite(t.threshold):
            per_depth[t.n_layer] = (SUPPORTED, f"negligible at {fmt.lr(low.lr)}, decisive from "
                                               f"{fmt.lr(t.threshold)}")
        elif t.off_at_top:
            per_depth[t.n_layer] = (INCONCLUSIVE, "the off arm is stable up to the largest "
                                                  "swept LR: extend the LR grid upward")
        else:
            per_depth[t.n_layer] = (NOT_SUPPORTED, "QK-norm is necessary at no swept LR "
                                                   "although the off arm becomes unstable")
    return _verdict(
        "H1", "The QK-norm effect is learning-rate-conditional: negligible or slightly "
              "negative at low LR, decisive at high LR.",
        "Per depth: at the lowest swept LR QK-norm must not be necessary, and a necessity "
        f"threshold must exist in the grid (necessary = mean loss off worse than on by more "
        f"than max(seed range, {MIN_EFFECT} nats), diverged runs counting as their loss at "
        "initialization).", evidence, per_depth, limits)


def h2(runs, on_arm, margin, limits) -> Verdict:
    runs = _common_cells(runs, on_arm)
    msl = _off_on(max_stable_lr_per_seed(runs, margin), on_arm, ["max_stable_lr", "at_top"])
    sens = _off_on(lr_sensitivity(runs), on_arm, ["sensitivity"])
    pooled = max_stable_lr(runs, margin).set_index(["qk_norm", "n_layer"])
    sens_stats = across_seeds(lr_sensitivity(runs), "sensitivity").set_index(
        ["qk_norm", "n_layer"])
    per_depth, evidence = {}, []
    for depth, m in msl.groupby("n_layer"):
        s = sens[sens.n_layer == depth]
        # NaN max stable LR = below the grid, i.e. lower than any swept LR.
        off_lr, on_lr = m.max_stable_lr_off.fillna(0.0), m.max_stable_lr_on.fillna(0.0)
        censored = m.at_top_off.astype(bool) & m.at_top_on.astype(bool)
        raised = int((on_lr > off_lr).sum())
        lowered = int((s.sensitivity_on < s.sensitivity_off).sum())
        n, n_cens = len(m), int(censored.sum())
        evidence.append(
            f"n_layer {depth}: max stable LR on {_pooled(pooled, on_arm, depth)} vs off "
            f"{_pooled(pooled, 'none', depth)}, raised in {raised}/{n} seeds; LR sensitivity "
            f"on {_sens(sens_stats, on_arm, depth)} vs off {_sens(sens_stats, 'none', depth)} "
            f"nats, lower in {lowered}/{len(s)} seeds")
        if raised == n and lowered == len(s):
            per_depth[depth] = (SUPPORTED, "both hold in every seed")
        elif n_cens:  # the grid never probes where off breaks: sensitivity says little too
            per_depth[depth] = (INCONCLUSIVE, f"both arms stable at the largest swept LR in "
                                              f"{n_cens}/{n} seeds: extend the LR grid upward")
        elif raised == 0 or lowered == 0:
            per_depth[depth] = (NOT_SUPPORTED, "fails in every seed")
        else:
            per_depth[depth] = (INCONCLUSIVE, "seeds disagree")
    return _verdict(
        "H2", "QK-norm raises the maximum stable LR and lowers LR sensitivity.",
        "Per depth and seed (paired, on the LRs both arms finished): the on arm's max stable "
        f"LR must exceed the off arm's (stable = not diverged and final loss within {margin} "
        "nats of that seed's best) and its LR sensitivity (Wortsman et al. 2023) must be "
        "lower, in every seed.",
        evidence, per_depth, limits)


def h3(thresholds: pd.DataFrame, limits: list[str]) -> Verdict:
    claim = "The necessity threshold falls as depth grows."
    test = ("Necessity thresholds across depths: non-increasing with at least one fall, and the "
            "bootstrap intervals (seeds resampled) of the shallowest and deepest depth disjoint. "
            "Spearman rank correlation of threshold with depth reported.")
    t = thresholds.sort_values("n_layer")
    evidence = [f"n_layer {r.n_layer}: threshold {fmt.lr(r.threshold)} "
                f"{fmt.interval(r.lo, r.hi)}" for r in t.itertuples()]
    if len(t) >= 2:
        ranks = t[["n_layer", "threshold"]].rank()
        rho = np.nan if ranks.threshold.nunique() < 2 else np.corrcoef(ranks.T)[0, 1]
        evidence.append(f"Spearman rank correlation (depth, threshold) = {fmt.num(rho, 2)}")
    if len(t) < MIN_DEPTHS:
        limits = limits + [f"{len(t)} depth(s) with both arms: a trend needs at least "
                           f"{MIN_DEPTHS}; add depths to the grid"]
    if limits:
        return Verdict("H3", claim, test, evidence, INCONCLUSIVE, "; ".join(limits))
    values = t.threshold.to_numpy()
    shallow, deep = t.iloc[0], t.iloc[-1]
    if np.isinf(values).all():
        verdict, reason = INCONCLUSIVE, ("QK-norm is necessary at no swept LR at any depth: "
                                         "extend the LR grid upward")
    elif deep.threshold >= shallow.threshold:
        verdict, reason = NOT_SUPPORTED, (f"the deepest threshold ({fmt.lr(deep.threshold)}) is "
                                          f"not below the shallowest ({fmt.lr(shallow.threshold)})")
    elif (np.diff(values) > 0).any():
        verdict, reason = INCONCLUSIVE, "the threshold falls overall but not monotonically"
    elif deep.hi >= shallow.lo:
        verdict, reason = INCONCLUSIVE, ("the threshold falls, but the bootstrap intervals of "
                                         "the shallowest and deepest depth overlap")
    else:
        verdict, reason = SUPPORTED, (f"falls from {fmt.lr(shallow.threshold)} at n_layer "
                                      f"{shallow.n_layer} to {fmt.lr(deep.threshold)} at "
                                      f"n_layer {deep.n_layer}, intervals disjoint")
    return Verdict("H3", claim, test, evidence, verdict, reason)


def _limits(runs: pd.DataFrame, on_arm: str) -> list[str]:
    """Why the sweep cannot support a confident verdict (empty when it can)."""
    done = finished(runs)
    off, on = done[done.qk_norm == "none"], done[done.qk_norm == on_arm]
    if off.empty or on.empty:
        return [f"no finished QK-norm {'off' if off.empty else 'on'} runs to compare"]
    out = []
    seeds = set(off.seed) & set(on.seed)
    if len(seeds) < MIN_SEEDS:
        out.append(f"{len(seeds)} seed(s) in both arms: the seed-to-seed spread is unknown; "
                   f"run at least {MIN_SEEDS} seeds (3 recommended)")
    lrs = set(off.lr) & set(on.lr)
    if len(lrs) < MIN_LRS:
        out.append(f"{len(lrs)} learning rate(s) in both arms: at least {MIN_LRS} are needed "
                   f"to tell a low-LR from a high-LR effect")
    return out


def _common_cells(runs: pd.DataFrame, on_arm: str) -> pd.DataFrame:
    """The off and on runs at the (n_layer, lr, seed) cells both arms finished: a run missing
    from one arm must not tilt a paired comparison."""
    two = finished(runs).query("qk_norm in ['none', @on_arm]")
    both = two.groupby(["n_layer", "lr", "seed"]).qk_norm.transform("nunique") == 2
    return runs.loc[two.index[both]]


def _verdict(name, claim, test, evidence, per_depth: dict, limits: list[str]) -> Verdict:
    """All depths agree -> that verdict; otherwise inconclusive, naming each depth's outcome."""
    if limits:
        return Verdict(name, claim, test, evidence, INCONCLUSIVE, "; ".join(limits))
    if not per_depth:
        return Verdict(name, claim, test, evidence, INCONCLUSIVE, "no depth has both arms")
    outcomes = {v for v, _ in per_depth.values()}
    reasons = "; ".join(f"n_layer {d}: {v} ({why})" for d, (v, why) in per_depth.items())
    verdict = outcomes.pop() if len(outcomes) == 1 else INCONCLUSIVE
    return Verdict(name, claim, test, evidence, verdict, reasons)


def _off_on(per_seed: pd.DataFrame, on_arm: str, columns: list[str]) -> pd.DataFrame:
    """Pair the off and on rows of a per-seed table on (n_layer, seed): columns X_off, X_on."""
    keys = ["n_layer", "seed"]
    off = per_seed[per_seed.qk_norm == "none"][keys + columns]
    on = per_seed[per_seed.qk_norm == on_arm][keys + columns]
    return off.merge(on, on=keys, suffixes=("_off", "_on")).sort_values(keys)


def _pooled(table: pd.DataFrame, qk_norm: str, depth: int) -> str:
    row = table.loc[(qk_norm, depth)]
    at_least = ">= " if row.at_top else ""  # stable at the largest swept LR: a lower bound
    return (f"{at_least}{fmt.lr(row.max_stable_lr)} "
            f"(seeds {fmt.lr(row.seed_lo)}-{fmt.lr(row.seed_hi)})")


def _sens(table: pd.DataFrame, qk_norm: str, depth: int) -> str:
    row = table.loc[(qk_norm, depth)]
    return fmt.pm(row["mean"], row["sd"])
