"""Work done ahead (convbench_datasets/engine/ahead.py): done once, by the background thread a served
backend starts when its requests are out, or by ``result()`` in the caller; errors and dropped work
(#20: the end-of-run imports and the rows' fingerprint move into the wait for the first answers)."""

from __future__ import annotations

import threading
import time

import pytest

from convbench_datasets.engine import ahead
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
from tests.support.openai_server import ServerState, openai_server


def _where() -> str:
    return threading.current_thread().name


def test_work_nothing_started_is_done_by_result_in_the_callers_thread() -> None:
    with ahead.later(_where) as work:
        assert work.result() == threading.current_thread().name
        assert work.result() == threading.current_thread().name  # done once, asked twice


def test_work_started_by_requests_out_runs_once_in_the_background() -> None:
    calls: list[str] = []

    def work() -> str:
        calls.append(_where())
        return "done"

    with ahead.later(work) as handle:
        ahead.requests_out()
        ahead.requests_out()  # every request submitted calls it: the work is handed over once
        deadline = time.monotonic() + 10
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert handle.result() == "done"
    assert calls == ["convbench-ahead"]


def test_an_error_of_the_work_is_raised_by_result() -> None:
    boom = ValueError("no rows")

    def work() -> None:
        raise boom

    with ahead.later(work) as handle:
        ahead.requests_out()
        with pytest.raises(ValueError) as raised:
            handle.result()
    assert raised.value is boom


def test_work_nobody_started_is_dropped_at_the_end_of_its_block() -> None:
    calls: list[int] = []
    with ahead.later(lambda: calls.append(1)) as handle:
        pass
    ahead.requests_out()  # the next run's requests: the dropped work is not theirs to do
    time.sleep(ahead.PAUSE + 0.2)
    assert calls == []
    with pytest.raises(RuntimeError, match="dropped"):
        handle.result()


def test_the_end_of_its_block_waits_for_work_under_way() -> None:
    # a process must not exit while the background thread is still importing (C extensions mid-load crash it)
    finished: list[bool] = []
    started = threading.Event()

    def work() -> None:
        started.set()
        time.sleep(0.3)
        finished.append(True)

    with ahead.later(work):
        ahead.requests_out()
        assert started.wait(10)  # under way in the background thread
    assert finished == [True]


def test_a_served_backend_does_the_work_while_its_first_requests_wait() -> None:
    # the server answers after 0.5 s: the work (started PAUSE after the requests are submitted) is done in the
    # background thread before the first answer is handed over
    with openai_server(ServerState(delay_seconds=0.5)) as (url, _):
        backend = OpenAICompatBackend("delay", base_url=url)
        prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(3)]
        with ahead.later(lambda: (_where(), time.monotonic())) as handle:
            answers = backend.generate(prompts, GenerationParams(max_new_tokens=4))
            next(answers)
            first_answer = time.monotonic()
            rest = list(answers)
        where, when = handle.result()
    assert len(rest) == 2
    assert where == "convbench-ahead" and when < first_answer
