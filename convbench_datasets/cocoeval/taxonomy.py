"""The CoCoEval behaviour taxonomy (``taxonomy.yaml``, or a user's file of the same shape).

Example:
    >>> [b.name for b in load_taxonomy() if b.inferred]
    ['Wrong Information', 'Interruption']
    >>> sorted({b.group for b in load_taxonomy()})
    ['inconsistent', 'uncollaborative']
    >>> [b.name for b in load_taxonomy() if b.group == "uncollaborative"][0]
    'Unclear Intent'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._resources import read_yaml
from ..errors import DataFormatError


@dataclass(frozen=True)
class Behaviour:
    name: str
    group: str
    definition: str
    example: str
    inferred: bool = False
    group_definition: str = ""  # from the file's ``groups``: what the behaviour's group has in common


def _read(path: str | os.PathLike[str] | None) -> tuple[Any, str]:
    if path is None:
        return read_yaml(__package__, "taxonomy.yaml"), "taxonomy.yaml"
    import yaml

    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8")), str(path)
    except (OSError, yaml.YAMLError) as err:
        raise DataFormatError(f"taxonomy {path}: cannot read it ({err})") from err


def load_groups(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Group name -> definition: the file's ``groups`` mapping (a user's file without one: the built-in groups)."""
    raw, where = _read(path)
    groups = raw.get("groups") if isinstance(raw, dict) else None
    if groups is None and path is not None:
        return load_groups()
    if not isinstance(groups, dict) or not groups:
        raise DataFormatError(f"taxonomy {where}: 'groups' must map each group name to its definition")
    for name, definition in groups.items():
        if not isinstance(definition, str) or not definition.strip():
            raise DataFormatError(f"taxonomy {where}: groups[{name!r}] must be a non-empty string")
    return {str(name): definition for name, definition in groups.items()}


def load_taxonomy(path: str | os.PathLike[str] | None = None) -> tuple[Behaviour, ...]:
    """The built-in taxonomy, or a user's YAML file with a ``behaviours`` list (each in one of the groups)."""
    raw, where = _read(path)
    group_definitions = load_groups(path)
    groups = tuple(group_definitions)
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
        if item["group"] not in groups:
            raise DataFormatError(f"{here}: field 'group' must be one of {groups}, got {item['group']!r}")
        behaviours.append(Behaviour(item["name"], item["group"], item["definition"], item["example"],
                                    bool(item.get("inferred", False)), group_definitions[item["group"]]))
    names = [b.name for b in behaviours]
    if len(set(names)) != len(names):
        raise DataFormatError(f"taxonomy {where}: behaviour names repeat")
    return tuple(behaviours)
