"""A run folder: ``records.jsonl`` (one line per example) and ``results.json`` (scores, stats, signature)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import write_atomic
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


@contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold the run folder for one process: a second run into the same folder fails at once, clearly."""
    folder.mkdir(parents=True, exist_ok=True)
    with hold_lock(folder / ".lock", f"another convbench process is running into {folder}; use another --out"):
        yield


@contextmanager
def hold_lock(path: Path, busy: str) -> Iterator[None]:
    """An exclusive lock on the file ``path`` for as long as the block runs; ``busy`` is the error when another
    process holds it. The file is opened to append, so a file of that name loses nothing."""
    with open(path, "a") as handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no fcntl (Windows): no lock
            pass
        except BlockingIOError:
            raise ConvbenchError(busy) from None
        yield


RUN_FILES = ("records.jsonl", "results.json")  # what a run writes into its folder (beside its ``.lock``)
# a temporary file of write_atomic's (``.results.json.k2x_9q0a.tmp``) that a run killed while writing left
_LEFT_BY_A_RUN = re.compile(r"\.(?:%s)\.[A-Za-z0-9_]+\.tmp" % "|".join(re.escape(name) for name in RUN_FILES))


def check_run_out(folder: Path) -> None:
    """Refuse ``folder`` as a run folder to write unless it is missing, a run folder already (it holds
    ``results.json``) or holds nothing but what a run writes: ``.lock``, ``records.jsonl`` (as a run writes
    it: a JSON object a line) and the temporary files of the atomic writes of it and ``results.json`` (a
    run killed half way leaves them). A typo in ``--out`` must never write into a user's folder: any other
    entry refuses it.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "records.jsonl").write_text('{"id": 1}\\n')  # killed before results.json
        >>> _ = (folder / ".results.json.k2x_9q0a.tmp").write_text("{")
        >>> check_run_out(folder)
        >>> _ = (folder / "notes.txt").write_text("mine")
        >>> check_run_out(folder)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        convbench_datasets.errors.ConvbenchError: ... it holds notes.txt, which a run does not write, and is never written into; give another --out
    """
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ConvbenchError(f"{folder} exists and is not a folder; give another --out")
    if (folder / "results.json").is_file():
        return
    foreign = sorted(entry for entry in os.listdir(folder) if not _left_by_a_run(folder, entry))
    if not foreign:
        return
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
    raise ConvbenchError(f"{folder} is not empty and is not a run folder (no results.json): it holds {shown}, "
                         "which a run does not write, and is never written into; give another --out")


def _left_by_a_run(folder: Path, entry: str) -> bool:
    path = folder / entry
    if not (entry == ".lock" or entry in RUN_FILES or _LEFT_BY_A_RUN.fullmatch(entry)):
        return False
    if not path.is_file() or path.is_symlink():
        return False
    if entry == "records.jsonl":  # written whole (atomically) by a run: a JSON object a line, or nothing
        try:
            return all(isinstance(record, dict) for _, record in read_jsonl(path))
        except (ConvbenchError, OSError, UnicodeDecodeError, ValueError):
            return False
    return True


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
