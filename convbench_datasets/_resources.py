"""Reading the package's data files (pattern tables, source pins, templates) and the bundled cards."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Any


@lru_cache(maxsize=None)
def read_yaml(package: str, name: str) -> Any:
    """Parse a YAML data file shipped inside ``package`` (cached: these files are facts, not state). A file
    beside the package's modules (an installed wheel, a checkout) goes through :mod:`.parsed_yaml`'s cache,
    so that a command need not import PyYAML for tables it read before, nor ``importlib.resources`` (~10 ms);
    one served otherwise (a zip, a self-contained metric's importer) is read through it and parsed each time."""
    from .parsed_yaml import parse

    path = package_file(package, name)
    if path is not None:
        return parse(path.read_text(encoding="utf-8"))
    from importlib import resources

    return parse(resources.files(package).joinpath(name).read_text(encoding="utf-8"), keep=False)


def package_file(package: str, name: str) -> Path | None:
    """The file ``name`` (``/``-separated) beside the modules of ``package`` (imported if it is not yet), or
    None when the package's files do not lie in a folder."""
    module = sys.modules.get(package)
    if module is None:
        import importlib

        module = importlib.import_module(package)
    where = getattr(module, "__file__", None)
    if not where:
        return None
    candidate = Path(where).parent.joinpath(*name.split("/"))
    return candidate if candidate.is_file() else None


def bundled_dir(kind: str) -> Path:
    """The top-level ``cards/`` or ``metrics/`` folder: inside the wheel when installed, else the checkout's."""
    package_root = Path(__file__).resolve().parent
    for candidate in (package_root / "_bundled" / kind, package_root.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"convbench's {kind}/ folder is missing from this installation ({package_root})")


def metric_path(name: str) -> str:
    """The folder of one of convbench's evaluate modules, for ``evaluate.load(metric_path(name))``.

    Example:
        >>> metric_path("ncbench_action").endswith("ncbench_action")
        True
    """
    folder = bundled_dir("metrics") / name
    if not (folder / f"{name}.py").is_file():
        available = sorted(p.name for p in bundled_dir("metrics").iterdir() if p.is_dir())
        raise FileNotFoundError(f"no convbench metric {name!r}; available: {available}")
    return str(folder)
