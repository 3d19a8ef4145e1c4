"""CoCoEvalBench columns (every config shares them)."""

from __future__ import annotations

from typing import Any

COLUMNS: dict[str, str] = {
    "id": "source/conversation/start turn",
    "source": "qmsum_product, qmsum_academic, qmsum_committee, iq2, sim or ncpc (a ClassLabel)",
    "conversation_id": "the meeting or debate in its source",
    "start_turn": "index (in the cleaned transcript) of the first reference turn",
    "metadata": "setting, participants (IQ2: with their side) and goals (QMSum topics discussed up to the history's end; IQ2: the motion)",
    "summary": "what was said before the history window, never after it",
    "summary_method": "how the summary was made (extractive by default; a model spec when abstractive)",
    "cleaning_method": "how the transcript's text was cleaned (rules; QMSum Product and Academic: then a model with --cleaner)",
    "metadata_method": "how the metadata was made (from the source's annotations by default; a model spec with --metadata-model)",
    "history": "the 30 turns before the continuation (speaker, utterance)",
    "reference": "the 30 turns the people actually said next",
}


def features() -> Any:
    """``datasets.Features`` of every CoCoEval config; ``source`` is a ClassLabel of the sources.

    Example:
        >>> features()["source"].names[:2]
        ['qmsum_product', 'qmsum_academic']
    """
    from datasets import ClassLabel, Features, List, Value

    from .settings import SETTINGS

    text = Value("string")
    turns = List({"speaker": text, "utterance": text})
    return Features({
        "id": text, "source": ClassLabel(names=list(SETTINGS)), "conversation_id": text, "start_turn": Value("int32"),
        "metadata": {"setting": text, "participants": List(text), "goals": List(text)},
        "summary": text, "summary_method": text, "cleaning_method": text, "metadata_method": text,
        "history": turns, "reference": turns,
    })


def row_rules() -> Any:
    """What a run needs of each CoCoEval row (:class:`~convbench_datasets.built_rows.RowRules`, checked as
    rows are read): the fields of :func:`features` with their types, a history to continue and human turns
    to compare with (neither empty); ``id`` names a row.

    Example:
        >>> row_rules().problem({"id": 3})
        "field 'id' must be a string, got 3"
    """
    from ..built_rows import NonEmpty, RowRules

    turns = NonEmpty([{"speaker": str, "utterance": str}])
    return RowRules({"id": str, "source": str, "conversation_id": str, "start_turn": int,
                     "metadata": {"setting": str, "participants": [str], "goals": [str]}, "summary": str,
                     "summary_method": str, "history": turns, "reference": turns}, key=("id",))
