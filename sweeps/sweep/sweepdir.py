"""A sweep directory's own files, `<runs-dir>/<name>/` beside its run directories:

- plan.json: {"name", "spec", "backend", "device_kind", "overrides", "execution", "runs":
  [{"run_id", "config"}]}, every planned run, grid extensions included (written by the
  runner, read by status and figures); "backend" the folder's: a sweep folder holds one
  backend's runs, and a sweep of the other is refused (check_for_sweep); "device_kind" what
  the sweep that created the folder trained on (cpu, cuda, mps, metal:
  sweeps.platform.devices.device_kind; absent in folders from before it was kept);
  "overrides" is [] since spec.toml holds every --set; "execution" the device choices
  (device, compile, tf32, deterministic) of the sweep that wrote it;
- results.parquet: one row per planned run that has a directory (sweeps.run.rundir.runs_table);
- curves.parquet: every finished run's metrics, long (run_id, arm, lr, depth, seed, step,
  metric, value), written with results.parquet (sweeps.sweep.curves);
- crosscheck.json: what `crosscheck --sweep NAME` found (read by the report);
- spec.toml: the sweep's record, the complete spec its runs were planned from (a spec's or an
  ad-hoc grid's, every --set in its [set]; sweeps.sweep.record).

All written atomically; this module is the one place that reads and writes them.
"""

from __future__ import annotations

import io
from pathlib import Path

from sweeps.core.config import RunConfig
from sweeps.core.errors import HarnessError
from sweeps.core.files import read_json, write_atomic, write_json_atomic

PLAN = "plan.json"
RESULTS = "results.parquet"
CURVES = "curves.parquet"
CROSSCHECK = "crosscheck.json"
RECORD = "spec.toml"  # the sweep's record (sweeps.sweep.record)
REWRITE = "delete it and rerun the step that writes it"
RUN_FILES = ("config.json", "metrics.jsonl", "summary.json")  # a run directory's own files


class SweepDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.name = self.path.name

    def run_dir(self, run_id: str) -> Path:
        return self.path / run_id

    # -- plan.json ------------------------------------------------------------------------
    def has_plan(self) -> bool:
        return (self.path / PLAN).exists()

    def write_plan(
        self,
        spec: dict,
        backend: str,
        overrides: list[str],
        configs: dict[str, RunConfig],
        execution: dict | None = None,
        grows: str | None = None,
        device_kind: str | None = None,
    ) -> None:
        """grows: the committed report this sweep grows (`sweep --from-report`), so a later
        `sweep NAME` resumes it as such instead of training the report's runs again;
        device_kind: what the sweep that created the folder trained on (None: not known)."""
        write_json_atomic(
            self.path / PLAN,
            {
                "name": self.name,
                "spec": spec,
                "backend": backend,
                **({"device_kind": device_kind} if device_kind else {}),
                "overrides": overrides,
                **({"execution": execution} if execution else {}),
                **({"grows": grows} if grows else {}),
                "runs": [{"run_id": rid, "config": cfg.to_dict()} for rid, cfg in configs.items()],
            },
        )

    # -- spec.toml: the sweep's record (sweeps.sweep.record) --------------------------------
    def write_record(self, text: str) -> None:
        write_atomic(self.path / RECORD, text)

    def unplanned(self, planned) -> dict[str, int]:
        """backend -> run directories in this folder (config.json written) that `planned`
        (run ids) leaves out: runs of another definition or backend, named by a view that
        shows fewer runs than the folder holds."""
        from sweeps.core.config import BACKENDS

        out: dict[str, int] = {}
        if not self.path.is_dir():
            return out
        planned = set(planned)
        for child in self.path.iterdir():
            backend = child.name.split("-", 1)[0]
            if (
                backend in BACKENDS
                and child.name not in planned
                and (child / "config.json").exists()
            ):
                out[backend] = out.get(backend, 0) + 1
        return out

    def unplanned_note(self, planned, shown: str | None) -> str | None:
        """One line on run directories of `shown`'s backend that the plan leaves out (runs
        of an earlier definition: another preset, grid or --set); None if none. Other
        backends' runs have left_out_note."""
        from sweeps.run.backends import PROGRAMS

        n = self.unplanned(planned).get(shown, 0) if shown else 0
        if not n:
            return None
        program = PROGRAMS[shown]
        return (
            f"note: {self.path} holds {n} {shown} run director{'y' if n == 1 else 'ies'} that "
            f"its plan.json does not plan (an earlier definition's runs: another preset, grid "
            f"or --set), left out here; `{program} sweep {self.name} --dry-run` shows the plan, "
            f"{self.path / 'spec.toml'} its definition"
        )

    def read_plan(self) -> dict | None:
        """plan.json as written, None when the sweep has never run."""
        return read_json(self.path / PLAN, REWRITE) if self.has_plan() else None

    def planned_configs(self, plan: dict | None = None) -> dict[str, RunConfig]:
        """run_id -> RunConfig of every planned run ({} without plan.json); from `plan` when
        the caller has read it already."""
        plan = plan or self.read_plan() or {"runs": []}
        try:
            return {r["run_id"]: RunConfig.from_dict(r["config"]) for r in plan["runs"]}
        except (KeyError, TypeError) as e:
            raise HarnessError(
                f"{self.path / PLAN} is not a plan ({type(e).__name__}: {e}); "
                f"delete it and rerun the sweep to rewrite it"
            ) from None

    # -- results.parquet ------------------------------------------------------------------
    def write_results(self, df) -> None:
        buffer = io.BytesIO()
        df.to_parquet(buffer, index=False)
        write_atomic(self.path / RESULTS, buffer.getvalue())

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS

    def write_curves(self, df) -> None:
        buffer = io.BytesIO()
        df.to_parquet(buffer, index=False)
        write_atomic(self.path / CURVES, buffer.getvalue())

    @property
    def curves_path(self) -> Path:
        return self.path / CURVES

    # -- runs of several backends ---------------------------------------------------------
    def runs_by_backend(self) -> dict[str, int]:
        """backend -> how many run directories of it this folder holds (a run id starts with
        its backend: sweeps.core.config.RunConfig.run_id); read from the names alone."""
        from sweeps.core.config import BACKENDS

        counts: dict[str, int] = {}
        if not self.path.is_dir():
            return counts
        for child in self.path.iterdir():
            backend = child.name.split("-", 1)[0]
            if backend in BACKENDS and (child / "config.json").exists():
                counts[backend] = counts.get(backend, 0) + 1
        return counts

    def plan_backend(self) -> str | None:
        try:
            plan = self.read_plan()
        except HarnessError:
            return None
        return (plan or {}).get("backend")

    def device_kind(self) -> str | None:
        """The kind of device the folder's first sweep trained on (plan.json), None when the
        folder is new, or from before it was kept."""
        try:
            plan = self.read_plan()
        except HarnessError:
            return None
        kind = plan.get("device_kind") if isinstance(plan, dict) else None
        return kind if isinstance(kind, str) else None

    def backend(self) -> str | None:
        """The backend whose sweep this folder holds: plan.json's "backend", else (a plan.json
        from before it named one) the backend its planned run ids start with, else that of its
        run directories when they all share one (a run id starts with its backend: `torch-`,
        `mlx-`); None for a new folder, or a mixed one that plans nothing."""
        from sweeps.core.config import BACKENDS

        try:
            plan = self.read_plan()
        except HarnessError:  # damaged: the run directories say
            plan = None
        if isinstance(plan, dict):
            if plan.get("backend") in BACKENDS:
                return plan["backend"]
            runs = plan.get("runs") if isinstance(plan.get("runs"), list) else []
            planned = {
                str(r.get("run_id", "")).split("-", 1)[0] for r in runs if isinstance(r, dict)
            }
            if len(planned) == 1 and next(iter(planned)) in BACKENDS:
                return next(iter(planned))
        held = self.runs_by_backend()
        return next(iter(held)) if len(held) == 1 else None

    def check_for_sweep(self, backend: str) -> None:
        """Refuse, in one line (HarnessError, exit 2), a `backend` sweep in this folder when it
        is a run directory (`train --out` writes one), holds run directories but was never a
        sweep folder (no plan.json, no spec.toml: runs written by `train --out`), or is another
        backend's sweep folder: a sweep folder holds one backend's runs, so that its plan,
        status and report are of them. A new or empty folder, and a folder of this backend
        (recorded, or read from its run ids), are accepted."""
        from sweeps.run.backends import PROGRAMS

        if not self.path.is_dir():
            return
        elsewhere = "give the sweep another --runs-dir"
        if any((self.path / name).is_file() for name in RUN_FILES):
            raise HarnessError(
                f"{self.path} is a run directory (as `train --out` writes), not a sweep folder: "
                f"a sweep does not adopt it; {elsewhere}, or move the run elsewhere"
            )
        if not self.has_plan() and not (self.path / RECORD).is_file():
            runs = sum((child / "config.json").is_file() for child in self.path.iterdir())
            if runs:
                raise HarnessError(
                    f"{self.path} holds {runs} run director{'y' if runs == 1 else 'ies'} but no "
                    f"{PLAN} or {RECORD}: not a sweep folder (runs written by `train --out`?), "
                    f"and a sweep does not adopt them; {elsewhere}, or move them elsewhere"
                )
        held = self.backend()
        if held is not None and held != backend:
            raise HarnessError(
                f"{self.path} is a {held} sweep folder ({PROGRAMS[held]}'s runs), and a sweep "
                f"folder holds one backend's runs: give this {PROGRAMS[backend]} sweep a folder "
                f"of its own with --runs-dir OTHER_DIR, or resume that one with "
                f"`{PROGRAMS[held]} sweep {self.name}`"
            )

    def foreign_note(self, shown: str | None, backend: str, command: str) -> str | None:
        """One line when a program shows (command: 'status', 'figures') another backend's
        sweep folder: its runs are shown, not this program's; None when they agree."""
        from sweeps.run.backends import PROGRAMS

        if shown is None or shown == backend or shown not in PROGRAMS:
            return None
        return (
            f"note: {self.path} is a {shown} sweep folder: this {command} is of its {shown} "
            f"runs (`{PROGRAMS[shown]} sweep {self.name}` resumes it; a {PROGRAMS[backend]} "
            f"sweep of this spec needs a --runs-dir of its own)"
        )

    def left_out_note(self, shown: str, command: str) -> str | None:
        """One line on run directories of other backends that a view of `shown`'s runs
        leaves out, and how to see them (command: 'status' or 'figures'); None if none.
        Only a folder from before a sweep folder held one backend has them (check_for_sweep)."""
        from sweeps.run.backends import PROGRAMS

        others = {b: n for b, n in self.runs_by_backend().items() if b != shown}
        if not others:
            return None
        parts = ", ".join(f"{n} {b}" for b, n in sorted(others.items()))
        hows = "; ".join(
            f"`{PROGRAMS[b]} {command} {self.name} --runs-dir OTHER_DIR`" for b in sorted(others)
        )
        return (
            f"note: {parts} run(s) in {self.path} were left out: it is a {shown} sweep folder "
            f"(plan.json plans its {shown} runs), and a sweep folder holds one backend's runs; "
            f"to see them, move them with {RECORD} into OTHER_DIR/{self.name}/, then {hows}"
        )

    # -- crosscheck.json ------------------------------------------------------------------
    @property
    def crosscheck_path(self) -> Path:
        return self.path / CROSSCHECK

    def read_crosscheck(self) -> dict | None:
        return read_json(self.crosscheck_path, REWRITE) if self.crosscheck_path.exists() else None
