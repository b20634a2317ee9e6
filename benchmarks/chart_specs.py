"""The chart specs of every committed report, as a digest per chart: the check that a refactor
of figures/ changes no chart (issue 48's proof of no behaviour change).

Each committed report (docs/NAME with its own data, runs.parquet) is re-rendered from that
data into a temporary folder, its charts' Vega-Lite specs captured as built (not rendered:
SVG bytes depend on the renderer's version) and hashed. With --rev, the same is done in a
temporary worktree of that commit and the two sets compared chart by chart; the exit code is
the number of charts that differ, appear or vanish.

    python benchmarks/chart_specs.py              # the working tree's digests
    python benchmarks/chart_specs.py --rev b93e824   # compared with that commit's
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def digests(root: Path) -> dict[str, str]:
    """{"report/chart": sha256 of its spec} for every committed report under root/docs, the
    reports rendered by root's own code (run in a subprocess, so another commit's code can
    be measured the same way)."""
    code = f"""
import hashlib, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, {str(root)!r})
from figures import charts
try:
    from figures.report.assemble import make_report
except ImportError:  # a commit before figures/ had its sub-packages
    from figures.report import make_report
found = {{}}
current = [None]
def save(chart, out_dir, name, formats):
    spec = json.dumps(chart.to_dict(), sort_keys=True)
    found[f"{{current[0]}}/{{name}}"] = hashlib.sha256(spec.encode()).hexdigest()
charts.save = save
docs = Path({str(root)!r}) / "docs"
with tempfile.TemporaryDirectory() as tmp:
    for p in sorted(docs.glob("*/runs.parquet")):
        current[0] = p.parent.name
        make_report(None, Path(tmp) / p.parent.name, ("svg",), from_report=p.parent)
print(json.dumps(found))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="a commit to compare the working tree's chart specs with")
    args = parser.parse_args()
    now = digests(ROOT)
    if not args.rev:
        for name, digest in sorted(now.items()):
            print(f"{digest[:16]}  {name}")
        print(f"{len(now)} charts over {len({n.split('/')[0] for n in now})} reports")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "rev"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(tree), args.rev], check=True
        )
        try:
            before = digests(tree)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], check=True)
    differ = sorted(n for n in before.keys() | now.keys() if before.get(n) != now.get(n))
    for name in differ:
        print(
            f"differs: {name} ({before.get(name, 'absent')[:16]} -> {now.get(name, 'absent')[:16]})"
        )
    print(
        f"{len(now)} charts over {len({n.split('/')[0] for n in now})} reports; "
        f"{len(differ)} differ from {args.rev}"
    )
    return len(differ)


if __name__ == "__main__":
    sys.exit(main())
