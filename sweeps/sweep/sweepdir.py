"""A sweep directory's own files, `<runs-dir>/<name>/` beside its run directories:

- plan.json: {"name", "spec", "backend", "overrides", "execution", "runs": [{"run_id",
  "config"}]}, every planned run, grid extensions included (written by the runner, read by
  status and figures); "overrides" is [] since spec.toml holds every --set; "execution" the
  device choices (device, compile, tf32, deterministic) of the sweep that wrote it;
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
    ) -> None:
        """grows: the committed report this sweep grows (`sweep --from-report`), so a later
        `sweep NAME` resumes it as such instead of training the report's runs again."""
        write_json_atomic(
            self.path / PLAN,
            {
                "name": self.name,
                "spec": spec,
                "backend": backend,
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

    def left_out_note(self, shown: str, command: str) -> str | None:
        """One line on run directories of other backends that a view of `shown`'s runs
        leaves out, and how to see them (command: 'status' or 'figures'); None if none."""
        from sweeps.run.backends import PROGRAMS

        others = {b: n for b, n in self.runs_by_backend().items() if b != shown}
        if not others:
            return None
        parts = ", ".join(f"{n} {b}" for b, n in sorted(others.items()))
        hows = []
        for b in sorted(others):
            program = PROGRAMS[b]
            hows.append(
                f"`{program} sweep {self.name} --dry-run` lists their states; "
                f"`{program} sweep {self.name}` makes plan.json theirs (finished runs "
                f"are skipped), then `{program} {command} {self.name}`"
            )
        return (
            f"note: {parts} run(s) in {self.path} were left out (plan.json plans the "
            f"{shown} runs); to include them: {'; '.join(hows)}; better, keep each backend "
            f"in its own --runs-dir"
        )

    # -- crosscheck.json ------------------------------------------------------------------
    @property
    def crosscheck_path(self) -> Path:
        return self.path / CROSSCHECK

    def read_crosscheck(self) -> dict | None:
        return read_json(self.crosscheck_path, REWRITE) if self.crosscheck_path.exists() else None
