"""Reading and answering a CoCoEval simulation request as ``cocoeval/simulation.py`` builds it, for
scripted simulators: a system message, then a user message whose last lines say how many turns to
copy (the repetition countermeasure, on by default) and to write."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Asked:
    wanted: int  # new turns asked for
    copied: int  # recent turns to copy first (0 without the countermeasure)
    history: list[str]  # the conversation so far, "Speaker: utterance" lines
    user: str  # the request's first user message


def user_text(messages: Sequence[dict[str, str]]) -> str:
    """The request's first user message (the system message comes before it)."""
    return next(m["content"] for m in messages if m["role"] == "user")


def is_simulation(messages: Sequence[dict[str, str]]) -> bool:
    return "The conversation so far:\n" in user_text(messages) and "write the next" in user_text(messages).lower()


def asked(messages: Sequence[dict[str, str]]) -> Asked:
    """What a simulation request asks for."""
    user = user_text(messages)
    wanted = int(re.search(r"write the next (\d+) turns", user, re.IGNORECASE).group(1))
    copy = re.search(r"Copy the last (\d+) turns", user)
    history = user.split("The conversation so far:\n")[1].split("\n\n")[0].splitlines()
    return Asked(wanted, int(copy.group(1)) if copy else 0, history, user)


def answer(messages: Sequence[dict[str, str]], new: Sequence[str]) -> str:
    """A reply: the copy of the last turns the request asks for (if any), then the ``new`` lines."""
    request = asked(messages)
    copy = request.history[-request.copied:] if request.copied else []
    return "\n".join([*copy, *new])


def first_speaker(messages: Sequence[dict[str, str]]) -> str:
    """The speaker of the conversation's first history turn."""
    return asked(messages).history[0].split(":")[0]
