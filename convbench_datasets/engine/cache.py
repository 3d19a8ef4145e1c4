"""The response cache: every model answer, keyed by what produced it, in one SQLite file.

The key hashes the backend's identity (kind, model, server URL or dtype: never an API key), the
messages and the generation parameters. Each answer is committed as soon as it arrives (WAL mode,
so several processes can read and write one cache), which is what makes a killed run resumable:
answers that arrived together may share one commit (:meth:`ResponseCache.put_many`), none waits
for another, and a stage hands an answer on only once it is committed.

Per-row errors (a prompt the server refused, a reply with no usable answer: ``Generation.permanent``)
are kept in a table of their own, ``errors``, so that a rerun records them again without asking;
they are never returned as answers, and an answer stored later for the same key replaces its error.

Processes sharing one cache do not ask the same prompt twice: a stage *claims* the keys it is about to
ask in a third table, ``claims`` (key, owner: host, pid and a random token, expiry). Another process
that meets a key claimed by a live owner waits for its answer (see ``engine/stage.py``) instead of
asking. A claim ends when its answer or per-row error is stored, when its owner releases it (after a
failure, on Ctrl-C, on any exception), and when it expires: a holder renews its claims in the
background every ``CLAIM_SECONDS / 4`` while it works, so only a claimant that died or hangs lets them
lapse; one on this host whose process is gone is taken over at once.

Example:
    >>> import tempfile, os
    >>> cache = ResponseCache(os.path.join(tempfile.mkdtemp(), "responses.sqlite"))
    >>> key = cache_key({"kind": "baseline", "model": "silence"}, [{"role": "user", "content": "hi"}], {"max_new_tokens": 8})
    >>> cache.put(key, {"kind": "baseline", "model": "silence"}, Generation(""))
    >>> cache.get_many([key])[key].text
    ''
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConvbenchError
from ..cache_dir import default_cache_dir
from .backends.base import Generation

# A convbench cache says so in its SQLite header (PRAGMA application_id, bytes 68-71), so that
# `convbench cache clear` can recognise one even when the rest of the file is damaged. "CBRC".
APPLICATION_ID = 0x43425243
_SQLITE_MAGIC = b"SQLite format 3\x00"
# The files SQLite keeps beside a database; they belong to it and go when it goes.
_SIDECARS = ("-wal", "-shm", "-journal")
# sqlite3 result codes (primary, low byte) that mean the file itself is unreadable
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


class DamagedCacheError(ConvbenchError):
    """The cache file cannot be read as an SQLite database: corrupt, truncated, or not SQLite at all."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = path, reason
        if is_recognisable_cache(path):
            where = "" if _is_default(path) else f" --cache {path}"
            super().__init__(
                f"response cache {path} is damaged ({reason}); `convbench cache clear{where}` deletes it "
                "(its answers will be asked again), or use --cache OTHER_FILE"
            )
        else:
            super().__init__(
                f"response cache {path} cannot be read ({reason}): damaged, or not a convbench cache, so convbench "
                "will not delete it; use --cache OTHER_FILE"
            )


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _names_damage(method: _Method) -> _Method:
    """Turn SQLite's path-less 'database disk image is malformed' into a DamagedCacheError naming the file."""

    @functools.wraps(method)
    def wrapper(self: ResponseCache, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as err:
            if not _is_damage(err):
                raise
            raise DamagedCacheError(self.path, str(err)) from err

    return wrapper  # type: ignore[return-value]


def _is_damage(err: sqlite3.DatabaseError) -> bool:
    code = getattr(err, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    return "malformed" in str(err) or "not a database" in str(err)


def _is_default(path: Path) -> bool:
    return path.resolve() == default_cache_path().resolve()


def is_recognisable_cache(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is convbench's: at the default cache location, or an SQLite header with convbench's id.

    Only the header's first 100 bytes are read, so a cache damaged further in is still recognised.
    """
    path = Path(path)
    if _is_default(path):
        return True
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError:
        return False
    return header.startswith(_SQLITE_MAGIC) and len(header) == 100 and int.from_bytes(header[68:72], "big") == APPLICATION_ID


def delete_damaged_cache(path: str | os.PathLike[str]) -> list[Path]:
    """Delete a cache file and SQLite's -wal/-shm/-journal files beside it; returns those deleted.

    Refuses (ConvbenchError) a file that is not recognisably convbench's (see
    :func:`is_recognisable_cache`): a path the user gave may be their own file.
    """
    path = Path(path)
    if not is_recognisable_cache(path):
        raise ConvbenchError(
            f"{path} is not recognisably a convbench response cache (no convbench SQLite header, not the default "
            "location); not deleting it: delete it yourself if it is one, or use --cache OTHER_FILE"
        )
    deleted = []
    for candidate in [path, *(path.with_name(path.name + suffix) for suffix in _SIDECARS)]:
        if candidate.is_file():
            candidate.unlink()
            deleted.append(candidate)
    return deleted

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
_ERRORS_SCHEMA = """
CREATE TABLE IF NOT EXISTS errors (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    error TEXT NOT NULL,
    finish_reason TEXT,
    created REAL NOT NULL
)
"""

_CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL,
    created REAL NOT NULL
)
"""
# How long a claim lasts unless renewed; a holder renews it every quarter of this while it works.
CLAIM_SECONDS = 120.0

_ANSWER_COLUMNS = "(key, backend, model, response, prompt_tokens, completion_tokens, seconds, created, finish_reason)"
_ROWS_PER_INSERT = 100  # 9 values a row: within SQLite's smallest limit of 999 values per statement
# An answer supersedes its key's per-row error and ends every claim on it, in the statement that stores it:
# a TEMP trigger lives in this connection only (nothing is added to the file), and makes storing a batch
# of answers one SQLite call instead of five (each call lets the interpreter lock go and waits to get it
# back, which costs most of the time when 100+ request threads want it).
_ANSWER_TRIGGER = """
CREATE TEMP TRIGGER IF NOT EXISTS convbench_answer_stored AFTER INSERT ON main.responses
BEGIN
    DELETE FROM errors WHERE key = NEW.key;
    DELETE FROM claims WHERE key = NEW.key;
END
"""


def _chunks(keys: Iterable[str], size: int = 500) -> Iterable[list[str]]:
    """Unique keys in groups small enough for one SQL ``IN (...)``."""
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), size):
        yield unique[start : start + size]


def default_cache_path() -> Path:
    return default_cache_dir() / "responses.sqlite"


# hashlib lets go of the interpreter's lock to hash 2,048 bytes or more at once; a key's thread then waits to get it
# back (up to the 5 ms switch interval) whenever another thread runs: fed in smaller pieces, a key is hashed whole
# (a 3 KB judge prompt: 6 us beside a busy thread instead of 1.9 ms), to the same digest (#20)
_HASH_PIECE = 2047


def _sha256_hex(text: str) -> str:
    data = text.encode("utf-8")
    digest = hashlib.sha256()
    for start in range(0, len(data), _HASH_PIECE):
        digest.update(data[start : start + _HASH_PIECE])
    return digest.hexdigest()


def cache_key(identity: Mapping[str, Any], messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]) -> str:
    payload = json.dumps({"backend": identity, "messages": messages, "params": params}, sort_keys=True, ensure_ascii=False)
    return _sha256_hex(payload)


def key_maker(identity: Mapping[str, Any], params: Mapping[str, Any]) -> Callable[[Sequence[Mapping[str, str]]], str]:
    """``lambda messages: cache_key(identity, messages, params)``, the same keys, faster: the parts every
    key shares are encoded once (the JSON of the three sorted fields, spliced). For a stage that keys its
    prompts one by one as they arrive (a pipelined judge)."""
    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
    head = '{"backend": ' + encode(identity) + ', "messages": '
    tail = ', "params": ' + encode(params) + "}"
    return lambda messages: _sha256_hex(head + encode(messages) + tail)


def cache_keys(identity: Mapping[str, Any], prompts: Iterable[Sequence[Mapping[str, str]]],
               params: Mapping[str, Any]) -> list[str]:
    """``[cache_key(identity, messages, params) for messages in prompts]``, the same keys, faster (:func:`key_maker`)."""
    return list(map(key_maker(identity, params), prompts))


class ResponseCache:
    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        if self.path.is_dir():
            raise ConvbenchError(f"response cache {self.path} is a folder; give a file path (e.g. {self.path}/responses.sqlite)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit (isolation_level=None): each put is durable on its own
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    @_names_damage
    def _open(self) -> None:
        """Check the file is a convbench cache (or new) before writing anything to it, then set it up."""
        self._db.execute("PRAGMA busy_timeout=60000")
        application_id = self._db.execute("PRAGMA application_id").fetchone()[0]  # a non-SQLite file fails here
        if application_id != APPLICATION_ID:
            self._check_unmarked()
            # before WAL mode, so the mark lands in the main file's header, where delete_damaged_cache reads it
            self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            # a cache from before the mark may already be in WAL mode: the mark is then in the -wal file until
            # a checkpoint, and a process killed first would leave a cache `cache clear` does not recognise
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.execute(_SCHEMA)
        self._upgrade()
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a committed answer survives a killed process (not a power cut) without an fsync each
        self._db.execute("PRAGMA synchronous=NORMAL")

    def _check_unmarked(self) -> None:
        """An unmarked file must be new (no tables) or a cache from before the mark; never another program's database."""
        tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        if {"key", "backend", "model", "response"} <= columns:
            return
        raise ConvbenchError(
            f"{self.path} is an SQLite database but not a convbench response cache (tables: {', '.join(sorted(tables))}); "
            "use --cache OTHER_FILE"
        )

    def _upgrade(self) -> None:
        """Bring a cache written by an earlier version up to this one's tables (answers are kept)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        if "finish_reason" not in columns:
            try:
                self._db.execute("ALTER TABLE responses ADD COLUMN finish_reason TEXT")
            except sqlite3.OperationalError as err:  # another process added it first
                if "duplicate column" not in str(err):
                    raise
        self._db.execute(_ERRORS_SCHEMA)
        self._db.execute(_CLAIMS_SCHEMA)
        self._db.execute(_ANSWER_TRIGGER)

    @_names_damage
    def get_many(self, keys: Iterable[str]) -> dict[str, Generation]:
        """The stored answers among ``keys`` (per-row errors are not answers: see :meth:`get_errors`)."""
        found: dict[str, Generation] = {}
        for chunk in _chunks(keys):
            rows = self._db.execute(
                "SELECT key, response, prompt_tokens, completion_tokens, seconds, finish_reason FROM responses "
                f"WHERE key IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            for key, text, prompt_tokens, completion_tokens, seconds, finish_reason in rows:
                found[key] = Generation(text, prompt_tokens, completion_tokens, seconds, finish_reason=finish_reason)
        return found

    @_names_damage
    def get_errors(self, keys: Iterable[str], since: float | None = None) -> dict[str, Generation]:
        """The per-row errors stored among ``keys``, as failed (permanent) generations; with ``since``,
        only those stored at or after that time (``time.time()``)."""
        found: dict[str, Generation] = {}
        for chunk in _chunks(keys):
            rows = self._db.execute(
                f"SELECT key, error, finish_reason FROM errors WHERE key IN ({','.join('?' * len(chunk))}) "
                "AND created >= ?", [*chunk, -1.0 if since is None else since]
            )
            for key, error, finish_reason in rows:
                found[key] = Generation("", error=error, finish_reason=finish_reason, permanent=True)
        return found

    @_names_damage
    def put(self, key: str, identity: Mapping[str, Any], generation: Generation) -> None:
        self.put_many([(key, identity, generation)])

    @_names_damage
    def put_many(self, answers: Iterable[tuple[str, Mapping[str, Any], Generation]]) -> None:
        """Store answers ``(key, identity, generation)`` in one commit: each with its earlier per-row
        error gone and every claim on it ended (as :meth:`put`, for answers that arrived together)."""
        answers = list(answers)
        for _, _, generation in answers:
            if generation.error is not None:
                raise ValueError("failed generations are not cached as answers: see put_error for per-row errors")
        now = time.time()
        rows = [(key, identity["kind"], identity["model"], g.text, g.prompt_tokens, g.completion_tokens, g.seconds, now,
                 g.finish_reason) for key, identity, g in answers]
        groups = [rows[i : i + _ROWS_PER_INSERT] for i in range(0, len(rows), _ROWS_PER_INSERT)]
        if len(groups) == 1:  # one statement (its trigger included) is one commit: no BEGIN/COMMIT round trips
            self._insert_answers(groups[0])
        elif groups:
            with self._transaction():
                for group in groups:
                    self._insert_answers(group)

    def _insert_answers(self, rows: Sequence[tuple]) -> None:
        # the connection's trigger (_ANSWER_TRIGGER) deletes each key's error and claims in the same statement
        self._db.execute(f"INSERT OR REPLACE INTO responses {_ANSWER_COLUMNS} VALUES "
                         + ",".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows)), [v for row in rows for v in row])

    @_names_damage
    def put_error(self, key: str, identity: Mapping[str, Any], generation: Generation) -> None:
        """Store a per-row error so that reruns record it without asking (``--retry-errors`` asks again)."""
        if generation.error is None or not generation.permanent:
            raise ValueError("only per-row (permanent) errors are stored: other failures must be retried by a rerun")
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO errors (key, backend, model, error, finish_reason, created) VALUES (?, ?, ?, ?, ?, ?)",
                (key, identity["kind"], identity["model"], generation.error, generation.finish_reason, time.time()),
            )
            self._db.execute("DELETE FROM claims WHERE key = ?", (key,))  # a per-row error is the prompt's outcome

    @_names_damage
    def demote(self, keys: Iterable[str], identity: Mapping[str, Any], error: str) -> None:
        """Turn the stored answers of ``keys`` into per-row errors ``error`` (an empty judge verdict an earlier
        run stored as an answer): recorded as before any run began, so ``--retry-errors`` asks them again."""
        keys = list(keys)
        with self._transaction():
            for chunk in _chunks(keys):
                self._db.execute(f"DELETE FROM responses WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            self._db.executemany(
                "INSERT OR REPLACE INTO errors (key, backend, model, error, finish_reason, created) VALUES (?, ?, ?, ?, ?, ?)",
                [(key, identity["kind"], identity["model"], error, None, 0.0) for key in keys])

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (taken at once, so that waiting for another writer uses the busy timeout)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._db.in_transaction:  # SQLite may have rolled back already (a full disk, say)
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @_names_damage
    def claim(self, keys: Iterable[str], owner: ClaimOwner, *, seconds: float = CLAIM_SECONDS,
              errors_since: float | None = None) -> list[str]:
        """Claim for ``owner`` those of ``keys`` that nobody else may be asking now; returns them, in order.

        A key is claimed when it has no answer (nor, with ``errors_since``, a per-row error stored at or
        after that time) and no claim, or a claim that is ``owner``'s own, has expired, or belongs to a
        process of this host that no longer runs. The others (answered, or claimed by a live other) are
        left out: the caller waits for their answers. One transaction, so two processes never both get a key.
        """
        unique = list(dict.fromkeys(keys))
        now = time.time()
        # a read first, outside any transaction: a batch with nothing to claim (a cached rerun, keys another
        # process holds) takes no write lock, so it never queues behind the writers of a shared cache
        if not self._claimable(unique, owner, errors_since, now):
            return []
        with self._transaction():
            mine = self._claimable(unique, owner, errors_since, now)  # again, under the lock: what counts
            for start in range(0, len(mine), _ROWS_PER_INSERT):  # many rows a statement: one SQLite call each
                rows = [(key, owner.name, owner.host, owner.pid, now + seconds, now)
                        for key in mine[start : start + _ROWS_PER_INSERT]]
                self._db.execute("INSERT OR REPLACE INTO claims (key, owner, host, pid, expires, created) VALUES "
                                 + ",".join(["(?, ?, ?, ?, ?, ?)"] * len(rows)), [v for row in rows for v in row])
        return mine

    def _claimable(self, keys: Sequence[str], owner: ClaimOwner, errors_since: float | None, now: float) -> list[str]:
        """Those of ``keys`` (unique) that :meth:`claim` may take now, in order."""
        mine: list[str] = []
        for chunk in _chunks(keys):
            # per key, in one statement (each SQLite call lets the interpreter lock go and waits to get it
            # back: three of them per claim cost a busy run's stage more than the work, #20): whether it
            # is answered (or has a per-row error since errors_since), and its claim if any
            rows = self._db.execute(
                "WITH wanted(key) AS (VALUES " + ",".join(["(?)"] * len(chunk)) + ") "
                "SELECT wanted.key, EXISTS (SELECT 1 FROM responses WHERE responses.key = wanted.key) "
                "OR EXISTS (SELECT 1 FROM errors WHERE errors.key = wanted.key AND errors.created >= ?), "
                "claims.owner, claims.host, claims.pid, claims.expires "
                "FROM wanted LEFT JOIN claims ON claims.key = wanted.key",
                [*chunk, math.inf if errors_since is None else errors_since])
            state = {key: (done, other) for key, done, *other in rows}
            for key in chunk:
                done, (other_owner, host, pid, expires) = state[key]
                if not done and (other_owner is None or other_owner == owner.name or expires <= now
                                 or not _alive(host, pid)):
                    mine.append(key)
        return mine

    @_names_damage
    def release(self, owner: ClaimOwner, keys: Iterable[str] | None = None) -> int:
        """End ``owner``'s claims on ``keys`` (default: all of them); returns how many ended."""
        if keys is None:
            return self._db.execute("DELETE FROM claims WHERE owner = ?", (owner.name,)).rowcount
        ended = 0
        for chunk in _chunks(keys):
            ended += self._db.execute(f"DELETE FROM claims WHERE owner = ? AND key IN ({','.join('?' * len(chunk))})",
                                      [owner.name, *chunk]).rowcount
        return ended

    @_names_damage
    def claims(self) -> list[dict[str, Any]]:
        """Every claim now in the cache (key, owner, host, pid, expires), expired ones included."""
        rows = self._db.execute("SELECT key, owner, host, pid, expires FROM claims ORDER BY created, key")
        return [{"key": k, "owner": o, "host": h, "pid": p, "expires": e} for k, o, h, p, e in rows]

    def hold(self, owner: ClaimOwner | None = None, *, seconds: float = CLAIM_SECONDS,
             errors_since: float | None = None) -> ClaimHolder:
        """A :class:`ClaimHolder` for ``owner`` (default: a new one for this process) on this cache."""
        return ClaimHolder(self, owner or ClaimOwner.new(), seconds=seconds, errors_since=errors_since)

    @_names_damage
    def stats(self) -> dict[str, Any]:
        rows = self._db.execute(
            "SELECT backend, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM responses "
            "GROUP BY backend, model ORDER BY backend, model"
        ).fetchall()
        return {
            "path": str(self.path),
            "entries": sum(r[2] for r in rows),
            "errors": self._db.execute("SELECT COUNT(*) FROM errors").fetchone()[0],
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "models": [
                {"backend": b, "model": m, "entries": n, "prompt_tokens": p or 0, "completion_tokens": c or 0}
                for b, m, n, p, c in rows
            ],
        }

    @_names_damage
    def clear(self, model: str | None = None) -> int:
        """Delete every entry (answers and per-row errors), or those of one model; returns how many were deleted."""
        deleted = 0
        for table in ("responses", "errors"):
            if model is None:
                cursor = self._db.execute(f"DELETE FROM {table}")
            else:
                backend, _, name = model.partition(":")
                cursor = self._db.execute(
                    f"DELETE FROM {table} WHERE model = ? OR (backend = ? AND model = ?)", (model, backend, name)
                )
            deleted += cursor.rowcount
        self._db.execute("VACUUM")
        return deleted

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class ClaimOwner:
    """Who holds a claim: this host, this process and a random token (two stages of one process differ)."""

    host: str
    pid: int
    token: str

    @classmethod
    def new(cls) -> ClaimOwner:
        """A fresh owner for the calling process."""
        return cls(socket.gethostname(), os.getpid(), secrets.token_hex(8))

    @property
    def name(self) -> str:
        """The owner as stored in the ``claims`` table: ``host:pid:token``."""
        return f"{self.host}:{self.pid}:{self.token}"


def _alive(host: str, pid: int) -> bool:
    """Whether a claim's process may still run: False only for a process of this host that is gone.

    Another host's processes cannot be seen from here: their claims end by expiring. On Windows
    ``os.kill(pid, 0)`` would interrupt the process, so there too only expiry ends a claim.
    """
    if host != socket.gethostname() or os.name == "nt":
        return True
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs, as another user
        return True
    return True


class ClaimHolder:
    """One owner's claims on a cache while a stage works: taken with :meth:`take`, renewed in the
    background (every quarter of ``seconds``, on a connection of its own) and all released on
    :meth:`close`, which leaving a ``with`` block calls, whatever ended it (an exception, Ctrl-C).

    Example:
        >>> import tempfile, os
        >>> cache = ResponseCache(os.path.join(tempfile.mkdtemp(), "responses.sqlite"))
        >>> with cache.hold() as holder:
        ...     holder.take(["k1", "k2"])
        ['k1', 'k2']
        >>> cache.claims()
        []
    """

    def __init__(self, cache: ResponseCache, owner: ClaimOwner, *, seconds: float = CLAIM_SECONDS,
                 errors_since: float | None = None) -> None:
        self.cache, self.owner, self.seconds, self.errors_since = cache, owner, seconds, errors_since
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def take(self, keys: Iterable[str]) -> list[str]:
        """Claim what can be claimed among ``keys`` (see :meth:`ResponseCache.claim`); returns those keys."""
        mine = self.cache.claim(keys, self.owner, seconds=self.seconds, errors_since=self.errors_since)
        if mine and self._renewer is None:
            self._renewer = threading.Thread(target=self._renew, daemon=True, name="convbench-claims")
            self._renewer.start()
        return mine

    def release(self, keys: Iterable[str] | None = None) -> None:
        """End this owner's claims on ``keys`` (default: all), e.g. after a request failed for now."""
        self.cache.release(self.owner, keys)

    def _renew(self) -> None:
        """Push the expiry of this owner's claims forward until closed (a failed renewal is tried again)."""
        db = None
        try:
            db = sqlite3.connect(self.cache.path, timeout=60, isolation_level=None, check_same_thread=False)
            while not self._stop.wait(self.seconds / 4):
                try:
                    db.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + self.seconds, self.owner.name))
                except sqlite3.Error:
                    pass  # a busy or damaged file: the main connection reports it; claims at worst expire
        except sqlite3.Error:
            pass
        finally:
            if db is not None:
                db.close()

    def close(self, *, quiet: bool = False) -> None:
        """Stop renewing and release every claim of this owner; ``quiet``: a failure to release is ignored
        (an exception is already on its way, and the claims expire anyway)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        try:
            self.release()
        except Exception:
            if not quiet:
                raise

    def __enter__(self) -> ClaimHolder:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self.close(quiet=kind is not None)
