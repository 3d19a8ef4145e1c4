"""Self-contained evaluate modules: a metric folder that works where convbench is not installed.

The modules in ``metrics/`` are thin layers over ``convbench_datasets.scoring``. Published as they are,
they would need convbench, which no package index serves. :func:`standalone_metric_files` writes, at
export or publish time, a copy that carries the package code it needs:

- ``<name>.py``: the module, its ``from convbench_datasets... import ...`` lines replaced by one
  ``from ._convbench_scoring import ...`` line. evaluate's loader copies a module's relative imports
  found in its top-level ``from .X import`` lines (one file each, not recursively), so everything else
  lives in that one file;
- ``_convbench_scoring.py``: the package modules the metric imports, directly or not (found by reading
  their import statements), verbatim, with the data files they name (pattern tables, citations), and
  a small importer that runs them as a private package and serves their data to ``importlib.resources``;
- ``requirements.txt``: the metric's own list of PyPI packages (``metrics/<name>/requirements.txt``),
  checked against every third-party import of the copied code; ``README.md``: the metric card.

The repository keeps one copy of the scoring code; this generation is the only other place it appears.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ._resources import bundled_dir
from ._version import __version__
from .errors import ConvbenchError
from .out_folder import replaceable_entries, staged

PACKAGE = "convbench_datasets"
VENDOR = "_convbench_scoring"  # the generated file's module name, beside <name>.py
_PACKAGE_DIR = Path(__file__).resolve().parent
# Modules that are never third-party even when sys.stdlib_module_names lacks them.
_NOT_THIRD_PARTY = {"__future__", PACKAGE}


@dataclass
class _Closure:
    """The package modules a metric needs, the data files they name, and their third-party imports."""

    sources: dict[str, tuple[bool, str]] = field(default_factory=dict)  # "scoring.lcs" -> (is package, source)
    data: dict[str, str] = field(default_factory=dict)  # "nc/labels.yaml" -> text
    third_party: dict[str, str] = field(default_factory=dict)  # import name -> the file that imports it


def metric_names() -> list[str]:
    """convbench's metric modules (the folders of ``metrics/``)."""
    return sorted(p.name for p in bundled_dir("metrics").iterdir() if (p / f"{p.name}.py").is_file())


def standalone_metric_files(name: str) -> dict[str, bytes]:
    """The files of a self-contained evaluate module for convbench metric ``name``.

    Raises:
        ConvbenchError: unknown metric; or the code cannot be made self-contained (an absolute import of
            the package inside it, a third-party import missing from the metric's requirements.txt).
    """
    folder = bundled_dir("metrics") / name
    module_file = folder / f"{name}.py"
    if not module_file.is_file():
        raise ConvbenchError(f"no convbench metric {name!r}; available: {metric_names()}")
    if name == VENDOR:
        raise ConvbenchError(f"a metric may not be called {VENDOR!r}: the generated module has that name")
    source = module_file.read_text(encoding="utf-8")
    metric_source, exports = _rewrite_metric(source, module_file)
    closure = _Closure()
    for module, attribute in exports.values():
        _add_module(module, closure, (attribute,))
    _third_party_imports(ast.parse(source), module_file, closure)
    requirements = folder / "requirements.txt"
    _check_requirements(requirements, closure.third_party)
    return {
        f"{name}.py": metric_source.encode("utf-8"),
        f"{VENDOR}.py": _render_vendor(name, closure, exports).encode("utf-8"),
        "requirements.txt": requirements.read_bytes(),
        "README.md": (folder / "README.md").read_bytes(),
    }


def export_metric(name: str, out: str | Path) -> Path:
    """Write the self-contained module of metric ``name`` into the folder ``out`` and return it:
    ``evaluate.load(str(out))`` loads it.

    ``out`` may be missing, empty or an earlier export (its ``.convbench-build`` marker lists the files
    it wrote, which are replaced; hidden entries such as ``.git`` stay); anything else is refused, as
    for builds (:mod:`.out_folder`), so no file of the user's is ever replaced.

    Raises:
        BuildError: ``out`` holds files no export wrote (the message names the folder).
    """
    replaceable_entries(Path(out).resolve(), kind="export")  # a user's folder is refused before any work
    files = standalone_metric_files(name)
    with staged(out, name, kind="export") as staging:
        for filename, data in files.items():
            (staging / filename).write_bytes(data)
    return Path(out).resolve()


# --- the metric module ---------------------------------------------------------------------------


def _rewrite_metric(source: str, path: Path) -> tuple[str, dict[str, tuple[str, str]]]:
    """The module with its package imports pointing at the generated file, and what it imports:
    {local name: (module relative to the package, attribute)}."""
    tree = ast.parse(source, filename=str(path))
    exports: dict[str, tuple[str, str]] = {}
    spans: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_is_package(a.name) for a in node.names):
            raise ConvbenchError(f"{path}:{node.lineno}: write `from {PACKAGE}.X import Y`, not `import {PACKAGE}...`")
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_package(node.module or ""):
            if node not in tree.body:
                raise ConvbenchError(f"{path}:{node.lineno}: import from {PACKAGE} at the top level of the module")
            module = (node.module or "").removeprefix(PACKAGE).lstrip(".")
            for alias in node.names:
                exports[alias.asname or alias.name] = (module, alias.name)
            spans.append((node.lineno, node.end_lineno or node.lineno))
    if not spans:
        raise ConvbenchError(f"{path} imports nothing from {PACKAGE}: nothing to make self-contained")
    lines = source.splitlines(keepends=True)
    names = ", ".join(exports)
    for start, end in sorted(spans, reverse=True):  # from the bottom, so earlier line numbers stay valid
        first = start == min(s for s, _ in spans)
        lines[start - 1 : end] = [f"from .{VENDOR} import {names}\n"] if first else []
    notice = (f"# Generated by convbench {__version__} from metrics/{path.stem}/{path.name}: the convbench code it\n"
              f"# uses is copied into {VENDOR}.py, so this module needs no convbench install.\n")
    return notice + "".join(lines), exports


def _is_package(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


# --- the package modules it needs ----------------------------------------------------------------


def _module_file(module: str) -> tuple[Path, bool] | None:
    """The file of ``module`` (relative to the package, "" for the package) and whether it is a package."""
    base = _PACKAGE_DIR.joinpath(*module.split(".")) if module else _PACKAGE_DIR
    if (base / "__init__.py").is_file():
        return base / "__init__.py", True
    if base.with_suffix(".py").is_file() and module:
        return base.with_suffix(".py"), False
    return None


def _add_module(module: str, closure: _Closure, names: tuple[str, ...] = ()) -> None:
    """Add ``module`` and what it imports. A package's own code is copied only when a name that is not
    a submodule is imported from it; otherwise it stands in empty (the real one imports everything)."""
    found = _module_file(module)
    if found is None:
        raise ConvbenchError(f"{PACKAGE}.{module} is not a module of this installation")
    path, is_package = found
    submodules = [n for n in names if _module_file(f"{module}.{n}" if module else n)]
    for sub in submodules:
        _add_module(f"{module}.{sub}" if module else sub, closure)
    needs_code = not is_package or any(n not in submodules for n in names)
    parts = module.split(".") if module else []
    for depth in range(len(parts)):  # the parent packages, empty unless their code is needed
        closure.sources.setdefault(".".join(parts[:depth]), (True, ""))
    if not needs_code:
        closure.sources.setdefault(module, (True, ""))
        return
    if closure.sources.get(module, (True, ""))[1]:
        return  # already copied
    source = path.read_text(encoding="utf-8")
    closure.sources[module] = (is_package, source)
    tree = ast.parse(source, filename=str(path))
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package.split(".") if package else []
            if node.level - 1 > len(base):
                raise ConvbenchError(f"{path}:{node.lineno}: relative import above the package")
            target = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
            _add_module(target, closure, tuple(a.name for a in node.names))
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and _is_package(node.module or "")) or (
            isinstance(node, ast.Import) and any(_is_package(a.name) for a in node.names)
        ):
            raise ConvbenchError(f"{path}:{node.lineno}: import {PACKAGE} modules relatively (from .x import y) so "
                                 "the module can be copied into a self-contained metric")
    _third_party_imports(tree, path, closure)
    _add_data_files(tree, package, closure)


def _third_party_imports(tree: ast.AST, path: Path, closure: _Closure) -> None:
    stdlib = set(sys.stdlib_module_names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops = [node.module.split(".")[0]]
        else:
            continue
        for top in tops:
            if top not in stdlib and top not in _NOT_THIRD_PARTY:
                closure.third_party.setdefault(top, f"{_shown(path)}:{node.lineno}")


def _shown(path: Path) -> str:
    try:
        return path.relative_to(_PACKAGE_DIR.parent).as_posix()
    except ValueError:
        return str(path)


def _add_data_files(tree: ast.AST, package: str, closure: _Closure) -> None:
    """Copy the package data files the module names in a string literal (``read_yaml(__package__,
    "labels.yaml")``, ``joinpath("citation.bib")``): its only way to reach them."""
    folder = _PACKAGE_DIR.joinpath(*package.split(".")) if package else _PACKAGE_DIR
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[\w./-]+\.\w+", node.value):
            candidate = folder / node.value
            if candidate.is_file() and candidate.suffix != ".py" and ".." not in node.value.split("/"):
                key = "/".join([*(package.split(".") if package else []), node.value])
                closure.data[key] = candidate.read_text(encoding="utf-8")


# --- requirements --------------------------------------------------------------------------------


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _check_requirements(path: Path, imports: dict[str, str]) -> None:
    """Every third-party import must be a requirement (or, if optional, a ``# optional: NAME`` line)."""
    from importlib.metadata import packages_distributions

    listed = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text.startswith("# optional:"):
            text = text.removeprefix("# optional:").strip()
        elif text.startswith("#") or not text:
            continue
        requirement = _normalise(re.split(r"[\s<>=!~;\[,(]", text)[0])
        if requirement in {"convbench", _normalise(PACKAGE)}:
            raise ConvbenchError(f"{path}: convbench is not on a package index; list PyPI packages only")
        listed.add(requirement)
    distributions = packages_distributions()
    for name, where in sorted(imports.items()):
        candidates = {_normalise(d) for d in distributions.get(name, [])} | {_normalise(name)}
        if not candidates & listed:
            raise ConvbenchError(f"{path} does not list {sorted(candidates)[0]}, which {where} imports")


# --- the generated file --------------------------------------------------------------------------

_RUNTIME = '''

ROOT = __name__ + "_lib"  # the copied package's name: private to this copy of the module


class _Resource:
    """A file or folder of DATA, as importlib.resources.files() hands them out."""

    def __init__(self, path: str) -> None:
        self._path = path

    @property
    def name(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    def joinpath(self, *parts: str) -> "_Resource":
        return _Resource("/".join(p.strip("/") for p in (self._path, *parts) if p.strip("/")))

    __truediv__ = joinpath

    def is_file(self) -> bool:
        return self._path in DATA

    def is_dir(self) -> bool:
        return any(key.startswith(self._path + "/") for key in DATA)

    def iterdir(self):
        prefix = self._path + "/"
        names = sorted({key[len(prefix):].split("/")[0] for key in DATA if key.startswith(prefix)})
        return iter([self.joinpath(n) for n in names])

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        if self._path not in DATA:
            raise FileNotFoundError(f"convbench data file {self._path} is not part of this module")
        return DATA[self._path]

    def read_bytes(self) -> bytes:
        return self.read_text().encode("utf-8")

    def open(self, mode: str = "r", *args, **kwargs):
        return io.BytesIO(self.read_bytes()) if "b" in mode else io.StringIO(self.read_text())


class _Importer(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs SOURCES as the package ROOT; its modules' relative imports and resource reads stay inside."""

    def find_spec(self, fullname, path=None, target=None):
        key = self._key(fullname)
        if key is None or key not in SOURCES:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=SOURCES[key][0])

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        key = self._key(module.__name__)
        is_package, source = SOURCES[key]
        where = "/".join(["convbench_datasets", *filter(None, key.split("."))])
        filename = where + "/__init__.py" if is_package else where + ".py"
        exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)

    def get_resource_reader(self, fullname):
        folder = "/".join(filter(None, (self._key(fullname) or "").split(".")))
        return types.SimpleNamespace(files=lambda: _Resource(folder))

    @staticmethod
    def _key(fullname: str):
        if fullname == ROOT:
            return ""
        return fullname[len(ROOT) + 1:] if fullname.startswith(ROOT + ".") else None


sys.meta_path.append(_Importer())


def _export(module: str, name: str):
    package = importlib.import_module(".".join(filter(None, (ROOT, module))))
    submodule = ".".join(filter(None, (module, name)))
    if submodule in SOURCES:
        return importlib.import_module(ROOT + "." + submodule)
    return getattr(package, name)

'''


def _render_vendor(metric: str, closure: _Closure, exports: dict[str, tuple[str, str]]) -> str:
    lines = [
        f"# Generated by convbench {__version__} for the {metric} evaluate module: the parts of the convbench",
        "# package (Apache-2.0) it uses, verbatim, run as a private package. Do not edit; regenerate with",
        "# `convbench metrics export` (or `convbench publish metric`) from the convbench sources.",
        "from __future__ import annotations",
        "",
        "import importlib",
        "import importlib.abc",
        "import importlib.util",
        "import io",
        "import sys",
        "import types",
        "",
        "# module (relative to the package; '' is the package) -> (is a package, source)",
        "SOURCES = {",
        *(f"    {key!r}: ({is_pkg!r}, {src!r})," for key, (is_pkg, src) in sorted(closure.sources.items())),
        "}",
        "# data file (path inside the package) -> text",
        "DATA = {",
        *(f"    {key!r}: {text!r}," for key, text in sorted(closure.data.items())),
        "}",
    ]
    body = "\n".join(lines) + _RUNTIME
    exported = "".join(f"{local} = _export({module!r}, {name!r})\n" for local, (module, name) in exports.items())
    return body + exported
