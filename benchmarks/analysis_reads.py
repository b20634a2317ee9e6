"""Count how figures/ reads its data by string key: the measure of issue 48's typed analysis.

A string subscript (`x["key"]`) or `.get("key")` in figures/ is a read of an untyped dict:
the analysis.json dict, a run row or a settings table. Attribute reads of the typed
`sweeps.analysis` records are not counted, nor are writes (`frame["column"] = ...`, a store,
not a read: reported apart). Python's own parser finds them, so strings in comments and
docstrings do not count.

    python benchmarks/analysis_reads.py            # the working tree
    python benchmarks/analysis_reads.py --rev fd920ab   # any commit, for a before/after
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def string_reads(source: str) -> tuple[Counter, Counter, int]:
    """(subscript keys read, .get keys, string-keyed writes) of one module's source, the first
    two a Counter of key -> reads."""
    subscripts, gets, writes = Counter(), Counter(), 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _is_str(node.slice):
            if not isinstance(node.ctx, ast.Load):
                writes += 1
                continue
            subscripts[node.slice.value] += 1
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and _is_str(node.args[0])
        ):
            gets[node.args[0].value] += 1
    return subscripts, gets, writes


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def figures_sources(rev: str | None) -> dict[str, str]:
    """figures/**/*.py at a git revision (or the working tree), path -> source."""
    if rev is None:
        return {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "figures").rglob("*.py")}
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "figures"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    show = ["git", "show"]
    return {
        n: subprocess.run([*show, f"{rev}:{n}"], cwd=ROOT, capture_output=True, text=True).stdout
        for n in names
        if n.endswith(".py")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision (default: the working tree)")
    parser.add_argument("--top", type=int, default=8, help="how many modules to list")
    args = parser.parse_args()
    per_module, keys, writes = {}, Counter(), 0
    for path, source in sorted(figures_sources(args.rev).items()):
        subscripts, gets, written = string_reads(source)
        writes += written
        per_module[path] = (sum(subscripts.values()), sum(gets.values()))
        keys.update(subscripts)
        keys.update(gets)
    subscripts = sum(s for s, _ in per_module.values())
    gets = sum(g for _, g in per_module.values())
    readers = [p for p, (s, g) in per_module.items() if s + g]
    print(f"figures/ at {args.rev or 'the working tree'}: {len(per_module)} modules")
    print(f'string reads: {subscripts + gets} ({subscripts} x["k"], {gets} .get("k"))')
    print(f"distinct keys read by string: {len(keys)}; modules that read by string: {len(readers)}")
    print(f"string-keyed writes (a column or key stored, not counted above): {writes}")
    ranked = sorted(per_module.items(), key=lambda kv: -sum(kv[1]))[: args.top]
    for path, (s, g) in ranked:
        print(f"  {path}: {s + g}")


if __name__ == "__main__":
    main()
