"""convbench: conversation benchmarks as Hugging Face datasets, with their metrics.

Importing this package is cheap: datasets, pyarrow and every model library load only when used.

Example:
    >>> import convbench_datasets
    >>> "nc" in [b.name for b in convbench_datasets.list_benchmarks()]
    True
"""

from typing import TYPE_CHECKING

from ._resources import metric_path
from ._version import __version__
from .errors import (
    BuildError,
    ChecksumError,
    ConvbenchError,
    DataFormatError,
    MissingSourceError,
    SourceError,
)

if TYPE_CHECKING:
    from .api import BuildSummary, build, install, list_benchmarks, load

# imported when first used: the run functions bring the runner and the benchmark's prompts, and the
# build/load API the builders' modules, which a `convbench run` (this package's own importer) never needs
_RUN_FUNCTIONS = {
    **dict.fromkeys(("BuildSummary", "build", "install", "list_benchmarks", "load"), "convbench_datasets.api"),
    **dict.fromkeys(("run_nc", "run_nico", "run_cocoeval"), "convbench_datasets.runs.api"),
    "score_run": "convbench_datasets.runs.pipeline",
    "run_sweep": "convbench_datasets.runs.sweep",
}


def __getattr__(name: str) -> object:
    if name in _RUN_FUNCTIONS:
        import importlib

        return getattr(importlib.import_module(_RUN_FUNCTIONS[name]), name)
    raise AttributeError(f"module 'convbench_datasets' has no attribute {name!r}")


__all__ = [
    "__version__",
    "run_nc",
    "run_nico",
    "run_cocoeval",
    "score_run",
    "run_sweep",
    "build",
    "load",
    "install",
    "list_benchmarks",
    "metric_path",
    "BuildSummary",
    "ConvbenchError",
    "SourceError",
    "ChecksumError",
    "MissingSourceError",
    "DataFormatError",
    "BuildError",
]
