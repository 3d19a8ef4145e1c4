"""The runner's path at scale (issue #14, convbench >= 0.95x a plain client at concurrency 128): answers
that arrive together are stored in one commit, each before the stage hands it on; one SQLite call per
batch; no thread per request (every request a task on one event loop, a host name looked up once per
connection kept alive); cache keys computed in bulk."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.engine.backends.base import Backend, Generation, GenerationParams
from convbench_datasets.engine.backends.baseline import BaselineBackend
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
from convbench_datasets.engine.cache import ClaimOwner, ResponseCache, cache_key, cache_keys
from convbench_datasets.engine.stage import RunIncomplete, complete
from tests.support.openai_server import ServerState, label_for, openai_server

IDENTITY = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}
PARAMS = GenerationParams(max_new_tokens=16)
PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(48)]


def test_cache_keys_are_cache_key_for_every_prompt() -> None:
    prompts = [
        [{"role": "user", "content": "hello"}],
        [{"role": "system", "content": "简短回答。"}, {"role": "user", "content": "你好 \"quoted\" \\ \u2028 é"}],
        [{"content": "keys out of order", "role": "user", "name": "x"}],
        [],
    ]
    identities = [IDENTITY, {"model": "m", "kind": "openai", "model_id": "ß"}, {"kind": "hf", "model": "t", "dtype": None}]
    for identity in identities:
        for params in ({"max_new_tokens": 8, "temperature": 0.0}, {"temperature": 0.7, "max_new_tokens": 1,
                                                                   "presence_penalty": 0.5}):
            assert cache_keys(identity, prompts, params) == [cache_key(identity, p, params) for p in prompts]


def _answers(n: int, prefix: str = "k") -> list[tuple[str, dict, Generation]]:
    return [(f"{prefix}{i}", IDENTITY, Generation(f"answer {i}", 3, 1, 0.1, finish_reason="stop")) for i in range(n)]


def test_put_many_stores_answers_ends_their_errors_and_claims_in_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    answers = _answers(250)  # more than one INSERT's worth of rows: one transaction around them
    with ResponseCache(path) as cache, ResponseCache(path) as other:
        cache.put_error("k0", IDENTITY, Generation("", error="refused for this row: HTTP 400", permanent=True))
        cache.put_error("k249", IDENTITY, Generation("", error="refused for this row: HTTP 400", permanent=True))
        someone = ClaimOwner("another-host", 4242, "t0")
        assert other.claim(["k1", "k200", "unanswered"], someone) == ["k1", "k200", "unanswered"]
        cache.put_many(answers)
        seen = other.get_many(k for k, _, _ in answers)  # another connection sees them at once
        assert seen == {k: g for k, _, g in answers}
        assert other.get_errors(["k0", "k249"]) == {}  # an answer supersedes the row's error
        assert [c["key"] for c in other.claims()] == ["unanswered"]  # and ends every claim on it
        cache.put_many(answers[:1])  # a single answer: one statement, same effects
        cache.put_many([])
        assert other.stats()["entries"] == 250 and other.stats()["errors"] == 0


def test_put_many_refuses_a_failed_generation_and_stores_none_of_the_batch(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        batch = [*_answers(3), ("bad", IDENTITY, Generation("", error="HTTP 500"))]
        with pytest.raises(ValueError):
            cache.put_many(batch)
        assert cache.get_many(["k0", "k1", "k2", "bad"]) == {}


def test_the_answer_trigger_lives_in_the_connection_not_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k", IDENTITY, Generation("a"))
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall() == []
    finally:
        db.close()
    with ResponseCache(path) as cache:  # a later connection has its own
        cache.put_error("k2", IDENTITY, Generation("", error="refused for this row: x", permanent=True))
        cache.put("k2", IDENTITY, Generation("b"))
        assert cache.get_errors(["k2"]) == {}


class Grouped(Backend):
    """Answers in groups of ``size`` (as a backend with many requests in flight hands over those that arrived
    together); logs, for each group, whether any of its answers was in the cache before it was handed over
    (``stored_early``), and, before each group after the first, whether every answer of the groups handed
    over before it was already in the file (``earlier_stored``): a stage that held answers back until later
    ones arrived (or until all had) would leave them there unstored."""

    kind, model = "stub", "grouped"

    def __init__(self, size: int, path: Path, fail_at: int | None = None) -> None:
        self.size, self.path, self.fail_at, self.calls = size, path, fail_at, 0
        self.stored_early: list[bool] = []
        self.earlier_stored: list[bool] = []

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for batch in self.generate_batches(prompts, params):
            yield from batch

    def generate_batches(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[list[tuple[int, Generation]]]:
        keys = cache_keys(self.identity(), prompts, params.to_dict())
        answered: list[str] = []  # the keys of the answers handed over so far (a failed request has none)
        with ResponseCache(self.path) as look:
            for start in range(0, len(prompts), self.size):
                indices = range(start, min(start + self.size, len(prompts)))
                if answered:  # the stage asked for this group: it has stored every answer handed over before
                    self.earlier_stored.append(look.get_many(answered).keys() == set(answered))
                self.calls += len(indices)
                self.stored_early.append(bool(look.get_many(keys[i] for i in indices)))
                answered += [keys[i] for i in indices if i != self.fail_at]
                if self.fail_at is not None and self.fail_at in indices:
                    yield [(i, Generation("", error="HTTP 503 after the retries") if i == self.fail_at
                            else Generation(f"answer {i}")) for i in indices]
                else:
                    yield [(i, Generation(f"answer {i}")) for i in indices]


def test_each_answer_is_in_the_file_before_the_stage_hands_it_on(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    prompts = PROMPTS[:23]
    backend = Grouped(5, path)
    keys = cache_keys(backend.identity(), prompts, PARAMS.to_dict())
    handed: list[int] = []
    with ResponseCache(path) as cache, ResponseCache(path) as other:

        def arrived(index: int, generation: Generation) -> None:
            # another connection (another process, a rerun after a kill) already reads it
            assert other.get_many([keys[index]]) == {keys[index]: generation}
            handed.append(index)

        result = complete(backend, prompts, PARAMS, cache, desc="t", progress=False, on_result=arrived)
        assert sorted(handed) == list(range(23)) and result.model_calls == 23
        assert backend.stored_early == [False] * 5  # nothing stored before it arrived
        # 23 prompts in groups of 5: 5 groups; before each of the last 4, every earlier answer was stored
        assert backend.earlier_stored == [True] * 4
        assert other.get_many(keys) == {k: g for k, g in zip(keys, result.generations)}


def test_a_failure_in_a_batch_leaves_the_rest_of_it_stored(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    backend = Grouped(4, path, fail_at=5)
    keys = cache_keys(backend.identity(), PROMPTS[:10], PARAMS.to_dict())
    with ResponseCache(path) as cache:
        with pytest.raises(RunIncomplete, match="1 of 10 requests"):
            complete(backend, PROMPTS[:10], PARAMS, cache, desc="t", progress=False)
        # groups 0-3, 4-7 (5 fails), 8-9: before the second and the third, the earlier answers were stored
        assert backend.earlier_stored == [True, True]
        stored = cache.get_many(keys)
        assert sorted(keys.index(k) for k in stored) == [i for i in range(10) if i != 5]
        assert cache.claims() == []


def test_the_openai_backend_hands_over_answers_in_batches_covering_each_prompt_once() -> None:
    with openai_server(ServerState(delay_seconds=0.05)) as (url, state):
        backend = OpenAICompatBackend("delay", base_url=url, concurrency=16)
        batches = list(backend.generate_batches(PROMPTS, PARAMS))
        assert all(batches) and sorted(i for b in batches for i, _ in b) == list(range(len(PROMPTS)))
        assert all(g.text == label_for(PROMPTS[i]) for b in batches for i, g in b)
        assert dict(backend.generate(PROMPTS[:5], PARAMS)).keys() == set(range(5))
        assert state.count() == len(PROMPTS) + 5


def test_a_backend_that_does_not_group_hands_over_one_answer_per_batch() -> None:
    batches = list(BaselineBackend("silence").generate_batches(PROMPTS[:3], PARAMS))
    assert batches == [[(0, Generation(""))], [(1, Generation(""))], [(2, Generation(""))]]


def _threads_started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    start = threading.Thread.start

    def counted(self: threading.Thread) -> None:
        names.append(self.name)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", counted)
    return names


def test_requests_start_no_thread_each(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before issue #14: each attempt started a timer thread for its deadline and a thread for the name
    # lookup; at 600 requests a second those thread starts were most of convbench's lag behind a plain
    # client. Since the httpx transport (#20) a request is a task on the process's one HTTP loop: no
    # worker thread either.
    with openai_server() as (url, state):
        backend = OpenAICompatBackend("label", base_url=url, concurrency=4)
        backend.preflight()  # the loop's thread, started once per process
        names = _threads_started(monkeypatch)
        out = dict(backend.generate(PROMPTS[:20], PARAMS))
    assert len(out) == 20 and state.count() == 20
    assert [n for n in names if "process_request_thread" not in n] == []  # none but the in-process server's


def test_a_host_name_is_looked_up_once_per_connection_not_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    lookups: list[str] = []
    real = socket.getaddrinfo

    def counting(host, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        lookups.append(host.decode() if isinstance(host, bytes) else host)  # httpx hands it over encoded
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", counting)
    with openai_server() as (url, _):
        named = url.replace("127.0.0.1", "localhost")
        backend = OpenAICompatBackend("label", base_url=named, concurrency=1)
        assert all(g.error is None for _, g in backend.generate(PROMPTS[:10], PARAMS))
        assert lookups.count("localhost") == 1  # ten requests, one after the other, on one kept-alive connection
        backend.close()  # its connections closed: the next request connects, and looks the name up, again
        assert all(g.error is None for _, g in backend.generate(PROMPTS[10:12], PARAMS))
        assert lookups.count("localhost") == 2
