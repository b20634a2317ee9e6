"""One row per run as the study counts it (its outcome, effective loss, token budget), and
what the runs say as a whole: the data's baselines, the runs left out of the statistics, the
compute spent, the parameter counts and tokens per parameter, the records analysis.json keeps."""

from __future__ import annotations

import math

import pandas as pd

from sweeps.analysis.results import SweepResults
from sweeps.core.config import ModelConfig
from sweeps.core.ladder import DEPTH, ladder_axis
from sweeps.core.params import count_params
from sweeps.run.outcomes import OUTCOMES
from sweeps.study import rules
from sweeps.sweep.estimate import flops_per_token


def baselines(runs: pd.DataFrame) -> dict:
    """What counting alone achieves on the sweep's training data (sweeps.data.baselines), in
    nats per token of the runs' tokenizer, as the runs recorded it."""

    def first(column):
        values = (
            pd.to_numeric(runs[column], errors="coerce").dropna()
            if column in runs
            else pd.Series(dtype=float)
        )
        return float(values.iloc[0]) if len(values) else None

    tokenizer = runs.tokenizer.dropna() if "tokenizer" in runs else pd.Series(dtype=object)
    return {
        "bigram": first("bigram_loss"),
        "unigram": first("unigram_loss"),
        "unit": "nats/token",
        "tokenizer": str(tokenizer.iloc[0]) if len(tokenizer) else None,
    }


def baseline_rule(runs: pd.DataFrame) -> str | None:
    """The runs' train.baseline (bigram, unigram or none: the `stuck` definition's line, or
    none with it off), the rules joined where runs differ; None where the table has none."""
    rules_ = sorted(set(runs["baseline"].dropna())) if "baseline" in runs else []
    return ", ".join(map(str, rules_)) if rules_ else None


def ladder_field(runs: pd.DataFrame) -> str:
    """The field a runs table's rungs differ in (sweeps.core.ladder.ladder_axis over its
    (n_layer, n_embd)): n_embd when only the width varies, else n_layer (a single rung reads
    as a depth ladder of one; a table without n_embd is a depth ladder). Raises ConfigError
    for a table that varies both."""
    if "n_embd" not in runs:
        return DEPTH
    pairs = runs[["n_layer", "n_embd"]].dropna().astype(int).itertuples(index=False)
    return ladder_axis(map(tuple, pairs))


def build(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run with its outcome (ok | unstable | diverged; None when failed,
    unfinished or corrupt), effective loss L, failing flag and token budget."""
    df = runs.copy()
    for column in (
        "unstable_reasons",
        "tokens_seen",
        "wall_time_s",
        "device",
        "init_loss",
        "final_val_loss",
        "diverged_at",
        "steps_run",
        "max_steps",
        "batch_size",
        "block_size",
        "error",
    ):
        if column not in df:
            df[column] = None
    df["outcome"] = [rules.outcome_class(s) for s in df.status]
    df["failing"] = [rules.fails(s) for s in df.status]
    df["loss"] = [
        rules.effective_loss(o, optional_float(i), optional_float(f))
        for o, i, f in zip(
            df.outcome,
            pd.to_numeric(df.init_loss, errors="coerce"),
            pd.to_numeric(df.final_val_loss, errors="coerce"),
        )
    ]
    df["budget"] = (
        pd.to_numeric(df.max_steps, errors="coerce")
        * pd.to_numeric(df.batch_size, errors="coerce")
        * pd.to_numeric(df.block_size, errors="coerce")
    )
    keys = [k for k in ("n_layer", "n_embd", "arm", "lr", "seed") if k in df]
    return df.sort_values(keys, na_position="last", ignore_index=True)


def baseline_loss(r) -> float | None:
    """The loss of the run's own baseline rule (train.baseline: bigram, unigram or none) on its
    data, as its summary recorded it: the `stuck` definition's line (docs/STUDY.md 3)."""
    config = getattr(r, "config", None)
    rule = config.train.baseline if hasattr(config, "train") else "bigram"
    return rules.recorded_baseline(rule, r._asdict())


def problems(results: SweepResults, runs: pd.DataFrame) -> list[dict]:
    """Runs that are not in the statistics: failed, unfinished, corrupt, planned but missing."""
    bad = runs[~runs.status.isin(OUTCOMES)]
    out = [
        {
            "run_id": r.run_id,
            "status": r.status,
            "arm": r.arm,
            "n_layer": r.n_layer,
            "n_embd": getattr(r, "n_embd", None),
            "lr": r.lr,
            "seed": r.seed,
            "error": _first_line(r.error),
        }
        for r in bad.itertuples()
    ]
    out += [
        {
            "run_id": r.run_id,
            "status": "missing",
            "arm": r.arm,
            "n_layer": r.n_layer,
            "n_embd": getattr(r, "n_embd", None),
            "lr": r.lr,
            "seed": r.seed,
            "error": "",
        }
        for r in results.missing.itertuples()
    ]
    return sorted(out, key=lambda p: (p["status"], str(p["run_id"])))


def compute(runs: pd.DataFrame) -> dict:
    """What the sweep spent: device-hours per device, tokens, and training FLOPs
    (sweeps.sweep.estimate.flops_per_token, PaLM's convention) over runs that trained."""
    trained = runs[pd.to_numeric(runs.wall_time_s, errors="coerce").notna() & runs.config.notna()]
    hours = trained.groupby(trained.device.fillna("unknown")).wall_time_s.sum() / 3600
    tokens = pd.to_numeric(trained.tokens_seen, errors="coerce").fillna(0)
    flops = sum(flops_per_token(*_model(r)) * t for r, t in zip(trained.itertuples(), tokens))
    return {
        "device_hours": {k: float(v) for k, v in hours.items()},
        "tokens": float(tokens.sum()),
        "flops": float(flops),
        "runs": int(len(trained)),
    }


def _model(r) -> tuple[ModelConfig, int]:
    """A runs-table row's model config and vocabulary size (from its RunConfig)."""
    return r.config.model, r.config.vocab_size


def _params(r) -> dict:
    """Total and non-embedding parameter counts of a runs-table row's model."""
    return count_params(*_model(r))


def tokens_per_param(runs: pd.DataFrame) -> dict:
    counts = _params(
        runs[runs.qk_norm == "none"].iloc[0] if (runs.qk_norm == "none").any() else runs.iloc[0]
    )
    return {
        "params": counts["total"],
        "non_embedding": counts["non_embedding"],
        "by_budget": {
            str(int(b)): b / counts["total"] for b in sorted(runs.budget.dropna().unique())
        },
    }


def records(runs: pd.DataFrame) -> list[dict]:
    keep = [
        "run_id",
        "arm",
        "qk_norm",
        "n_layer",
        "n_embd",
        "lr",
        "seed",
        "status",
        "outcome",
        "unstable_reasons",
        "init_loss",
        "final_val_loss",
        "loss",
        "steps_run",
        "diverged_at",
        "tokens_seen",
        "wall_time_s",
        "device",
        "init_logit_std",
    ]
    return runs.reindex(columns=keep).to_dict("records")


def optional_float(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _first_line(error) -> str:
    if not isinstance(error, str) or not error.strip():
        return ""
    return error.strip().splitlines()[0][:160]


def left_out_below(analysis, rung: str, arm: str, lr: float | None) -> list[float]:
    """The LRs below `lr` at which `arm` has runs at this rung (its name: a depth or a width)
    left out of every statistic (failed, unfinished, corrupt or missing: analysis.problems):
    a best LR at the lowest LR with finished runs is not the grid's edge when runs below it
    were planned and lost."""
    if lr is None:
        return []
    field = analysis.settings.ladder.field
    out = set()
    for p in analysis.problems:
        at, below = getattr(p, field, None), p.lr
        if p.arm != arm or at is None or below is None:
            continue
        try:
            if int(at) == int(rung) and float(below) < lr * (1 - 1e-9):
                out.add(float(below))
        except (TypeError, ValueError):
            continue
    return sorted(out)
