"""The newest metrics row of a run that may be training in another process (or on another
machine writing to a shared folder): read from the end of metrics.jsonl, so watching a long
run costs the same at step 10 as at step 10,000.
"""

from __future__ import annotations

import json
from pathlib import Path

TAIL_BYTES = 16384  # a few rows, even with every diagnostic of a deep model


def last_rows(run_dir: str | Path, n: int = 1) -> list[dict]:
    """Up to the last n complete rows of run_dir/metrics.jsonl, oldest first ([] if none).
    A line cut by a writer in mid-append is skipped."""
    try:
        with open(Path(run_dir) / "metrics.jsonl", "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            lines = f.read().decode(errors="replace").splitlines()
            if size > TAIL_BYTES:
                lines = lines[1:]  # the first line read is most likely cut
    except OSError:
        return []
    rows = []
    for line in reversed(lines):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "step" in row:
            rows.append(row)
            if len(rows) == n:
                break
    return rows[::-1]


def last_row(run_dir: str | Path) -> dict | None:
    rows = last_rows(run_dir)
    return rows[-1] if rows else None
