"""The NC-Bench columns: name, type and meaning, in one table (every config shares them)."""

from __future__ import annotations

from typing import Any

from ..columns import Column

COLUMNS: tuple[Column, ...] = (
    Column("id", "int64", "upstream row id (unique within a set)"),
    Column("set", "string", "basic, rag or complex_request"),
    Column("task", "string", "upstream task name, verbatim (e.g. `Detail Request-Partial`)"),
    Column("pattern", "string", "the pattern as the paper's tables name it (e.g. `Detail Request`)"),
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


def features() -> Any:
    """``datasets.Features`` for NC-Bench rows (imports datasets lazily)."""
    from datasets import Features, List, Value

    text = Value("string")
    types = {
        "int64": Value("int64"),
        "string": text,
        "list[string]": List(text),
        "messages": List({"role": text, "content": text}),
    }
    return Features({c.name: types[c.type] for c in COLUMNS})
