"""The NC-Bench columns: name, type and meaning, in one table (every config shares them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..columns import Column

COLUMNS: tuple[Column, ...] = (
    Column("id", "int64", "upstream row id (unique within a set)"),
    Column("set", "class_label", "basic, rag or complex_request"),
    Column("task", "class_label", "upstream task name, verbatim (e.g. `Detail Request-Partial`); names: every set's tasks"),
    Column("pattern", "class_label", "the pattern as the paper's tables name it (e.g. `Detail Request`)"),
    Column("messages", "messages", "the upstream `chat_prompt`, unchanged: system message first, then the turns "
           "(the user's last, but on complex_request id 340)"),
    Column("passage", "string", "rag rows: the passage the system message carries after `Context: `; empty otherwise"),
    Column("assistant_role", "string", "complex_request rows: the role the assistant plays; empty otherwise"),
    Column("user_role", "string", "complex_request rows: who the user is; empty otherwise"),
    Column("request_type", "string", "complex_request rows: what the user requests; empty otherwise"),
    Column("request_details", "string", "complex_request rows: the details the assistant must elicit; empty otherwise"),
    Column("acceptable_labels", "list[string]", "action labels that pass for this task (the paper's rules)"),
    Column("acceptable_labels_released_script", "list[string]", "the same under the released aggregator script's rules"),
    Column("label_set", "list[string]", "labels the judge may choose from for this row"),
)
CLASS_LABEL_COLUMNS = tuple(c.name for c in COLUMNS if c.type == "class_label")


def label_names(column: str) -> tuple[str, ...]:
    """The names of a ``class_label`` column, in id order, read from the pattern table.

    The answer-key columns (``acceptable_labels``, ``label_set``) stay strings: they are compared with the
    judge's text, and hold published spellings that are no judge label.

    Example:
        >>> label_names("set")
        ('basic', 'rag', 'complex_request')
    """
    from .patterns import pattern_table

    table = pattern_table()
    names = {"set": table.sets, "task": table.all_tasks, "pattern": table.all_patterns}
    return names[column]


def named_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """``row`` with its ``set``, ``task`` and ``pattern`` as names: a row of a ``datasets`` split holds their
    class ids, a row convbench read holds names (returned as it is).

    Example:
        >>> dict(named_row({"id": 3, "set": 1, "task": "repeat request"}))
        {'id': 3, 'set': 'rag', 'task': 'repeat request'}
    """
    from ..class_labels import named_fields

    return named_fields(row, CLASS_LABEL_COLUMNS, label_names)


def features() -> Any:
    """``datasets.Features`` for NC-Bench rows (imports datasets lazily).

    Example:
        >>> features()["pattern"].int2str(0)
        'Inquiry'
    """
    from datasets import ClassLabel, Features, List, Value

    text = Value("string")
    types = {
        "int64": Value("int64"),
        "string": text,
        "list[string]": List(text),
        "messages": List({"role": text, "content": text}),
    }
    return Features({c.name: ClassLabel(names=list(label_names(c.name))) if c.type == "class_label" else types[c.type]
                     for c in COLUMNS})


# rows are checked as read, class labels already turned into names (see ..class_labels)
_SHAPES: dict[str, Any] = {"int64": int, "string": str, "class_label": str, "list[string]": [str]}
ROLES = ("system", "user", "assistant")  # the roles of the upstream chat prompts


def row_rules() -> Any:
    """What a run needs of each NC-Bench row (:class:`~convbench_datasets.built_rows.RowRules`, checked as
    rows are read): every column of :data:`COLUMNS` with its type; messages, acceptable labels and label
    set not empty (nothing to ask, nothing that could pass, nothing to offer the judge); a ``set`` and
    ``task`` of the pattern table (the released judge prompt, the per-set tables and re-scoring under
    other rules read them there); ``set`` and ``id`` together name a row.

    Example:
        >>> row_rules().problem({"id": 1, "set": "basic"})
        "field 'task' is missing"
    """
    from ..built_rows import NonEmpty, RowRules

    shapes = {c.name: _SHAPES.get(c.type) for c in COLUMNS}
    shapes["messages"] = NonEmpty([{"role": str, "content": str}])
    for name in ("acceptable_labels", "acceptable_labels_released_script", "label_set"):
        shapes[name] = NonEmpty([str])
    return RowRules(shapes, key=("set", "id"), extra=_row_problem)


def _row_problem(row: dict[str, Any]) -> str | None:
    from .patterns import pattern_table

    table = pattern_table()
    if row["set"] not in table.sets:
        return f"field 'set' must be one of {', '.join(table.sets)}, got {row['set']!r}"
    if row["task"] not in table.task_names(row["set"]):
        return f"field 'task' must be a task of set {row['set']!r} (the pattern table's), got {row['task']!r}"
    for index, message in enumerate(row["messages"]):
        if message["role"] not in ROLES:
            return f"field 'messages[{index}].role' must be one of {', '.join(ROLES)}, got {message['role']!r}"
    return None
