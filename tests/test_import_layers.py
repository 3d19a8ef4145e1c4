"""The package's imports run one way and close no circle (#25).

Rule: every import statement counts, wherever it stands: at module level, inside a function (a lazy
import is there for speed, not to hide a circle) or under ``if TYPE_CHECKING:``. An import names the
module it loads (``from .a import b`` names ``a.b`` when that is a module, else ``a``); the parent
packages Python also runs are not counted, or every package would close a circle with its children.
``importlib.import_module("convbench_datasets....")`` with the name written out is an import too, and
counts; a module loaded by a name the code looks up (in the registry's table) is not an edge: that is
how the registry, the runner and the report name benchmarks without importing them.

Layers, from the bottom: the shared layers (everything not listed below) know no benchmark; each
benchmark's folder (the registry's packages) uses them; what drives runs (``runs/``: the run config, running,
re-scoring, merging, sweeps) and the command line (``cli``) sit above the benchmarks. The harness glue (``integrations/``) is a shared layer: each benchmark's inspect task and
lm-eval code is in its folder and uses the glue's helpers, and the glue finds the tasks through the
registry (by name, as the runner does), so it imports no benchmark; the report finds each
benchmark's section the same way. There are no exceptions: every module of the package is in one layer,
and no module stands in for another under an old name (``sys.modules[__name__] = ...``).

See it yourself: ``python -X importtime -c "import convbench_datasets.cli"`` shows what loads; this
file's ``import_graph`` is the whole graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import convbench_datasets
from convbench_datasets.registry import BENCHMARKS

PACKAGE = Path(convbench_datasets.__file__).parent
ABOVE_THE_BENCHMARKS = ("convbench_datasets.cli", "convbench_datasets.runs")


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = ["convbench_datasets", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module of the package that an import of ``name`` loads (its longest prefix that is one)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _called(func: ast.expr) -> str | None:
    """The name a call calls: ``f`` for ``f(...)`` and ``m.f(...)``."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports, every import statement counted (see the rule above)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                targets = [f"{module}.{alias.name}" for alias in node.names]
            if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str) and _called(node.func) == "import_module"):
                targets = [node.args[0].value]  # importlib.import_module("convbench_datasets.x.y"): an import
            for target in targets:
                owner = _owner(target, modules) if target.startswith("convbench_datasets") else None
                if owner is not None and owner != name:
                    graph[name].add(owner)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _inside(name: str, packages: tuple[str, ...] | list[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_package_imports_close_no_circle() -> None:
    assert circles(import_graph()) == []


def test_shared_layers_import_no_benchmark() -> None:
    modules = _modules()
    shared = [name for name in modules if not _inside(name, [*BENCHMARKS.values(), *ABOVE_THE_BENCHMARKS])]
    assert "convbench_datasets.engine.session" in shared and "convbench_datasets.scoring.lcs" in shared
    assert "convbench_datasets.runs.pipeline" not in shared  # above the benchmarks, beside the command line
    # the harness glue: the task registration, the importer, the shared lm-eval options
    assert {"convbench_datasets.integrations.inspect._registry", "convbench_datasets.integrations.inspect.importer",
            "convbench_datasets.integrations.lm_eval._options"} <= set(shared)
    graph = import_graph()
    wrong = {name: sorted(t for t in graph[name] if _inside(t, list(BENCHMARKS.values()))) for name in shared}
    assert {name: targets for name, targets in wrong.items() if targets} == {}


def test_a_benchmark_imports_no_other_benchmark_and_nothing_above_it() -> None:
    graph = import_graph()
    packages = list(BENCHMARKS.values())
    for package in packages:
        others = [p for p in packages if p != package]
        for name in (n for n in graph if _inside(n, [package])):
            assert not [t for t in graph[name] if _inside(t, [*others, *ABOVE_THE_BENCHMARKS])], name


def test_no_module_stands_in_for_another() -> None:
    # a module that moved has one name, its new one: no old file puts the new module in sys.modules
    assert [path for path in PACKAGE.rglob("*.py") if "sys.modules[__name__]" in path.read_text(encoding="utf-8")] == []


@pytest.mark.parametrize("source, expected", [
    # a circle through a function-level import and one under TYPE_CHECKING count like module-level ones
    ({"a.py": "from . import b\n", "b.py": "def f():\n    from .a import x\n"}, [["convbench_datasets.a", "convbench_datasets.b"]]),
    ({"a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
      "b.py": "from .c import C\n", "c.py": "import convbench_datasets.a\n"},
     [["convbench_datasets.a", "convbench_datasets.b", "convbench_datasets.c"]]),
    ({"a.py": "from .b import x\n", "b.py": "import os\n"}, []),  # one way: no circle
    # a module name written out in importlib.import_module counts; one looked up in a table does not
    ({"a.py": "from . import b\n", "b.py": "import importlib\ndef f():\n    importlib.import_module('convbench_datasets.a')\n"},
     [["convbench_datasets.a", "convbench_datasets.b"]]),
    ({"a.py": "from . import b\n", "b.py": "import importlib\nT = {'x': 'convbench_datasets.a'}\nimportlib.import_module(T['x'])\n"}, []),
    # `from .pkg import mod` names the submodule, not the package's __init__
    ({"pkg/__init__.py": "from .mod import y\n", "pkg/mod.py": "import os\n", "a.py": "from .pkg import mod\n"}, []),
])
def test_the_circle_check_sees_every_kind_of_import(tmp_path: Path, source: dict[str, str], expected: list) -> None:
    root = tmp_path / "convbench_datasets"
    for name, text in {"__init__.py": "", **source}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    assert circles(import_graph(root)) == expected


def test_no_shared_layer_imports_what_drives_runs() -> None:
    # the engine (backends, cache, stages, session, run folders) is below the benchmarks: it never reaches up to
    # runs/ (the config, running, merging, sweeps) or the command line
    graph = import_graph()
    below = [name for name in graph if not _inside(name, [*BENCHMARKS.values(), *ABOVE_THE_BENCHMARKS])]
    wrong = {name: sorted(t for t in graph[name] if _inside(t, list(ABOVE_THE_BENCHMARKS))) for name in below}
    assert {name: targets for name, targets in wrong.items() if targets} == {}
