"""Processes sharing one response cache ask each prompt once (issue #14): a stage claims the prompts it
asks in the cache, waits for those another live process claimed, and takes over claims whose owner died
or whose claim expired. Claims never outlive the stage, however it ends."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import types
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.engine import Backend, Generation, GenerationParams, ResponseCache, RunIncomplete
from convbench_datasets.engine import stage as stage_module
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
from convbench_datasets.engine.cache import ClaimOwner, cache_key
from convbench_datasets.engine.stage import complete
from tests.support.claim_worker import run_workers
from tests.support.openai_server import ServerState, label_for, openai_server
from tests.support.processes import dead_pid

PARAMS = GenerationParams(max_new_tokens=128)
PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(40)]


def _keys(backend: Backend, prompts: Sequence[list[dict]], params: GenerationParams = PARAMS) -> list[str]:
    return [cache_key(backend.identity(), p, params.to_dict()) for p in prompts]


def _insert_claims(cache: ResponseCache, keys: list[str], owner: ClaimOwner, expires: float) -> None:
    cache._db.executemany("INSERT INTO claims (key, owner, host, pid, expires, created) VALUES (?, ?, ?, ?, ?, ?)",
                          [(k, owner.name, owner.host, owner.pid, expires, time.time()) for k in keys])


def test_two_processes_on_one_cache_ask_each_prompt_once(tmp_path: Path) -> None:
    # Both processes start their stage at the same moment (a barrier); every request takes 50 ms. Without
    # claims each sends all 40 prompts (80 requests, as 4 runs sent 2,736 for 720 prompts in the issue).
    with openai_server(ServerState(delay_seconds=0.05)) as (url, state):
        summaries = run_workers(2, str(tmp_path / "shared.sqlite"), url, "delay", PROMPTS, concurrency=4)
        assert state.count() == len(state.seen) == 40  # requests == distinct prompts
    assert sum(s["model_calls"] for s in summaries) == 40
    expected = [label_for(p) for p in PROMPTS]  # the server's deterministic answer to each prompt
    assert [s["texts"] for s in summaries] == [expected, expected]


def test_a_prompt_claimed_by_a_live_process_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = ClaimOwner("another-host", 4242, "t0")  # another host: alive until its claim expires
    sleeps: list[float] = []
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = OpenAICompatBackend("label", base_url=url)
        key = _keys(backend, PROMPTS[:1])[0]
        _insert_claims(cache, [key], other, time.time() + 3600)

        def other_answers(seconds: float) -> None:  # while this stage waits, the other process stores its answer
            sleeps.append(seconds)
            if len(sleeps) == 2:
                with ResponseCache(tmp_path / "c.sqlite") as theirs:
                    theirs.put(key, backend.identity(), Generation("the other process's answer"))

        monkeypatch.setattr(stage_module, "time", types.SimpleNamespace(time=time.time, sleep=other_answers))
        result = complete(backend, PROMPTS[:1], PARAMS, cache, desc="judge", progress=False)
        assert state.count() == 0  # never asked: the answer came through the cache
        assert [g.text for g in result.generations] == ["the other process's answer"]
        assert result.cache_hits == [True] and result.model_calls == 0
        assert sleeps == [stage_module.POLL_FIRST, 2 * stage_module.POLL_FIRST]  # polled with backoff
        assert cache.claims() == []


def test_a_claim_released_without_an_answer_is_asked_by_the_waiter(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The other process's request failed for now (it releases its claim and leaves the prompt to a rerun):
    # the waiting stage claims the prompt and asks it itself.
    other = ClaimOwner("another-host", 4242, "t0")
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = OpenAICompatBackend("label", base_url=url)
        _insert_claims(cache, _keys(backend, PROMPTS[:3]), other, time.time() + 3600)
        monkeypatch.setattr(stage_module, "time", types.SimpleNamespace(
            time=time.time, sleep=lambda seconds: cache.release(other)))
        result = complete(backend, PROMPTS[:3], PARAMS, cache, desc="judge", progress=False)
        assert state.count() == 3 and result.model_calls == 3
        assert [g.text for g in result.generations] == [label_for(p) for p in PROMPTS[:3]]
        assert cache.claims() == []


@pytest.mark.parametrize("stale", ["owner died", "claim expired"])
def test_a_stale_claim_is_taken_over(tmp_path: Path, stale: str) -> None:
    # a dead process of this host (claim still unexpired), or a claim of another host that expired
    owner = (ClaimOwner(socket.gethostname(), dead_pid(), "t0") if stale == "owner died"
             else ClaimOwner("another-host", 4242, "t0"))
    expires = time.time() + (3600 if stale == "owner died" else -1)
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = OpenAICompatBackend("label", base_url=url)
        _insert_claims(cache, _keys(backend, PROMPTS[:5]), owner, expires)
        result = complete(backend, PROMPTS[:5], PARAMS, cache, desc="judge", progress=False)
        assert state.count() == 5 and result.model_calls == 5  # asked at once, without waiting
        assert [g.text for g in result.generations] == [label_for(p) for p in PROMPTS[:5]]
        assert cache.claims() == []


class Interrupted(Backend):
    """Answers the first prompt, then raises ``error`` (Ctrl-C, say); logs the claims it saw on starting."""

    kind, model = "stub", "interrupted"

    def __init__(self, cache: ResponseCache, error: BaseException | None = None, transient: bool = False) -> None:
        self.cache, self.error, self.transient, self.calls, self.claimed = cache, error, transient, 0, []

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        self.claimed = [c["key"] for c in self.cache.claims()]
        for i, _ in enumerate(prompts):
            self.calls += 1
            if i == 0:
                yield i, Generation("first")
            elif self.transient:
                yield i, Generation("", error="HTTP 503 after the retries")
            else:
                assert self.error is not None
                raise self.error


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("the backend broke")])
def test_an_exception_releases_every_claim(tmp_path: Path, error: BaseException) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = Interrupted(cache, error)
        with pytest.raises(type(error)):
            complete(backend, PROMPTS[:4], PARAMS, cache, desc="generate", progress=False)
        keys = _keys(backend, PROMPTS[:4])
        assert sorted(backend.claimed) == sorted(keys)  # all four were claimed before the first was sent
        assert cache.claims() == []
        assert cache.get_many(keys) == {keys[0]: Generation("first")}


def test_failed_requests_release_their_claims_and_the_run_stays_incomplete(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(RunIncomplete, match="3 of 4 requests to stub:interrupted failed"):
            complete(Interrupted(cache, transient=True), PROMPTS[:4], PARAMS, cache, desc="generate", progress=False)
        assert cache.claims() == []


CTRL_C = """
import sys
from convbench_datasets.engine import GenerationParams, ResponseCache
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
from convbench_datasets.engine.stage import complete
prompts = [[{"role": "user", "content": f"question {i}"}] for i in range(6)]
with ResponseCache(sys.argv[1]) as cache:
    complete(OpenAICompatBackend("delay", base_url=sys.argv[2], concurrency=2), prompts, GenerationParams(max_new_tokens=128),
             cache, desc="judge", progress=False)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_releases_claims(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with openai_server(ServerState(delay_seconds=30)) as (url, _), ResponseCache(path) as cache:
        process = subprocess.Popen([sys.executable, "-c", CTRL_C, str(path), url], stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(600):  # until the stage has claimed its prompts (it then waits 30 s for answers)
                if len(cache.claims()) == 6 or process.poll() is not None:
                    break
                time.sleep(0.05)
            assert len(cache.claims()) == 6, process.stderr.read() if process.poll() is not None else "no claims"
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        assert "KeyboardInterrupt" in err
        assert cache.claims() == []


def test_a_holder_renews_its_claims_while_it_works(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with cache.hold(seconds=0.2) as holder:
            assert holder.take(["k"]) == ["k"]
            first = cache.claims()[0]["expires"]
            for _ in range(200):  # renewed every 0.05 s: wait until a renewal lands
                if cache.claims()[0]["expires"] > first:
                    break
                time.sleep(0.05)
            assert cache.claims()[0]["expires"] > first
        assert cache.claims() == []


@pytest.mark.parametrize("n", [99, 100, 101, 199, 200, 201, 250])
def test_every_claim_and_answer_of_many_keys_is_written(tmp_path: Path, n: int) -> None:
    # Claims and answers are written up to 100 rows per SQL statement (cache._ROWS_PER_INSERT); n runs
    # across each boundary. Expected: simply every key given, each claimed once (and answered once), so
    # that another live process gets none of them (a cut one short or one long left keys unclaimed)
    keys = [f"prompt-{i:04d}" for i in range(n)]
    owner, other = ClaimOwner.new(), ClaimOwner("another-host", 4242, "t1")
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.claim(keys, owner) == keys
        claims = cache.claims()
        assert len(claims) == n and sorted(c["key"] for c in claims) == keys
        assert {c["owner"] for c in claims} == {owner.name}
        assert cache.claim(keys, other) == []  # every key is held by a live owner
        identity = {"kind": "stub", "model": "many"}
        cache.put_many([(key, identity, Generation(f"answer to {key}")) for key in keys])
        assert cache.get_many(keys) == {key: Generation(f"answer to {key}") for key in keys}
        assert cache.claims() == []  # each stored answer ended its key's claim
        assert cache.stats()["entries"] == n


def test_a_batch_with_nothing_to_claim_takes_no_write_lock(tmp_path: Path) -> None:
    # a cached rerun's stage claims keys that are all answered (or held by a live other): it must not queue
    # behind another process's write transaction (busy timeout 60 s); keys it can claim still wait for it
    import sqlite3

    identity = {"kind": "stub", "model": "m"}
    other = ClaimOwner("another-host", 4242, "t1")
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put_many([("answered", identity, Generation("yes"))])
        assert cache.claim(["held"], other) == ["held"]
        writer = sqlite3.connect(tmp_path / "c.sqlite", isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # another process, mid-write
        try:
            cache._db.execute("PRAGMA busy_timeout=50")
            assert cache.claim(["answered", "held"], ClaimOwner.new()) == []
            with pytest.raises(Exception, match="locked"):
                cache.claim(["answered", "fresh"], ClaimOwner.new())
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        assert cache.claim(["answered", "fresh"], ClaimOwner.new()) == ["fresh"]
