"""A server that dies mid-run stops the run within ``stall_timeout`` of its last answer, naming the endpoint, and
the same command resumes from the cache (issue #42). Reported: a single server that died mid-run was retried
prompt by prompt, silently, for about 30 minutes. Both served backends share the rule (the anthropic backend is
the openai one's subclass); the fake OpenAI server plays the dying server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.backends.openai_compat import BackendError, RetryPolicy
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import complete
from convbench_datasets.engine.backends.roles import ModelRole
from tests.support.openai_server import label_for, openai_server

PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(8)]
# left alone, these retries would take each prompt 50 x ~0.1 s, 8 prompts one at a time: about 40 s
PATIENT = RetryPolicy(max_retries=50, base_delay=0.1, max_delay=0.1)


def test_a_server_that_dies_mid_run_stops_it_within_the_stall_timeout(tmp_path: Path) -> None:
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        # an attempt may take the whole --timeout: the stall timeout counts from the larger of the two
        backend = backend_from_spec("openai:label", base_url=url, retry=PATIENT, concurrency=1, stall_timeout=1.0,
                                    timeout=1.0)
        complete(backend, PROMPTS[:4], GenerationParams(16), cache, desc="x", progress=False)  # 4 answered
        time.sleep(1.5)  # idle longer than the stall timeout: not silence (nothing was asked)
        state.broken = "500"  # the model dies
        began = time.monotonic()
        with pytest.raises(BackendError, match=rf"^no answer from openai:label at {url} for \d+s \(--stall-timeout 1\); "
                                               rf"last: HTTP 500 from {url}/chat/completions: the model is not running\. "
                                               "The answers so far are cached"):
            complete(backend, PROMPTS, GenerationParams(16), cache, desc="x", progress=False)
        stopped = time.monotonic() - began
        # the clock started with this stage's first request (the idle 1.5 s did not count): about 1 s of retries
        # every 0.1 s were made before it stopped, not one
        assert state.count() - 4 >= 5
        state.broken = None  # back: the same stage asks only the 4 it lacks
        again = complete(backend_from_spec("openai:label", base_url=url), PROMPTS, GenerationParams(16), cache,
                         desc="x", progress=False)
    assert stopped < 10  # the stall timeout (1 s) and one retry's wait, not the ~40 s of retries
    assert again.model_calls == 4 and [g.text for g in again.generations] == [label_for(p) for p in PROMPTS]


def test_the_stall_timeout_is_a_role_option() -> None:
    assert ModelRole("openai:m", stall_timeout=30).backend_options()["stall_timeout"] == 30
    with pytest.raises(Exception, match="stall_timeout"):
        ModelRole("openai:m", stall_timeout=-1)
