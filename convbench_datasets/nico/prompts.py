"""NICO prompts, zero-shot and 3-shot, rendered from ``templates/prompts.yaml``.

Speakers are shown as ``CharacterA`` / ``CharacterB`` in order of appearance. Few-shot
demonstrations are drawn from the train split, seeded by the example id (so a prompt is the same on
every run), never including the example itself.

Example:
    >>> example = {"id": "x/open_domain", "topic": "购物", "interaction_type_zh": "交换",
    ...            "interaction_definition": "互惠互利。", "reference_speaker": "B",
    ...            "history": [{"speaker": "A", "text": "多少钱？"}, {"speaker": "B", "text": "三百。"}]}
    >>> print(render_prompt("open_domain", {**example, "history": example["history"][:1]}))
    下面是一段关于“购物”的日常对话，对话双方之间的互动类型是“交换”（互惠互利。）。
    CharacterA: 多少钱？
    请你以CharacterB的身份，用自然、口语化的中文说出下一句话，就像真人在日常聊天一样。只输出这句话本身。
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

SHOT_SEED = 0
MISSING = "[缺失]"


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
    common = {k: str(example.get(k, "")) for k in ("topic", "interaction_type_zh", "interaction_definition")}
    if task == "open_domain":
        names = _names(example["history"], [example["reference_speaker"]])
        lines = _lines(example["history"], names)
        return {**common, "history": "\n".join(lines), "next_speaker": names[example["reference_speaker"]],
                "reference": example.get("reference", "")}
    if task == "dialog_completion":
        before, after = example["history_before"], example["history_after"]
        names = _names([*before, *after], [example["reference_speaker"]])
        speaker = names[example["reference_speaker"]]
        lines = [*_lines(before, names), f"{speaker}: {MISSING}", *_lines(after, names)]
        return {**common, "history": "\n".join(lines), "next_speaker": speaker, "reference": example.get("reference", "")}
    names = _names(example["dialogue"])
    history = "\n".join(_lines(example["dialogue"], names))
    if task == "identify_unnatural":
        gold = "\n\n".join(example.get("unnatural_sentences", [])) or "无"
        return {**common, "history": history, "reference": gold}
    if task == "rewrite_unnatural":
        return {**common, "history": history, "speaker": names[example["speaker"]], "sentence": example["sentence"],
                "reference": example.get("reference", "")}
    raise ConvbenchError(f"unknown NICO task {task!r}")


def render_prompt(task: str, example: Mapping[str, Any], shots: Sequence[Mapping[str, Any]] = ()) -> str:
    """The user prompt for ``example``, with ``shots`` as demonstrations (3-shot) or none."""
    all_templates = templates()
    spec = all_templates[task]
    prompt = Template(spec["prompt"]).substitute(_fields(task, example))
    if not shots:
        return prompt
    demos = [Template(spec["shot"]).substitute(_fields(task, shot)) for shot in shots]
    return "\n\n".join([all_templates["shots_intro"], *demos, all_templates["shots_outro"], prompt])


def pick_shots(example_id: str, pool: Sequence[Mapping[str, Any]], k: int = 3, seed: int = SHOT_SEED) -> list[Mapping[str, Any]]:
    """``k`` demonstrations from ``pool`` (the train split), the same for an example on every run."""
    candidates = [e for e in pool if e["id"] != example_id]
    if len(candidates) < k:
        raise ConvbenchError(f"{k}-shot prompts need {k} train examples besides {example_id!r}; the train split has {len(candidates)}")
    return random.Random(f"{seed}:{example_id}").sample(candidates, k)
