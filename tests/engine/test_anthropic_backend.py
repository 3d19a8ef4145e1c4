"""The anthropic backend (the official client) against a local server that behaves like Anthropic's
Messages API: the request as that API wants it, retries (529, 429), per-row errors, key refusal, cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.backends.openai_compat import BackendError, RetryPolicy
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import complete

pytest.importorskip("anthropic", reason="the anthropic backend needs the anthropic extra")

from tests.support.anthropic_server import AnthropicState, anthropic_server  # noqa: E402

FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
KEY = "sk-ant-test"
PROMPTS = [
    [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}],
    [{"role": "user", "content": "please refuse this"}],
    [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _answers(model: str, url: str, **options) -> tuple[dict, object]:
    backend = backend_from_spec(f"anthropic:{model}", base_url=url, retry=FAST, **options)
    return dict(backend.generate(PROMPTS, GenerationParams(32))), backend


def test_the_request_is_what_the_messages_api_wants() -> None:
    with anthropic_server() as (url, state):
        out, backend = _answers("claude-echo", url, concurrency=1)
    assert [out[i].text for i in range(3)] == ["hello", "please refuse this", "c"]
    assert out[0].finish_reason == "stop" and out[0].completion_tokens == 1 and out[0].prompt_tokens > 0
    first = next(b for b in state.bodies if b["messages"][-1]["content"] == "hello")
    assert first == {"model": "claude-echo", "max_tokens": 32, "temperature": 0.0, "system": "be brief",
                     "messages": [{"role": "user", "content": "hello"}]}
    assert "system" not in next(b for b in state.bodies if b["messages"][-1]["content"] == "c")
    assert set(state.keys) == {KEY} and backend.identity() == {"kind": "anthropic", "model": "claude-echo",
                                                               "base_url": url}


def test_params_go_on_top_and_count_in_the_identity() -> None:
    with anthropic_server() as (url, state):
        out, backend = _answers("claude-system", url, params={"top_k": 5, "temperature": None,
                                                              "stop_sequences": ["\n\n"]})
    assert out[0].text == "be brief"
    assert all(b["top_k"] == 5 and b["stop_sequences"] == ["\n\n"] and "temperature" not in b for b in state.bodies)
    assert backend.identity()["params"] == {"stop_sequences": ["\n\n"], "temperature": None, "top_k": 5}


@pytest.mark.parametrize("model", ["claude-overloaded", "claude-429"])
def test_overloaded_and_rate_limited_are_retried(model: str) -> None:
    with anthropic_server() as (url, state):
        backend = backend_from_spec(f"anthropic:{model}", base_url=url, retry=FAST)
        waits: list[float] = []
        backend._sleep = waits.append  # record the waits instead of sleeping
        out = dict(backend.generate(PROMPTS, GenerationParams(32)))
    assert [out[i].text for i in range(3)] == ["hello", "please refuse this", "c"]
    assert len(state.bodies) == 6 and backend.retries == 3  # each prompt: the 529/429, then the answer
    if model == "claude-429":  # the server's Retry-After (3 s), not the policy's backoff
        assert waits == [3.0] * 3
    else:  # 529 says nothing: the policy's first backoff, base_delay / 2 to base_delay (FAST: 0.01)
        assert len(waits) == 3 and all(0.005 <= w <= 0.01 for w in waits)


@pytest.mark.parametrize(("params", "says"), [
    ({"max_tokens": None}, "Anthropic's Messages API requires max_tokens, so max_tokens=null cannot leave it out"),
    ({"max_completion_tokens": 64}, "max_completion_tokens is OpenAI's name; Anthropic's Messages API takes max_tokens"),
    ({"stop": ["\n"]}, "stop is OpenAI's name; Anthropic's Messages API takes stop_sequences"),
])
def test_fields_anthropic_cannot_take_are_refused_before_any_request(params: dict, says: str) -> None:
    with pytest.raises(ConvbenchError, match=f"^anthropic:claude-echo: {says}"):
        backend_from_spec("anthropic:claude-echo", base_url="http://127.0.0.1:9", params=params)


def test_a_refusal_is_the_rows_error_and_stored(tmp_path: Path) -> None:
    with anthropic_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as store:
        backend = backend_from_spec("anthropic:claude-refuse", base_url=url, retry=FAST)
        result = complete(backend, PROMPTS, GenerationParams(32), store, desc="x", progress=False)
        again = complete(backend_from_spec("anthropic:claude-refuse", base_url=url, retry=FAST), PROMPTS,
                         GenerationParams(32), store, desc="x", progress=False)
    refused = result.generations[1]
    assert refused.permanent and refused.status == 400 and "HTTP 400" in refused.error
    assert "prompt is too long" in refused.error and result.generations[0].text == "hello"
    assert len(state.bodies) == 3 and again.cache_hits == [True, True, True]  # the rerun asks nothing


@pytest.mark.parametrize("model,error", [("claude-refusal", "refused for this row: the model refused"),
                                         ("claude-empty-cut", "reply is empty, cut at the token limit")])
def test_a_refusal_or_an_empty_cut_reply_is_the_rows(model: str, error: str) -> None:
    with anthropic_server() as (url, state):
        out, _ = _answers(model, url)
    assert out[1].permanent and error in out[1].error and out[0].text == "hello"
    # a refusal is not asked again; an empty cut reply is, then it is the row's (one endpoint in rotation)
    assert sum(b["messages"][-1]["content"] == "please refuse this" for b in state.bodies) == \
        (1 if model == "claude-refusal" else 3)


def test_a_refused_key_stops_the_run_without_showing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong-999")
    with anthropic_server() as (url, _):
        backend = backend_from_spec("anthropic:claude-echo", base_url=url, retry=FAST)
        with pytest.raises(BackendError, match="HTTP 401") as err:
            backend.preflight()
    assert "sk-ant-wrong-999" not in str(err.value)


def test_a_model_the_server_lacks_gives_up_at_once() -> None:
    with anthropic_server() as (url, state):
        out, _ = _answers("claude-missing", url)
    assert all("HTTP 404" in g.error and not g.permanent for g in out.values()) and len(state.bodies) == 3


def test_presence_penalty_is_refused_by_name() -> None:
    backend = backend_from_spec("anthropic:claude-echo", base_url="http://127.0.0.1:9")
    with pytest.raises(ConvbenchError, match="Anthropic's Messages API has no presence_penalty"):
        list(backend.generate(PROMPTS[:1], GenerationParams(8, presence_penalty=2.0)))


def test_a_run_with_an_anthropic_judge(tmp_path: Path, nc_built: Path) -> None:
    from convbench_datasets.cli import main

    with anthropic_server() as (url, state):
        assert main(["run", "nc", "--model", "baseline:repeat", "--judge", "anthropic:claude-echo",
                     "--judge-base-url", url, "--out", str(tmp_path / "r"), "--dataset", str(nc_built),
                     "--limit", "3", "--no-progress", "--cache", str(tmp_path / "c.sqlite"),
                     # claude-echo echoes the prompt: no judge answer is a label (tests/support/anthropic_server.py)
                     "--max-error-rate", "1", "--max-unparsed-rate", "1"]) == 0
    signature = json.loads((tmp_path / "r" / "results.json").read_text())["signature"]
    assert signature["judge_identity"] == {"kind": "anthropic", "model": "claude-echo", "base_url": url}
    assert len(state.bodies) == 3 and all(b["max_tokens"] > 0 and "system" not in
                                          [m["role"] for m in b["messages"]] for b in state.bodies)


def test_model_id_names_an_anthropic_model_for_the_cache(tmp_path: Path, nc_built: Path) -> None:
    # issue #20: --model-id (and --judge-model-id) as for openai: the identity is kind, model and the id, no
    # URL, so the same run against another server of that model finds every answer in the cache
    from convbench_datasets.cli import main

    def run(url: str, name: str) -> dict:
        assert main(["run", "nc", "--model", "anthropic:claude-echo", "--model-id", "claude-v1", "--base-url", url,
                     "--judge", "anthropic:claude-echo", "--judge-model-id", "judge-v1", "--out", str(tmp_path / name),
                     "--dataset", str(nc_built), "--limit", "3", "--no-progress", "--cache", str(tmp_path / "c.sqlite"),
                     # the echoing judge answers no label (tests/support/anthropic_server.py): none can be read
                     "--max-error-rate", "1", "--max-unparsed-rate", "1"]) == 0
        return json.loads((tmp_path / name / "results.json").read_text())

    with anthropic_server() as (first_url, first), anthropic_server() as (second_url, second):
        one, two = run(first_url, "one"), run(second_url, "two")
    assert one["signature"]["model_identity"] == {"kind": "anthropic", "model": "claude-echo", "model_id": "claude-v1"}
    assert one["signature"]["judge_identity"] == {"kind": "anthropic", "model": "claude-echo", "model_id": "judge-v1"}
    assert len(first.bodies) == 6 and second.bodies == []  # 3 generations, 3 judgements; then all from the cache
    assert two["stats"]["model_calls"] == two["stats"]["judge_calls"] == 0 and two["accuracy"] == one["accuracy"]


@pytest.mark.parametrize("model", ["claude-truncated", "claude-html"])
def test_a_malformed_reply_is_retried_never_a_stop_of_the_run(model: str, tmp_path: Path) -> None:
    # reported: one truncated-JSON reply or one proxy's HTML page with status 200 stopped the whole run (a vague
    # JSON error, or a traceback). The first reply per prompt is malformed: the retry gets the answer
    with anthropic_server() as (url, state):
        out, backend = _answers(model, url)
    assert [out[i].text for i in range(3)] == ["hello", "please refuse this", "c"] and backend.retries == 3
    assert len(state.bodies) == 6
    # malformed every time: after the retries the prompt is left for a rerun (not stored), the others answered,
    # as the openai backend does with malformed JSON
    from convbench_datasets.engine.stage import RunIncomplete

    with anthropic_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as store:
        backend = backend_from_spec(f"anthropic:{model}-always", base_url=url, retry=FAST)
        with pytest.raises(RunIncomplete, match=rf"^x: 3 of 3 requests to anthropic:{model}-always failed \(first: "
                                                rf"gave up after 3 attempts: malformed reply from {url}: "):
            complete(backend, PROMPTS, GenerationParams(32), store, desc="x", progress=False)
        assert store.stats()["errors"] == 0 and len(state.bodies) == 9
