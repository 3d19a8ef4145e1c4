"""The response cache: every model answer, keyed by what produced it, in one SQLite file.

The key hashes the backend's identity (kind, model, server URL or dtype: never an API key), the
messages and the generation parameters. Each answer is committed as soon as it arrives (WAL mode,
so several processes can read and write one cache), which is what makes a killed run resumable.

Example:
    >>> import tempfile, os
    >>> cache = ResponseCache(os.path.join(tempfile.mkdtemp(), "responses.sqlite"))
    >>> key = cache_key({"kind": "baseline", "model": "silence"}, [{"role": "user", "content": "hi"}], {"max_new_tokens": 8})
    >>> cache.put(key, {"kind": "baseline", "model": "silence"}, Generation(""))
    >>> cache.get_many([key])[key].text
    ''
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConvbenchError
from ..sources import default_cache_dir
from .backends.base import Generation

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL,
    created REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    return default_cache_dir() / "responses.sqlite"


def cache_key(identity: Mapping[str, Any], messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]) -> str:
    payload = json.dumps({"backend": identity, "messages": messages, "params": params}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        if self.path.is_dir():
            raise ConvbenchError(f"response cache {self.path} is a folder; give a file path (e.g. {self.path}/responses.sqlite)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit (isolation_level=None): each put is durable on its own
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=60000")
        # WAL + NORMAL: a committed answer survives a killed process (not a power cut) without an fsync each
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def get_many(self, keys: Iterable[str]) -> dict[str, Generation]:
        found: dict[str, Generation] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            rows = self._db.execute(
                "SELECT key, response, prompt_tokens, completion_tokens, seconds FROM responses "
                f"WHERE key IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            for key, text, prompt_tokens, completion_tokens, seconds in rows:
                found[key] = Generation(text, prompt_tokens, completion_tokens, seconds)
        return found

    def put(self, key: str, identity: Mapping[str, Any], generation: Generation) -> None:
        if generation.error is not None:
            raise ValueError("failed generations are not cached: a rerun must retry them")
        self._db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, identity["kind"], identity["model"], generation.text, generation.prompt_tokens,
             generation.completion_tokens, generation.seconds, time.time()),
        )

    def stats(self) -> dict[str, Any]:
        rows = self._db.execute(
            "SELECT backend, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM responses "
            "GROUP BY backend, model ORDER BY backend, model"
        ).fetchall()
        return {
            "path": str(self.path),
            "entries": sum(r[2] for r in rows),
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "models": [
                {"backend": b, "model": m, "entries": n, "prompt_tokens": p or 0, "completion_tokens": c or 0}
                for b, m, n, p, c in rows
            ],
        }

    def clear(self, model: str | None = None) -> int:
        """Delete every entry, or those of one model; returns how many were deleted."""
        if model is None:
            cursor = self._db.execute("DELETE FROM responses")
        else:
            backend, _, name = model.partition(":")
            cursor = self._db.execute(
                "DELETE FROM responses WHERE model = ? OR (backend = ? AND model = ?)", (model, backend, name)
            )
        self._db.execute("VACUUM")
        return cursor.rowcount

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
