"""What ran, read typed: each run's provenance record (written by sweeps/platform/provenance.py
into its summary) and the sweep's crosscheck.json, as the report's setup and provenance sections
show them. Records written before a field existed read it as None (or empty), so a report says
"unknown" rather than failing on an old run; anything that is not a record reads as None.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Host:
    """The machine a run trained on: the CPU's name, its vector extensions, CPU count, the
    thread counts the libraries were told to use, and a preloaded library (another BLAS)."""

    cpu: str | None
    cpus: int | None
    simd: tuple[str, ...]
    threads: tuple[tuple[str, str], ...]  # (variable, value), sorted
    preload: str | None

    @classmethod
    def of(cls, d) -> Host | None:
        """None for a run made before hosts were recorded."""
        if not isinstance(d, dict):
            return None
        return cls(
            cpu=d.get("cpu"),
            cpus=d.get("cpus"),
            simd=tuple(d.get("simd") or ()),
            threads=tuple(sorted((str(k), str(v)) for k, v in (d.get("threads") or {}).items())),
            preload=d.get("preload"),
        )


@dataclass(frozen=True)
class RunProvenance:
    """Where and with what one run was made; `continued`: the host of every later process
    that resumed or restarted it (it trained there from then on)."""

    git_commit: str | None
    git_dirty: bool | None
    versions: tuple[tuple[str, str], ...]  # (package, version)
    python: str | None
    platform: str | None
    device: str | None
    host: Host | None
    continued: tuple[Host | None, ...]
    started_at: str | None

    @classmethod
    def of(cls, d) -> RunProvenance | None:
        """None where a run kept no record; an empty record reads as every field unknown."""
        if not isinstance(d, dict):
            return None
        went_on = [c for c in d.get("continued") or [] if isinstance(c, dict)]
        return cls(
            git_commit=d.get("git_commit"),
            git_dirty=d.get("git_dirty"),
            versions=tuple((str(k), str(v)) for k, v in (d.get("versions") or {}).items()),
            python=d.get("python"),
            platform=d.get("platform"),
            device=d.get("device"),
            host=Host.of(d.get("host")),
            continued=tuple(Host.of(c.get("host")) for c in went_on),
            started_at=d.get("started_at"),
        )


@dataclass(frozen=True)
class CrosscheckSummary:
    """crosscheck.json as the report states it: the verdict and how much was checked."""

    verdict: str
    configs: int  # model configs compared
    checks: int  # checks over all of them

    @classmethod
    def of(cls, d) -> CrosscheckSummary | None:
        """None where no crosscheck has run (no crosscheck.json)."""
        if not isinstance(d, dict):
            return None
        configs = [c for c in d.get("configs") or [] if isinstance(c, dict)]
        return cls(
            verdict=str(d.get("verdict") or "unknown"),
            configs=len(configs),
            checks=sum(len(c.get("checks") or []) for c in configs),
        )
