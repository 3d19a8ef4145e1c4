"""One instance's CoCoEval simulation as a state machine: what to ask next, and what a reply changes.

The policy lives here once; ``convbench run cocoeval`` (``cocoeval/run.py``, batching every instance's
request per round through the response cache) and the inspect_ai solver (one sample's model calls) only
send the requests and hand back the replies. Pure logic: no model calls, no runner, no inspect_ai.

Policy: each request asks for the next ``turns_per_call`` turns (fewer at the end of the 30-turn
window). Turns a reply writes beyond those asked for are not used, and counted (``extra_turns``). A
reply with a problem (no usable turn, a speaker outside the participants, a missing copy) is recorded
and shown back, the reply itself then the problem, ``max_repairs`` times in a row; after that its usable
turns are kept and the problem counted as persisting, and an instance with nothing usable stalls. A per-row
error stops the instance. A reply cut at the token limit (``finish_reason == "length"``) is never read
as turns (its last turn may stop mid-utterance): the same prompt is asked again once at
``CUT_RETRY_FACTOR`` times the limit, and a second cut stops the instance (``cut_failure``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .instances import WINDOW
from .simulation import parse_continuation, simulation_prompt
from .taxonomy import Behaviour

CUT_RETRY_FACTOR = 2  # a reply cut at the limit is asked once more with this many times the limit


@dataclass(frozen=True)
class Request:
    """The next model call: ``messages`` asking for ``turns`` new turns, with ``max_new_tokens`` as the limit.
    ``cut_retry``: the same prompt as the reply just cut, at the larger limit."""

    messages: list[dict[str, str]]
    turns: int
    max_new_tokens: int
    cut_retry: bool = False


class InstanceSimulation:
    """One instance (a CoCoEval row) simulated to ``WINDOW`` turns; see the module docstring for the policy.

    Drive it with ``while (request := sim.next_request()) is not None: sim.take(...)``; ``result()`` is
    the instance's outcome. ``max_new_tokens``: the limit of an ordinary request (a cut retry gets
    ``CUT_RETRY_FACTOR`` times it).
    """

    def __init__(self, row: Mapping[str, Any], behaviours: Sequence[Behaviour], turns_per_call: int, style: str,
                 max_repairs: int, max_new_tokens: int, copied: int = 0) -> None:
        if turns_per_call < 1 or max_repairs < 0 or max_new_tokens < 1:
            raise ValueError(f"turns_per_call and max_new_tokens must be at least 1 and max_repairs at least 0, got "
                             f"{turns_per_call}, {max_new_tokens} and {max_repairs}")
        self.row, self.behaviours, self.style, self.copied = row, behaviours, style, copied
        self.turns_per_call, self.max_repairs, self.max_new_tokens = turns_per_call, max_repairs, max_new_tokens
        self.turns: list[dict[str, str]] = []
        self.problems: list[str] = []
        self.replies: list[str] = []
        self.finish_reasons: list[str | None] = []
        self.repairs = 0  # consecutive replies with a problem shown back
        self.persisting = 0
        self.cut = 0  # replies cut at the token limit
        self.extra_turns = 0  # turns written beyond those asked for, not used
        self.error: str | None = None
        self.cut_failure: str | None = None
        self.stalled = False  # a reply had a problem after the repairs and nothing usable
        self._request: Request | None = None  # asked, not yet answered; after a cut, its retry

    @property
    def finished(self) -> bool:
        return (len(self.turns) >= WINDOW or self.stalled or self.error is not None
                or self.cut_failure is not None)

    def next_request(self) -> Request | None:
        """What to ask now (the same object until :meth:`take` gets its reply); None when finished."""
        if self.finished:
            return None
        if self._request is None:
            wanted = min(self.turns_per_call, WINDOW - len(self.turns))
            problem, rejected = (self.problems[-1], self.replies[-1]) if self.repairs else (None, None)
            self._request = Request(simulation_prompt(self.row, self.turns, wanted, self.style, self.behaviours,
                                                      problem, self.copied, rejected), wanted, self.max_new_tokens)
        return self._request

    def take(self, text: str, finish_reason: str | None = None, error: str | None = None) -> None:
        """The reply to :meth:`next_request` (``error``: a per-row error instead of a reply)."""
        request = self.next_request()
        if request is None:
            raise ValueError("this instance's simulation is finished: no request awaits a reply")
        self._request = None
        if error is not None:  # this instance cannot go on: an error, not a stall
            self.error = f"simulation: {error}"
            return
        self.replies.append(text)
        self.finish_reasons.append(finish_reason)
        if finish_reason == "length":
            self.cut += 1
            if request.cut_retry:
                self.cut_failure = (f"simulation reply cut at the token limit ({self.max_new_tokens} tokens, "
                                    f"then {request.max_new_tokens})")
            else:  # same prompt, larger limit; the turn count and repairs are untouched
                self._request = Request(request.messages, request.turns, CUT_RETRY_FACTOR * self.max_new_tokens,
                                        cut_retry=True)
            return
        turns, problem, extra = parse_continuation(text, self.row, self.turns, request.turns, self.copied)
        self.extra_turns += extra
        if problem is None:
            self.turns.extend(turns)
            self.repairs = 0
            return
        self.problems.append(problem)
        if self.repairs < self.max_repairs:
            self.repairs += 1
            return
        self.repairs = 0
        self.persisting += 1
        if turns:
            self.turns.extend(turns)
        else:
            self.stalled = True

    def result(self) -> dict[str, Any]:
        """The outcome as ``cocoeval.run.simulate`` gives it per row (the record's ``simulation_*`` fields)."""
        return {"turns": self.turns, "problems": self.problems, "complete": len(self.turns) == WINDOW,
                "replies": self.replies, "finish_reasons": self.finish_reasons, "persisting": self.persisting,
                "error": self.error, "cut": self.cut, "cut_failure": self.cut_failure, "extra_turns": self.extra_turns}
