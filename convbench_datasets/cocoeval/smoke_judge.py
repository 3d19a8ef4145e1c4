"""``baseline:cocoeval-judge``: a CoCoEval *judge* for smoke tests, not a real judge.

It reads the judge requests that convbench builds (``templates/prompts.yaml``) and finds one behaviour
only: a continuation turn is a **Repetition** when its words, ignoring case, spaces and punctuation, are
those of an earlier turn, of the context or of the continuation, whoever said it (a turn with no word
is never one). Its behaviours answer is a JSON object with every type the request's example names,
``Repetition`` listing those turns and every other type none. Its ratings: ``consistency`` is 10 minus
the turns it counts as Repetition, at least 1; ``collaborativeness`` (and any other scale) is 5. A
request it cannot read gets an answer with no JSON in it, which the run records as unreadable. With
``baseline:cocoeval-sim`` (:mod:`.smoke_simulator`), which says history turns again, every simulated
turn is a Repetition. It lets ``convbench run cocoeval`` go end to end with no model, server or network:
its numbers only show that simulation, judging, scoring and the run folder work. The runner finds it by
name in :data:`convbench_datasets.answerers.BASELINE_ANSWERERS`.
"""

from __future__ import annotations

import json
import re

from .simulation import scales, template_fields, templates

Messages = list[dict[str, str]]
REPETITION = "Repetition"
UNREAD = "(cocoeval-judge, a smoke-test judge: this is not a CoCoEval judge request it can read)"
_NUMBERED = re.compile(r"(\d+)\. (.*)")


def judge_answer(messages: Messages) -> str:
    """The smoke-test judge's answer to a CoCoEval behaviours or ratings request (see above).

    Example:
        >>> from convbench_datasets.cocoeval.simulation import judge_prompt
        >>> from convbench_datasets.cocoeval.taxonomy import load_taxonomy
        >>> instance = {"metadata": {"setting": "a meeting", "participants": ["Ann", "Bo"], "goals": []},
        ...             "summary": "", "history": [{"speaker": "Ann", "utterance": "Hi."}]}
        >>> said = [{"speaker": "Bo", "utterance": "Hello."}, {"speaker": "Bo", "utterance": "hi"}]
        >>> judge_answer(judge_prompt("behaviours", instance, said, load_taxonomy()))[:40]
        '{"Repetition": [2], "Redundant Informati'
        >>> judge_answer(judge_prompt("overall", instance, said, load_taxonomy()))
        '{"consistency": 9, "collaborativeness": 5}'
    """
    text = next((m["content"] for m in messages if m["role"] == "user"), "")
    spec = templates()["judge"]
    if (fields := template_fields(spec["behaviours"], text)) is not None:
        repeated = repeated_turns(fields["history"], fields["continuation"])
        try:
            example = json.loads(fields["example"])
        except json.JSONDecodeError:
            return UNREAD
        turns = fields["continuation"].count("\n") + 1
        if repeated is None or not isinstance(example, dict) or fields["count"] != str(turns):
            return UNREAD
        return json.dumps({name: repeated if name == REPETITION else [] for name in example}, ensure_ascii=False)
    if (fields := template_fields(spec["overall"], text)) is not None:
        repeated = repeated_turns(fields["history"], fields["continuation"])
        if repeated is None:
            return UNREAD
        return json.dumps({scale: max(1, 10 - len(repeated)) if scale == "consistency" else 5 for scale in scales()})
    return UNREAD


def repeated_turns(history: str, continuation: str) -> list[int] | None:
    """The numbers of the continuation's turns that say an earlier turn's words again, from a request's
    ``Speaker: utterance`` context lines and ``N. Speaker: utterance`` continuation lines; None when the
    continuation is not numbered 1, 2, 3...

    Example:
        >>> repeated_turns("Ann: Hi!", "1. Bo: hi\\n2. Ann: Fine.\\n3. Bo: -\\n4. Ann: fine")
        [1, 4]
    """
    said = [line.partition(": ")[2] for line in history.split("\n")]
    utterances = []
    for number, line in enumerate(continuation.split("\n"), start=1):
        match = _NUMBERED.fullmatch(line)
        if match is None or int(match.group(1)) != number:
            return None
        utterances.append(match.group(2).partition(": ")[2])
    seen = {_plain(text) for text in said}
    repeated = []
    for number, text in enumerate(utterances, start=1):
        words = _plain(text)
        if words and words in seen:
            repeated.append(number)
        seen.add(words)
    return repeated


def _plain(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).casefold()
