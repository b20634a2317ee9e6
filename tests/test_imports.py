"""The import graph: layers that only point down, no circles, no heavy imports in sweeps/.

The graph is read statically (ast) from every module's imports, function-level ones
included, so a lazy import that runs back up is caught too. Layers, top to bottom:
console entry points (qkmlx.cli, qktorch.cli, crosscheck.cli) -> crosscheck, figures,
qkmlx, qktorch -> sweeps. sweeps reaches a backend only through its registry (by name,
sweeps.run.backends), never by an import statement.
"""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sweeps", "figures", "crosscheck", "qkmlx", "qktorch")
ENTRY_POINTS = {"qkmlx.cli", "qktorch.cli", "crosscheck.cli"}
# What each package may import from the project (besides itself).
ALLOWED = {
    "sweeps": set(),
    "figures": {"sweeps"},
    "qkmlx": {"sweeps"},
    "qktorch": {"sweeps"},
    "crosscheck": {"sweeps", "qkmlx", "qktorch"},
}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the project modules it imports (a name that is a module, else its package)."""
    files = {module_name(p, root): p for pkg in PACKAGES for p in (root / pkg).rglob("*.py")}
    graph = {}
    for name, path in files.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                candidates = [f"{node.module}.{alias.name}" for alias in node.names]
                candidates = [c if c in files else node.module for c in candidates]
            else:
                continue
            targets |= {c for c in candidates if c in files and c != name}
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert cycles(import_graph()) == []


def test_imports_only_point_down():
    wrong = []
    for module, targets in import_graph().items():
        package = module.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            if other != package and other not in ALLOWED[package] and module not in ENTRY_POINTS:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


# sweeps/ in layers, bottom to top: a module may import its own sub-package and those below it.
# analysis (the typed analysis of a sweep) reads sweep directories and sweep.estimate's FLOPs,
# so it sits above sweep; figures/ words it and nothing in sweeps/ imports it but cli's layer
SWEEPS_LAYERS = ("core", "platform", "data", "run", "study", "sweep", "analysis", "cli")
# What a training step needs: the trainers reach nothing of sweeps/ above these.
TRAINER_LAYERS = {"core", "platform", "run"}


def sweeps_layer(module: str) -> int:
    parts = module.split(".")
    return SWEEPS_LAYERS.index(parts[1]) if len(parts) > 1 else len(SWEEPS_LAYERS)


def upward_in_sweeps(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith("sweeps.")
        for t in targets
        if t.startswith("sweeps.") and sweeps_layer(t) > sweeps_layer(m)
    )


def test_sweeps_sub_packages_only_import_down():
    assert upward_in_sweeps(import_graph()) == []


# figures/ in layers, bottom to top (docs/DESIGN.md): the shared readers, the words, the charts,
# the report's assembly, the commands. A module imports its own layer and those below it.
FIGURES_LAYERS = (
    ("present", "formats"),
    ("words",),
    ("charts",),
    ("report",),
    ("cli", "carry", "side_by_side", "head_width", "head_width_grid"),
)


def figures_layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else "cli"
    return next(i for i, names in enumerate(FIGURES_LAYERS) if part in names)


def test_figures_is_words_charts_and_the_report_and_only_imports_down():
    graph = import_graph()
    inside = [m for m in graph if m.startswith("figures.")]
    tops = {m.split(".")[1] for m in inside}
    assert tops == {n for names in FIGURES_LAYERS for n in names}  # nothing else at the top
    upward = sorted(
        f"{m} -> {t}"
        for m in inside
        for t in graph[m]
        if t.startswith("figures.") and figures_layer(t) > figures_layer(m)
    )
    assert upward == []


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for t in graph[todo.pop()] - seen:
            seen.add(t)
            todo.append(t)
    return seen


def test_trainers_reach_only_what_a_training_step_needs():
    graph = import_graph()
    for trainer in ("qkmlx.train", "qktorch.train"):
        layers = {m.split(".")[1] for m in reach(graph, trainer) if m.startswith("sweeps.")}
        assert layers <= TRAINER_LAYERS, f"{trainer} reaches sweeps.{layers - TRAINER_LAYERS}"


def test_entry_points_only_add_the_figures_command():
    for entry in ("qkmlx.cli", "qktorch.cli"):
        outside = {t for t in import_graph()[entry] if not t.startswith(("sweeps.", "qk"))}
        assert outside == {"figures.cli"}


def test_importing_sweeps_and_figures_loads_no_trainer():
    code = (
        "import sys, sweeps.cli, sweeps.core.config, sweeps.data, sweeps.run.rundir, "
        "sweeps.run.loop, sweeps.core.presets, sweeps.core.params, sweeps.core.diagnostics, "
        "sweeps.sweep.runner, sweeps.sweep.status, sweeps.sweep.executors, sweeps.run.backends, "
        "sweeps.study.stats, sweeps.study.rules, sweeps.sweep.grid, sweeps.sweep.estimate, "
        "sweeps.analysis.results, "
        "figures.words.view, figures.words.verdicts; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mlx', 'torch', 'qkmlx', 'qktorch', 'altair')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_the_graph_reader_sees_lazy_imports_and_circles(tmp_path):
    """The checker itself must be able to fail: a planted circle through a lazy import."""
    pkg = tmp_path / "sweeps"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from sweeps.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from sweeps import a\n")
    for other in PACKAGES[1:]:
        (tmp_path / other).mkdir()
    graph = import_graph(tmp_path)
    assert graph["sweeps.b"] == {"sweeps.a"}
    assert cycles(graph) == [["sweeps.a", "sweeps.b"]]


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """A core module that lazily imports the sweep layer is caught."""
    for sub in ("core", "sweep"):
        (tmp_path / "sweeps" / sub).mkdir(parents=True)
        (tmp_path / "sweeps" / sub / "__init__.py").write_text("")
    (tmp_path / "sweeps" / "__init__.py").write_text("")
    (tmp_path / "sweeps" / "sweep" / "grid.py").write_text("X = 1\n")
    (tmp_path / "sweeps" / "core" / "config.py").write_text(
        "def f():\n    from sweeps.sweep.grid import X\n"
    )
    for other in PACKAGES[1:]:
        (tmp_path / other).mkdir()
    assert upward_in_sweeps(import_graph(tmp_path)) == ["sweeps.core.config -> sweeps.sweep.grid"]


def backend_imports(root: Path = ROOT) -> list[str]:
    """'module: name' for every import of torch or mlx in sweeps/ or figures/, lazy ones too."""
    found = []
    for pkg in ("sweeps", "figures"):
        for path in sorted((root / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                else:
                    continue
                found += [
                    f"{module_name(path, root)}: {n}"
                    for n in names
                    if n.split(".")[0] in ("torch", "mlx")
                ]
    return found


def test_sweeps_and_figures_import_no_backend_even_lazily(tmp_path):
    """sweeps/ and figures/ run where only one backend (or neither) is installed: not even a
    function-level import of torch or mlx (TensorBoard export uses the tensorboard package)."""
    assert backend_imports() == []
    planted = tmp_path / "sweeps" / "sweep"  # the checker must be able to fail
    planted.mkdir(parents=True)
    (tmp_path / "figures").mkdir()
    (planted / "export.py").write_text("def w():\n    from torch.utils.tensorboard import W\n")
    assert backend_imports(tmp_path) == ["sweeps.sweep.export: torch.utils.tensorboard"]
