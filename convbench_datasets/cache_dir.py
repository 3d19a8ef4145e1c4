"""Where convbench keeps what it downloads and derives: one rule, read by every cache (sources, builds, rows,
parsed YAML, responses), and how a derived entry is written. A module of its own, with nothing but the
standard library, so that code copied into a self-contained metric can name it without carrying the
download code."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import warnings
from pathlib import Path
from typing import Any

CACHE_ENV = "CONVBENCH_CACHE"
# the derived caches (kept rows, parsed YAML): folders of the cache dir whose entries are named by a sha256;
# each is made again when missing, so deleting them only costs the next command the work
DERIVED = ("rows", "yaml")
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.json")


def default_cache_dir() -> Path:
    """The download cache: ``$CONVBENCH_CACHE``, else ``$XDG_CACHE_HOME/convbench``, else ``~/.cache/convbench``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "convbench"


def derived_entries() -> dict[str, list[Path]]:
    """The entries of each derived cache (:data:`DERIVED`) under :func:`default_cache_dir`: only plain files
    named as convbench names them (a sha256 and ``.json``), never anything else a user keeps there, and no
    symbolic link (nor anything in a folder that is one: convbench never made it)."""
    entries: dict[str, list[Path]] = {}
    for name in DERIVED:
        folder = default_cache_dir() / name
        if folder.is_symlink():
            entries[name] = []
            continue
        try:
            entries[name] = sorted(p for p in folder.iterdir()
                                   if _ENTRY_NAME.fullmatch(p.name) and not p.is_symlink() and p.is_file())
        except OSError:  # none yet
            entries[name] = []
    return entries


def write_entry(entry: Path, text: str) -> None:
    """Write a derived cache entry (kept rows, parsed YAML) whole or not at all: a scratch file of this
    process, then a rename, so a reader never sees half of one. One that cannot be written (a read-only
    cache) is skipped: it only costs the next command the work again."""
    scratch = entry.with_name(f".{entry.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_text(text, encoding="utf-8")
        os.replace(scratch, entry)
    except (OSError, ValueError):  # ValueError: text UTF-8 cannot hold (a lone surrogate)
        try:
            scratch.unlink(missing_ok=True)
        except OSError:
            pass


_MISSING = object()


def read_checked(entry: Path) -> Any:
    """The value a derived entry holds (written by :func:`write_checked`), or :data:`NOT_KEPT` when there is
    none. An entry whose value does not match its own digest (damaged on disk, cut short, edited) is ignored,
    with a warning saying so: the caller derives the value again and writes the entry anew."""
    try:
        text = entry.read_text(encoding="utf-8")
    except (OSError, ValueError):  # ValueError: bytes that are not UTF-8
        return NOT_KEPT if not entry.exists() else _damaged(entry)
    try:
        kept = json.loads(text)
    except ValueError:
        return _damaged(entry)
    value = kept.get("value", _MISSING) if isinstance(kept, dict) else _MISSING
    if value is _MISSING or kept.get("sha256") != _digest(value):
        return _damaged(entry)
    return value


def write_checked(entry: Path, value: Any) -> None:
    """Keep ``value`` (JSON) in the derived entry with its digest, so a damaged entry is told from a kept one."""
    write_entry(entry, json.dumps({"sha256": _digest(value), "value": value}, ensure_ascii=False, allow_nan=True))


class _NotKept:
    def __repr__(self) -> str:
        return "NOT_KEPT"


NOT_KEPT: Any = _NotKept()  # read_checked's answer when nothing is kept


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)
                          .encode("utf-8", "surrogatepass")).hexdigest()


def _damaged(entry: Path) -> Any:
    warnings.warn(f"convbench cache: {entry} was damaged; ignored, and written again (it is derived: nothing is "
                  "lost)", stacklevel=3)
    return NOT_KEPT
