"""``convbench cache``: the response cache and the derived caches.
"""


import argparse
from pathlib import Path
from typing import Any

from .._console import warn
from ..errors import ConvbenchError
from ._parsing import _command


def add_cache(commands: Any) -> None:
    """``convbench cache``'s parser."""
    cache = _command(commands, "cache", "inspect or clear the response cache (and the derived caches: kept rows, parsed YAML)")
    cache.add_argument("action", choices=["stats", "clear"])
    cache.add_argument("--cache", metavar="FILE", help="cache file (default $CONVBENCH_CACHE/responses.sqlite)")
    cache.add_argument("--model", help="clear: only this model's entries (MODEL or BACKEND:MODEL, as stats shows)")
    cache.add_argument("--derived", action="store_true",
                       help="clear: the derived caches in $CONVBENCH_CACHE (rows/, yaml/: made again when needed), "
                            "not the response cache")


def _cmd_cache(args: argparse.Namespace) -> None:
    from ..cache_dir import derived_entries
    from ..engine.cache import DamagedCacheError, ResponseCache, delete_damaged_cache

    if args.derived:
        if args.action != "clear" or args.model or args.cache:
            raise ConvbenchError("--derived goes with `convbench cache clear` alone (no --model, no --cache)")
        deleted = 0
        for entries in derived_entries().values():
            for entry in entries:
                entry.unlink(missing_ok=True)
                deleted += 1
        print(f"deleted {deleted} derived cache entries (kept rows, parsed YAML); the next commands make them again")
        return
    try:
        with ResponseCache(args.cache) as cache:
            if args.action == "clear":
                deleted = cache.clear(args.model)
                print(f"deleted {deleted} entries from {cache.path}")
                if deleted == 0 and args.model:
                    warn(f"no entries for model {args.model!r}; `convbench cache stats` lists them")
                return
            stats = cache.stats()
    except DamagedCacheError as err:
        # a damaged cache cannot be emptied entry by entry: `clear` deletes the file (when it is ours)
        if args.action != "clear":
            raise
        if args.model:
            raise ConvbenchError(
                f"response cache {err.path} is damaged ({err.reason}), so one model's entries cannot be picked out; "
                "`convbench cache clear` without --model deletes the whole file"
            ) from None
        files = delete_damaged_cache(err.path)
        print(f"deleted the damaged cache {', '.join(map(str, files))}; the next run starts an empty one")
        return
    print(f"{stats['path']}: {stats['entries']} entries, {stats.get('errors', 0)} per-row errors, {stats['bytes']} bytes")
    for m in stats["models"]:
        print(f"  {m['backend']}:{m['model']}  {m['entries']} entries, {m['prompt_tokens']} prompt + "
              f"{m['completion_tokens']} completion tokens")
    derived = derived_entries()
    print("derived caches (made again when missing; `convbench cache clear --derived` deletes them): "
          + ", ".join(f"{name}/ {len(entries)} entries, {sum(_size(e) for e in entries)} bytes"
                      for name, entries in derived.items()))


def _size(path: Path) -> int:
    """A file's size, 0 when it went meanwhile (another process cleared it)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
