"""The openai backend's transport (issue #20: aiohttp, every request a task on one event-loop thread):
Ctrl-C cancels the requests in flight at once, and no new one starts."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from convbench_datasets.runner.backends import GenerationParams, transport
from convbench_datasets.runner.backends.openai_compat import OpenAICompatBackend
from tests.support.openai_server import ServerState, openai_server

PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(12)]


async def _others() -> int:
    """Tasks on the HTTP loop besides the one asking."""
    return len(asyncio.all_tasks()) - 1


def _wait_for(condition, seconds: float = 10.0) -> bool:  # noqa: ANN001
    ends = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > ends:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="needs a real SIGINT")
def test_ctrl_c_cancels_every_request_in_flight_and_starts_none() -> None:
    hold = threading.Event()  # the server keeps every request waiting: four in flight (concurrency 4)
    with openai_server(ServerState(hold=hold)) as (url, state):
        backend = OpenAICompatBackend("label", base_url=url, concurrency=4)
        transport.call(_others())  # the loop is up, so that the count below is this run's

        def interrupt() -> None:
            if _wait_for(lambda: state.count() == 4):
                os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends

        threading.Thread(target=interrupt, daemon=True).start()
        try:
            with pytest.raises(KeyboardInterrupt):
                dict(backend.generate(PROMPTS, GenerationParams(max_new_tokens=8)))
            # the four requests in flight were cancelled, not left to wait for their replies (the server
            # would hold them up to 30 s)
            assert _wait_for(lambda: transport.call(_others()) == 0, 5.0)
        finally:
            hold.set()
        time.sleep(0.3)  # time enough for a request the run had wrongly left running to reach the server
        assert state.count() == 4 and backend.calls == 4 and backend.retries == 0
