"""Which benchmarks exist and where their builders live (imported only when asked for)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from .errors import BuildError

if TYPE_CHECKING:
    from .benchmark import Benchmark

# name -> builder module. Each module provides info() -> BenchmarkInfo and build(...) -> BuiltDataset.
BUILDERS: dict[str, str] = {
    "nc": "convbench_datasets.nc.builder",
    "nico": "convbench_datasets.nico.builder",
    "cocoeval": "convbench_datasets.cocoeval.builder",
}


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
    return importlib.import_module(BUILDERS[name])


def benchmarks() -> list[BenchmarkInfo]:
    return [builder(name).info() for name in BUILDERS]


# name -> module holding the benchmark's run object (``BENCHMARK``, a convbench_datasets.benchmark.Benchmark)
RUNS: dict[str, str] = {
    "nc": "convbench_datasets.nc.run",
    "nico": "convbench_datasets.nico.run",
    "cocoeval": "convbench_datasets.cocoeval.run",
}
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
    return importlib.import_module(RUNS[name]).BENCHMARK  # type: ignore[no-any-return]


def run_benchmarks() -> list[Benchmark]:
    """Every benchmark that ``convbench run`` can run, in the registry's order."""
    return [get_benchmark(name) for name in RUNS]

# baseline:NAME answerers that benchmarks provide (module:function, messages -> answer text)
BASELINE_ANSWERERS: dict[str, str] = {
    "smoke-judge": "convbench_datasets.nc.smoke_judge:smoke_judge_label",
}


def import_object(path: str) -> object:
    """The object ``module:name`` names (imported now)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
