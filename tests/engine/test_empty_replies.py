"""An empty reply is never a judge's verdict, and one replica's empty replies never become the rows' answers
(issue #42). Reported: one fast replica answering ``content: ""`` (``finish_reason: "stop"``; Anthropic:
``content: []``) took most of the traffic, and 599 of 720 NC-Bench rows were judged on empty answers, cached,
and replayed by every rerun. Both served backends get the same cases (one parametrised suite).

Expected answers are the test servers' own: the OpenAI server answers ``label_for(messages)``, the
Anthropic one echoes the last message; request counts are the servers' tallies."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import NO_VERDICT, complete
from tests.support.openai_server import ServerState, label_for, openai_server
from tests.support.replicas import FAST

PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(8)]
GENERATE, JUDGE = GenerationParams(max_new_tokens=16), GenerationParams(max_new_tokens=16, verdict=True)


@contextmanager
def _openai(empty: bool) -> Iterator[tuple[str, Callable[[], int]]]:
    with openai_server(ServerState(broken="empty" if empty else None)) as (url, state):
        yield url, state.count


@contextmanager
def _anthropic(empty: bool) -> Iterator[tuple[str, Callable[[], int]]]:
    pytest.importorskip("anthropic", reason="the anthropic backend needs the anthropic extra")
    from tests.support.anthropic_server import AnthropicState, anthropic_server

    with anthropic_server(AnthropicState(empty=empty)) as (url, state):
        yield url, lambda: len(state.bodies)


SERVERS: dict[str, tuple[Callable[[bool], Any], str, Callable[[list[dict]], str]]] = {
    # server, spec, the answer a working server gives
    "openai": (_openai, "openai:label", label_for),
    "anthropic": (_anthropic, "anthropic:claude-echo", lambda messages: messages[-1]["content"]),
}


@pytest.fixture(params=list(SERVERS))
def served(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return SERVERS[request.param]


def _backend(spec: str, urls: list[str], **options: Any) -> Any:
    with warnings.catch_warnings():  # replicas of one test server share one cache identity, as intended
        warnings.filterwarnings("ignore", message=".*endpoints share one cache identity")
        return backend_from_spec(spec, base_url=urls if len(urls) > 1 else urls[0], retry=FAST, **options)


def _stage(backend: Any, cache: ResponseCache, params: GenerationParams) -> Any:
    return complete(backend, PROMPTS, params, cache, desc="stage", progress=False)


def test_an_empty_judge_answer_is_asked_again_then_the_rows_error(served: tuple, tmp_path: Path) -> None:
    server, spec, _ = served
    with server(True) as (url, count), ResponseCache(tmp_path / "c.sqlite") as cache:
        judged = _stage(_backend(spec, [url], concurrency=1), cache, JUDGE)
        stats = cache.stats()
    # FAST allows 2 retries: 3 attempts per prompt, all empty, then the row's error (stored, never an answer)
    assert all(g.permanent and g.error.startswith("gave up after 3 attempts: reply is empty") for g in judged.generations)
    assert count() == 3 * len(PROMPTS)
    assert (stats["errors"], stats["entries"]) == (len(PROMPTS), 0)


def test_an_empty_generation_from_the_only_endpoint_is_its_answer(served: tuple, tmp_path: Path) -> None:
    # NC-Bench has a Silence label: a generator's empty answer can be real; with one endpoint nothing doubts it
    server, spec, _ = served
    with server(True) as (url, count), ResponseCache(tmp_path / "c.sqlite") as cache:
        generated = _stage(_backend(spec, [url], concurrency=1), cache, GENERATE)
        # an earlier run cached those empty answers; read as a judge's, each is the row's error, nothing asked
        judged = _stage(_backend(spec, [url], concurrency=1), cache, JUDGE)
    assert [g.text for g in generated.generations] == [""] * len(PROMPTS) and generated.errors == 0
    assert count() == len(PROMPTS) and judged.model_calls == 0
    assert [g.error for g in judged.generations] == [NO_VERDICT] * len(PROMPTS)


def test_an_empty_verdict_an_earlier_run_cached_is_asked_again_with_retry_errors(tmp_path: Path) -> None:
    # the empty answers are demoted to the rows' errors when read as verdicts: --retry-errors then asks them
    # again (before, they stayed "no verdict" for good, whatever the rerun)
    with openai_server(ServerState(broken="empty")) as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = _backend("openai:label", [url], concurrency=1)
        _stage(backend, cache, GENERATE)  # 8 empty answers cached, as an older convbench cached a judge's
        first = _stage(backend, cache, JUDGE)
        assert first.model_calls == 0 and cache.stats()["errors"] == len(PROMPTS)
        state.broken = None  # the server answers now
        again = complete(backend, PROMPTS, JUDGE, cache, desc="stage", progress=False, retry_errors=True)
    assert [g.text for g in again.generations] == [label_for(p) for p in PROMPTS] and again.model_calls == 8


def test_one_replica_answering_empty_never_writes_the_rows_answers(served: tuple, tmp_path: Path) -> None:
    server, spec, answer = served
    with server(False) as (url_good, good), server(True) as (url_bad, bad), \
            ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = _backend(spec, [url_bad, url_good], concurrency=1)
        generated = _stage(backend, cache, GENERATE)
        failures = backend._pool.endpoints[0].failures
    # each empty reply is asked of the other replica, which answers: the row gets that answer and the empty
    # reply is the empty replica's failure (routing then prefers the replica that answers)
    assert [g.text for g in generated.generations] == [answer(p) for p in PROMPTS] and generated.errors == 0
    assert good() == len(PROMPTS) and bad() >= 1 and failures == bad()


def test_two_replicas_answering_empty_agree_on_a_generators_empty_answer(served: tuple, tmp_path: Path) -> None:
    server, spec, _ = served
    with server(True) as (url_a, a), server(True) as (url_b, b), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = _backend(spec, [url_a, url_b], concurrency=1)
        generated = _stage(backend, cache, GENERATE)
        live = len(backend._pool.live())
    # one second opinion per prompt, and it agrees: the empty answer stands, no replica is blamed
    assert [g.text for g in generated.generations] == [""] * len(PROMPTS) and generated.errors == 0
    assert a() + b() == 2 * len(PROMPTS) and live == 2


def test_a_refusal_never_confirms_another_replicas_empty_answer(tmp_path: Path) -> None:
    # one replica refuses every request, the other answers empty: they disagree, so neither stands as the row's
    # outcome on the other's word (before: the empty answer was cached as the generator's answer, or one refusal
    # became the row's); with both broken no answer can be had, and nothing is cached as an answer
    from convbench_datasets.engine.stage import RunIncomplete

    with openai_server(ServerState(broken="400")) as (url_a, _), openai_server(ServerState(broken="empty")) as (url_b, _), \
            ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = _backend("openai:label", [url_a, url_b], concurrency=1)
        try:
            outcome = _stage(backend, cache, GENERATE)
        except RunIncomplete:
            outcome = None
        entries = cache.stats()["entries"]
    assert entries == 0
    assert outcome is None or all(g.error is not None for g in outcome.generations)


def test_a_local_judges_empty_answer_is_the_rows_error_not_a_verdict(tmp_path: Path) -> None:
    # a backend without retries of its own (a local model, a plugin's): the stage itself reads its empty verdict
    # as the row's error and stores it as one; a baseline: judge's empty answer is what it is for, kept
    from convbench_datasets.engine import Backend, Generation

    class Blank(Backend):
        kind, model = "stub", "blank"

        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for i, _ in enumerate(prompts):
                yield i, Generation("  ")

    with ResponseCache(tmp_path / "c.sqlite") as cache:
        judged = _stage(Blank(), cache, JUDGE)
        stats = cache.stats()
        baseline = _stage(backend_from_spec("baseline:silence"), cache, JUDGE)
    assert [g.error for g in judged.generations] == [NO_VERDICT] * len(PROMPTS)
    assert (stats["errors"], stats["entries"]) == (len(PROMPTS), 0)
    assert [(g.text, g.error) for g in baseline.generations] == [("", None)] * len(PROMPTS)
