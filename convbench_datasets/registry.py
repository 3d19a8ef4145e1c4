"""Which benchmarks exist and where their packages live (imported only when asked for).

A benchmark is one package holding ``builder`` (``info()`` -> :class:`BenchmarkInfo`, ``build(...)`` ->
``BuiltDataset``) and ``run`` (``BENCHMARK``, a :class:`convbench_datasets.benchmark.Benchmark`). It
registers in one of two ways, each one line:

- a benchmark of convbench: its line in :data:`BENCHMARKS`;
- a benchmark in a package of its own, installed beside convbench: an entry point in the group
  :data:`ENTRY_POINTS`, named after the benchmark, whose value is its package, e.g. in its
  ``pyproject.toml``: ``[project.entry-points."convbench.benchmarks"]`` ``toy = "toybench"``. Nothing
  in convbench is edited; ``convbench build/run/score/report`` find it by name.

Entry points are read on the first look-up of a name that is not convbench's own, or of the whole table
(a listing), not at import: importing ``importlib.metadata`` and scanning every installed distribution
costs ~35 ms, a noticeable part of ``convbench run nc``. A built-in name is always convbench's: an entry
point that reuses one is refused wherever the whole table is read (``convbench list``, an unknown name).

Example:
    >>> BENCHMARKS["nc"], RUNS["nc"], BUILDERS["nc"]
    ('convbench_datasets.nc', 'convbench_datasets.nc.run', 'convbench_datasets.nc.builder')
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from .errors import BuildError

if TYPE_CHECKING:
    from .benchmark import Benchmark

# name -> the benchmark's package (its builder and run modules inside)
BENCHMARKS: dict[str, str] = {
    "nc": "convbench_datasets.nc",
    "nico": "convbench_datasets.nico",
    "cocoeval": "convbench_datasets.cocoeval",
}
ENTRY_POINTS = "convbench.benchmarks"


def registered() -> dict[str, str]:
    """Every benchmark's package by name: :data:`BENCHMARKS`, then the installed entry points.

    Raises:
        BuildError: an entry point reuses a name, or names more than a package (``module:attribute``).
    """
    from importlib.metadata import entry_points

    found = dict(BENCHMARKS)
    for ep in entry_points(group=ENTRY_POINTS):
        where = f"entry point {ep.name!r} of group {ENTRY_POINTS!r} ({ep.value!r})"
        if ep.name in found:
            raise BuildError(f"{where}: a benchmark named {ep.name!r} exists already ({found[ep.name]})")
        if ":" in ep.value:
            raise BuildError(f"{where}: the value must be the benchmark's package (a module name), not an attribute")
        found[ep.name] = ep.value
    return found


@functools.lru_cache(maxsize=1)
def _registered_once() -> dict[str, str]:
    """:func:`registered`, read once for both tables below (reading the entry points scans every installed
    distribution: a noticeable part of a short command's time)."""
    return registered()


class _Modules(MutableMapping[str, str]):
    """name -> one module of each registered benchmark (``builder`` or ``run``), filled on first use."""

    def __init__(self, module: str) -> None:
        self._module = module
        self._table: dict[str, str] | None = None

    def _entries(self) -> dict[str, str]:
        if self._table is None:
            self._table = {name: f"{package}.{self._module}" for name, package in _registered_once().items()}
        return self._table

    def __getitem__(self, name: str) -> str:
        if self._table is None and name in BENCHMARKS:  # convbench's own: no entry point can change it
            return f"{BENCHMARKS[name]}.{self._module}"
        return self._entries()[name]

    def __contains__(self, name: object) -> bool:
        return (self._table is None and name in BENCHMARKS) or name in self._entries()

    def __setitem__(self, name: str, module: str) -> None:
        self._entries()[name] = module

    def __delitem__(self, name: str) -> None:
        del self._entries()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __repr__(self) -> str:
        return repr(self._entries())


# name -> builder module. Each module provides info() -> BenchmarkInfo and build(...) -> BuiltDataset.
BUILDERS: MutableMapping[str, str] = _Modules("builder")


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    title: str
    license: str
    configs: dict[str, dict[str, int | None]]  # config -> split -> rows (None: depends on the data given)
    needs: str  # what building it takes (downloads, a data folder...)


def builder(name: str) -> ModuleType:
    if name not in BUILDERS:
        raise BuildError(f"unknown benchmark {name!r}; available: {', '.join(BUILDERS)}")
    return _import(name, BUILDERS[name])


def _import(name: str, module: str) -> ModuleType:
    """Benchmark ``name``'s ``module``; a plugin whose import raises is one line naming it (:class:`BuildError`),
    never a traceback (convbench's own modules raise as they are: a failure there is convbench's bug)."""
    if name in BENCHMARKS:
        return importlib.import_module(module)
    try:
        return importlib.import_module(module)
    except Exception as err:  # noqa: BLE001 (a plugin's import may raise anything)
        package = _registered_once().get(name, module)
        raise BuildError(f"benchmark {name!r} (entry point of group {ENTRY_POINTS!r}, package {package!r}) cannot be "
                         f"loaded: {type(err).__name__}: {err}") from err


def builder_file(name: str) -> str:
    """The path of benchmark ``name``'s builder module, found without running it (a run that reads a cached
    build needs the builder's files, for their hash, not its code: importing it cost a run ~5 ms, #20)."""
    if name in BUILDERS:
        try:
            spec = importlib.util.find_spec(BUILDERS[name])
        except (ImportError, ValueError):  # a parent that fails to import; a module made by hand (no __spec__)
            spec = None
        if spec is not None and spec.origin is not None and spec.has_location:
            return spec.origin
    module = builder(name)  # an unknown name, a module that is not there: the errors of importing it
    if getattr(module, "__file__", None) is None:  # a namespace package: no folder of its own to hash
        raise BuildError(f"benchmark {name!r}: its builder module {BUILDERS[name]!r} has no file (a namespace package?)")
    return str(module.__file__)


def benchmarks() -> list[BenchmarkInfo]:
    """Every registered benchmark's info; a plugin that cannot be imported is left out with a warning (once)."""
    infos = []
    for name in BUILDERS:
        try:
            infos.append(builder(name).info())
        except Exception as err:  # noqa: BLE001 (a plugin's import may raise anything; convbench's own re-raise)
            _left_out(name, err)
    return infos


_WARNED: set[str] = set()


def _left_out(name: str, error: Exception) -> None:
    """A listing goes on without plugin ``name``, which could not be loaded (``error``): warned once per process.
    A benchmark of convbench's own that fails is a bug in convbench: raised."""
    if name in BENCHMARKS:
        raise error
    if name not in _WARNED:
        _WARNED.add(name)
        import warnings

        warnings.warn(f"{error}; left out", stacklevel=3)


# name -> module holding the benchmark's run object (``BENCHMARK``, a convbench_datasets.benchmark.Benchmark)
RUNS: MutableMapping[str, str] = _Modules("run")
# runs written before signatures named their benchmark were NC-Bench runs
DEFAULT_RUN_BENCHMARK = "nc"


def get_benchmark(name: str) -> Benchmark:
    """The run object of benchmark ``name`` (imported on first use).

    Example:
        >>> get_benchmark("cocoeval").judges
        (1, 1)
    """
    from .errors import ConvbenchError

    if name not in RUNS:
        raise ConvbenchError(f"unknown benchmark {name!r}; available: {', '.join(RUNS)}")
    return _import(name, RUNS[name]).BENCHMARK  # type: ignore[no-any-return]


def run_benchmarks() -> list[Benchmark]:
    """Every benchmark that ``convbench run`` can run, in the registry's order; a plugin that cannot be loaded
    is left out with a warning (once), so that one broken package never stops the others."""
    found = []
    for name in RUNS:
        try:
            found.append(get_benchmark(name))
        except Exception as err:  # noqa: BLE001 (as in benchmarks())
            _left_out(name, err)
    return found
