"""The training loop both backends share: schedule, batches, evaluation cadence, divergence,
checkpoints, metrics and the summary. A backend supplies only a Trainer
(sweeps.backends.Trainer, the protocol its train.py implements).

Diverged runs are results, not crashes: NaN/Inf, or a train loss above the loss at
initialization plus a margin after warmup, ends the run with status `diverged`.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from sweeps.backends import Trainer, TrainerFactory
from sweeps.config import RunConfig, TrainConfig
from sweeps.data import get_batch, load_tokens, val_batches
from sweeps.diagnostics import layer_diagnostics
from sweeps.errors import HarnessError
from sweeps.runs import RunDir
from sweeps.schedule import lr_at


def is_diverged(loss: float, init_loss: float, steps_done: int, train: TrainConfig) -> bool:
    if not math.isfinite(loss):
        return True
    return steps_done > train.warmup_steps and loss > init_loss + train.diverge_margin


def evaluate(trainer: Trainer, batches, train: TrainConfig) -> dict:
    """Mean val loss over the fixed batches plus per-layer diagnostics on the first one."""
    losses = [trainer.eval_loss(x, y) for x, y in batches]
    row = {"val_loss": sum(losses) / len(losses)}
    if math.isfinite(row["val_loss"]):
        row.update(layer_diagnostics(trainer.probe(batches[0][0][: train.diag_sequences])))
    return row


def train_run(cfg: RunConfig, run_dir: str | Path, make_trainer: TrainerFactory,
              progress: bool = False, stop_after: int | None = None) -> dict:
    """Train one run in run_dir (resuming from its checkpoint) and return its summary.

    make_trainer(cfg) builds the backend's Trainer. stop_after ends the process-local loop
    after that many steps without a summary (used to test resume as a real interruption).
    """
    run = RunDir(run_dir)
    if run.is_finished:
        return run.read_summary()
    if run.config_path.exists() and run.read_config().run_id != cfg.run_id:
        raise HarnessError(f"{run.path} holds another run ({run.read_config().run_id}); "
                           f"choose another --out directory")
    tokens = load_tokens(cfg.data)
    train = cfg.train
    batches = val_batches(tokens.val, train.eval_batches, train.batch_size, cfg.model.block_size)
    trainer = make_trainer(cfg)
    if not run.config_path.exists():
        run.write_config(cfg, trainer.device)

    checkpoint = run.load_checkpoint()
    if checkpoint is None:
        run.truncate_metrics(-1)  # anything from a run killed before its first checkpoint
        row = {"step": 0, "tokens": 0, **evaluate(trainer, batches, train)}
        run.append_metrics([row])
        state = {"init_loss": row["val_loss"], "best_val_loss": row["val_loss"],
                 "wall_time_s": 0.0, "last_val_loss": row["val_loss"]}
        start = 0
    else:
        params, optimizer, state = checkpoint
        trainer.set_state(params, optimizer)
        start = state.pop("step")
        run.truncate_metrics(start)

    status, diverged_at, pending = "ok", None, []
    loss = float("nan")
    began = time.perf_counter()
    wall_before = state["wall_time_s"]
    bar = _progress_bar(cfg, start, progress)

    def save(done: int) -> None:
        state["wall_time_s"] = wall_before + time.perf_counter() - began
        run.append_metrics(pending)
        pending.clear()
        run.save_checkpoint(done, *trainer.get_state(), state)

    done = start
    for step in range(start, train.max_steps):
        if stop_after is not None and step - start >= stop_after:
            bar.close()
            return {"status": "interrupted", "steps_run": done}
        lr = lr_at(step, train)
        x, y = get_batch(tokens.train, cfg.seed, step, train.batch_size, cfg.model.block_size)
        loss, grad_norm = trainer.train_step(x, y, lr)
        done = step + 1
        row = {"step": done, "tokens": done * cfg.tokens_per_step, "lr": lr,
               "train_loss": loss, "grad_norm": grad_norm}
        if is_diverged(loss, state["init_loss"], done, train):
            status, diverged_at = "diverged", done
            pending.append(row)
            break
        if done % train.eval_interval == 0 or done == train.max_steps:
            row.update(evaluate(trainer, batches, train))
            state["last_val_loss"] = row["val_loss"]
            state["best_val_loss"] = min(state["best_val_loss"], row["val_loss"])
        if done % train.log_interval == 0 or "val_loss" in row:
            pending.append(row)
        if done % train.checkpoint_interval == 0 and done < train.max_steps:
            save(done)
        bar.update(1)
        steps_per_s = bar.format_dict["rate"] or 0.0
        bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{steps_per_s * cfg.tokens_per_step:.0f}",
                        refresh=False)
    bar.close()

    if status == "diverged":
        state["wall_time_s"] = wall_before + time.perf_counter() - began
        run.append_metrics(pending)  # no checkpoint: a finished run is never resumed
    else:
        save(done)
    wall = state["wall_time_s"]
    final_val = state["last_val_loss"] if status == "ok" else float("nan")
    summary = {
        "run_id": cfg.run_id, "status": status, "init_loss": state["init_loss"],
        "final_val_loss": final_val, "best_val_loss": state["best_val_loss"],
        "final_train_loss": loss, "perplexity": math.exp(min(final_val, 50.0)),
        "steps_run": done, "max_steps": train.max_steps, "diverged_at": diverged_at,
        "tokens_seen": done * cfg.tokens_per_step, "wall_time_s": wall,
        "tokens_per_s": done * cfg.tokens_per_step / wall if wall > 0 else None,
        "device": trainer.device,
    }
    run.write_summary(summary)
    return run.read_summary()


def _progress_bar(cfg: RunConfig, start: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=cfg.train.max_steps, initial=start, disable=not enabled, unit="step",
                desc=cfg.run_id, dynamic_ncols=True, leave=True)
