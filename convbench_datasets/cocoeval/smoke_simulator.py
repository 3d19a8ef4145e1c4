"""``baseline:cocoeval-sim``: a CoCoEval *simulator* for smoke tests, not a model.

It reads the simulation request that convbench builds (``templates/prompts.yaml``) and answers with
exactly the turns asked for, each a turn of the conversation said again word for word, speaker and all:
the new turn at position ``p`` of the conversation (counted from 0, history first) repeats turn
``p mod min(30, L)``, ``L`` being the turns the request shows. In convbench's instances (30 history
turns) continuation turn ``k`` is history turn ``k`` again. When the request asks for a copy of the
most recent turns first (the repetition countermeasure, on by default), the reply opens with them, as
written. The conversation is read one turn per line, as convbench's builds have it; a request it cannot
read gets a line that is no turn, so the run records the problem. It lets ``convbench run cocoeval`` go
end to end with no model, server or network: its numbers only show that simulation, judging, scoring
and the run folder work. The runner finds it by name in
:data:`convbench_datasets.answerers.BASELINE_ANSWERERS`; its judge is :mod:`.smoke_judge`.
"""

from __future__ import annotations

from .instances import WINDOW
from .simulation import template_fields, templates

Messages = list[dict[str, str]]
UNREAD = "(cocoeval-sim, a smoke-test simulator: this is not a CoCoEval simulation request it can read)"


def simulated_turns(messages: Messages) -> str:
    """The smoke-test simulator's reply to a CoCoEval simulation request (see above).

    Example:
        >>> from convbench_datasets.cocoeval.simulation import simulation_prompt
        >>> instance = {"metadata": {"setting": "a meeting", "participants": ["Ann", "Bo"], "goals": []},
        ...             "summary": "", "history": [{"speaker": "Ann", "utterance": "Hi."},
        ...                                        {"speaker": "Bo", "utterance": "Hello."}]}
        >>> print(simulated_turns(simulation_prompt(instance, [], 3, "vanilla", (), copied=1)))
        Bo: Hello.
        Ann: Hi.
        Bo: Hello.
        Ann: Hi.
    """
    request = read_request(messages)
    if request is None:
        return UNREAD
    lines, copied, wanted = request
    period = min(WINDOW, len(lines))
    new = [lines[(len(lines) + k) % period] for k in range(wanted)]
    return "\n".join([*lines[len(lines) - copied:], *new])


def read_request(messages: Messages) -> tuple[list[str], int, int] | None:
    """(the conversation's ``Speaker: utterance`` lines, turns to copy first, new turns asked for) of a
    simulation request, read from its first user message; None when that is not one."""
    text = next((m["content"] for m in messages if m["role"] == "user"), "")
    spec = templates()["simulation"]
    fields = template_fields(spec["user"], text)
    if fields is None:
        return None
    write = fields["write"]
    counts = template_fields(spec["copy_then_write"], write) or template_fields(spec["write"], write)
    if counts is None:
        return None
    lines = fields["history"].split("\n")
    try:
        wanted, copied = int(counts["turns"]), int(counts.get("copied", "0"))
    except ValueError:
        return None
    if wanted < 1 or not 0 <= copied <= len(lines) or not all(line.strip() for line in lines):
        return None
    return lines, copied, wanted
