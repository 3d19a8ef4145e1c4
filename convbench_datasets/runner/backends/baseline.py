"""Deterministic reference points that need no model.

- ``baseline:silence`` answers with an empty turn (Silence: right only where silence is acceptable);
- ``baseline:repeat`` repeats the previous assistant turn verbatim (empty when there is none). On
  Repeat Request rows it is the ideal answer, so the rate at which a judge labels it ``Repeat`` there
  is a sanity check of the judge.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ...errors import ConvbenchError
from .base import Backend, Generation, GenerationParams, Messages

BASELINES = ("silence", "repeat")


def previous_assistant_turn(messages: Messages) -> str:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return message["content"]
    return ""


class BaselineBackend(Backend):
    kind = "baseline"

    def __init__(self, name: str) -> None:
        if name not in BASELINES:
            raise ConvbenchError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
        self.model = name
        self.calls = 0

    def generate(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for index, messages in enumerate(prompts):
            self.calls += 1
            yield index, Generation("" if self.model == "silence" else previous_assistant_turn(messages))
