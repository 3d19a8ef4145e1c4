"""A run folder: ``records.jsonl`` (one line per example) and ``results.json`` (scores, stats, signature)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..atomic import refuse_link, write_atomic
from ..errors import ConvbenchError
from ..jsonfiles import read_json, read_jsonl


@dataclass
class RunResult:
    """A finished run: its folder, the per-example records and the results (with signature)."""

    path: Path
    records: list[dict[str, Any]]
    results: dict[str, Any]
    stats: dict[str, Any] = field(default_factory=dict)

    def to_pandas(self) -> Any:
        """The records as a DataFrame (one row per example)."""
        import pandas as pd

        return pd.DataFrame(self.records)

    def pattern_table(self) -> Any:
        """Accuracy per (set, pattern) as a DataFrame, in percent, for results that have ``per_set_pattern``."""
        import pandas as pd

        rows = [
            {"set": s, "pattern": p, "accuracy": acc}
            for s, patterns in self.results.get("per_set_pattern", {}).items()
            for p, acc in patterns.items()
        ]
        return pd.DataFrame(rows)


MARKER = ".convbench-run"  # written first into every folder a run, merge or import takes: what makes it a run folder
RUN_FILES = ("records.jsonl", "results.json")  # what a run writes into its folder (beside its marker and ``.lock``)


@contextmanager
def run_folder(folder: Path, shard: str | None = None) -> Iterator[None]:
    """Take ``folder`` for one run (``shard``: ``"I/N"`` for a shard of a run, else None) and hold it.

    The folder is checked (:func:`check_run_out`), created if missing, marked (:data:`MARKER`, written
    before anything else so that a killed run's folder is recognised as the run's) and locked. When the
    block fails before ``results.json`` is written, a folder that held no run before is left as it was:
    the marker and lock go again, and a folder the run created is removed.
    """
    check_run_out(folder, shard)
    created = not folder.exists()
    marked = (folder / MARKER).is_file()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with hold_lock(folder / ".lock", f"another convbench process is running into {folder}; use another --out"):
            if not marked:
                write_atomic(folder / MARKER, json.dumps({"convbench_run": 1, "convbench": __version__,
                                                          "shard": shard}) + "\n")
            yield
    except BaseException:
        if not marked and not (folder / "results.json").exists():
            _unmark(folder, created)
        raise


def _unmark(folder: Path, created: bool) -> None:
    """Undo what taking ``folder`` wrote (its marker and lock; the folder itself if the run created it)."""
    for name in (MARKER, ".lock"):
        try:
            (folder / name).unlink(missing_ok=True)
        except OSError:
            pass
    if created:
        try:
            folder.rmdir()  # only if empty: never a file the run did not write
        except OSError:
            pass


@contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold an existing run folder for one process (a reader that must see no run write it): a second
    holder fails at once, clearly."""
    with hold_lock(folder / ".lock", f"another convbench process is running into {folder}; use another --out"):
        yield


@contextmanager
def hold_lock(path: Path, busy: str) -> Iterator[None]:
    """An exclusive lock on the file ``path`` for as long as the block runs; ``busy`` is the error when another
    process holds it. The file is opened to append (a file of that name loses nothing) and never through a
    symbolic link (which could point at a file of someone else's)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError as err:
        raise ConvbenchError(f"cannot take the lock file {path} ({err.strerror or err})") from None
    with os.fdopen(fd, "a") as handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no fcntl (Windows): no lock
            pass
        except BlockingIOError:
            raise ConvbenchError(busy) from None
        yield


def check_run_out(folder: Path, shard: str | None = None) -> None:
    """Refuse ``folder`` as the folder of a run unless it is missing, empty, or a run folder: it holds the
    :data:`MARKER` file that every run writes first. A typo in ``--out`` must never write into a user's
    folder, so any other folder, one with a ``results.json`` of its own or only hidden files included, is
    refused untouched. A run folder of a shard is refused for another shard or an unsharded run (and the
    other way round): shards given one ``--out`` would replace each other.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> check_run_out(folder)  # empty
        >>> _ = (folder / "results.json").write_text("{}")
        >>> check_run_out(folder)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        convbench_datasets.errors.ConvbenchError: ... is not empty and is not a run folder (no .convbench-run): it holds results.json...
        >>> _ = (folder / ".convbench-run").write_text("")  # adopted by hand: now it is one
        >>> check_run_out(folder)
    """
    refuse_link(folder)  # a run folder that is a link (to a folder or nowhere) is never written through
    if not os.path.lexists(folder):
        return
    if not folder.is_dir():
        raise ConvbenchError(f"{folder} exists and is not a folder; give another --out")
    marker = folder / MARKER
    if marker.is_file() and not marker.is_symlink():
        _check_same_shard(folder, shard)
        return
    entries = sorted(os.listdir(folder))
    if not entries:
        return
    shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    hint = (f" (a run folder from a convbench that wrote no marker: `touch {marker}` adopts it)"
            if (folder / "results.json").is_file() else "")
    raise ConvbenchError(f"{folder} is not empty and is not a run folder (no {MARKER}): it holds {shown}, "
                         f"and is never written into{hint}; give another --out")


def check_marked(folder: Path) -> None:
    """Refuse to rewrite anything in ``folder`` unless a run made it (its :data:`MARKER`, a file, not a link):
    ``convbench score`` of a folder of someone's own ``results.json`` must not overwrite it."""
    marker = folder / MARKER
    if not marker.is_file() or marker.is_symlink():
        raise ConvbenchError(f"{folder} is not a run folder (no {MARKER}): convbench rewrites results.json only in a "
                             f"folder a run wrote (a run folder from a convbench that wrote no marker: `touch {marker}` "
                             "adopts it)")


def _check_same_shard(folder: Path, shard: str | None) -> None:
    """Refuse a run folder of another shard (or of an unsharded run, for a shard, and the other way round)."""
    held = _shard_of(folder)
    if held == shard:
        return
    what = f"shard {held} of a run" if held else "an unsharded run"
    wanted = f"shard {shard}" if shard else "an unsharded run (or a merge)"
    raise ConvbenchError(f"{folder} holds {what}; {wanted} needs a folder of its own, or they would replace each "
                         "other: give another --out")


def _shard_of(folder: Path) -> str | None:
    """The shard (``"I/N"``) a run folder holds: its marker's, else its results' signature's, else None."""
    try:
        recorded = json.loads((folder / MARKER).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        recorded = {}
    if isinstance(recorded, dict) and isinstance(recorded.get("shard"), str):
        return recorded["shard"]
    try:
        signature = read_json(folder / "results.json").get("signature") or {}
    except (ConvbenchError, OSError, AttributeError):
        return None
    shard = signature.get("shard") if isinstance(signature, dict) else None
    if isinstance(shard, dict) and isinstance(shard.get("index"), int) and isinstance(shard.get("count"), int):
        return f"{shard['index']}/{shard['count']}"
    return None


def write_folder(path: Path, records: list[dict[str, Any]], results: dict[str, Any]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    write_atomic(path / "records.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    write_atomic(path / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")


def read_folder(path: str | os.PathLike[str]) -> tuple[Path, list[dict[str, Any]], dict[str, Any]]:
    """(folder, records, previous results) of a run folder, with errors naming the line.

    A folder without ``results.json`` is refused: only it declares which rows the run had (its
    signature and ``row_ids``), so records alone could not show that some were lost.
    """
    folder = Path(path)
    records_path, results_path = folder / "records.jsonl", folder / "results.json"
    if not records_path.is_file():
        raise ConvbenchError(f"{folder} is not a run folder: {records_path} is missing")
    if not results_path.is_file():
        raise ConvbenchError(f"{folder}: results.json is missing; rerun the `convbench run` command to rewrite "
                             "the folder from the cache")
    # a half-written or damaged file is a one-line error naming it and the line, never a traceback
    rows = read_jsonl(records_path)
    for position, (lineno, _) in enumerate(rows, start=1):
        if lineno != position:  # later checks name a record by its position: a blank line would shift them
            raise ConvbenchError(f"{records_path} line {position}: blank line (a run folder has one record per line)")
    records = [record for _, record in rows]
    previous = read_json(results_path)
    signature = previous.get("signature") if isinstance(previous, dict) else None
    if not isinstance(signature, dict) or not signature:  # how the run was made: without it no number is its own
        raise ConvbenchError(f"{results_path} has no signature (how the run was made: its benchmark, models, rows); "
                             "a run folder's results.json always has one: rerun the `convbench run` command to "
                             "rewrite the folder from the cache")
    return folder, records, previous


def row_id(record: Any) -> str:
    """A record's row id as stored in ``results.json``'s ``row_ids``: ``set/id`` for a record with a
    ``set`` (ids repeat across sets), else ``id``."""
    if not isinstance(record, dict):
        return repr(record)
    return f"{record['set']}/{record.get('id')}" if "set" in record else str(record.get("id"))


def check_complete(records: Sequence[Any], results: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Refuse records that are not the rows the run declares: ``signature.rows`` (the count; a shard's:
    ``signature.shard.rows``) and, when present, ``row_ids`` in ``results.json``. The error names the folder and the missing or unexpected ids.
    A folder without results (nothing declared) passes: there is nothing to check against.
    """
    signature = results.get("signature") if isinstance(results, Mapping) else None
    signature = signature if isinstance(signature, Mapping) else {}
    shard = signature.get("shard")  # a shard's signature describes the whole run; its own count is here
    declared = shard.get("rows") if isinstance(shard, Mapping) else signature.get("rows")
    expected = results.get("row_ids") if isinstance(results, Mapping) else None
    if not isinstance(declared, int) and not isinstance(expected, list):
        return
    present = [row_id(r) for r in records]
    problems = []
    if isinstance(declared, int) and len(records) != declared:
        problems.append(f"records.jsonl has {len(records)} rows, the signature declares {declared}")
    if isinstance(expected, list):
        wanted, have = set(map(str, expected)), set(present)
        missing = [i for i in map(str, expected) if i not in have]
        unexpected = [i for i in present if i not in wanted]
        if missing:
            problems.append(f"missing ids: {_some(missing)}")
        if unexpected:
            problems.append(f"ids the run does not declare: {_some(unexpected)}")
    if problems:
        raise ConvbenchError(f"{path}: " + "; ".join(problems)
                              + " (run the same `convbench run` command again to rewrite the folder from the cache)")


def _some(ids: list[str], shown: int = 10) -> str:
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def dataset_fingerprint(rows: Sequence[dict[str, Any]]) -> str:
    """16 hex digits of the sha256 of the rows as canonical JSON: the same rows, the same fingerprint."""
    canonical = json.dumps(list(rows), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def write_run(path: Path, records: list[dict[str, Any]], results: dict[str, Any], signature: dict[str, Any],
              stats: dict[str, Any]) -> RunResult:
    """Write a run folder: the scores, then signature (the metric's own fields under the run's),
    stats and row ids, atomically (a reader never sees half a file)."""
    results = {**results, "signature": {**results.get("signature", {}), **signature}, "stats": stats,
               "row_ids": [row_id(r) for r in records]}
    write_folder(path, records, results)
    return RunResult(path, records, results, stats)
