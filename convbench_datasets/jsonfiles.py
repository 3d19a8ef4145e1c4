"""Reading JSON and JSON Lines files a user hands to convbench, with one-line errors naming file and line.

A file cut short (a copy or a write that was interrupted) is the common case, so an error at the
very end of a file says so.

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
    >>> _ = open(path, "w").write('{"id": 1}\\n\\n{"id": 2')
    >>> try:
    ...     read_jsonl(path)
    ... except DataFormatError as err:
    ...     print(str(err).replace(path, "rows.jsonl"))
    rows.jsonl line 3: not valid JSON (Expecting ',' delimiter at column 9); the file ends mid-line: was it cut short?
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .errors import DataFormatError

_CUT_SHORT = "; the file ends mid-line: was it cut short?"


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataFormatError(f"{os.fspath(path)}: no such file") from None
    except OSError as err:
        raise DataFormatError(f"{os.fspath(path)}: cannot read ({err.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise DataFormatError(f"{os.fspath(path)} line {line}: not UTF-8 text ({err.reason})") from None


def _explain(err: json.JSONDecodeError) -> str:
    # json's messages either end in "at" ("Unterminated string starting at") or need one
    return f"{err.msg if err.msg.endswith(' at') else err.msg + ' at'} column {err.colno}"


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object in ``path``; anything else (not JSON, not an object, unreadable) is a DataFormatError."""
    text = _read_text(path)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        # an error at the end of the text, or a string still open there (json points at where it opened):
        # the document stopped before it was complete
        cut = err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string")
        hint = _CUT_SHORT if cut else ""
        raise DataFormatError(
            f"{os.fspath(path)} line {err.lineno}: not valid JSON ({_explain(err)}){hint}"
        ) from None
    if not isinstance(value, dict):
        raise DataFormatError(f"{os.fspath(path)}: expected a JSON object, got {type(value).__name__}")
    return value


def read_jsonl(path: str | os.PathLike[str]) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSON Lines file; each line must be a JSON object."""
    text = _read_text(path)
    lines = text.split("\n")
    rows = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{os.fspath(path)} line {lineno}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            hint = _CUT_SHORT if lineno == len(lines) else ""  # the last line had no newline
            raise DataFormatError(f"{where}: not valid JSON ({_explain(err)}){hint}") from None
        if not isinstance(value, dict):
            raise DataFormatError(f"{where}: expected a JSON object, got {type(value).__name__}")
        rows.append((lineno, value))
    return rows
