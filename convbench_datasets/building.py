"""Building a benchmark into a folder, and the build the convbench cache keeps of each (:func:`~.api.load`).

Below both :mod:`.api` (which re-exports :func:`build`) and :mod:`.built_rows` (whose rows of a named
benchmark come from the cached build), so neither imports the other.
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
from .atomic import refuse_link
from .out_folder import replaceable_entries
from .cache_dir import default_cache_dir


@dataclass(frozen=True)
class BuildSummary:
    """What a build wrote: the folder and its rows per config and split."""

    name: str
    path: Path
    rows: dict[str, dict[str, int]]
    departures: tuple[str, ...] = ()  # how the build departs from the paper's; a run reading it is flagged too

    def lines(self) -> list[str]:
        out = [f"built {self.name} into {self.path}"]
        for config, splits in self.rows.items():
            out.append(f"  {config:<20} " + "  ".join(f"{s}: {n} rows" for s, n in splits.items()))
        if self.departures:
            out.append("not the paper's build (runs on it are flagged; the card says the same):")
            out += [f"  - {line}" for line in self.departures]
        return out


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
    refuse_link(out)  # a dangling link would be written through: refused, as every writer refuses links
    replaceable_entries(Path(out).resolve())  # refuse a wrong --out before downloading; export checks again
    kwargs: dict[str, Any] = {"sources_dir": sources, "progress": progress, **options}
    if data_dir is not None:
        kwargs["data_dir"] = data_dir
    built = registry.builder(name).build(**kwargs)
    from .hub import export  # imported where used: a run loads a cached build and needs no export

    path = export(built, out)
    return BuildSummary(name=name, path=path, rows=built.split_rows(), departures=tuple(built.departures))


def cached_build(name: str, sources: Any, cache_dir: Any) -> Path:
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = root / "hub" / f"{name}-{builder_key(name)}"
    if not (folder / "README.md").is_file():
        build(name, folder, sources=sources)
    return folder


def builder_key(name: str) -> str:
    """A short hash of everything that shapes a build: version, builder code and data files (the NICO
    sample's dialogues.jsonl, citation.bib...), card. Every file counts but Python's bytecode caches
    and hidden files (an editor's swap file), so a new kind of data file cannot be missed."""
    folders = [Path(registry.builder_file(name)).parent, bundled_dir("cards") / name]
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
