"""The NC-Bench columns and their types (every config shares them)."""

from __future__ import annotations

from typing import Any

# Column -> what it holds; the card's field table is generated from this, so the two cannot drift.
COLUMNS: dict[str, str] = {
    "id": "upstream row id (unique within a set)",
    "set": "basic, rag or complex_request",
    "task": "upstream task name, verbatim (e.g. `Detail Request-Partial`)",
    "pattern": "the pattern as the paper's tables name it (e.g. `Detail Request`)",
    "messages": "the upstream `chat_prompt`, unchanged: system message first, then the turns (the user's last, but on complex_request id 340)",
    "passage": "rag rows: the passage the system message carries after `Context: `; empty otherwise",
    "assistant_role": "complex_request rows: the role the assistant plays; empty otherwise",
    "user_role": "complex_request rows: who the user is; empty otherwise",
    "request_type": "complex_request rows: what the user requests; empty otherwise",
    "request_details": "complex_request rows: the details the assistant must elicit; empty otherwise",
    "acceptable_labels": "action labels that pass for this task (the paper's rules)",
    "acceptable_labels_released_script": "the same under the released aggregator script's rules",
    "label_set": "labels the judge may choose from for this row",
}


def features() -> Any:
    """``datasets.Features`` for NC-Bench rows (imports datasets lazily)."""
    from datasets import Features, List, Value

    text = Value("string")
    return Features(
        {
            "id": Value("int64"),
            "set": text,
            "task": text,
            "pattern": text,
            "messages": List({"role": text, "content": text}),
            "passage": text,
            "assistant_role": text,
            "user_role": text,
            "request_type": text,
            "request_details": text,
            "acceptable_labels": List(text),
            "acceptable_labels_released_script": List(text),
            "label_set": List(text),
        }
    )
