"""convbench: conversation benchmarks as Hugging Face datasets, with their metrics.

Importing this package is cheap: datasets, pyarrow and every model library load only when used.

Example:
    >>> import convbench_datasets
    >>> "nc" in [b.name for b in convbench_datasets.list_benchmarks()]
    True
"""

from ._resources import metric_path
from ._version import __version__
from .api import BuildSummary, build, install, list_benchmarks, load
from .errors import (
    BuildError,
    ChecksumError,
    ConvbenchError,
    DataFormatError,
    MissingSourceError,
    SourceError,
)

__all__ = [
    "__version__",
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
