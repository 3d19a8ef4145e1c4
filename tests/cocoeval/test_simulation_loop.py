"""The per-instance simulation state machine alone, with hand-written replies (no model, no runner).

Expected values are derived by hand from the policy in ``cocoeval/simulation_loop.py``: 30 turns in
all, ``turns_per_call`` asked per request, 1,280 tokens per ordinary request and twice that after a cut.
"""

from __future__ import annotations

import pytest

from convbench_datasets.cocoeval.simulation_loop import InstanceSimulation
from convbench_datasets.cocoeval.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy()
# participants Ann and Bo (the chair's side in parentheses is stripped)
ROW = {"metadata": {"setting": "a meeting", "participants": ["Ann (chair)", "Bo"], "goals": ["decide"]},
       "summary": "", "history": [{"speaker": "Ann", "utterance": "Hello."}, {"speaker": "Bo", "utterance": "Hi."}]}
STRANGER = "speaker(s) not among the participants: Zed"
PROSE = "no line of the form 'Speaker: utterance'"
RESULT_KEYS = {"turns", "problems", "complete", "replies", "finish_reasons", "persisting", "error", "cut", "cut_failure",
               "extra_turns"}


def lines(first: int, count: int) -> str:
    return "\n".join(f"Ann: turn {k}." for k in range(first, first + count))


def instance(max_repairs: int = 1, turns_per_call: int = 5) -> InstanceSimulation:
    return InstanceSimulation(ROW, TAXONOMY, turns_per_call, "vanilla", max_repairs, max_new_tokens=1280)


def test_a_clean_instance_reaches_30_turns_in_6_requests() -> None:
    sim = instance()
    asked = []
    while (request := sim.next_request()) is not None:
        assert sim.next_request() is request  # asked again before a reply: the same request (the same cache key)
        asked.append(request)
        sim.take(lines(5 * (len(asked) - 1), 5), "stop")
    # 30 turns / 5 per call = 6 requests, each for 5 turns at the ordinary limit: a system and a user
    # message, no repair
    assert len(asked) == 6
    assert [(r.turns, r.max_new_tokens, r.cut_retry, len(r.messages)) for r in asked] == [(5, 1280, False, 2)] * 6
    assert "Ann: turn 4." not in asked[0].messages[1]["content"] and "Ann: turn 4." in asked[1].messages[1]["content"]
    result = sim.result()
    assert result["complete"] and [t["utterance"] for t in result["turns"]] == [f"turn {k}." for k in range(30)]
    assert result["replies"] == [lines(5 * k, 5) for k in range(6)] and result["finish_reasons"] == ["stop"] * 6
    assert (result["problems"], result["persisting"], result["error"], result["cut"], result["cut_failure"]) == \
        ([], 0, None, 0, None)


def test_the_last_request_asks_only_for_the_turns_left() -> None:
    sim = instance()
    sim.take(lines(0, 3), "stop")  # fewer turns than asked is no problem: 3 turns
    for start in (3, 8, 13, 18, 23):
        assert sim.next_request().turns == 5
        sim.take(lines(start, 5), "stop")  # 3 + 5 * 5 = 28 turns
    assert sim.next_request().turns == 2  # 30 - 28
    sim.take(lines(28, 2), "stop")
    assert sim.next_request() is None and sim.result()["complete"] and len(sim.result()["replies"]) == 7


def test_a_problem_is_shown_back_then_repaired() -> None:
    sim = instance(max_repairs=1)
    sim.take("Zed: Who am I?\nAnn: Fine.", "stop")
    repair = sim.next_request()
    # the stranger's reply is not used (a repair is left): still 0 turns, 5 asked; the rejected reply is shown
    # back as the model's own message, then the problem
    assert repair.turns == 5 and [m["role"] for m in repair.messages] == ["system", "user", "assistant", "user"]
    assert repair.messages[2]["content"] == "Zed: Who am I?\nAnn: Fine." and STRANGER in repair.messages[3]["content"]
    sim.take(lines(0, 5), "stop")
    after = sim.next_request()
    assert len(after.messages) == 2 and "Ann: turn 4." in after.messages[1]["content"]
    result = sim.result()
    assert len(result["turns"]) == 5 and result["problems"] == [STRANGER] and result["persisting"] == 0
    assert len(result["replies"]) == 2


def test_a_persisting_problem_keeps_the_usable_turns() -> None:
    sim = instance(max_repairs=1)
    sim.take("Zed: Who am I?\nAnn: Fine.", "stop")
    sim.take("Zed: Me again.\nBo: Sure.", "stop")  # repairs used up: Bo's turn is kept, the problem counted
    result = sim.result()
    assert [t["utterance"] for t in result["turns"]] == ["Sure."]
    assert result["problems"] == [STRANGER, STRANGER] and result["persisting"] == 1 and not result["complete"]
    following = sim.next_request()
    assert following is not None and len(following.messages) == 2  # repairs start over: no problem shown
    # max_repairs 0: the first problem already persists
    sim = instance(max_repairs=0)
    sim.take("Zed: Who am I?\nAnn: Fine.", "stop")
    assert sim.result()["persisting"] == 1 and [t["utterance"] for t in sim.result()["turns"]] == ["Fine."]


def test_nothing_usable_after_the_repairs_stalls() -> None:
    sim = instance(max_repairs=1)
    sim.take("They talked for a while.", "stop")
    assert sim.next_request() is not None  # one repair
    sim.take("They talked some more.", "stop")
    assert sim.next_request() is None and sim.stalled
    result = sim.result()
    assert result["turns"] == [] and result["problems"] == [PROSE, PROSE] and result["persisting"] == 1
    assert not result["complete"] and result["error"] is None and len(result["replies"]) == 2


def test_a_per_row_error_stops_the_instance() -> None:
    sim = instance()
    sim.take(lines(0, 5), "stop")
    sim.take("", None, error="refused by the server")
    assert sim.next_request() is None
    result = sim.result()
    # the error is no reply: 1 reply recorded, the 5 turns before it kept, the instance incomplete
    assert result["error"] == "simulation: refused by the server" and len(result["replies"]) == 1
    assert len(result["turns"]) == 5 and not result["complete"] and result["problems"] == []


def test_a_cut_reply_is_asked_again_at_twice_the_limit() -> None:
    sim = instance()
    first = sim.next_request()
    sim.take(lines(0, 5), "length")  # parseable, but cut: not read
    retry = sim.next_request()
    assert (retry.messages, retry.turns, retry.max_new_tokens, retry.cut_retry) == (first.messages, 5, 2560, True)
    assert sim.turns == []
    sim.take(lines(0, 5), "stop")
    after = sim.next_request()
    assert (after.max_new_tokens, after.cut_retry) == (1280, False)  # back to the ordinary limit
    result = sim.result()
    assert len(result["turns"]) == 5 and result["cut"] == 1 and result["cut_failure"] is None
    assert result["replies"] == [lines(0, 5)] * 2 and result["finish_reasons"] == ["length", "stop"]


def test_two_cuts_stop_the_instance() -> None:
    sim = instance()
    sim.take(lines(0, 5), "length")
    sim.take(lines(0, 5) + "\nAnn: and", "length")
    assert sim.next_request() is None
    result = sim.result()
    assert result["cut_failure"] == "simulation reply cut at the token limit (1280 tokens, then 2560)"
    assert result["cut"] == 2 and result["finish_reasons"] == ["length", "length"] and len(result["replies"]) == 2
    assert result["turns"] == [] and not result["complete"] and result["error"] is None
    # an error on the retry is an error, not a cut failure
    sim = instance()
    sim.take(lines(0, 5), "length")
    sim.take("", None, error="timeout for good")
    assert sim.result()["error"] == "simulation: timeout for good" and sim.result()["cut_failure"] is None
    assert sim.result()["cut"] == 1


def test_turns_beyond_those_asked_for_are_counted_not_used() -> None:
    sim = instance()
    sim.take(lines(0, 7), "stop")  # 7 turns for 5 asked: turns 0-4 kept, 2 counted
    sim.take(lines(5, 5), "stop")
    result = sim.result()
    assert [t["utterance"] for t in result["turns"]] == [f"turn {k}." for k in range(10)]
    assert result["extra_turns"] == 2 and result["problems"] == []


def test_result_shape_and_no_reply_after_the_end() -> None:
    sim = instance(turns_per_call=30)
    assert sim.result() == {"turns": [], "problems": [], "complete": False, "replies": [], "finish_reasons": [],
                            "persisting": 0, "error": None, "cut": 0, "cut_failure": None, "extra_turns": 0}
    sim.take(lines(0, 30), "stop")  # 30 turns per call: one request
    assert set(sim.result()) == RESULT_KEYS and sim.result()["complete"]
    with pytest.raises(ValueError, match="finished"):
        sim.take(lines(30, 5), "stop")
