"""Reading the package's data files (pattern tables, source pins, templates) and the bundled cards."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any


def safe_yaml_loader() -> Any:
    """PyYAML's safe loader: libyaml's (``CSafeLoader``) when PyYAML was built with it, the same data about
    8x faster (a run reads several of the package's tables), else the pure-Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=None)
def read_yaml(package: str, name: str) -> Any:
    """Parse a YAML data file shipped inside ``package`` (cached: these files are facts, not state)."""
    import yaml

    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=safe_yaml_loader())


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
