"""Which benchmarks exist and where their builders live (imported only when asked for)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from .errors import BuildError

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
