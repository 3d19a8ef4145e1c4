"""How a NICO dialogue becomes an example of each task.

- ``open_domain``: the model says the next turn. The reference is turn k of the dialogue, k drawn per
  dialogue (seeded by the dialogue id) from the turns with at least two turns before them, so that
  references cover openings, middles and endings alike; the history is every turn before it.
- ``dialog_completion``: the same next turn, the same k (the paper's two dialogue-level tasks differ in
  the prompt only: the dialogue inside an instruction that names its interaction type and definition).
- ``identify_unnatural``: the dialogue as first written (``original_text``); the gold answer is every
  sentence annotated ``unnatural`` (possibly none). Ungrammatical sentences are listed separately.
- ``rewrite_unnatural``: one example per ``unnatural`` edit: the dialogue as first written, the
  sentence, and its human rewrite as the reference.

Histories use the final (natural) texts, except where the task is about the original wording.
Every example repeats the dialogue's topic, concept, interaction type and the type's definition.
"""

from __future__ import annotations

import random
from typing import Any

from .format import interaction_types

TASKS = ("open_domain", "dialog_completion", "identify_unnatural", "rewrite_unnatural")
TURN_SEED = 0


def _turn(dialogue_id: str, task: str, low: int, high: int) -> int:
    """A turn index in [low, high], the same on every build."""
    return random.Random(f"{TURN_SEED}:{task}:{dialogue_id}").randint(low, high)


def _context(dialogue: dict[str, Any]) -> dict[str, Any]:
    kind = dialogue["interaction_type"]
    info = interaction_types()[kind]
    return {
        "dialogue_id": dialogue["id"],
        "topic": dialogue["topic"],
        "concept": dialogue["concept"],
        "interaction_type": kind,
        "interaction_type_zh": info["zh"],
        "interaction_definition": info["definition_zh"],
    }


def _turns(utterances: list[dict[str, Any]], field: str = "text") -> list[dict[str, str]]:
    return [{"speaker": u["speaker"], "text": u[field]} for u in utterances]


def dialog_row(dialogue: dict[str, Any]) -> dict[str, Any]:
    return {"id": dialogue["id"], **_context(dialogue), "utterances": dialogue["utterances"]}


def open_domain(dialogue: dict[str, Any]) -> list[dict[str, Any]]:
    turns = dialogue["utterances"]
    k = _turn(dialogue["id"], "open_domain", 2, len(turns) - 1)
    return [{
        "id": f"{dialogue['id']}/open_domain", **_context(dialogue), "turn_index": k,
        "history": _turns(turns[:k]), "reference_speaker": turns[k]["speaker"], "reference": turns[k]["text"],
    }]


def dialog_completion(dialogue: dict[str, Any]) -> list[dict[str, Any]]:
    (example,) = open_domain(dialogue)
    return [{**example, "id": f"{dialogue['id']}/dialog_completion"}]


def _sentences(dialogue: dict[str, Any], kind: str) -> list[str]:
    return [e["original"] for u in dialogue["utterances"] for e in u["edits"] if e["kind"] == kind]


def identify_unnatural(dialogue: dict[str, Any]) -> list[dict[str, Any]]:
    return [{
        "id": f"{dialogue['id']}/identify_unnatural", **_context(dialogue),
        "dialogue": _turns(dialogue["utterances"], "original_text"),
        "unnatural_sentences": _sentences(dialogue, "unnatural"),
        "ungrammatical_sentences": _sentences(dialogue, "ungrammatical"),
    }]


def rewrite_unnatural(dialogue: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for i, utterance in enumerate(dialogue["utterances"]):
        for j, edit in enumerate(e for e in utterance["edits"] if e["kind"] == "unnatural"):
            rows.append({
                "id": f"{dialogue['id']}/rewrite_unnatural/{i}.{j}", **_context(dialogue),
                "dialogue": _turns(dialogue["utterances"], "original_text"), "turn_index": i,
                "speaker": utterance["speaker"], "sentence": edit["original"], "reference": edit["rewrite"],
            })
    return rows


EXAMPLES = {
    "open_domain": open_domain,
    "dialog_completion": dialog_completion,
    "identify_unnatural": identify_unnatural,
    "rewrite_unnatural": rewrite_unnatural,
}
