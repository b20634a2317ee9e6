"""Files written atomically (temp file + fsync + rename) and strict JSON read and written.

A killed process never leaves a half-written file behind: readers see the old file or the
new one. NaN and Inf become null, so every JSON file here is strict JSON. Files get the mode an
ordinary open() would give them (0644 under umask 0022), not mkstemp's private 0600, so
colleagues on a shared server can read a report.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from sweeps.core.errors import EnvironmentFault, HarnessError, environment_fault

_UMASK: int | None = None


def umask() -> int:
    """The process's umask, read once (reading it means setting it; done before any thread
    of ours writes files)."""
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


def file_mode() -> int:
    """What open() would give a new file: 0666 less the umask."""
    return 0o666 & ~umask()


def dir_mode() -> int:
    """What mkdir() would give a new directory: 0777 less the umask."""
    return 0o777 & ~umask()


def write_atomic(path: Path, data: bytes | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())  # mkstemp makes it 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        if e.filename is None:  # a failed write() names no file: name the one being written
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path, option: str) -> None:
    """Refuse, before any work starts, a directory that cannot be made or written: one below
    a regular file (HarnessError, exit 2) or on a read-only or forbidden path
    (EnvironmentFault, exit 1). Probes with a temporary file that leaves nothing behind."""
    path = Path(path)
    existing = path
    while not existing.exists():  # exists() is False below a regular file, too
        existing = existing.parent
    if not existing.is_dir():
        raise HarnessError(
            f"{option} {path}: {existing} is a file, not a directory; choose another {option}"
        )
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        fault = environment_fault(OSError(e.errno, e.strerror, str(existing)))
        raise fault or EnvironmentFault(
            f"cannot write {existing} ({e.strerror}); choose another {option}"
        ) from None


def write_json_atomic(path: Path, obj) -> None:
    write_atomic(path, json.dumps(clean_json(obj), indent=2, sort_keys=True) + "\n")


def clean_json(obj):
    """JSON-ready and strict, the one sanitiser: NaN and Inf (and pandas' NA) become null,
    numpy scalars Python ones, keys strings."""
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if _is_pandas_missing(obj):
        return None
    return obj


def _is_pandas_missing(obj) -> bool:
    pandas = sys.modules.get("pandas")  # only a program that imported pandas can hold its NA
    return pandas is not None and (obj is pandas.NA or obj is pandas.NaT)


def read_json(path: Path, fix: str = "delete the run directory to rerun it") -> dict:
    """A JSON file that must exist and parse; a one-line HarnessError ending in `fix`."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise HarnessError(f"{path} does not exist: is this a run directory?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HarnessError(f"{path} is not valid JSON ({e}); {fix}") from None
