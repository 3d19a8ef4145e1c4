"""No wrong number leaves with exit code 0 (issue #19), the replica half: a replica that fails requests
the others answer is taken out of rotation, HTTP 404 is the server's fault and never a row's, and an
error that depends on the replica that gave it is never stored as the row's outcome (a rerun asks again).

The reported case: of three replicas, one listed no models and answered 404 to everything; 628 of 720
rows became cached row errors (accuracy 2.4% instead of 17.6%), the run exited 0, and after the replica
was fixed the same command replayed the errors with 0 model calls.

Expected answers come from the test server's deterministic ``label_for``; request counts are the
servers' own tallies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import RunIncomplete, complete
from tests.support.openai_server import ServerState, affected, label_for, openai_server
from tests.support.replicas import FAST, replica_backend, run_records

PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(12)]
PARAMS = GenerationParams(max_new_tokens=16)
LABELS = [label_for(p) for p in PROMPTS]


def _stage(backend: OpenAICompatBackend, cache: ResponseCache, prompts=PROMPTS, **kwargs):
    return complete(backend, prompts, PARAMS, cache, desc="generate", progress=False, **kwargs)


def test_a_replica_that_lists_no_models_and_answers_404_is_taken_out(tmp_path: Path) -> None:
    # the reported replica: GET /models lists nothing (so the preflight cannot tell), every chat request 404
    # a and b answer in 30 ms (model delay, answers as label's): equal speeds, well above a loaded machine's noise
    equal = ServerState(delay_seconds=0.03)
    with openai_server(equal) as (url_a, a), openai_server(ServerState(broken="404")) as (url_bad, bad), \
            openai_server(ServerState(delay_seconds=0.03)) as (url_b, b), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = replica_backend([url_a, url_bad, url_b], "delay", concurrency=1)
        backend.preflight()
        stage = _stage(backend, cache)
        errors = cache.stats()["errors"]
    # request 1 goes to a, request 2 to the broken replica: 404, out at once, and the request goes on to b
    # without using up a retry; a and b then share the rest by speed (6 each for equal speeds; at least 4
    # unless one measures twice as fast). Before the fix every 3rd row was a stored row error.
    assert [g.text for g in stage.generations] == LABELS and stage.errors == 0 and errors == 0
    assert bad.count() == 1 and a.count() + b.count() == 12 and min(a.count(), b.count()) >= 4
    assert backend.retries == 0
    assert [e.public for e in backend._pool.live()] == [url_a, url_b]


def test_a_replica_refusing_what_another_answers_is_taken_out(tmp_path: Path) -> None:
    # a replica that answers 400 to everything (a parameter its version rejects, say): each refusal is asked
    # of the other replica, which answers it, so the refusal is the replica's failure, not the row's error
    with openai_server() as (url_a, a), openai_server(ServerState(broken="400")) as (url_bad, bad), \
            ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = replica_backend([url_a, url_bad], concurrency=1, max_failures=1)
        stage = _stage(backend, cache)
        errors = cache.stats()["errors"]
    assert [g.text for g in stage.generations] == LABELS and stage.errors == 0 and errors == 0
    assert (a.count(), bad.count()) == (12, 1) and backend.retries == 0  # its one refusal, then out
    assert [e.public for e in backend._pool.live()] == [url_a]
    assert backend._pool.endpoints[1].reason.startswith(f"refused a request another endpoint answered (HTTP 400 from "
                                                        f"{url_bad}/chat/completions: bad request)")


def test_a_refusal_both_replicas_give_is_the_rows_and_takes_no_replica_out(tmp_path: Path) -> None:
    refused = [i for i, p in enumerate(PROMPTS) if affected(p)]
    with openai_server() as (url_a, a), openai_server() as (url_b, b), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = replica_backend([url_a, url_b], "refuse", concurrency=1)
        stage = _stage(backend, cache)
        errors = cache.stats()["errors"]
        assert [i for i, g in enumerate(stage.generations) if g.error] == refused and errors == len(refused) > 0
        assert all(stage.generations[i].permanent and stage.generations[i].status == 400 for i in refused)
        # each refused prompt was asked of both replicas (a second opinion), the others once
        assert a.count() + b.count() == len(PROMPTS) + len(refused)
        assert len({sha for _, sha in a.requests} & {sha for _, sha in b.requests}) == len(refused)
        assert len(backend._pool.live()) == 2 and all(e.failures == 0 for e in backend._pool.endpoints)
        # the same prompts again: the row errors come from the cache, nothing is asked
        again = _stage(replica_backend([url_a, url_b], "refuse", concurrency=1), cache)
        assert again.model_calls == 0 and [g.error for g in again.generations] == [g.error for g in stage.generations]


def test_no_usable_answer_from_one_replica_is_never_the_rows_error(tmp_path: Path) -> None:
    # one attempt per request: the broken replica's empty reply is all there is for its request, while the
    # other replica answers everything; before the fix it was stored as the row's error and replayed
    one_try = RetryPolicy(max_retries=0)
    with openai_server() as (url_a, a), openai_server(ServerState(broken="nochoices")) as (url_bad, bad), \
            ResponseCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(RunIncomplete, match=r"^generate: 1 of 12 requests to openai:label failed \(first: gave up "
                                                r"after 1 attempts: reply has no choices"):
            _stage(replica_backend([url_a, url_bad], concurrency=1, retry=one_try, model_id="L"), cache)
        assert cache.stats()["errors"] == 0 and bad.count() == 1
        # the broken replica left out (one model_id: the same cache entries): asked again
        rerun = _stage(replica_backend([url_a], retry=one_try, model_id="L"), cache)
    assert rerun.model_calls == 1 and [g.text for g in rerun.generations] == LABELS
    # with retries, the retry goes to the other replica and the answer comes from there
    with openai_server() as (url_a, a), openai_server(ServerState(broken="nochoices")) as (url_bad, bad), \
            ResponseCache(tmp_path / "c2.sqlite") as cache:
        backend = replica_backend([url_a, url_bad], concurrency=1)
        stage = _stage(backend, cache)
    assert [g.text for g in stage.generations] == LABELS and (bad.count(), backend.retries) == (1, 1)


def test_a_server_that_loses_its_model_mid_run_stores_no_row_error(tmp_path: Path) -> None:
    # one server; it answered, then (restarted with another model) answers 404 to everything. Before the
    # fix the model had answered, so every 404 was stored as its row's error and replayed by reruns.
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = OpenAICompatBackend("label", base_url=url, retry=FAST)
        assert _stage(backend, cache, PROMPTS[:6]).model_calls == 6
        state.broken = "404"
        with pytest.raises(RunIncomplete) as caught:
            _stage(backend, cache)
        assert str(caught.value) == (
            f"generate: 6 of 6 requests to openai:label failed (first: gave up after 1 attempts: HTTP 404 from "
            f"{url}/chat/completions: The model `label` does not exist. (the server does not serve 'label' there: "
            "check the model name and --base-url)); the others are cached: run the same command again to retry")
        assert cache.stats()["errors"] == 0 and state.count() == 12 and backend.retries == 0  # one attempt each
        state.broken = None  # the server is fixed: the same stage asks exactly the 6 again
        fixed = _stage(OpenAICompatBackend("label", base_url=url, retry=FAST), cache)
    assert fixed.model_calls == 6 and [g.text for g in fixed.generations] == LABELS and state.count() == 18


def test_every_replica_answering_404_gives_up_at_once(tmp_path: Path) -> None:
    with openai_server(ServerState(broken="404")) as (url_a, a), openai_server(ServerState(broken="404")) as (url_b, b), \
            ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = replica_backend([url_a, url_b], concurrency=1)
        with pytest.raises(RunIncomplete, match=r"^generate: 12 of 12 requests to openai:label failed \(first: gave up "
                                                r"after 1 attempts: HTTP 404 from "):
            _stage(backend, cache)
        assert cache.stats()["errors"] == 0
    # the first request meets both replicas (each 404, each out); the others meet the replicas out of
    # rotation, one request at a time, and give up once both have said 404 (at most one retry each)
    assert a.count() + b.count() <= 2 + 11 * 2 and backend.retries <= 11


def _nc(nc_built: Path, tmp_path: Path, name: str, base_url: str, judge_url: str, *extra: str) -> list[str]:
    return ["run", "nc", "--config", "basic", "--limit", "24", "--model", "openai:echo", "--judge", "openai:label",
            "--base-url", base_url, "--judge-base-url", judge_url, "--concurrency", "4", "--api-key-env",
            "NO_SUCH_KEY_VAR", "--dataset", str(nc_built), "--out", str(tmp_path / name), "--cache",
            str(tmp_path / f"{name}.sqlite"), "--no-progress",
            # the fake judge answers "I am not sure" on ~1 row in 6 (tests/support/openai_server.py)
            "--max-unparsed-rate", "1", *extra]


def test_a_run_over_replicas_with_a_broken_one_gives_the_one_server_numbers(nc_built: Path, tmp_path: Path) -> None:
    # the reported command, small: three generator replicas, one that lists no models and answers 404 to
    # everything. The numbers must be those of a run on one sound server, and nothing stored as an error.
    with openai_server() as (url_a, a), openai_server(ServerState(broken="404")) as (url_bad, bad), \
            openai_server() as (url_b, b), openai_server() as (url_j, j):
        assert main(_nc(nc_built, tmp_path, "alone", url_a, url_j)) == 0
        assert main(_nc(nc_built, tmp_path, "replicas", f"{url_a},{url_bad},{url_b}", url_j)) == 0
    alone, replicas = (json.loads((tmp_path / n / "results.json").read_text()) for n in ("alone", "replicas"))
    assert run_records(tmp_path / "replicas") == run_records(tmp_path / "alone")
    assert replicas["errors"] == alone["errors"] == 0 and replicas["accuracy"] == alone["accuracy"]
    assert replicas["stats"]["model_calls"] == 24 and 1 <= bad.count() <= 4  # at most the first 4 in flight
    with ResponseCache(tmp_path / "replicas.sqlite") as cache:
        assert cache.stats()["errors"] == 0


def test_a_failed_name_lookup_is_unreachable_whatever_the_resolver() -> None:
    # aiohttp's threaded resolver keeps a socket.gaierror; its aiodns resolver (aiohttp[speedups]) raises
    # OSError(None, message), with no errno: both are an unknown host, out of the rotation at once
    import socket
    from types import SimpleNamespace

    import aiohttp

    from convbench_datasets.engine.backends.openai_compat import _unreachable

    key = SimpleNamespace(host="no-such-host.invalid", port=443, ssl=True)
    threaded = aiohttp.ClientConnectorDNSError(key, socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
    aiodns = aiohttp.ClientConnectorDNSError(key, OSError(None, "Domain name not found"))
    refused = aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "Connection refused"))
    reset = aiohttp.ClientOSError(104, "Connection reset by peer")  # a connection was made: not unreachable
    assert [_unreachable(e) for e in (threaded, aiodns, refused, reset)] == [True, True, True, False]
