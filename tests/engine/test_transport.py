"""The openai backend's transport (issue #20: aiohttp, every request a task on one event-loop thread):
Ctrl-C cancels the requests in flight at once, and no new one starts."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from convbench_datasets.engine.backends import GenerationParams, transport
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
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


DROPPED = """
import gc
from tests.support.openai_server import openai_server
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
with openai_server() as (url, _):
    for _ in range(2):  # the first dropped and collected, the second alive at exit; neither closed
        backend = OpenAICompatBackend("label", base_url=url)
        assert dict(backend.generate([[{"role": "user", "content": "x"}]], GenerationParams(8)))[0].error is None
        del backend
        gc.collect()
        backend = OpenAICompatBackend("label", base_url=url)
        assert dict(backend.generate([[{"role": "user", "content": "y"}]], GenerationParams(8)))[0].error is None
print("done")
"""


def test_a_backend_never_closed_leaves_no_error_behind() -> None:
    # aiohttp reports a session left open ("Unclosed client session", "Unclosed connector") on stderr
    # when it is collected: a backend dropped without close(), or alive at exit, closes its own
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", DROPPED], capture_output=True, text=True, timeout=120,
                          cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    assert "Unclosed" not in done.stderr, done.stderr


def test_a_proxy_named_in_the_environment_carries_the_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # aiohttp's trust_env re-read the proxy settings (and ~/.netrc) in a thread for every request; the
    # backend reads them once per URL instead (transport.env_proxy), and must still honour them. The
    # "proxy" is a test server: it answers the absolute-URL requests a proxy is sent.
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    with openai_server() as (proxy_url, proxy):
        monkeypatch.setenv("HTTP_PROXY", proxy_url.removesuffix("/v1"))
        transport.env_proxy.cache_clear()
        try:
            backend = OpenAICompatBackend("echo", base_url="http://model-host.invalid/v1", concurrency=2)
            out = dict(backend.generate(PROMPTS[:3], GenerationParams(max_new_tokens=8)))
        finally:
            transport.env_proxy.cache_clear()
    assert [out[i].text for i in range(3)] == ["question 0", "question 1", "question 2"]
    assert proxy.count() == 3  # model-host.invalid has no address: every answer came through the proxy
