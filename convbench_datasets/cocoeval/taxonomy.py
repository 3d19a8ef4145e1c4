"""The CoCoEval behaviour taxonomy (``taxonomy.yaml``, or a user's file of the same shape).

Example:
    >>> [b.name for b in load_taxonomy() if b.inferred]
    ['Wrong Information', 'Interruption']
    >>> sorted({b.group for b in load_taxonomy()})
    ['inconsistent', 'uncollaborative']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .._resources import read_yaml
from ..errors import DataFormatError

GROUPS = ("inconsistent", "uncollaborative")


@dataclass(frozen=True)
class Behaviour:
    name: str
    group: str
    definition: str
    example: str
    inferred: bool = False


def load_taxonomy(path: str | os.PathLike[str] | None = None) -> tuple[Behaviour, ...]:
    """The built-in taxonomy, or a user's YAML file with a ``behaviours`` list."""
    if path is None:
        raw, where = read_yaml(__package__, "taxonomy.yaml"), "taxonomy.yaml"
    else:
        import yaml

        where = str(path)
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as err:
            raise DataFormatError(f"taxonomy {where}: cannot read it ({err})") from err
    items = raw.get("behaviours") if isinstance(raw, dict) else None
    if not isinstance(items, list) or not items:
        raise DataFormatError(f"taxonomy {where}: needs a non-empty 'behaviours' list")
    behaviours = []
    for i, item in enumerate(items):
        here = f"taxonomy {where}: behaviours[{i}]"
        if not isinstance(item, dict):
            raise DataFormatError(f"{here} must be a mapping")
        for field in ("name", "group", "definition", "example"):
            if not isinstance(item.get(field), str) or not item[field].strip():
                raise DataFormatError(f"{here}: field {field!r} must be a non-empty string")
        if item["group"] not in GROUPS:
            raise DataFormatError(f"{here}: field 'group' must be one of {GROUPS}, got {item['group']!r}")
        behaviours.append(Behaviour(item["name"], item["group"], item["definition"], item["example"],
                                    bool(item.get("inferred", False))))
    names = [b.name for b in behaviours]
    if len(set(names)) != len(names):
        raise DataFormatError(f"taxonomy {where}: behaviour names repeat")
    return tuple(behaviours)
