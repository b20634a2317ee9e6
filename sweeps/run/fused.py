"""Many runs in one program: runs whose configs differ only in learning rate and seed, trained
fused (qktorch/fused.py, qkmlx/fused.py: the models stacked on a leading dimension), each still
its own run directory, written exactly as sweeps.run.loop writes a run trained alone.

The group drives one sweeps.run.loop._Session per run (metrics, evaluations, outcomes,
checkpoints and the summary are the shared loop's own code), each seeing its model of the
fused trainer through a ModelView. Every step trains all models at once, each on its own
seed's batches at its own schedule's LR; the blocks are read, evaluated and checkpointed when
any run's are due (the runs share their cadence). A run that diverges is finished at once
and its model stopped (frozen, on zeros) while the others go on. Runs resumed from
checkpoints at different steps are handled: a model waits, frozen, until the group reaches
its step. A group killed at any point resumes each run from its own checkpoint.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sweeps.core.config import RunConfig
from sweeps.core.errors import ConfigError
from sweeps.core.params import check_fits
from sweeps.core.schedule import lr_at
from sweeps.data import batch_starts
from sweeps.run.checkpoint import TrainerState
from sweeps.run.loop import _progress_bar, _Session
from sweeps.run.rundir import RunDir

# What may differ between the runs of one group: everything else is one program.
FUSED_FIELDS = ("train.lr", "seed")


def fuse_key(cfg: RunConfig) -> str:
    """The config without its learning rate and seed: runs with equal keys can be fused."""
    same = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, lr=1.0), seed=0)
    return same.to_json()


def check_fusable(cfgs: list[RunConfig]) -> None:
    """Refuse (ConfigError) a group that is empty or whose configs differ in more than
    FUSED_FIELDS, naming the first field that differs."""
    if not cfgs:
        raise ConfigError("a fused group needs at least one run")
    first = fuse_key(cfgs[0])
    for cfg in cfgs[1:]:
        if fuse_key(cfg) != first:
            a, b = (_flat(c.to_dict()) for c in (cfgs[0], cfg))
            differ = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            field = next(k for k in differ if k not in FUSED_FIELDS)
            raise ConfigError(
                f"runs differing in {field} ({a.get(field)} vs {b.get(field)}) cannot be "
                f"fused: only {' and '.join(FUSED_FIELDS)} may differ in a group"
            )


def group_config(cfgs: list[RunConfig]) -> RunConfig:
    """The config every run of the group shares (the first run's LR and seed included)."""
    return cfgs[0]


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


class _Cache:
    """Evaluations of the fused trainer, every model at once, kept until its weights change:
    the first run's evaluation of a batch computes all models', the others read theirs."""

    def __init__(self, fused):
        self.fused, self.version, self.entries = fused, None, {}

    def get(self, kind: str, x: np.ndarray, compute: Callable):
        if self.version != self.fused.version:
            self.version, self.entries = self.fused.version, {}
        key = (kind, x.shape, x.tobytes())
        if key not in self.entries:
            self.entries[key] = compute()
        return self.entries[key]


class ModelView(TrainerState):
    """Model i of a fused trainer, as the shared loop's _Session uses a Trainer outside its
    own step loop (the group steps all models at once): evaluations, probes, state, and the
    block of step values the group read for it (`pending`)."""

    def __init__(self, fused, i: int, cache: _Cache):
        self.fused, self.i, self.cache = fused, i, cache
        self.device, self.device_name = fused.device, fused.device_name
        self.pending: np.ndarray | None = None  # [n, 2 + k]: set by the group before a read

    def set_train_tokens(self, tokens: np.ndarray) -> None:
        if self.fused.tokens is None:  # one split for the group (only LR and seed differ)
            self.fused.set_train_tokens(tokens)

    def read(self, handles: list) -> np.ndarray:
        values, self.pending = self.pending, None
        assert values is not None and len(values) == len(handles), "the group reads first"
        return values

    def eval_loss(self, x: np.ndarray, y: np.ndarray) -> float:
        both = np.concatenate([x, y])
        return float(self.cache.get("loss", both, lambda: self.fused.eval_losses(x, y))[self.i])

    def probe(self, x: np.ndarray):
        return self.cache.get("probe", x, lambda: self.fused.probe(x))[self.i]

    def logits(self, x: np.ndarray) -> np.ndarray:
        return self.fused.logits(x)[self.i]

    def get_params(self) -> dict:
        return self.fused.get_params(self.i)

    def set_params(self, params: dict) -> None:
        self.fused.set_params(self.i, params)

    def get_state(self):
        return self.fused.get_state(self.i)

    def set_state(self, params: dict, optimizer: dict) -> None:
        self.fused.set_state(self.i, params, optimizer)


FusedFactory = Callable[[list], object]  # [RunConfig] -> a backend's FusedTrainer


def train_group(
    cfgs: list[RunConfig],
    run_dirs: list[str | Path],
    make_fused: FusedFactory,
    progress: bool = False,
    stop_after: int | None = None,
) -> list[dict]:
    """Train the runs fused, each in its run directory (resuming each from its own
    checkpoint); return their summaries in order. Finished runs are read, not trained.
    stop_after ends the group after that many steps without summaries (as train_run's)."""
    check_fusable(cfgs)
    runs = [RunDir(d) for d in run_dirs]
    for cfg, run in zip(cfgs, runs):
        run.check_holds(cfg)
    todo = [i for i, run in enumerate(runs) if not run.is_finished]
    out = {i: runs[i].read_summary() for i in range(len(runs)) if i not in todo}
    if todo:
        check_fits(group_config(cfgs), models=len(todo))  # before anything is allocated
        group = _Group([cfgs[i] for i in todo], [runs[i] for i in todo], make_fused)
        out.update(zip(todo, group.train(stop_after, progress)))
    return [out[i] for i in range(len(runs))]


class _Group:
    def __init__(self, cfgs: list[RunConfig], runs: list[RunDir], make_fused: FusedFactory):
        self.cfgs, self.M = cfgs, len(cfgs)
        self.fused = make_fused(cfgs)
        cache = _Cache(self.fused)
        self.views = [ModelView(self.fused, i, cache) for i in range(self.M)]
        self.sessions = [  # provenance: fused, with how many
            _Session(cfg, run, lambda c, view=view: view, fused=self.M)
            for cfg, run, view in zip(cfgs, runs, self.views)
        ]

    def train(self, stop_after: int | None, progress: bool) -> list[dict]:
        sessions, fused, t = self.sessions, self.fused, self.cfgs[0].train
        begin = [s.restore() for s in sessions]  # each run from its own checkpoint
        began = time.perf_counter()
        for s in sessions:
            s.began, s.wall_before = began, s.state["wall_time_s"]
        live = set(range(self.M))
        summaries: dict[int, dict] = {}
        first, n_train = min(begin), len(sessions[0].tokens.train)
        B, T = t.batch_size, self.cfgs[0].model.block_size
        pending: list = []  # the group's steps queued since the last read
        bar = _progress_bar(self.cfgs[0], first, progress)
        try:
            for step in range(first, t.max_steps):
                if stop_after is not None and step - first >= stop_after:
                    return [{"status": "interrupted", "steps_run": s.done} for s in sessions]
                on = [i in live and begin[i] <= step for i in range(self.M)]
                fused.active = [a for a in on]
                starts = np.stack([batch_starts(n_train, c.seed, step, B, T) for c in self.cfgs])
                lrs = [lr_at(step, c.train) for c in self.cfgs]
                handle = fused.train_step(starts, lrs)
                pending.append(handle)
                for i in np.flatnonzero(on):
                    s = sessions[i]
                    s.handles.append(handle)
                    s.queued.append((step + 1, lrs[i]))
                    s.done = step + 1
                if any(sessions[i]._due(step + 1) for i in np.flatnonzero(on)):
                    self._read(pending, step + 1, live, summaries)
                    pending = []
                bar.update(1)
        finally:
            bar.close()
        for i in sorted(live):
            summaries[i] = sessions[i].finish()
        return [summaries[i] for i in range(self.M)]

    def _read(self, pending: list, done: int, live: set, summaries: dict) -> None:
        """Read the queued steps once and hand each run its block; a run that diverged is
        finished now and its model stopped."""
        values = self.fused.read(pending)  # [n, M, 2 + k]
        for i in sorted(live):
            s = self.sessions[i]
            if not s.handles:
                continue  # waiting for the group to reach its checkpoint's step
            self.views[i].pending = values[len(values) - len(s.handles) :, i]
            if not s._read_block(done):
                self.fused.stop(i)
                live.discard(i)
                summaries[i] = s.finish()
