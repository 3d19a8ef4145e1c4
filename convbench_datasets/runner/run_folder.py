"""A run folder: ``records.jsonl`` (one line per example) and ``results.json`` (scores, stats, signature)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConvbenchError


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
        """NC-Bench: accuracy per (set, pattern) as a DataFrame, in percent."""
        import pandas as pd

        rows = [
            {"set": s, "pattern": p, "accuracy": acc}
            for s, patterns in self.results.get("per_set_pattern", {}).items()
            for p, acc in patterns.items()
        ]
        return pd.DataFrame(rows)


def write_atomic(path: Path, text: str) -> None:
    """Write via a unique temporary file and a rename: a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold the run folder for one process: a second run into the same folder fails at once, clearly."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no fcntl (Windows): no lock
            pass
        except BlockingIOError:
            raise ConvbenchError(f"another convbench process is running into {folder}; use another --out") from None
        yield


def write_folder(path: Path, records: list[dict[str, Any]], results: dict[str, Any]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    write_atomic(path / "records.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    write_atomic(path / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")


def read_folder(path: str | os.PathLike[str]) -> tuple[Path, list[dict[str, Any]], dict[str, Any]]:
    """(folder, records, previous results or {}) of a run folder, with errors naming the line."""
    folder = Path(path)
    records_path, results_path = folder / "records.jsonl", folder / "results.json"
    if not records_path.is_file():
        raise ConvbenchError(f"{folder} is not a run folder: {records_path} is missing")
    records = []
    with open(records_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ConvbenchError(f"{records_path.name} line {lineno}: not valid JSON ({err.msg})") from err
    previous = json.loads(results_path.read_text(encoding="utf-8")) if results_path.is_file() else {}
    return folder, records, previous
