"""The table on stdout and crosscheck.json (configs, versions, errors, tolerances, verdict)."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

from crosscheck.checks import Check
from crosscheck.tolerances import BY_DTYPE, TOLERANCES
from sweeps.core.files import write_json_atomic
from sweeps.platform.provenance import provenance

HEADER = f"  {'check':<30} {'max abs err':>12} {'max rel err':>12} {'tolerance':>10}  result"


def heading(label: str, source: str, steps: int) -> str:
    return f"{label}  [data: {source}; {steps} training steps]\n{HEADER}"


def row(check: Check) -> str:
    return (
        f"  {check.name:<30} {_num(check.abs_err):>12} {_num(check.rel_err):>12} "
        f"{check.tolerance:>10.0e}  {'pass' if check.passed else 'FAIL'}    {check.detail}"
    )


def _num(x: float) -> str:
    return f"{x:.3e}" if math.isfinite(x) else str(x)


def placement(devices: dict) -> str:
    """Where each backend ran, in words: "qktorch on cuda, qkmlx on gpu"."""
    return ", ".join(f"qk{backend} on {device}" for backend, device in devices.items())


def verdict(results: list[dict]) -> str:
    ok = all(c["passed"] for r in results for c in r["checks"]) and all(
        r["checks"] for r in results
    )
    return "pass" if ok else "fail"


def document(
    results: list[dict], steps: int, command: list[str], sweep: dict | None, devices: dict
) -> dict:
    """crosscheck.json: every config with its checks; the verdict is pass only if all pass.
    devices: where each backend ran, e.g. {"torch": "cpu", "mlx": "cpu"}."""
    where = placement(devices)
    dtypes = sorted({r["config"]["train"]["dtype"] for r in results}, key=list(BY_DTYPE).index)
    mixed = [d for d in dtypes if d != "float32"]
    return {
        "verdict": verdict(results),
        "steps": steps,
        "command": command,
        "sweep": sweep,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "provenance": provenance(where),
        "devices": devices,
        # numbers and names only: what each measure and tolerance means, and why each
        # tolerance is what it is, crosscheck/tolerances.py says (its docstring, TOLERANCES)
        "numerics": {"dtypes": dtypes or ["float32"], "tf32": False},
        "tolerances": {k: {"max_rel_err": t.rel} for k, t in TOLERANCES.items()},
        **{
            f"tolerances_{d}": {k: {"max_rel_err": t.rel} for k, t in BY_DTYPE[d].items()}
            for d in mixed
        },
        "configs": results,
    }


def write(path: Path, doc: dict) -> None:
    write_json_atomic(path, doc)
