"""Deterministic reference points that need no model.

- ``baseline:silence`` answers with an empty turn (Silence: right only where silence is acceptable);
- ``baseline:repeat`` repeats the previous assistant turn verbatim (empty when there is none). On
  Repeat Request rows it is the ideal answer, so the rate at which a judge labels it ``Repeat`` there
  is a sanity check of the judge;
- ``baseline:smoke-judge`` is an NC-Bench *judge* for smoke tests, not a real judge: it reads the
  numbered transcript in the judge prompt and answers ``Silence`` when the AGENT's last line is empty,
  ``Repeat`` when it says an earlier AGENT line again (ignoring case, spaces and punctuation), and
  ``Other`` otherwise. It lets ``convbench run nc`` go end to end with no model, server or network.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ...errors import ConvbenchError
from .base import Backend, Generation, GenerationParams, Messages

BASELINES = ("silence", "repeat", "smoke-judge")
_NUMBERED_LINE = re.compile(r"^(\d+) (USER|AGENT): ?(.*)$", re.MULTILINE)  # the judge prompts number the transcript so


def previous_assistant_turn(messages: Messages) -> str:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return message["content"]
    return ""


def smoke_judge_label(messages: Messages) -> str:
    """The smoke-test judge's answer to NC-Bench judge messages: Silence, Repeat or Other (see above).

    Example:
        >>> smoke_judge_label([{"role": "user", "content": "1 USER: hi\\n2 AGENT: Hello!\\n3 USER: what?\\n4 AGENT: hello"}])
        'Repeat'
    """
    prompt = messages[-1]["content"] if messages else ""
    lines = {int(number): (speaker, said) for number, speaker, said in _NUMBERED_LINE.findall(prompt)}
    if not lines:
        return "Other"
    last = max(lines)
    speaker, said = lines[last]
    if not said.strip():
        return "Silence"
    earlier = {_plain(text) for number, (who, text) in lines.items() if number < last and who == speaker}
    return "Repeat" if _plain(said) in earlier else "Other"


def _plain(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).casefold()


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
            if self.model == "smoke-judge":
                yield index, Generation(smoke_judge_label(messages))
            else:
                yield index, Generation("" if self.model == "silence" else previous_assistant_turn(messages))
