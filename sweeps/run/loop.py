"""The training loop both backends share: schedule, batches, evaluation cadence, outcomes,
checkpoints, metrics and the summary. A backend supplies only a Trainer
(sweeps.run.backends.Trainer, the protocol its train.py implements).

The device runs ahead of the loop: losses are read in blocks (every train.log_interval steps,
and at every evaluation and checkpoint), so a diverged run stops at most log_interval - 1
steps late; every step still gets its metrics row. Evaluations: the full one (val loss over
train.eval_batches fixed batches plus every diagnostic) every train.eval_interval steps (and
every train.early_eval_interval steps in the first train.early_eval_until of the run:
TrainConfig.evaluates_at), and a quick val loss (the first train.loss_eval_batches batches)
every train.loss_eval_interval steps, dense enough to time a run's way to a target loss.
After the last step of a run that did not diverge, the final evaluation: the loss per token
over the whole validation split (train.final_eval_tokens caps it) in non-overlapping windows,
summary.json's final_val_loss. How a run ends is sweeps.run.outcomes.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from sweeps.core.config import RunConfig
from sweeps.core.diagnostics import diagnostics_row
from sweeps.core.interventions import step_metrics, tallied
from sweeps.core.params import check_fits
from sweeps.core.schedule import lr_at
from sweeps.data import batch_starts, load_tokens, val_batches
from sweeps.data.batches import check_splits, windows
from sweeps.run.backends import PROGRAMS, Trainer, TrainerFactory
from sweeps.run.outcomes import SmoothedLoss, is_diverged, unstable_reasons
from sweeps.run.rundir import RunDir


def train_run(
    cfg: RunConfig,
    run_dir: str | Path,
    make_trainer: TrainerFactory,
    progress: bool = False,
    stop_after: int | None = None,
) -> dict:
    """Train one run in run_dir (resuming from its checkpoint) and return its summary.

    make_trainer(cfg) builds the backend's Trainer. stop_after ends the process-local loop
    after that many steps without a summary (used to test resume as a real interruption).
    """
    run = RunDir(run_dir)
    run.check_holds(cfg)
    if run.is_finished:
        return run.read_summary()
    check_fits(cfg)  # before the trainer allocates anything
    session = _Session(cfg, run, make_trainer)
    start = session.restore()
    if not session.train(start, stop_after, progress):
        return {"status": "interrupted", "steps_run": session.done}
    return session.finish()


class _Session:
    """One process's stretch of a run: from its checkpoint (or step 0) to the end."""

    def __init__(self, cfg: RunConfig, run: RunDir, make_trainer: TrainerFactory, fused: int = 0):
        self.cfg, self.run, self.train_cfg = cfg, run, cfg.train
        self.tokens = load_tokens(cfg.data, program=PROGRAMS.get(cfg.backend, "qkmlx"))
        check_splits(self.tokens.train, self.tokens.val, cfg.model.block_size)
        t = cfg.train
        self.batches = val_batches(
            self.tokens.val, t.eval_batches, t.batch_size, cfg.model.block_size
        )
        self.trainer: Trainer = make_trainer(cfg)
        self.trainer.set_train_tokens(self.tokens.train)
        # a directory that already holds the config is this run resumed (or restarted) by
        # another process, maybe on another machine: restore() records where it went on
        self.continued = run.config_path.exists()
        if not self.continued:
            run.write_config(cfg, self.trainer.device, fused=fused)
        self.handles: list = []  # steps queued on the device, not read yet
        self.queued: list[tuple[int, float]] = []  # their (step, lr)
        self.rows: list[dict] = []  # metrics rows not written yet
        self.diverged_at: int | None = None
        self.done = 0
        self.saved_at: int | None = None  # the step of the newest checkpoint this run has
        # what the trainer returns per step after (loss, grad norm): interventions' metrics
        self.step_metrics = step_metrics(cfg)
        self.tallied = tallied(cfg)  # interventions that keep a per-run tally of those

    # -- start ----------------------------------------------------------------------------
    def restore(self) -> int:
        """Load the newest sound checkpoint whose steps metrics.jsonl still holds (saying
        what was passed over) or evaluate step 0; returns the step to continue from. A
        checkpoint past the intact metrics would finish the run with rows lost."""
        skipped: list[str] = []
        checkpoint = self.run.load_checkpoint(skipped=skipped, max_step=self.run.intact_steps())
        if skipped:
            fallback = (
                f"resuming from step {checkpoint[2]['step']}"
                if checkpoint
                else "restarting the run from step 0"
            )
            print(
                f"warning: {self.run.path}: cannot resume from {'; '.join(skipped)}; {fallback}",
                file=sys.stderr,
            )
        if self.continued:
            self.run.note_continued(self.trainer.device, checkpoint[2]["step"] if checkpoint else 0)
        if checkpoint is None:
            self.run.truncate_metrics(-1)  # anything from a run killed before its checkpoint
            row = {"step": 0, "tokens": 0, **self.evaluate()}
            self.run.append_metrics([row])
            self.state = {
                "init_loss": row["val_loss"],
                "best_val_loss": row["val_loss"],
                "last_val_loss": row["val_loss"],
                "wall_time_s": 0.0,
                "init_logit_std": _mean(row.get("attn_logit_std")),
            }
            self.smoothed = SmoothedLoss(self.train_cfg)
            return 0
        params, optimizer, self.state = checkpoint
        self.trainer.set_state(params, optimizer)
        start = self.state.pop("step")
        self.smoothed = SmoothedLoss(self.train_cfg, self.state.pop("smoothed"))
        self.run.truncate_metrics(start)
        self.done = self.saved_at = start
        return start

    # -- the steps ------------------------------------------------------------------------
    def train(self, start: int, stop_after: int | None, progress: bool) -> bool:
        """Run the steps from start; False when stopped early by stop_after."""
        t = self.train_cfg
        self.began, self.wall_before = time.perf_counter(), self.state["wall_time_s"]
        bar = _progress_bar(self.cfg, start, progress)
        try:  # closed however the loop ends: an interrupt's message gets its own line
            for step in range(start, t.max_steps):
                if stop_after is not None and step - start >= stop_after:
                    return False
                lr = lr_at(step, t)
                starts = batch_starts(
                    len(self.tokens.train),
                    self.cfg.seed,
                    step,
                    t.batch_size,
                    self.cfg.model.block_size,
                )
                self.handles.append(self.trainer.train_step(starts, lr))
                self.queued.append((step + 1, lr))
                self.done = step + 1
                if self._due(self.done):
                    if not self._read_block(self.done):
                        break
                    bar.set_postfix_str(_bar_text(self.smoothed.value, lr), refresh=False)
                bar.update(1)
        finally:
            bar.close()
        return True

    def _due(self, done: int) -> bool:
        """Whether the queued steps must be read now: a full block, an evaluation, a
        checkpoint or the end."""
        t = self.train_cfg
        return (
            len(self.handles) >= t.log_interval
            or t.evaluates_at(done)
            or done % t.loss_eval_interval == 0
            or done % t.checkpoint_interval == 0
        )

    def _read_block(self, done: int) -> bool:
        """Read the queued steps, evaluate and checkpoint if due; False once diverged."""
        t = self.train_cfg
        rows = self._read()
        if self.diverged_at is not None:
            self.rows += rows
            return False
        if t.evaluates_at(done):
            rows[-1].update(self.evaluate())
            self.state["last_val_loss"] = rows[-1]["val_loss"]
            self.state["best_val_loss"] = min(self.state["best_val_loss"], rows[-1]["val_loss"])
        elif done % t.loss_eval_interval == 0:
            rows[-1]["quick_val_loss"] = self.quick_loss()
        # Rows reach disk every block (flushed appends), so `status --watch` is live between
        # checkpoints; a resume truncates metrics.jsonl to its checkpoint (restore), so rows
        # past it from a killed process never outlive it.
        self.run.append_metrics(self.rows + rows)
        self.rows = []
        if done % t.checkpoint_interval == 0 and done < t.max_steps:
            self.save(done)
        return True

    def _read(self) -> list[dict]:
        """Metrics rows of the queued steps, up to the first diverged one."""
        values = self.trainer.read(self.handles)
        rows = []
        for (step, lr), (loss, grad_norm, *extra) in zip(self.queued, values):
            row = {
                "step": step,
                "tokens": step * self.cfg.tokens_per_step,
                "lr": lr,
                "train_loss": loss,
                "grad_norm": grad_norm,
                "train_loss_ema": self.smoothed.update(step, loss),
            }
            row.update(zip(self.step_metrics, extra))
            for i in self.tallied:  # kept in the checkpointed state, written to the summary
                self.state[i.attr] = i.tally(self.state.get(i.attr), row)
            rows.append(row)
            if is_diverged(loss, self.state["init_loss"], step, self.train_cfg):
                self.diverged_at = self.done = step
                break
        self.handles, self.queued = [], []
        return rows

    # -- evaluation -----------------------------------------------------------------------
    def evaluate(self) -> dict:
        """Val loss over the fixed batches, the quick val loss, and every diagnostic."""
        losses = [self.trainer.eval_loss(x, y) for x, y in self.batches]
        k = self.train_cfg.loss_eval_batches
        row = {"val_loss": sum(losses) / len(losses), "quick_val_loss": sum(losses[:k]) / k}
        if math.isfinite(row["val_loss"]):
            x = self.batches[0][0][: self.train_cfg.diag_sequences]
            row.update(diagnostics_row(self.trainer.probe(x)))
        return row

    def quick_loss(self) -> float:
        k = self.train_cfg.loss_eval_batches
        return sum(self.trainer.eval_loss(x, y) for x, y in self.batches[:k]) / k

    # -- end ------------------------------------------------------------------------------
    def save(self, done: int) -> None:
        self.state["wall_time_s"] = self.wall_before + time.perf_counter() - self.began
        self.run.append_metrics(self.rows)
        self.rows = []
        self.run.save_checkpoint(
            done, *self.trainer.get_state(), {**self.state, "smoothed": self.smoothed.state()}
        )
        self.saved_at = done

    def finish(self) -> dict:
        """Write the last rows and the final checkpoint, evaluate on the validation split,
        then write the summary (last). Killed before the summary, the run resumes from its
        final checkpoint straight into the final evaluation."""
        final = {"final_val_loss": math.nan, "final_val_tokens": None, "final_eval_s": None}
        if self.diverged_at is not None:  # no checkpoint: a finished run is never resumed
            self.state["wall_time_s"] = self.wall_before + time.perf_counter() - self.began
            self.run.append_metrics(self.rows)
            status, reasons = "diverged", []
        else:
            if self.saved_at != self.done:  # not when resumed from the final checkpoint
                self.save(self.done)
            began = time.perf_counter()
            loss, tokens = final_val_loss(
                self.trainer,
                self.tokens.val,
                self.cfg.model.block_size,
                self.train_cfg.batch_size,
                self.train_cfg.final_eval_tokens,
            )
            took = time.perf_counter() - began
            final = {"final_val_loss": loss, "final_val_tokens": tokens, "final_eval_s": took}
            self.state["wall_time_s"] = self.wall_before + time.perf_counter() - self.began
            reasons = unstable_reasons(loss, self.smoothed, self.baseline_loss, self.train_cfg)
            status = "unstable" if reasons else "ok"
        self.run.write_summary(self.summary(status, reasons, final))
        return self.run.read_summary()

    @property
    def baseline_loss(self) -> float | None:
        """The loss of train.baseline on this data (None: no baseline rule)."""
        return self.tokens.manifest.get("baselines", {}).get(f"{self.train_cfg.baseline}_nats")

    def summary(self, status: str, reasons: list[str], final: dict) -> dict:
        """final: final_val_loss, final_val_tokens and final_eval_s (the final evaluation's
        loss, the tokens it covered and its seconds; NaN, None, None for a diverged run)."""
        wall, tokens = self.state["wall_time_s"], self.done * self.cfg.tokens_per_step
        baselines = self.tokens.manifest.get("baselines", {})
        final_val = final["final_val_loss"]
        return {
            "run_id": self.cfg.run_id,
            "status": status,
            "unstable_reasons": reasons,
            "init_loss": self.state["init_loss"],
            **final,
            "last_val_loss": self.state["last_val_loss"],
            "init_logit_std": self.state.get("init_logit_std"),
            "best_val_loss": self.state["best_val_loss"],
            "final_train_loss_ema": self.smoothed.value,
            "min_train_loss_ema": self.smoothed.min,
            "bigram_loss": baselines.get("bigram_nats"),
            "unigram_loss": baselines.get("unigram_nats"),
            "perplexity": math.exp(min(final_val, 50.0)),
            "steps_run": self.done,
            "max_steps": self.train_cfg.max_steps,
            "diverged_at": self.diverged_at,
            "tokens_seen": tokens,
            "wall_time_s": wall,
            "tokens_per_s": tokens / wall if wall > 0 else None,
            "device": self.trainer.device,
            "metrics": self.run.metrics_fingerprint(),
            **{i.attr: self.state[i.attr] for i in self.tallied if i.attr in self.state},
        }


def eval_window_starts(n_tokens: int, block_size: int, max_tokens: int = 0) -> np.ndarray:
    """int64 [k]: the starts 0, T, 2T, ... of the non-overlapping windows (block_size T inputs
    and their T next-token targets) that fit in a split of n_tokens, every token but the first
    predicted once; the last < T tokens, too few for a window, are left out. max_tokens > 0:
    only the windows within the first max_tokens tokens, and at least one (a cap below one
    window, a preset's cap under a larger block_size, still evaluates one)."""
    predicted = n_tokens - 1
    if max_tokens > 0:
        predicted = min(predicted, max(max_tokens, block_size))
    return np.arange(max(predicted, 0) // block_size, dtype=np.int64) * block_size


def final_val_loss(
    trainer: Trainer, tokens: np.ndarray, block_size: int, batch_size: int, max_tokens: int = 0
) -> tuple[float, int]:
    """(mean loss per token, tokens it covers) over the windows of eval_window_starts,
    batch_size windows at a time: each batch's mean weighted by its tokens."""
    starts = eval_window_starts(len(tokens), block_size, max_tokens)
    total = 0.0
    for i in range(0, len(starts), batch_size):
        x, y = windows(tokens, starts[i : i + batch_size], block_size)
        total += trainer.eval_loss(x, y) * len(x)
    return total / len(starts), len(starts) * block_size


def _mean(values) -> float | None:
    """The mean of a per-layer list (the attention temperature at init, over layers)."""
    return sum(values) / len(values) if values else None


def _bar_text(smoothed: float, lr: float) -> str:
    """The progress bar's postfix: the smoothed train loss (what metrics.jsonl records as
    train_loss_ema) and the step's LR."""
    return f"loss {smoothed:.4f} lr {lr:.3g}"


def _progress_bar(cfg: RunConfig, start: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(
        total=cfg.train.max_steps,
        initial=start,
        disable=not enabled,
        unit="step",
        desc=cfg.run_id,
        dynamic_ncols=True,
        leave=True,
    )
