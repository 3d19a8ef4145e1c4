"""The rows of a build's data files, kept as JSON in convbench's cache after their first read.

Reading parquet needs pyarrow, whose import (numpy with it) costs more than a short run's other start-up
work; a run reads the same build again and again. So :func:`~.built_rows.read_rows` keeps what it read,
class labels already named, under ``$CONVBENCH_CACHE/rows/``, keyed on the card's and every data file's
path and content (sha256): a file rebuilt, edited or replaced is read from parquet again.
Rows are kept only when JSON gives them back as they were (ints, floats, strings, lists, dicts, None):
anything else (bytes, a timestamp) is simply not kept. An entry holds its rows' digest: one that cannot be
read, or whose rows do not match it (damaged), is ignored with a warning and written again, never taken for
the build's data; one that cannot be written (a read-only cache) is skipped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .cache_dir import NOT_KEPT, default_cache_dir, read_checked, write_checked

VERSION = 2  # of the entries' layout (2: with the rows' digest)


def _key(card: Path, files: list[Path]) -> str | None:
    # the files' contents, not their times: a file rewritten within the clock's granularity, at the same size,
    # must not be taken for the one read before (hashing a build's parquet costs milliseconds; parsing it does not)
    parts: list[Any] = [VERSION]
    for path in (card, *files):
        try:
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            return None
        parts.append([str(Path(path).resolve()), digest])
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


def _entry(card: Path, files: list[Path]) -> Path | None:

    key = _key(card, files)
    return None if key is None else default_cache_dir() / "rows" / f"{key}.json"


def read(card: Path, files: list[Path]) -> list[list[dict[str, Any]]] | None:
    """The rows of each of ``files`` as last read, or None when they were not kept (or changed since)."""
    entry = _entry(card, files)
    if entry is None:
        return None
    kept = read_checked(entry)
    if kept is NOT_KEPT or not isinstance(kept, list) or len(kept) != len(files):
        return None
    return kept


def write(card: Path, files: list[Path], rows: list[list[dict[str, Any]]]) -> None:
    """Keep the rows of each of ``files`` (see the module's docstring for what is not kept)."""
    entry = _entry(card, files)
    if entry is None:
        return
    try:
        text = json.dumps(rows, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        return
    if json.loads(text) == rows:  # else JSON would not give these rows back as they are: not kept
        write_checked(entry, rows)
