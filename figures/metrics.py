"""The study's metrics from the runs table and curves: pure pandas/numpy, one quantity each.

Conventions every function shares:
- `runs` has one row per run: qk_norm, n_layer, lr, seed, status, init_loss, final_val_loss,
  perplexity (figures.results.SweepResults.runs). An *arm* is one qk_norm value; "none" is QK-norm off.
- Only finished runs count: status ok or diverged. Failed and unfinished runs are left out
  (the report names them).
- A run's effective loss is L = final_val_loss when ok and L = loss_0 when diverged, with
  loss_0 the validation loss at initialization (DESIGN.md: diverged runs count as loss_0).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

DEFAULT_MARGIN = 0.1  # nats: "within a margin of the best loss" for the max stable LR
# nats: the smallest off-minus-on gap that makes QK-norm necessary. With few seeds the seed
# spread can be ~0, and a gap of a few hundredths of a nat is noise, not necessity.
MIN_EFFECT = 0.02
N_BOOT = 1000  # bootstrap resamples of seeds for the necessity threshold
BOOT_SEED = 0  # fixed, so the same runs always give the same interval
ARM = ["qk_norm", "n_layer"]
THRESHOLD_COLUMNS = ["n_layer", "threshold", "lo", "hi", "n_seeds", "n_lr", "lr_top",
                     "off_max_stable_lr", "off_at_top"]


def finished(runs: pd.DataFrame) -> pd.DataFrame:
    """Finished runs with the effective loss L and loss_0 as columns `loss` and `loss0`.

    loss_0 is the median init_loss of the run's (qk_norm, n_layer, seed): initialization does
    not depend on the LR, so a run that lost its step-0 row still gets its arm's value.
    """
    done = runs[runs.status.isin(["ok", "diverged"])].copy()
    done["loss0"] = done.groupby([*ARM, "seed"]).init_loss.transform("median")
    done["loss"] = done.final_val_loss.where(done.status == "ok", done.loss0)
    return done


def max_stable_lr_per_seed(runs: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> pd.DataFrame:
    """Per (qk_norm, n_layer, seed): max{lr : ok(lr) and L(lr) <= min_lr' L(lr') + margin}.

    The min runs over that seed's ok runs. NaN means no swept LR was stable (the value lies
    below the grid); at_top means it is the largest LR swept at that depth (the true value
    may be higher; a sweep can extend its grid at one depth and not another).
    """
    done = finished(runs)
    ok = done[done.status == "ok"]
    best = ok.groupby([*ARM, "seed"]).loss.transform("min")
    stable = ok[ok.loss <= best + margin].groupby([*ARM, "seed"]).lr.max()
    out = (done[[*ARM, "seed"]].drop_duplicates().set_index([*ARM, "seed"])
           .assign(max_stable_lr=stable).reset_index())
    return out.assign(at_top=out.max_stable_lr == _depth_top(runs, out)).sort_values(
        [*ARM, "seed"], ignore_index=True)


def max_stable_lr(runs: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> pd.DataFrame:
    """Per (qk_norm, n_layer), over seeds: max{lr : no seed diverged at lr and
    mean_s L_s(lr) <= min_lr' mean_s L_s(lr') + margin}, the min over LRs where no seed diverged.

    Beside it the seed spread: seed_lo and seed_hi, the range of max_stable_lr_per_seed.
    NaN and at_top as in max_stable_lr_per_seed.
    """
    cells = finished(runs).groupby([*ARM, "lr"]).agg(
        any_div=("status", lambda s: (s == "diverged").any()), mean=("loss", "mean"))
    calm = cells[~cells.any_div]
    best = calm.groupby(level=ARM)["mean"].transform("min")
    stable = calm[calm["mean"] <= best + margin].reset_index().groupby(ARM).lr.max()
    per_seed = max_stable_lr_per_seed(runs, margin).groupby(ARM).max_stable_lr
    out = pd.DataFrame({"max_stable_lr": stable, "seed_lo": per_seed.min(),
                        "seed_hi": per_seed.max(), "n_seeds": per_seed.size()})
    out = out.rename_axis(ARM).reset_index()
    return out.assign(at_top=out.max_stable_lr == _depth_top(runs, out)).sort_values(
        ARM, ignore_index=True)


def lr_sensitivity(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (qk_norm, n_layer, seed), Wortsman et al. (2023):
    S = E_lr[min(L(lr), loss_0)] - min_lr L(lr),
    the mean over the swept LRs that finished, diverged runs counting as L = loss_0. n_lr says
    how many LRs entered the mean (fewer than the grid when runs are missing or failed)."""
    done = finished(runs)
    done["capped"] = np.minimum(done.loss, done.loss0)
    groups = done.groupby([*ARM, "seed"])
    out = pd.DataFrame({"sensitivity": groups.capped.mean() - groups.loss.min(),
                        "n_lr": groups.lr.nunique()})
    return out.reset_index().sort_values([*ARM, "seed"], ignore_index=True)


def across_seeds(per_seed: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per (qk_norm, n_layer): mean, sample sd (ddof 1; NaN with one seed), min, max, n."""
    g = per_seed.groupby(ARM)[column]
    out = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "min": g.min(), "max": g.max(),
                        "n": g.count()})
    return out.reset_index().sort_values(ARM, ignore_index=True)


def loss_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (qk_norm, n_layer, lr) over seeds: n finished, n diverged, and over the ok seeds
    the mean and sd (ddof 1) of the final val loss and the mean perplexity exp(final val loss)."""
    done = finished(runs)
    ok = done.status == "ok"
    done = done.assign(div=~ok, ok_loss=done.loss.where(ok),
                       ppl=done.perplexity.fillna(np.exp(done.loss)).where(ok))
    keys = [*ARM, "lr"]
    out = done.groupby(keys).agg(n=("loss", "size"), n_diverged=("div", "sum"),
                                 loss_mean=("ok_loss", "mean"), loss_sd=("ok_loss", "std"),
                                 ppl_mean=("ppl", "mean"))
    return out.reset_index().sort_values(keys, ignore_index=True)


def default_target(runs: pd.DataFrame) -> float:
    """A loss that every (qk_norm, n_layer) reaches in all its seeds at some LR:
    max over arms and depths of min over LRs of max over seeds of the final val loss
    (LRs where every finished seed is ok), rounded up to 0.01 nats. NaN without such an LR."""
    done = finished(runs)
    cells = done.groupby([*ARM, "lr"]).agg(worst=("loss", "max"),
                                           all_ok=("status", lambda s: (s == "ok").all()))
    best = cells[cells.all_ok].groupby(level=ARM).worst.min()
    return math.nan if best.empty else math.ceil(round(best.max() * 100, 6)) / 100


def steps_to_target(curves: pd.DataFrame, target: float) -> pd.DataFrame:
    """Per run: the first eval step with val_loss <= target (NaN if never reached); its
    resolution is the eval interval."""
    evals = curves.dropna(subset=["val_loss"])
    reached = evals[evals.val_loss <= target + 1e-9].groupby("run_id").step.min()  # float slack
    runs = evals.drop_duplicates("run_id").set_index("run_id")[[*ARM, "lr", "seed"]]
    return runs.assign(steps=reached).reset_index().sort_values(
        [*ARM, "lr", "seed"], ignore_index=True)


def fastest_to_target(steps: pd.DataFrame) -> pd.DataFrame:
    """Per (qk_norm, n_layer): the LR with the fewest mean steps to target among LRs where
    every finished seed reached it; NaN steps when no LR qualifies."""
    cells = steps.groupby([*ARM, "lr"]).agg(steps=("steps", "mean"),
                                            all_reached=("steps", lambda s: s.notna().all()))
    good = cells[cells.all_reached].reset_index().sort_values([*ARM, "steps", "lr"])
    best = good.drop_duplicates(ARM)[[*ARM, "lr", "steps"]]
    arms = steps[ARM].drop_duplicates()
    return arms.merge(best, on=ARM, how="left").sort_values(ARM, ignore_index=True)


def final_diagnostics(curves: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per (qk_norm, n_layer, lr): the median over seeds of each diagnostic at the run's last
    eval step (the last row that has val_loss)."""
    last = curves.dropna(subset=["val_loss"]).sort_values("step").drop_duplicates(
        "run_id", keep="last")
    out = last.groupby([*ARM, "lr"])[columns].median()
    return out.reset_index().sort_values([*ARM, "lr"], ignore_index=True)


def high_stable_lr(runs: pd.DataFrame) -> float:
    """The largest LR at which every finished QK-norm-on run is ok, at every depth: where the
    on arm still trains and the off arm's trouble, if any, shows. The median LR if none."""
    done = finished(runs)
    on = done[done.qk_norm != "none"]
    calm = on.groupby("lr").status.apply(lambda s: (s == "ok").all())
    lrs = sorted(done.lr.unique())
    return float(calm[calm].index.max()) if calm.any() else float(lrs[len(lrs) // 2])


def necessity(runs: pd.DataFrame, on_arm: str) -> pd.DataFrame:
    """Per (n_layer, lr), QK-norm off against the `on_arm` qk_norm value, seeds paired:

    delta = mean_s L_off - mean_s L_on, diverged runs at loss_0 (so off diverging where on
    does not counts in full); spread = the larger seed range (max - min) of the two arms'
    non-diverged runs: seed noise, which a diverged seed would swamp;
    necessary = delta > max(spread, MIN_EFFECT).
    """
    rows = []
    for depth, (lrs, seeds, arrays) in _paired_arrays(runs, on_arm).items():
        stats = _necessity_stats(*arrays)
        rows += [{"n_layer": depth, "lr": lr, "n_seeds": len(seeds),
                  **{k: v[i] for k, v in stats.items()}} for i, lr in enumerate(lrs)]
    return pd.DataFrame(rows, columns=["n_layer", "lr", "n_seeds", "delta", "spread",
                                       "necessary"])


def necessity_threshold(runs: pd.DataFrame, on_arm: str, margin: float = DEFAULT_MARGIN,
                        n_boot: int = N_BOOT) -> pd.DataFrame:
    """Per depth: the smallest swept LR at which QK-norm is necessary (see `necessity`);
    inf when it is necessary at no swept LR (lr_top: the largest LR both arms have there).

    Interval: resample the seeds with replacement (pairs kept: the same seeds for both arms),
    recompute the threshold n_boot times, take the 2.5% and 97.5% quantiles (inverted CDF, so
    they are swept LRs or inf). RNG seeded with BOOT_SEED per depth: deterministic.
    Beside it the off arm's own max stable LR (max_stable_lr), and whether that sits at the
    grid top.
    """
    off_msl = max_stable_lr(runs, margin).query("qk_norm == 'none'").set_index("n_layer")
    rows = []
    for depth, (lrs, seeds, arrays) in _paired_arrays(runs, on_arm).items():
        point = _first_necessary(lrs, _necessity_stats(*arrays)["necessary"])
        rng = np.random.default_rng(BOOT_SEED)
        idx = rng.integers(0, len(seeds), size=(n_boot, len(seeds)))
        boot = _first_necessary(lrs, _necessity_stats(*(a[:, idx] for a in arrays))["necessary"])
        lo, hi = np.quantile(boot, [0.025, 0.975], method="inverted_cdf")
        rows.append({"n_layer": depth, "threshold": point, "lo": float(lo), "hi": float(hi),
                     "n_seeds": len(seeds), "n_lr": len(lrs), "lr_top": lrs[-1],
                     "off_max_stable_lr": off_msl.max_stable_lr.get(depth, np.nan),
                     "off_at_top": bool(off_msl.at_top.get(depth, False))})
    return pd.DataFrame(rows, columns=THRESHOLD_COLUMNS)


def _depth_top(runs: pd.DataFrame, table: pd.DataFrame) -> pd.Series:
    """The largest LR swept at each row's depth, aligned with the rows of table."""
    return table.n_layer.map(runs.groupby("n_layer").lr.max())


def _paired_arrays(runs: pd.DataFrame, on_arm: str) -> dict:
    """depth -> (lrs, seeds, (L_off, ok_off, L_on, ok_on)): arrays shaped (lr, seed), L the
    effective loss, ok the loss of non-diverged runs; NaN where there is none. Only LRs
    where both arms have a finished run."""
    done = finished(runs)
    done = done.assign(ok_loss=done.loss.where(done.status == "ok"))
    out = {}
    for depth, d in done.groupby("n_layer"):
        off, on = d[d.qk_norm == "none"], d[d.qk_norm == on_arm]
        lrs = sorted(set(off.lr) & set(on.lr))
        seeds = sorted(set(off.seed) | set(on.seed))
        if not lrs:
            continue
        arrays = []
        for part in (off, on):
            cells = part.groupby(["lr", "seed"])[["loss", "ok_loss"]].first()
            arrays += [cells[col].unstack().reindex(index=lrs, columns=seeds).to_numpy(float)
                       for col in ("loss", "ok_loss")]
        out[depth] = (lrs, seeds, tuple(arrays))
    return out


def _necessity_stats(l_off, ok_off, l_on, ok_on) -> dict:
    """The `necessity` rule on arrays shaped (..., seed); NaN marks a missing run."""
    n_off, n_on = np.isfinite(l_off).sum(-1), np.isfinite(l_on).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 where an arm has no run
        delta = np.nansum(l_off, -1) / n_off - np.nansum(l_on, -1) / n_on
    spread = np.fmax(_range(ok_off), _range(ok_on))
    necessary = (n_off > 0) & (n_on > 0) & (delta > np.fmax(spread, MIN_EFFECT))
    return {"delta": delta, "spread": spread, "necessary": necessary}


def _range(a: np.ndarray) -> np.ndarray:
    return np.fmax.reduce(a, axis=-1) - np.fmin.reduce(a, axis=-1)


def _first_necessary(lrs: list[float], necessary: np.ndarray) -> np.ndarray | float:
    """The smallest LR where `necessary` holds along axis 0 (inf where it never does)."""
    lr_col = np.asarray(lrs, float).reshape(-1, *[1] * (necessary.ndim - 1))
    first = np.where(necessary, lr_col, np.inf).min(axis=0)
    return float(first) if np.ndim(first) == 0 else first
