"""The Python entry points: list, build and load benchmarks.

Example:
    >>> [b.name for b in list_benchmarks()][:1]
    ['nc']
    >>> summary = build("nc", out="hub/nc")                    # doctest: +SKIP
    >>> summary.rows["basic"]                                   # doctest: +SKIP
    {'test': 180}
    >>> basic = load("nc", "basic", split="test")              # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import registry
from .building import BuildSummary, build
from .building import builder_key as _builder_key
from .building import cached_build as _cached_build
from .registry import BenchmarkInfo

if TYPE_CHECKING:  # imported where used: a run loads a cached build and needs neither
    from .install import InstalledDataset


def list_benchmarks() -> list[BenchmarkInfo]:
    """Every benchmark convbench can build, with its configs, row counts and license."""
    return registry.benchmarks()


def load(
    name: str,
    config: str | None = None,
    *,
    split: str | None = None,
    sources: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """Build ``name`` once into the convbench cache and return it via ``datasets.load_dataset``.

    Returns a ``DatasetDict``, or a ``Dataset`` when ``split`` is given (any split ``datasets`` takes:
    ``"test"``, ``"test[:10]"``...); ``config`` None is the card's default config. The cached folder is
    keyed by the package version and the builder's files, so an upgrade rebuilds it.

    The build's data files are loaded with ``datasets``' parquet builder, given the config's files and
    features from the card (parsed once per card version, :func:`.built_rows.read_card`), rather than
    by ``load_dataset(folder)``, which parses the card's YAML again on every call (most of a warm
    load's time). The features, rows, split names and ``info.config_name`` are the same; the copy
    ``datasets`` prepares lives under its ``parquet`` cache folder, keyed on the data files themselves
    (``load_dataset(folder)`` keys it on the folder's name and card). A config or split the card lacks
    falls back to ``load_dataset(folder)``, so ``datasets`` reports it as before; a split whose files
    hold another number of rows than the card says raises :class:`~.errors.ConvbenchError`.

    Example:
        >>> basic = load("nc", "basic", split="test")                  # doctest: +SKIP
        >>> basic.num_rows, basic.info.config_name                     # doctest: +SKIP
        (180, 'basic')
    """
    import datasets

    folder = _cached_build(name, sources, cache_dir)
    loaded = _load_parquet(folder, config, split)
    return loaded if loaded is not None else datasets.load_dataset(str(folder), config, split=split)


def install(
    name: str,
    dataset: str | os.PathLike[str] | None = None,
    *,
    sources: str | os.PathLike[str] | None = None,
    force: bool = False,
    progress: bool = True,
) -> InstalledDataset:
    """Make ``datasets.load_dataset("convbench/<name>")`` (every config) work offline on this machine.

    Installs the build in ``dataset`` (a folder ``convbench build`` wrote), else the one :func:`load`
    keeps in the convbench cache (built first if needed), into datasets' cache
    (see :mod:`convbench_datasets.install`). A ``convbench/<name>`` that convbench did not install there
    is never touched: this refuses, or with ``force`` installs beside it.
    """
    from .install import install_dataset

    registry.builder(name)  # an unknown name fails here, naming the benchmarks
    folder = Path(dataset) if dataset is not None else _cached_build(name, sources, None)
    return install_dataset(folder, name, force=force, progress=progress)


def _load_parquet(folder: Path, config: str | None, split: Any) -> Any:
    """``load_dataset(folder, config, split=split)`` through the parquet builder and the cached card;
    None when the card does not settle it (unknown config, none named and no default, a data file
    missing), so that the caller asks ``load_dataset(folder)`` and ``datasets`` words the error.

    Raises:
        ConvbenchError: a split's data files hold another number of rows than the card says.
    """
    import datasets
    import pyarrow.parquet as pq

    from .built_rows import data_files, read_card
    from .errors import ConvbenchError

    try:
        card = read_card(folder)
        name = config if config is not None else card.default
        if name not in card.configs:
            return None
        files = {s: [str(p.resolve()) for p in data_files(folder, name, s)] for s in card.configs[name]}
    except ConvbenchError:
        return None
    if card.rows.get(name, {}).keys() - files.keys():
        return None  # the card's dataset_info names a split its configs do not: datasets' error
    if any(re.search(r"[*?\[]|::|://", f) for paths in files.values() for f in paths):
        return None  # datasets would read such a path as a glob pattern (or a URL, a "::" chain)
    expected = card.rows.get(name, {})
    for s, paths in files.items():
        found = sum(pq.ParquetFile(f).metadata.num_rows for f in paths)
        if s in expected and found != expected[s]:
            # load_dataset(folder) would raise on a first load but return a stale copy afterwards: its cache is
            # keyed on the folder's name and card, not on the data files
            raise ConvbenchError(f"{folder}: config {name!r} split {s!r} has {found} rows in its data files but its "
                                 f"card says {expected[s]}: the build is damaged; delete the folder and load again to "
                                 "rebuild it")
    yaml_features = card.features.get(name)
    from_yaml = getattr(datasets.Features, "_from_yaml_list", None)  # what load_dataset(folder) reads the card with
    if yaml_features and from_yaml is None:
        return None
    features = from_yaml(yaml_features) if yaml_features else None
    return datasets.load_dataset("parquet", name=name, data_files=files, features=features, split=split)
