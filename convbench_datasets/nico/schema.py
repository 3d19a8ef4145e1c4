"""NICO columns per config: name, type and meaning in one table; features are built from it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..columns import Column

_CONTEXT = (
    Column("dialogue_id", "string", "the dialogue the example comes from"),
    Column("topic", "string", "one of the dialogue topics (e.g. 购物)"),
    Column("concept", "string", "the concept the dialogue was written around"),
    Column("interaction_type", "class_label", "exchange, cooperation, conformity, coercion or conflict"),
    Column("interaction_type_zh", "class_label", "the interaction type in Chinese"),
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


def label_names(column: str) -> tuple[str, ...]:
    """The names of a ``class_label`` column (or of ``edit_kind``, an edit's ``kind``), in id order, read
    from ``interaction_types.yaml`` and the format's edit kinds.

    Example:
        >>> label_names("interaction_type_zh")
        ('交换', '合作', '从众', '强制', '冲突')
    """
    from .format import EDIT_KINDS, interaction_types

    kinds = interaction_types()
    names = {"interaction_type": tuple(kinds), "interaction_type_zh": tuple(v["zh"] for v in kinds.values()),
             "edit_kind": EDIT_KINDS}
    return names[column]


def named_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """``row`` with its interaction type (English and Chinese) as names: a row of a ``datasets`` split holds
    their class ids, a row convbench read holds names (returned as it is).

    Example:
        >>> dict(named_row({"id": "d1", "interaction_type": 4, "interaction_type_zh": 4}))
        {'id': 'd1', 'interaction_type': 'conflict', 'interaction_type_zh': '冲突'}
    """
    from ..class_labels import named_fields

    return named_fields(row, [c.name for c in _CONTEXT if c.type == "class_label"], label_names)


def features(config: str) -> Any:
    """``datasets.Features`` of a NICO config (imports datasets lazily).

    Example:
        >>> features("open_domain")["interaction_type"].names[0]
        'exchange'
    """
    from datasets import ClassLabel, Features, List, Value

    text = Value("string")
    turn = {"speaker": text, "text": text}
    kind = ClassLabel(names=list(label_names("edit_kind")))
    types = {
        "string": text,
        "int32": Value("int32"),
        "turns": List(turn),
        "strings": List(text),
        "utterances": List({"speaker": text, "text": text, "original_text": text,
                            "edits": List({"kind": kind, "original": text, "rewrite": text})}),
    }
    return Features({c.name: ClassLabel(names=list(label_names(c.name))) if c.type == "class_label" else types[c.type]
                     for c in COLUMNS[config]})


def row_rules(config: str) -> Any:
    """What a run needs of each row of a NICO config (:class:`~convbench_datasets.built_rows.RowRules`,
    checked as rows are read): every column of :data:`COLUMNS` with its type; ``id`` names a row.

    Example:
        >>> row_rules("open_domain").problem({"id": "x", "history": None})
        "field 'dialogue_id' is missing"
    """
    from ..built_rows import RowRules

    turn = {"speaker": str, "text": str}
    # class labels are names once read (see ..class_labels)
    shapes = {"string": str, "class_label": str, "int32": int, "turns": [turn], "strings": [str],
              "utterances": [{**turn, "original_text": str, "edits": [{"kind": str, "original": str, "rewrite": str}]}]}
    return RowRules({c.name: shapes[c.type] for c in COLUMNS[config]}, key=("id",))
