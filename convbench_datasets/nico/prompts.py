"""NICO prompts, zero-shot and 3-shot, rendered from ``templates/prompts.yaml``.

Each prompt carries what the paper's appendix B gives that task, in convbench's Chinese words:

- ``open_domain``: the dialogue so far, one ``CharacterA: ...`` line a turn, then the next speaker's
  label: no instruction, topic or interaction type (the model carries on the conversation);
- ``dialog_completion``: the same dialogue inside an instruction: the turns, then "the above is a
  <type> dialogue", the type's definition, and "generate a response consistent with human speech
  patterns" (the paper: the type and its definition are what set this task apart);
- ``identify_unnatural``: the dialogue as first written, then "give the sentences that do not conform
  to human speech patterns, i.e. the unnatural ones; only sentences from the text; separate several
  with two line breaks";
- ``rewrite_unnatural``: the dialogue as first written, then "rewrite this sentence based on the
  dialogue to conform to human speech patterns; give only the rewritten sentence".

Speakers are shown as ``CharacterA`` / ``CharacterB`` in order of appearance. Few-shot
demonstrations are drawn from the train split, seeded by the example id (so a prompt is the same on
every run), never including the example itself.

Example:
    >>> example = {"id": "x/open_domain", "reference_speaker": "B", "reference": "三百。",
    ...            "history": [{"speaker": "A", "text": "多少钱？"}]}
    >>> print(render_prompt("open_domain", example))
    CharacterA: 多少钱？
    CharacterB:
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from string import Template
from typing import Any

from .._resources import read_yaml
from ..errors import ConvbenchError
from .schema import named_row
from .tasks import TASKS

SHOT_SEED = 0


def templates() -> dict[str, Any]:
    return read_yaml(__package__, "templates/prompts.yaml")


def templates_sha256() -> str:
    return hashlib.sha256(json.dumps(templates(), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _names(turns: Sequence[Mapping[str, str]], extra: Sequence[str] = ()) -> dict[str, str]:
    order = list(dict.fromkeys([*(t["speaker"] for t in turns), *extra]))
    return {speaker: f"Character{chr(ord('A') + i)}" for i, speaker in enumerate(order)}


def _lines(turns: Sequence[Mapping[str, str]], names: Mapping[str, str]) -> list[str]:
    return [f"{names[t['speaker']]}: {t['text']}" for t in turns]


def _fields(task: str, example: Mapping[str, Any]) -> dict[str, str]:
    """The placeholders of one example: its dialogue block and the task's own values."""
    if task not in TASKS:
        raise ConvbenchError(f"unknown NICO task {task!r}")
    example = named_row(example)  # a datasets row holds class ids: the prompt quotes the names
    join = templates()[task]["turn_separator"].join
    common = {k: str(example.get(k, "")) for k in ("topic", "interaction_type_zh", "interaction_definition")}
    if task in ("open_domain", "dialog_completion"):
        names = _names(example["history"], [example["reference_speaker"]])
        return {**common, "history": join(_lines(example["history"], names)),
                "next_speaker": names[example["reference_speaker"]], "reference": example.get("reference", "")}
    names = _names(example["dialogue"])
    history = join(_lines(example["dialogue"], names))
    if task == "identify_unnatural":
        gold = "\n\n".join(example.get("unnatural_sentences", [])) or "无"
        return {**common, "history": history, "reference": gold}
    return {**common, "history": history, "speaker": names[example["speaker"]], "sentence": example["sentence"],
            "reference": example.get("reference", "")}


def render_prompt(task: str, example: Mapping[str, Any], shots: Sequence[Mapping[str, Any]] = ()) -> str:
    """The user prompt for ``example``, with ``shots`` as demonstrations (3-shot) or none."""
    fields = _fields(task, example)  # an unknown task fails here
    all_templates = templates()
    spec = all_templates[task]
    prompt = Template(spec["prompt"]).substitute(fields)
    if not shots:
        return prompt
    # a demonstration: the task's own prompt for it, then its answer
    demo = Template(all_templates["shot_label"] + "\n" + spec["prompt"] + spec["answer"])
    demos = [demo.substitute(_fields(task, shot)) for shot in shots]
    return "\n\n".join([all_templates["shots_intro"], *demos, all_templates["shots_outro"], prompt])


def pick_shots(example_id: str, pool: Sequence[Mapping[str, Any]], k: int = 3, seed: int = SHOT_SEED) -> list[Mapping[str, Any]]:
    """``k`` demonstrations from ``pool`` (the train split), the same for an example on every run."""
    candidates = [e for e in pool if e["id"] != example_id]
    if len(candidates) < k:
        raise ConvbenchError(f"{k}-shot prompts need {k} train examples besides {example_id!r}; the train split has {len(candidates)}")
    return random.Random(f"{seed}:{example_id}").sample(candidates, k)
