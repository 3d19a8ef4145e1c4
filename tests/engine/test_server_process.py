"""The test server run as a script, in its own process (what the client-cost benchmarks time against)."""

from __future__ import annotations

from benchmarks.runner_overhead import server_process
from convbench_datasets.engine.backends import GenerationParams, backend_from_spec


def test_the_server_script_answers_chat_requests() -> None:
    with server_process(delay=0.0) as url:
        backend = backend_from_spec("openai:echo", base_url=url)
        try:
            backend.preflight()
            answers = [g for _, g in backend.generate([[{"role": "user", "content": "hello there"}]], GenerationParams(8))]
        finally:
            backend.close()
    assert [(g.text, g.error) for g in answers] == [("hello there", None)]  # echo: the last user message
