"""The OpenAI-compatible backend under server faults: per-row refusals, unusable replies, a trickling
server, an echoed key, and a server that cannot be reached (issue #10)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.backends.openai_compat import (
    BackendError,
    OpenAICompatBackend,
    RetryPolicy,
    _generation,
    _InvalidReply,
)
from convbench_datasets.engine.redact import redact
from tests.support.network import closed_url
from tests.support.openai_server import ServerState, affected, label_for, openai_server

FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(12)]
PARAMS = GenerationParams(max_new_tokens=16)
HIT = [i for i, p in enumerate(PROMPTS) if affected(p)]  # the rows the server's faults hit: 5 of these 12


def _generate(model: str, url: str, **kwargs) -> dict:
    backend = OpenAICompatBackend(model, base_url=url, retry=kwargs.pop("retry", FAST), concurrency=4, **kwargs)
    return dict(backend.generate(PROMPTS, PARAMS))


def _hit(out: dict) -> list[int]:
    return [i for i, g in out.items() if g.error is not None]


@pytest.mark.parametrize("model, status", [("refuse", 400), ("refuse422", 422)])  # 404: the server's (test_replica_faults)
def test_refusals_are_permanent_errors_of_their_rows(model: str, status: int) -> None:
    with openai_server() as (url, state):
        out = _generate(model, url)
    refused = _hit(out)
    assert sorted(refused) == HIT and state.count() == 12  # refusals are not retried
    for i in refused:
        assert out[i].permanent and out[i].error.startswith(f"refused for this row: HTTP {status} from {url}/chat/completions")
    assert all(out[i].text == label_for(PROMPTS[i]) and out[i].finish_reason == "stop" for i in out if i not in refused)


@pytest.mark.parametrize("model, wording", [("filtered", "finish_reason 'content_filter'"),
                                            ("filtered400", "content management policy")])
def test_content_filter_is_a_permanent_error(model: str, wording: str) -> None:
    with openai_server() as (url, state):
        out = _generate(model, url)
    filtered = _hit(out)
    assert sorted(filtered) == HIT and state.count() == 12  # not retried: the same prompt is filtered again
    assert all(out[i].permanent and wording in out[i].error for i in filtered)


@pytest.mark.parametrize("model, wording", [("null", "message.content null"), ("nochoices", "reply has no choices")])
def test_replies_without_an_answer_are_retried_then_permanent(model: str, wording: str) -> None:
    # before the fix, content null became an empty answer (cached as an empty turn) and empty choices
    # a transient failure that blocked the run forever
    with openai_server() as (url, state):
        out = _generate(model, url)
    bad = _hit(out)
    assert sorted(bad) == HIT and state.count() == 12 + 2 * len(bad)  # 1 try + 2 retries (FAST) for each bad row
    assert all(out[i].permanent and out[i].text == "" and "gave up after 3 attempts" in out[i].error and wording in out[i].error
               for i in bad)


def test_a_null_reply_that_clears_on_retry_is_an_answer() -> None:
    with openai_server() as (url, state):
        out = _generate("null-once", url)
    assert _hit(out) == [] and all(out[i].text == label_for(PROMPTS[i]) for i in out)


def test_finish_reason_is_reported() -> None:
    with openai_server() as (url, _):
        out = _generate("length", url)
    cut = [i for i, g in out.items() if g.finish_reason == "length"]
    # the server cuts the affected rows to 3 characters: a cut answer is still an answer
    assert sorted(cut) == HIT and all(out[i].error is None and out[i].text == label_for(PROMPTS[i])[:3] for i in cut)
    assert {out[i].finish_reason for i in out if i not in cut} == {"stop"}


def test_timeout_is_a_total_deadline_per_attempt() -> None:
    # The server sends one byte every 0.5 s (about 150 bytes: over a minute). Each socket read returns
    # within the timeout, so a per-read timeout (the bug) waited for the whole reply, ~75 s per attempt.
    with openai_server(ServerState(trickle_seconds=0.5)) as (url, state):
        backend = OpenAICompatBackend("trickle", base_url=url, retry=RetryPolicy(max_retries=1, base_delay=0.01),
                                      timeout=1.0)
        began = time.monotonic()
        out = dict(backend.generate(PROMPTS[:1], PARAMS))
        elapsed = time.monotonic() - began
    assert elapsed < 10, f"two 1-second attempts took {elapsed:.0f}s"
    assert out[0].error == f"gave up after 2 attempts: no complete reply from {url}/chat/completions within 1s"
    assert not out[0].permanent  # a slow server is the run's problem, not the row's: rerun to finish


def test_an_echoed_key_is_redacted_from_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-echoed-secret-7731"
    monkeypatch.setenv("CONVBENCH_TEST_KEY", secret)
    with openai_server(ServerState(require_key="sk-the-right-one")) as (url, _):
        backend = OpenAICompatBackend("label", base_url=url, api_key_env="CONVBENCH_TEST_KEY", retry=FAST)
        with pytest.raises(BackendError) as err:
            backend.preflight()
    assert "HTTP 401" in str(err.value) and "Incorrect API key provided: Bearer [redacted]" in str(err.value)
    assert secret not in str(err.value)
    with openai_server() as (url, _):
        out = _generate("refuse-echo", url, api_key_env="CONVBENCH_TEST_KEY")
    refused = _hit(out)
    assert sorted(refused) == HIT and all(secret not in out[i].error and "Authorization: [redacted]" in out[i].error for i in refused)


def test_preflight_names_a_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVBENCH_NO_KEY", raising=False)
    with openai_server(ServerState(require_key="sk-needed")) as (url, state):
        backend = OpenAICompatBackend("label", base_url=url, api_key_env="CONVBENCH_NO_KEY")
        with pytest.raises(BackendError, match=r"HTTP 401 .*no API key was sent: \$CONVBENCH_NO_KEY is not set"):
            backend.preflight()
    assert state.gets == 1 and state.count() == 0


def test_preflight_runs_once_and_accepts_a_server_without_models() -> None:
    with openai_server(ServerState(models=[])) as (url, state):
        backend = OpenAICompatBackend("label", base_url=url)
        backend.preflight()
        backend.preflight()
        assert state.gets == 1
        backend = OpenAICompatBackend("label", base_url=url.replace("/v1", "/other"))  # GET answers 404: still a server
        backend.preflight()


@pytest.mark.parametrize("url, reason", [(closed_url(), "refused"),
                                         ("http://nonexistent.invalid/v1", "connection to http://nonexistent.invalid/v1/models failed")],
                         ids=["refused", "unresolvable"])  # ids without the port: the same in every collection (xdist)
def test_preflight_fails_fast_when_the_server_cannot_be_reached(url: str, reason: str) -> None:
    backend = OpenAICompatBackend("label", base_url=url)
    began = time.monotonic()
    with pytest.raises(ConvbenchError) as err:
        backend.preflight()
    assert time.monotonic() - began < 10
    assert reason in str(err.value) and "check --base-url" in str(err.value) and "\n" not in str(err.value)


class _StoppedWhileWaiting(asyncio.Event):
    """The run's stop event, set by another request (it met a 401) while this one waits out a backoff."""

    async def wait(self) -> bool:
        self.set()
        return True


def test_a_stop_during_a_backoff_is_not_a_row_error() -> None:
    # Before the fix the wait broke out of the retries and the row came back permanent ("gave up after 1
    # attempts"): the stage stored it as the row's error and every later run reused that false error.
    backend = OpenAICompatBackend("label", base_url="http://127.0.0.1:9/v1", retry=RetryPolicy(max_retries=6, base_delay=5))

    async def unusable(endpoint: object, body: bytes) -> dict:
        raise _InvalidReply("reply has message.content null")

    backend._post_to = unusable  # type: ignore[method-assign]
    out = asyncio.run(backend._complete(PROMPTS[0], PARAMS, _StoppedWhileWaiting()))
    assert out.error == "stopped before an answer" and not out.permanent


def test_an_empty_reply_cut_at_the_limit_is_retried_then_a_row_error(tmp_path) -> None:
    # content "" with finish_reason "length" (a reasoning model out of tokens) was an answer before the
    # fix: cached as an empty turn, which NC-Bench's judge labels Silence (issue #10: never cache it)
    from convbench_datasets.engine.cache import ResponseCache
    from convbench_datasets.engine.stage import complete

    with openai_server() as (url, state):
        out = _generate("blank-length", url)
        assert sorted(_hit(out)) == HIT and state.count() == 12 + 2 * len(HIT)  # 1 try + 2 retries (FAST) each
        assert all(out[i].permanent and out[i].text == "" and "finish_reason 'length'" in out[i].error for i in HIT)
        with ResponseCache(tmp_path / "c.sqlite") as cache:
            backend = OpenAICompatBackend("blank-length", base_url=url, retry=FAST)
            stage = complete(backend, PROMPTS, PARAMS, cache, desc="generate", progress=False)
            assert [i for i, g in enumerate(stage.generations) if g.error] == HIT
            assert cache.stats()["entries"] == 12 - len(HIT) and cache.stats()["errors"] == len(HIT)


LONG_KEY = "sk-proj-" + "A1b2C3d4E5" * 15  # 158 characters, as OpenAI project keys are


def _leaks(text: str, key: str, size: int = 12) -> list[str]:
    """Pieces of ``key`` (``size`` characters or more) that ``text`` shows."""
    return [key[i : i + size] for i in range(len(key) - size + 1) if key[i : i + size] in text]


def test_a_long_key_is_redacted_whole_before_a_message_is_shortened() -> None:
    # The reviewer's case (/tmp/rv/partial.py): the reply quotes the key three times. Cutting the text at
    # 400 characters first left the third key's first 26 characters, which no longer matched the key and,
    # once the two whole keys shrank to "[redacted]", fell inside the 120 characters shown.
    reply = {"choices": [], "detail": f"key {LONG_KEY} rejected; key {LONG_KEY} unknown; key {LONG_KEY}"}
    with pytest.raises(_InvalidReply) as err:
        _generation(reply, 0.0, lambda text: redact(text, [LONG_KEY]))
    assert "key [redacted] rejected" in str(err.value) and _leaks(str(err.value), LONG_KEY) == []


@pytest.mark.parametrize("model, says", [("malformed-echo", "malformed JSON from"),
                                         ("nochoices-echo", "reply has no choices"),
                                         ("badstatus-echo", "connection to")])
@pytest.mark.parametrize("key", ["sk-short-echo-4411", LONG_KEY])
def test_a_key_echoed_in_a_reply_never_shows(model: str, says: str, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each server quotes the bare key three times in a reply that is not an answer; the message keeps the
    # quote, not the key. A short key dies only if the message is redacted at all; the long one (158
    # characters) only if it is redacted before it is shortened (a cut key no longer matches).
    monkeypatch.setenv("CONVBENCH_TEST_KEY", key)
    with openai_server() as (url, _):
        out = _generate(model, url, api_key_env="CONVBENCH_TEST_KEY")
    errors = [g.error for g in out.values() if g.error is not None]
    assert errors and all(says in e and "key [redacted] rejected" in e and "\n" not in e for e in errors)
    assert [leak for e in errors for leak in _leaks(e, key)] == []


def test_preflight_refuses_a_model_the_server_does_not_serve() -> None:
    # Before the fix every request met "404 model not found", each became a stored per-row error and the
    # run exited 0 (the reviewer's /tmp/rv/test_rv404.py)
    served = ["label", "echo", "m3", "m4", "m5", "m6"]
    with openai_server(ServerState(models=served, strict_models=True)) as (url, state):
        backend = OpenAICompatBackend("llama3", base_url=url)
        with pytest.raises(ConvbenchError) as err:
            backend.preflight()
    assert str(err.value) == (
        f"model 'llama3' is not served by {url}: it lists label, echo, m3, m4, m5 and 1 more, and refused a request "
        f"for it (HTTP 404 from {url}/chat/completions: The model `llama3` does not exist.); check the model name "
        "in openai:llama3")
    assert state.count() == 1  # the one-token request that settled it


def test_preflight_accepts_models_a_server_serves_without_listing_them() -> None:
    # TGI and llama.cpp list one model and answer any name; Azure routes deployment names it does not list
    with openai_server(ServerState(models=["meta-llama/Llama-3.3-70B-Instruct"])) as (url, state):
        OpenAICompatBackend("tgi", base_url=url).preflight()
        assert state.count() == 1
    # Ollama lists "llama3:latest" for "llama3": listed, so nothing is sent
    with openai_server(ServerState(models=["label:latest"], strict_models=True)) as (url, state):
        OpenAICompatBackend("label", base_url=url).preflight()
        assert state.count() == 0


def test_the_deadline_covers_the_name_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before the fix getaddrinfo ran outside the deadline: with a 4 s lookup, the 1 s preflight took over 4 s
    real = socket.getaddrinfo

    def slow(*args, **kwargs):
        time.sleep(4)
        return real(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    backend = OpenAICompatBackend("label", base_url="http://localhost:9/v1", timeout=1.0)
    began = time.monotonic()
    with pytest.raises(ConvbenchError, match=r"^no complete reply from http://localhost:9/v1/models within 1s"):
        backend.preflight()
    assert time.monotonic() - began < 2.5
