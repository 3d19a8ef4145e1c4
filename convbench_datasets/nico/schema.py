"""NICO columns per config: name, type and meaning in one table; features are built from it."""

from __future__ import annotations

from typing import Any

from ..columns import Column

_CONTEXT = (
    Column("dialogue_id", "string", "the dialogue the example comes from"),
    Column("topic", "string", "one of the dialogue topics (e.g. 购物)"),
    Column("concept", "string", "the concept the dialogue was written around"),
    Column("interaction_type", "string", "exchange, cooperation, conformity, coercion or conflict"),
    Column("interaction_type_zh", "string", "the interaction type in Chinese"),
    Column("interaction_definition", "string", "the interaction type's definition (Chinese)"),
)

COLUMNS: dict[str, tuple[Column, ...]] = {
    "dialogs": (
        Column("id", "string", "dialogue id"),
        *_CONTEXT,
        Column("utterances", "utterances", "turns: speaker, final text, text as first written, edits (kind, original, rewrite)"),
    ),
    "open_domain": (
        Column("id", "string", "example id"),
        *_CONTEXT,
        Column("turn_index", "int32", "position of the reference turn in the dialogue"),
        Column("history", "turns", "the turns before the reference (speaker, text)"),
        Column("reference_speaker", "string", "who says the reference turn"),
        Column("reference", "string", "the human turn the model's turn is compared with"),
    ),
    "dialog_completion": (
        Column("id", "string", "example id"),
        *_CONTEXT,
        Column("turn_index", "int32", "position of the reference turn in the dialogue (open_domain's)"),
        Column("history", "turns", "the turns before the reference (speaker, text)"),
        Column("reference_speaker", "string", "who says the reference turn"),
        Column("reference", "string", "the human turn the model's turn is compared with"),
    ),
    "identify_unnatural": (
        Column("id", "string", "example id"),
        *_CONTEXT,
        Column("dialogue", "turns", "the dialogue as first written (before human rewriting)"),
        Column("unnatural_sentences", "strings", "the sentences annotated unnatural (the gold answer; may be empty)"),
        Column("ungrammatical_sentences", "strings", "the sentences annotated ungrammatical"),
    ),
    "rewrite_unnatural": (
        Column("id", "string", "example id"),
        *_CONTEXT,
        Column("dialogue", "turns", "the dialogue as first written"),
        Column("turn_index", "int32", "the turn that holds the sentence"),
        Column("speaker", "string", "who says it"),
        Column("sentence", "string", "the unnatural sentence to rewrite"),
        Column("reference", "string", "its human rewrite"),
    ),
}


def features(config: str) -> Any:
    from datasets import Features, List, Value

    text = Value("string")
    turn = {"speaker": text, "text": text}
    types = {
        "string": text,
        "int32": Value("int32"),
        "turns": List(turn),
        "strings": List(text),
        "utterances": List({"speaker": text, "text": text, "original_text": text,
                            "edits": List({"kind": text, "original": text, "rewrite": text})}),
    }
    return Features({c.name: types[c.type] for c in COLUMNS[config]})


def row_rules(config: str) -> Any:
    """What a run needs of each row of a NICO config (:class:`~convbench_datasets.built_rows.RowRules`,
    checked as rows are read): every column of :data:`COLUMNS` with its type; ``id`` names a row.

    Example:
        >>> row_rules("open_domain").problem({"id": "x", "history": None})
        "field 'dialogue_id' is missing"
    """
    from ..built_rows import RowRules

    turn = {"speaker": str, "text": str}
    shapes = {"string": str, "int32": int, "turns": [turn], "strings": [str],
              "utterances": [{**turn, "original_text": str, "edits": [{"kind": str, "original": str, "rewrite": str}]}]}
    return RowRules({c.name: shapes[c.type] for c in COLUMNS[config]}, key=("id",))
