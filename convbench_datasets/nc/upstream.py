"""Reading the NC-Bench upstream files: pinned sources, strict validation, one row dict per line.

Every problem is a :class:`DataFormatError` naming the file, the line and the field; nothing is
skipped or coerced, because a silently dropped row would change every accuracy computed on the set.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from .._resources import read_yaml
from ..errors import DataFormatError
from ..sources import SourceFile, fetch
from .patterns import PatternTable

ROLES = ("system", "user", "assistant")
CONTEXT_MARKER = "Context: "
# Columns the complex-request file carries; the other sets lack them and get empty strings.
REQUEST_FIELDS = ("assistant_role", "user_role", "request_type", "request_details")
_KNOWN_FIELDS = {"id", "task", "chat_prompt", *REQUEST_FIELDS}


def source_pins() -> dict[str, Any]:
    return read_yaml(__package__, "sources.yaml")


def source_files(section: str = "files") -> dict[str, SourceFile]:
    """The pinned upstream files by key: the data (``basic``, ``rag``, ``complex_request``, ``license``)
    or, with ``section="code"``, the released scripts (``utils``, ``aggregator``)."""
    pins = source_pins()
    return {
        key: SourceFile(
            name=f"{pins['mirror_folder']}/{spec['path'].rsplit('/', 1)[-1]}",
            url=pins["raw_url"].format(commit=pins["commit"], path=spec["path"]),
            sha256=spec["sha256"],
        )
        for key, spec in pins[section].items()
    }


def fetch_sources(sources_dir: str | os.PathLike[str] | None = None, progress: bool = True) -> dict[str, Path]:
    return {key: fetch(src, sources_dir=sources_dir, progress=progress) for key, src in source_files().items()}


def read_set(path: Path, set_name: str, table: PatternTable) -> list[dict[str, Any]]:
    """Parse and validate one upstream JSON Lines file into rows (upstream order kept)."""
    rows: list[dict[str, Any]] = []
    seen_ids: dict[int, int] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            where = f"{path.name} line {lineno}"
            if not line.strip():
                raise DataFormatError(f"{where}: empty line")
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFormatError(f"{where}: not valid JSON ({err.msg})") from err
            row = _row(record, set_name, table, where)
            if row["id"] in seen_ids:
                raise DataFormatError(f"{where}: field 'id': {row['id']} already used on line {seen_ids[row['id']]}")
            seen_ids[row["id"]] = lineno
            rows.append(row)
    _check_counts(rows, set_name, table, path.name)
    return rows


def _row(record: Any, set_name: str, table: PatternTable, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise DataFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - _KNOWN_FIELDS)
    if unknown:
        raise DataFormatError(f"{where}: unexpected field(s) {unknown}")
    for name in ("id", "task", "chat_prompt"):
        if name not in record:
            raise DataFormatError(f"{where}: field {name!r} is missing")
    if not isinstance(record["id"], int) or isinstance(record["id"], bool):
        raise DataFormatError(f"{where}: field 'id' must be an integer, got {record['id']!r}")
    task = record["task"]
    try:
        entry = table.entry(set_name, task)
    except KeyError as err:
        raise DataFormatError(f"{where}: field 'task': {err.args[0]}") from None
    messages = _messages(record["chat_prompt"], where)
    request = {}
    for name in REQUEST_FIELDS:
        value = record.get(name)
        if set_name == "complex_request" and not isinstance(value, str):
            raise DataFormatError(f"{where}: field {name!r} must be a string on every complex_request row, got {value!r}")
        if value is not None and not isinstance(value, str):
            raise DataFormatError(f"{where}: field {name!r} must be a string, got {value!r}")
        request[name] = value or ""
    return {
        "id": record["id"],
        "set": set_name,
        "task": task,
        "pattern": entry.pattern,
        "messages": messages,
        "passage": passage_of(messages, where) if set_name == "rag" else "",
        **request,
        "acceptable_labels": list(entry.acceptable_labels),
        "acceptable_labels_released_script": list(table.acceptable_labels(set_name, task, "released_script")),
        "label_set": list(entry.label_set),
    }


def _messages(value: Any, where: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise DataFormatError(f"{where}: field 'chat_prompt' must be a non-empty list of messages")
    for i, message in enumerate(value):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise DataFormatError(f"{where}: field 'chat_prompt[{i}]' must be an object with 'role' and 'content'")
        if message["role"] not in ROLES or not isinstance(message["content"], str):
            raise DataFormatError(f"{where}: field 'chat_prompt[{i}]': role must be one of {ROLES} and content a string")
    if value[0]["role"] != "system":
        raise DataFormatError(f"{where}: field 'chat_prompt[0]' must be the system message")
    # The last message is the user's on 719 of 720 upstream rows; complex_request id 340 ends with an
    # assistant turn. Rows are kept as released, so that is not checked here (the card says so).
    return [{"role": m["role"], "content": m["content"]} for m in value]


def passage_of(messages: list[dict[str, str]], where: str = "row") -> str:
    """The RAG passage: what the system message carries after its single ``Context: ``."""
    system = messages[0]["content"]
    if system.count(CONTEXT_MARKER) != 1:
        raise DataFormatError(
            f"{where}: field 'chat_prompt[0]': a rag system message must contain {CONTEXT_MARKER!r} exactly once"
        )
    return system.split(CONTEXT_MARKER, 1)[1]


def _check_counts(rows: list[dict[str, Any]], set_name: str, table: PatternTable, filename: str) -> None:
    found = Counter(row["task"] for row in rows)
    expected = {e.task: e.rows for e in table.tasks_of(set_name)}
    if dict(found) != expected:
        diff = {t: (found.get(t, 0), n) for t, n in expected.items() if found.get(t, 0) != n}
        raise DataFormatError(f"{filename}: rows per task (found, expected) differ from the pattern table: {diff}")
