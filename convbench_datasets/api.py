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

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import registry
from ._resources import bundled_dir
from ._version import __version__
from .hub import export
from .out_folder import replaceable_entries
from .install import InstalledDataset
from .registry import BenchmarkInfo
from .sources import default_cache_dir


@dataclass(frozen=True)
class BuildSummary:
    """What a build wrote: the folder and its rows per config and split."""

    name: str
    path: Path
    rows: dict[str, dict[str, int]]

    def lines(self) -> list[str]:
        out = [f"built {self.name} into {self.path}"]
        for config, splits in self.rows.items():
            out.append(f"  {config:<20} " + "  ".join(f"{s}: {n} rows" for s, n in splits.items()))
        return out


def list_benchmarks() -> list[BenchmarkInfo]:
    """Every benchmark convbench can build, with its configs, row counts and license."""
    return registry.benchmarks()


def build(
    name: str,
    out: str | os.PathLike[str],
    *,
    sources: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    **options: Any,
) -> BuildSummary:
    """Build benchmark ``name`` into ``out`` as a Hub-layout dataset folder (parquet + card).

    Args:
        name: a benchmark from :func:`list_benchmarks` (``"nc"``).
        out: the folder to write; missing, empty, or an earlier convbench build (replaced).
        sources: a local mirror of the upstream files (default: ``$CONVBENCH_SOURCES``, else download).
        data_dir: user-supplied data, for benchmarks whose data is not downloadable.
        progress: show download progress bars.
        options: builder-specific options (cocoeval: ``summarizer``, ``cleaner``, ``metadata_model``, each a
            model spec or Backend with its ``*_options``, and ``cache``, the response cache file).
    """
    replaceable_entries(Path(out).resolve())  # refuse a wrong --out before downloading; export checks again
    kwargs: dict[str, Any] = {"sources_dir": sources, "progress": progress, **options}
    if data_dir is not None:
        kwargs["data_dir"] = data_dir
    built = registry.builder(name).build(**kwargs)
    path = export(built, out)
    return BuildSummary(name=name, path=path, rows=built.split_rows())


def load(
    name: str,
    config: str | None = None,
    *,
    split: str | None = None,
    sources: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """Build ``name`` once into the convbench cache and return it via ``datasets.load_dataset``.

    Returns a ``DatasetDict``, or a ``Dataset`` when ``split`` is given. The cached folder is keyed by
    the package version and the builder's files, so an upgrade rebuilds it.
    """
    import datasets

    folder = _cached_build(name, sources, cache_dir)
    return datasets.load_dataset(str(folder), config, split=split)


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


def _cached_build(name: str, sources: Any, cache_dir: Any) -> Path:
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = root / "hub" / f"{name}-{_builder_key(name)}"
    if not (folder / "README.md").is_file():
        build(name, folder, sources=sources)
    return folder


def _builder_key(name: str) -> str:
    """A short hash of everything that shapes a build: version, builder code and data files (the NICO
    sample's dialogues.jsonl, citation.bib...), card. Every file counts but Python's bytecode caches
    and hidden files (an editor's swap file), so a new kind of data file cannot be missed."""
    module = registry.builder(name)
    folders = [Path(module.__file__).parent, bundled_dir("cards") / name]
    digest = hashlib.sha256(__version__.encode())
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if (not path.is_file() or path.suffix in {".pyc", ".pyo"}
                    or any(part == "__pycache__" or part.startswith(".") for part in rel.parts)):
                continue
            digest.update(rel.as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{__version__}-{digest.hexdigest()[:12]}"
