"""Scripted answers shared by the harness-integration tests: the same deterministic script is served to
inspect_ai or lm-eval and to convbench's own runner, so their numbers can be compared."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence

from convbench_datasets.engine.backends import Backend, Generation, GenerationParams

Answer = Callable[[list[dict[str, str]]], str]
Cut = Callable[[list[dict[str, str]], int], bool]

# NICO: turns with and without a speaker label and quotes (removed before scoring), short and long.
TURNS = ["CharacterB: 好啊，我同意！", "“行吧，那就这么定了。”", "我觉得还是再考虑一下比较好，毕竟价格有点高。", "嗯嗯，对对对。",
         "CharacterA：你说得对，我们明天一起去吧。"]
GENERATION_KEYS = ("bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len")
IDENTIFY_KEYS = ("precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing")


def pick(text: str, choices: Sequence[str]) -> str:
    """A choice that depends only on ``text`` (sha256, so the same on every run and machine)."""
    return choices[hashlib.sha256(text.encode("utf-8")).digest()[0] % len(choices)]


def nc_turn(messages: list[dict[str, str]], turns: Sequence[str]) -> str:
    """An NC-Bench next turn picked from ``turns`` by the transcript; ``REPEAT`` says the previous
    assistant turn again (``Sure.`` when there is none)."""
    chosen = pick(json.dumps(messages), turns)
    if chosen == "REPEAT":
        earlier = [m["content"] for m in messages if m["role"] == "assistant"]
        return earlier[-1] if earlier else "Sure."
    return chosen


def nico_turn(messages: list[dict[str, str]]) -> str:
    return pick(messages[-1]["content"], TURNS)


def nico_finder(messages: list[dict[str, str]], from_end: bool = False) -> str:
    """Names one of six lines of the dialogue (after its speaker label; the first six, or the last six),
    or says there is none."""
    prompt = messages[-1]["content"]
    lines = [line.split(": ", 1)[1] for line in prompt.splitlines() if line.startswith("Character") and ": " in line]
    return pick(prompt, ["无", *(f"1. {line}" for line in (lines[-6:] if from_end else lines[:6]))])


class ScriptedBackend(Backend):
    """convbench's side of the same script: ``answer(messages)`` for each prompt (kept in ``prompts``),
    stopped by the token limit where ``cut`` says."""

    kind = "stub"

    def __init__(self, answer: Answer, model: str = "scripted", cut: Cut | None = None) -> None:
        self.answer, self.model, self.cut = answer, model, cut
        self.prompts: list[list[dict[str, str]]] = []

    def generate(self, prompts: Sequence[list[dict[str, str]]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            self.prompts.append(list(messages))
            stopped = self.cut is not None and self.cut(list(messages), params.max_new_tokens)
            yield i, Generation(self.answer(list(messages)), completion_tokens=1,
                                finish_reason="length" if stopped else "stop")
