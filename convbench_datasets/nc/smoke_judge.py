"""``baseline:smoke-judge``: an NC-Bench *judge* for smoke tests, not a real judge.

It reads the numbered transcript in the judge prompt and answers ``Silence`` when the AGENT's last
line is empty, ``Repeat`` when it says an earlier AGENT line again (ignoring case, spaces and
punctuation), and ``Other`` otherwise. It lets ``convbench run nc`` go end to end with no model, server
or network. The runner finds it by name in :data:`convbench_datasets.answerers.BASELINE_ANSWERERS`.
"""

from __future__ import annotations

import re

Messages = list[dict[str, str]]
_NUMBERED_LINE = re.compile(r"^(\d+) (USER|AGENT): ?(.*)$", re.MULTILINE)  # the judge prompts number the transcript so


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
