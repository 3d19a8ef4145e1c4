"""The OpenAI-compatible backend against a local server: retries, timeouts, errors, key hygiene."""

from __future__ import annotations

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.backends.openai_compat import BackendError, OpenAICompatBackend, RetryPolicy
from tests.support.openai_server import ServerState, label_for, openai_server

FAST = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)
PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(6)]
PARAMS = GenerationParams(max_new_tokens=16)


def _run(model: str, base_url: str, **kwargs) -> dict:
    backend = OpenAICompatBackend(model, base_url=base_url, retry=kwargs.pop("retry", FAST), **kwargs)
    return dict(backend.generate(PROMPTS, PARAMS)), backend


def test_answers_arrive_with_usage() -> None:
    with openai_server() as (url, state):
        out, backend = _run("echo", url, concurrency=3)
    assert [out[i].text for i in range(6)] == [f"question {i}" for i in range(6)]
    assert out[0].completion_tokens == 2 and out[0].prompt_tokens > 0 and out[0].error is None
    assert backend.calls == 6 and state.count() == 6


@pytest.mark.parametrize("model", ["fail429", "fail500", "malformed"])
def test_transient_failures_are_retried(model: str) -> None:
    with openai_server() as (url, state):
        out, backend = _run(model, url, concurrency=2)
    assert all(out[i].text == label_for(PROMPTS[i]) and out[i].error is None for i in range(6))
    assert state.count() == 12 and backend.retries == 6  # each prompt: one failure, one success


def test_slow_replies_time_out_and_are_retried() -> None:
    # each first reply takes 1 s, past the 0.5 s deadline; the retry answers at once (a deadline of 0.5 s,
    # not less, so that an instant reply on a loaded machine is never cut too)
    with openai_server(ServerState(slow_seconds=1.0)) as (url, state):
        out, backend = _run("slow", url, concurrency=6, timeout=0.5)
    assert all(out[i].error is None for i in range(6)) and backend.retries == 6


def test_gives_up_after_the_retry_budget_with_a_clear_error() -> None:
    with openai_server() as (url, state):
        out, _ = _run("malformed-always", url)
    assert state.count() == 6 * 4  # 1 try + 3 retries each
    assert all(g.error and "gave up after 4 attempts: malformed JSON" in g.error for g in out.values())


def test_refusals_stop_at_once_without_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBENCH_TEST_KEY", "sk-secret-123")
    with openai_server() as (url, state):
        backend = OpenAICompatBackend("unauthorized", base_url=url, api_key_env="CONVBENCH_TEST_KEY", retry=FAST)
        with pytest.raises(BackendError) as err:
            dict(backend.generate(PROMPTS[:1], PARAMS))
    assert "HTTP 401" in str(err.value) and "Incorrect API key provided" in str(err.value)
    assert "sk-secret-123" not in str(err.value) and state.authorizations == ["Bearer sk-secret-123"]


def test_retry_after_is_honoured_and_backoff_grows() -> None:
    import random

    policy = RetryPolicy(base_delay=1.0, max_delay=30.0)
    rng = random.Random(0)
    assert policy.delay(0, 7.0, rng) == 7.0
    delays = [policy.delay(a, None, rng) for a in range(5)]
    # equal jitter: attempt a waits between 2**a / 2 and 2**a seconds
    assert all(2**a / 2 <= d <= 2**a for a, d in enumerate(delays))
    assert policy.delay(10, None, rng) <= 30.0


def test_retry_after_from_the_server_is_used() -> None:
    with openai_server() as (url, state):
        backend = OpenAICompatBackend("retryafter", base_url=url, retry=FAST, concurrency=2)
        waits: list[float] = []
        backend._sleep = waits.append  # record the waits instead of sleeping
        out = dict(backend.generate(PROMPTS, PARAMS))
    assert waits == [3.0] * 6 and all(g.error is None for g in out.values())


def test_rows_the_server_refuses_fail_alone() -> None:
    with openai_server() as (url, state):
        out, _ = _run("refuse", url, concurrency=3)
    refused = [g for g in out.values() if g.error]
    assert refused and len(refused) < 6 and len(out) == 6
    assert all(g.error.startswith("refused for this row: HTTP 400") and "maximum context length" in g.error for g in refused)
    assert state.count() == 6  # refusals are not retried


def test_redirects_are_refused_and_the_key_stays_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBENCH_TEST_KEY", "sk-never-redirected")
    with openai_server() as (other_url, other), openai_server() as (url, state):
        state.redirect_to = f"{other_url}/chat/completions"
        backend = OpenAICompatBackend("redirect", base_url=url, api_key_env="CONVBENCH_TEST_KEY", retry=FAST)
        with pytest.raises(BackendError, match="redirected .* point --base-url at the final address"):
            dict(backend.generate(PROMPTS[:1], PARAMS))
    assert other.count() == 0


def test_recorded_url_has_no_credentials() -> None:
    backend = OpenAICompatBackend("m", base_url="https://example.org:8443/v1?token=abc")
    assert backend.identity()["base_url"] == "https://example.org:8443/v1"
    with pytest.raises(ConvbenchError, match="carries user-info") as err:  # issue 19: refused, never looked up
        OpenAICompatBackend("m", base_url="https://user:hunter2@example.org:8443/v1")
    assert "hunter2" not in str(err.value) and "https://user" not in str(err.value)
    with pytest.raises(Exception, match="must start with http"):
        OpenAICompatBackend("m", base_url="localhost:8000/v1")


def test_a_fatal_error_hands_over_answers_that_arrived_first() -> None:
    import time

    # 0.1 s a request, one at a time: the consumer stops (as on Ctrl-C) after the first answer; from then on
    # no new request starts (how many started before it depends on how soon the consumer stopped)
    with openai_server(ServerState(delay_seconds=0.1)) as (url, state):
        backend = OpenAICompatBackend("delay", base_url=url, retry=FAST, concurrency=1)
        generator = backend.generate(PROMPTS, PARAMS)
        received = next(generator)
        generator.close()
        at_close = state.count()
        time.sleep(0.5)  # room for five more requests, were any started
        later = state.count()
    # concurrency 1: at most the one request in flight at the close reaches the server after it
    assert received[1].text == label_for(PROMPTS[received[0]]) and later <= at_close + 1 and later < len(PROMPTS)


def test_presence_penalty_is_sent_only_when_set() -> None:
    # issue #12: the CoCoEval repetition countermeasure needs presence_penalty on the wire; unset, the
    # request body (and so every earlier cache key and server) stays as before
    import json

    from convbench_datasets.engine.cache import cache_key

    sent: list[dict] = []
    backend = OpenAICompatBackend("m", base_url="http://127.0.0.1:9/v1", retry=FAST)

    async def post_to(endpoint: object, body: bytes) -> dict:
        sent.append(json.loads(body))
        return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}

    backend._post_to = post_to  # type: ignore[method-assign]
    dict(backend.generate(PROMPTS[:1], GenerationParams(max_new_tokens=16, presence_penalty=2.0)))
    dict(backend.generate(PROMPTS[:1], PARAMS))
    assert sent[0]["presence_penalty"] == 2.0 and "presence_penalty" not in sent[1]
    assert PARAMS.to_dict() == {"max_new_tokens": 16, "temperature": 0.0}
    old_key = cache_key({"kind": "openai"}, PROMPTS[0], {"max_new_tokens": 16, "temperature": 0.0})
    assert cache_key({"kind": "openai"}, PROMPTS[0], PARAMS.to_dict()) == old_key
    assert cache_key({"kind": "openai"}, PROMPTS[0], GenerationParams(16, presence_penalty=2.0).to_dict()) != old_key
