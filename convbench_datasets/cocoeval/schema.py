"""CoCoEvalBench columns (every config shares them)."""

from __future__ import annotations

from typing import Any

COLUMNS: dict[str, str] = {
    "id": "source/conversation/start turn",
    "source": "qmsum_product, qmsum_academic, qmsum_committee, iq2, sim or ncpc",
    "conversation_id": "the meeting or debate in its source",
    "start_turn": "index (in the cleaned transcript) of the first reference turn",
    "metadata": "setting, participants (IQ2: with their side) and goals (QMSum topics discussed up to the history's end; IQ2: the motion)",
    "summary": "what was said before the history window, never after it",
    "summary_method": "how the summary was made (extractive by default; a model spec when abstractive)",
    "history": "the 30 turns before the continuation (speaker, utterance)",
    "reference": "the 30 turns the people actually said next",
}


def features() -> Any:
    from datasets import Features, List, Value

    text = Value("string")
    turns = List({"speaker": text, "utterance": text})
    return Features({
        "id": text, "source": text, "conversation_id": text, "start_turn": Value("int32"),
        "metadata": {"setting": text, "participants": List(text), "goals": List(text)},
        "summary": text, "summary_method": text, "history": turns, "reference": turns,
    })
