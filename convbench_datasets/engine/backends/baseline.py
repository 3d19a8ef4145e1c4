"""Deterministic reference points that need no model.

- ``baseline:silence`` answers with an empty turn (Silence: right only where silence is acceptable);
- ``baseline:repeat`` repeats the previous assistant turn verbatim (empty when there is none). On
  Repeat Request rows it is the ideal answer, so the rate at which a judge labels it ``Repeat`` there
  is a sanity check of the judge;
- ``baseline:NAME`` for a NAME in :data:`convbench_datasets.answerers.BASELINE_ANSWERERS` (or its
  entry-point group): an answerer a benchmark provides (a function from messages to the answer text), such as a smoke-test judge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from ...errors import ConvbenchError
from .base import Backend, Generation, GenerationParams, Messages

BASELINES = ("silence", "repeat")


def previous_assistant_turn(messages: Messages) -> str:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return message["content"]
    return ""


def _answerer(name: str) -> Callable[[Messages], str]:
    """The answer function of baseline ``name``: one of :data:`BASELINES`, or one a benchmark registers."""
    if name == "silence":
        return lambda messages: ""
    if name == "repeat":
        return previous_assistant_turn
    from ...answerers import answerer, answerer_names

    found = answerer(name)
    if found is None:
        raise ConvbenchError(f"unknown baseline {name!r}; choose one of {', '.join([*BASELINES, *answerer_names()])}")
    return found


class BaselineBackend(Backend):
    kind = "baseline"

    def __init__(self, name: str) -> None:
        self.answer = _answerer(name)
        self.model = name
        self.calls = 0

    def generate(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for index, messages in enumerate(prompts):
            self.calls += 1
            yield index, Generation(self.answer(messages))
