"""Where and with what a run was made: the git state of the code (read once per process),
package versions, Python, platform, device and start time."""

from __future__ import annotations

import datetime
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path


def provenance(device: str = "") -> dict:
    """Where and with what a run was made: commit, dirty flag, versions, device, time."""
    commit, dirty = _SOURCE
    versions = {}
    for package in ("qknorm-study", "numpy", "mlx", "torch", "safetensors", "tiktoken"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "versions": versions,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "device": device,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _source_state() -> tuple[str | None, bool | None]:
    """(git commit, dirty) of the checkout this code comes from."""
    source = Path(__file__).resolve().parents[2]
    commit = _git(source, "rev-parse", "HEAD")
    dirty = bool(_git(source, "status", "--porcelain", "--untracked-files=no")) if commit else None
    return commit, dirty


# Read once, when this process loads the code: a sweep's workers live for the whole sweep,
# and the checkout may move on meanwhile; the runs they train ran the code they loaded.
_SOURCE = _source_state()
