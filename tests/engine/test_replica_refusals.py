"""Replicas that refuse every request alike are the server's doing, not the rows' (issue #42). Reported: each
refusal's message carries the URL of the replica that gave it, so refusals of two replicas never read alike, and
720 row errors were cached. Refusals are now compared without the endpoint's address."""

from __future__ import annotations

from pathlib import Path

import pytest

from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import ServerRefusesAll, complete, refusal_text
from tests.support.openai_server import ServerState, openai_server
from tests.support.replicas import replica_backend

PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(6)]


def test_two_replicas_refusing_everything_alike_store_no_row_error(tmp_path: Path) -> None:
    with openai_server(ServerState(broken="400")) as (url_a, _), openai_server(ServerState(broken="400")) as (url_b, _), \
            ResponseCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(ServerRefusesAll, match=r"^x: all 6 requests to openai:label were refused alike \(HTTP 400 "
                                                   r"from http://127\.0\.0\.1:\d+/v1/chat/completions: bad request\); "
                                                   "nothing was recorded as a row error"):
            complete(replica_backend([url_a, url_b], concurrency=2), PROMPTS, GenerationParams(16), cache, desc="x",
                     progress=False)
        assert cache.stats()["errors"] == 0


def test_refusals_differ_in_what_they_say_not_where() -> None:
    a = "refused for this row: HTTP 400 from http://10.0.0.1:8000/v1/chat/completions: bad request"
    b = "refused for this row: HTTP 400 from https://node-2.cluster:8001/v1/chat/completions: bad request"
    assert refusal_text(a) == refusal_text(b) == "refused for this row: HTTP 400 from <endpoint>: bad request"
    assert refusal_text(a) != refusal_text(a.replace("bad request", "prompt too long"))


def test_every_replica_answering_404_gives_up_as_fast_as_one(tmp_path: Path) -> None:
    import time

    from convbench_datasets.engine.stage import RunIncomplete

    # reported: all replicas answering 404 took 93 s to give up, one server 2 s. The first prompt meets both (each
    # 404, each out of rotation); every later one meets one replica, sees that every replica's last word was
    # 404, and gives up at once: 1 request each, no retry
    with openai_server(ServerState(broken="404")) as (url_a, a), openai_server(ServerState(broken="404")) as (url_b, b), \
            ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = replica_backend([url_a, url_b], concurrency=1)
        began = time.monotonic()
        with pytest.raises(RunIncomplete, match=r"^x: 6 of 6 requests to openai:label failed \(first: gave up after 1 "
                                                r"attempts: HTTP 404 from "):
            complete(backend, PROMPTS, GenerationParams(16), cache, desc="x", progress=False)
        took = time.monotonic() - began
    assert a.count() + b.count() == 2 + 5 and backend.retries == 0 and took < 5
