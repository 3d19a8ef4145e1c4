"""YAML text parsed once per content, its data kept as JSON in convbench's cache.

Every command reads YAML: the package's tables (patterns, labels, source pins, templates) and a build's
card. Importing PyYAML costs more than all of that reading (~35 ms on a slow machine: it compiles its
scanner's and resolver's regular expressions at import), and parsing with it is ~10x slower than
``json.loads`` of the same data; a run's start-up is its fixed cost. So :func:`parse` keeps what it
parsed under ``$CONVBENCH_CACHE/yaml/``, keyed on the text itself (sha256): a table or card edited is
parsed again (an anchor's aliases come back as equal copies, not one shared object; no table relies on
sharing). Data is kept only when JSON gives it back as it was (strings, numbers, lists, dicts with
string keys, None; a date or an integer key is not kept and is parsed again each time). An entry holds its
data's digest: one that cannot be read, or whose data does not match it (damaged), is ignored with a warning
and written again; one that cannot be written (a read-only cache) is skipped.
The same reasoning, for a build's rows, is :mod:`.row_cache`'s.

Example:
    >>> parse("a: [1, 2]\\nb: text\\n")
    {'a': [1, 2], 'b': 'text'}
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .cache_dir import NOT_KEPT, default_cache_dir, read_checked, write_checked

VERSION = 2  # of the entries' layout (part of each key; 2: with the data's digest)


class InvalidYAML(ValueError):
    """Text that PyYAML cannot parse; the message is PyYAML's."""


def parse(text: str, *, keep: bool = True) -> Any:
    """The data of YAML ``text`` (PyYAML's safe loader, libyaml's when built with it), from the cache when this
    exact text was parsed before; ``keep=False``: parsed with PyYAML, the cache neither read nor written.

    Raises:
        InvalidYAML: the text does not parse (PyYAML's message).
    """
    entry = _entry(text) if keep else None
    if entry is not None:  # keep=False: the cache is neither read nor written
        kept = read_checked(entry)
        if kept is not NOT_KEPT:  # else not kept yet, or damaged: parsed (and kept) again
            return kept
    data = _parse_with_pyyaml(text)
    if entry is not None:
        _keep(entry, data)
    return data


def safe_loader() -> Any:
    """PyYAML's safe loader: libyaml's (``CSafeLoader``) when PyYAML was built with it, the same data about
    8x faster, else the pure-Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_with_pyyaml(text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=safe_loader())
    except yaml.YAMLError as err:
        raise InvalidYAML(str(err)) from None


def _entry(text: str) -> Path:
    digest = hashlib.sha256(f"{VERSION}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return default_cache_dir() / "yaml" / f"{digest}.json"


def _keep(entry: Path, data: Any) -> None:
    try:
        kept = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return  # a date, NaN...: not JSON
    back = json.loads(kept)
    if back == data and _types(back) == _types(data):  # else an integer key, say: JSON would not give it back
        write_checked(entry, data)


def _types(data: Any) -> Any:
    """The type of every value inside ``data``: 1 == 1.0 == True, but a cached float must not come back for an int."""
    if isinstance(data, dict):
        return (dict, tuple((type(k), _types(v)) for k, v in data.items()))
    if isinstance(data, list):
        return (list, tuple(_types(v) for v in data))
    return type(data)


__all__ = ["parse", "safe_loader", "InvalidYAML"]
