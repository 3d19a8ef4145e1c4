"""Several endpoints per role (issue #14, "Several endpoints per role"): requests spread over replicas by
least outstanding requests, a dead replica taken out of rotation, a cache identity that does not name
the replica that answered, and a one-line error when no replica can be reached.

Expected answers come from the test server's deterministic ``label_for`` (tests/support/openai_server.py);
request counts are the servers' own tallies of the chat requests they received."""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.backends.endpoints import EndpointPool, endpoint_urls
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import complete
from tests.support.network import closed_url
from tests.support.openai_server import ServerState, label_for, openai_server
from tests.support.replicas import FAST, replica_backend, run_records

PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(12)]
PARAMS = GenerationParams(max_new_tokens=16)
LABELS = [label_for(p) for p in PROMPTS]


def _texts(out: dict) -> list[str]:
    assert all(g.error is None for g in out.values()), [g.error for g in out.values() if g.error]
    return [out[i].text for i in range(len(out))]


def _equal() -> ServerState:
    """A replica answering in 30 ms (model ``delay``, answers as ``label``'s): two of them measure as equal
    speeds, far above a loaded machine's millisecond noise (routing shares requests by measured speed)."""
    return ServerState(delay_seconds=0.03)


def test_equal_replicas_take_turns() -> None:
    # one request at a time: both have none in flight, so the one behind its share by speed goes next (6
    # each for equal speeds: tests/engine/test_replica_shares.py; at least 4 unless one measures twice as fast)
    with openai_server(_equal()) as (url_a, a), openai_server(_equal()) as (url_b, b):
        backend = replica_backend([url_a, url_b], "delay", concurrency=1)
        backend.preflight()
        out = dict(backend.generate(PROMPTS, PARAMS))
    assert _texts(out) == LABELS
    assert a.count() + b.count() == 12 and min(a.count(), b.count()) >= 4
    assert (a.gets, b.gets) == (1, 1)  # every endpoint preflighted once


def test_a_busy_replica_gets_fewer_requests() -> None:
    # b holds its first request until the test lets it go: with 2 workers, one waits on b while the
    # other always finds a with 0 in flight and b with 1, so a answers the other 19 (least outstanding)
    gate = threading.Event()
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(20)]
    with openai_server() as (url_a, a), openai_server(ServerState(hold=gate)) as (url_b, b):
        backend = replica_backend([url_a, url_b], concurrency=2)
        out = {}
        try:
            for index, generation in backend.generate(prompts, PARAMS):
                out[index] = generation
                if len(out) == 19:
                    gate.set()
        finally:
            gate.set()
    assert _texts(out) == [label_for(p) for p in prompts]
    assert (a.count(), b.count()) == (19, 1)


def test_a_replica_dead_at_start_is_left_out_with_a_warning() -> None:
    dead = closed_url()
    with openai_server(_equal()) as (url_a, a), openai_server(_equal()) as (url_b, b):
        backend = replica_backend([url_a, dead, url_b], "delay", concurrency=1)
        with pytest.warns(UserWarning, match=rf"openai:delay: connection to {dead}/models failed: .*; left out of "
                                             r"rotation for 30s, then tried again \(2 of 3 endpoints answer\)"):
            backend.preflight()
        out = dict(backend.generate(PROMPTS, PARAMS))
    assert _texts(out) == LABELS and backend.retries == 0
    # the dead one was never tried: no request spent on it (retries 0), a and b shared them
    assert a.count() + b.count() == 12 and min(a.count(), b.count()) >= 4


def test_a_replica_that_dies_mid_run_is_taken_out_and_the_results_are_the_same() -> None:
    with openai_server(_equal()) as (url_a, a), openai_server(_equal()) as (url_b, b):
        with openai_server() as (url_c, c):
            backend = replica_backend([url_a, url_b, url_c], "delay", concurrency=1)
            backend.preflight()
        # c is shut down: its turn (the 3rd request) is refused, c leaves the rotation, and that request
        # goes at once to another without using up a retry; a and b then share the rest
        out = dict(backend.generate(PROMPTS, PARAMS))
    assert _texts(out) == LABELS and backend.retries == 0 and backend.calls == 12
    assert c.count() == 0 and a.count() + b.count() == 12 and min(a.count(), b.count()) >= 4
    assert [e.public for e in backend._pool.live()] == [url_a, url_b]


def test_the_deadline_holds_per_endpoint_and_the_retry_goes_elsewhere() -> None:
    # a never answers in time: its attempt ends at the deadline (0.5 s in all), and the retry goes to b,
    # which has no failure on record; a failure breaks ties, so b answers everything after
    gate = threading.Event()
    with openai_server(ServerState(hold=gate)) as (url_a, a), openai_server() as (url_b, b):
        try:
            backend = replica_backend([url_a, url_b], concurrency=1, timeout=0.5)
            out = dict(backend.generate(PROMPTS, PARAMS))
        finally:
            gate.set()
    assert _texts(out) == LABELS and backend.retries == 1
    assert (a.count(), b.count()) == (1, 12)


def test_every_replica_redacts_the_key_and_refuses_rows_alike() -> None:
    secret = "sk-replica-secret-4711"
    os.environ["CONVBENCH_REPLICA_KEY"] = secret
    try:
        with openai_server() as (url_a, a), openai_server() as (url_b, b):
            backend = replica_backend([url_a, url_b], "refuse-echo", concurrency=1, api_key_env="CONVBENCH_REPLICA_KEY")
            out = dict(backend.generate(PROMPTS, PARAMS))
    finally:
        del os.environ["CONVBENCH_REPLICA_KEY"]
    refused = [i for i, g in out.items() if g.error]
    # a row refusal is the row's once the other replica refuses it too (each refused prompt is asked of
    # both), not a replica failure: both stay in rotation, with no failure on record
    assert a.count() + b.count() == len(PROMPTS) + len(refused) and refused
    assert len({sha for _, sha in a.requests} & {sha for _, sha in b.requests}) == len(refused)
    assert len(backend._pool.live()) == 2 and all(e.failures == 0 for e in backend._pool.endpoints)
    assert set(a.authorizations) == set(b.authorizations) == {f"Bearer {secret}"}
    for i in refused:
        assert out[i].permanent and out[i].status == 400 and secret not in out[i].error and "[redacted]" in out[i].error


def _attempt(pool: EndpointPool, target, ok: bool, **kwargs) -> bool:
    """A request the pool sends to ``target`` (the other endpoints avoided), ended with ``ok``."""
    chosen = pool.acquire(avoid=[e for e in pool.endpoints if e is not target])
    assert chosen is target
    return pool.release(chosen, ok, **kwargs)


def test_repeated_failures_take_an_endpoint_out_until_the_cooldown_ends() -> None:
    now = [0.0]
    pool = EndpointPool(["http://a/v1", "http://b/v1"], cooldown=30, max_failures=3, clock=lambda: now[0])
    a, b = pool.endpoints
    assert [_attempt(pool, a, False), _attempt(pool, a, False), _attempt(pool, a, True)] == [False, False, False]
    assert a.failures == 0  # a reply clears the record: failures must come in a row
    assert [_attempt(pool, a, False) for _ in range(3)] == [False, False, True]  # the 3rd in a row: out
    assert pool.live() == [b] and [pool.acquire() for _ in range(3)] == [b, b, b]
    for _ in range(3):
        pool.release(b, True)
    now[0] = 29.9
    assert pool.live() == [b]
    now[0] = 30.0  # the cool-down is over: back, on probation
    assert pool.live() == [a, b] and a.failures == 2
    assert _attempt(pool, a, False) is True  # one more failure: out again at once, for another 30 s
    now[0] = 60.0
    assert _attempt(pool, a, True) is False and a.failures == 0
    assert _attempt(pool, b, False, unreachable=True) is True  # no connection at all: out at the first failure
    now[0] = 61.0
    assert _attempt(pool, a, False, unreachable=True) is True
    # none in rotation: the request goes to the endpoint whose cool-down ends first (b: 90 s, a: 91 s)
    assert pool.live() == [] and pool.acquire() is b


def test_endpoint_lists_are_read_strictly() -> None:
    assert endpoint_urls("http://a/v1/, http://b/v1") == ["http://a/v1", "http://b/v1"]
    assert endpoint_urls(["http://a/v1,http://b/v1", "http://c/v1"]) == ["http://a/v1", "http://b/v1", "http://c/v1"]
    with pytest.raises(ConvbenchError, match=r"^base URL list 'http://a/v1,' has an empty entry; separate URLs with "
                                             r"single commas$"):
        endpoint_urls("http://a/v1,")
    with pytest.raises(ConvbenchError, match=r"^base URL http://a/v1 is given twice; list each server once$"):
        endpoint_urls(["http://a/v1", "http://a/v1?x=1"])  # the same server, query aside
    with pytest.raises(ConvbenchError, match=r"^base URL must start with http:// or https://, got 'localhost:1/v1'$"):
        endpoint_urls("http://a/v1,localhost:1/v1")


def test_the_cache_identity_names_no_replica() -> None:
    one = OpenAICompatBackend("m", base_url="http://127.0.0.1:8000/v1")
    assert one.identity() == {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}  # as before
    with pytest.warns(UserWarning, match=r"^openai:m: 2 endpoints share one cache identity \(kind and model name, "
                                         r"without the URLs\): you vouch that they serve the same weights"):
        several = backend_from_spec("openai:m", base_url="http://127.0.0.1:8000/v1,http://127.0.0.1:8001/v1")
    assert several.identity() == {"kind": "openai", "model": "m"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a named model: the user vouched by naming it, no warning
        named = backend_from_spec("openai:m", base_url=["http://a/v1", "http://b/v1"], model_id="llama-3.3-70b@sha1")
    assert named.identity() == {"kind": "openai", "model": "m", "model_id": "llama-3.3-70b@sha1"}
    with pytest.raises(ConvbenchError, match="model id must be a non-empty name, got ' '"):
        OpenAICompatBackend("m", model_id=" ")


def test_model_id_keeps_one_server_cached_across_a_host_rename(tmp_path: Path) -> None:
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        localhost = url.replace("127.0.0.1", "localhost")

        def stage(base_url: str, **options):
            backend = OpenAICompatBackend("label", base_url=base_url, retry=FAST, **options)
            return complete(backend, PROMPTS, PARAMS, cache, desc="generate", progress=False)

        assert stage(url, model_id="L").model_calls == 12
        renamed = stage(localhost, model_id="L")
        assert renamed.model_calls == 0 and all(renamed.cache_hits)
        assert [g.text for g in renamed.generations] == LABELS
        assert stage(localhost, model_id="L2").model_calls == 12  # another name: another model to the cache
        assert stage(url).model_calls == 12  # no name: keyed by the URL, as caches made before pools are
        assert state.count() == 36


def _nc_run(nc_built: Path, tmp_path: Path, name: str, *options: str, judges: tuple[str, ...] = ("openai:label",)
            ) -> list[str]:
    return ["run", "nc", "--config", "basic", "--limit", "6", "--model", "openai:echo",
            *(a for spec in judges for a in ("--judge", spec)), "--concurrency", "1",
            "--api-key-env", "NO_SUCH_KEY_VAR", "--dataset", str(nc_built), "--out", str(tmp_path / name),
            "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
            # the fake judge answers "I am not sure" on ~1 row in 6 (tests/support/openai_server.py)
            "--max-unparsed-rate", "1", *options]


def _results(path: Path) -> dict:
    return json.loads((path / "results.json").read_text())


def test_replica_runs_hit_the_cache_whatever_the_hosts_and_order(nc_built: Path, tmp_path: Path, capsys) -> None:
    with openai_server() as (url_a, a), openai_server() as (url_b, b), \
            openai_server() as (url_j, j), openai_server() as (url_k, k):
        def local(url: str) -> str:
            return url.replace("127.0.0.1", "localhost")

        # a comma list for the model; for the one judge, --judge-base-url repeated: every value a replica
        assert main(_nc_run(nc_built, tmp_path, "first", "--base-url", f"{url_a},{url_b}",
                            "--judge-base-url", url_j, "--judge-base-url", url_k)) == 0
        # one request at a time, shared by speed: each replica gets one of the first two (neither has a speed yet)
        counts = (a.count(), b.count(), j.count(), k.count())
        assert (counts[0] + counts[1], counts[2] + counts[3]) == (6, 6) and min(counts) >= 1
        # the same run with every replica renamed (localhost) and listed the other way round
        assert main(_nc_run(nc_built, tmp_path, "again", "--base-url", local(url_b), "--base-url", local(url_a),
                            "--judge-base-url", f"{local(url_k)},{local(url_j)}")) == 0
        assert (a.count(), b.count(), j.count(), k.count()) == counts  # nothing asked again
        # another --model-id is another model to the cache: generation asked again; the judge's prompts
        # (the same echoed answers) and its identity are unchanged, so it is not
        assert main(_nc_run(nc_built, tmp_path, "named", "--base-url", f"{url_a},{url_b}", "--model-id", "echo-v1",
                            "--judge-base-url", f"{url_j},{url_k}")) == 0
        assert (a.count() + b.count(), j.count(), k.count()) == (12, *counts[2:])
    err = capsys.readouterr().err
    assert "convbench: warning: openai:echo: 2 endpoints share one cache identity" in err
    assert run_records(tmp_path / "first") == run_records(tmp_path / "again") == run_records(tmp_path / "named")
    first, again, named = (_results(tmp_path / n) for n in ("first", "again", "named"))
    assert again["stats"]["model_calls"] == again["stats"]["judge_calls"] == 0
    assert first["accuracy"] == again["accuracy"] == named["accuracy"]
    assert again["signature"]["model_identity"] == {"kind": "openai", "model": "echo"}
    assert named["signature"]["model_identity"] == {"kind": "openai", "model": "echo", "model_id": "echo-v1"}
    assert again["signature"]["judge_identity"] == {"kind": "openai", "model": "label"}


def test_two_judges_each_get_their_replica_list(nc_built: Path, tmp_path: Path) -> None:
    # with several --judge, --judge-base-url once per judge keeps its meaning; each value may list replicas
    with openai_server() as (url_a, a), openai_server() as (url_b, b), openai_server() as (url_c, c):
        assert main(_nc_run(nc_built, tmp_path, "run", "--base-url", url_a, "--judge-base-url", f"{url_a},{url_b}",
                            "--judge-base-url", url_c, "--judge-model-id", "L1", "--judge-model-id", "L2",
                            judges=("openai:label", "openai:label"))) == 0
    # a: the 6 generations and some of the first judge's 6, b the rest of them (how many each depends on the
    # replicas' measured speed; b, unmeasured at first, is behind its share, so it gets at least one); c: all of
    # the second judge's
    assert c.count() == 6 and a.count() + b.count() == 12 and a.count() >= 6 and b.count() >= 1
    identities = _results(tmp_path / "run")["signature"]["judge_identities"]
    assert identities == [{"kind": "openai", "model": "label", "model_id": "L1"},
                          {"kind": "openai", "model": "label", "model_id": "L2"}]


def test_no_reachable_replica_fails_fast_in_one_line(nc_built: Path, tmp_path: Path, capsys) -> None:
    dead_1, dead_2 = closed_url(), closed_url()
    backend = replica_backend([dead_1, dead_2])
    with pytest.raises(ConvbenchError) as caught:
        backend.preflight()
    message = str(caught.value)
    assert message.startswith(f"no endpoint of openai:label can be reached: connection to {dead_1}/models failed: ")
    assert f"; connection to {dead_2}/models failed: " in message and "\n" not in message
    assert message.endswith("; check --base-url and that the servers are running")
    assert main(_nc_run(nc_built, tmp_path, "run", "--base-url", f"{dead_1},{dead_2}")) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("convbench: error: no endpoint of openai:echo can be reached: ")
    assert [line for line in lines if "error" in line] == lines[-1:] and not (tmp_path / "run" / "results.json").exists()


def test_replicas_that_all_die_mid_run_fail_as_the_retry_policy_says() -> None:
    with openai_server() as (url_a, a), openai_server() as (url_b, b):
        backend = replica_backend([url_a, url_b], concurrency=1)
        backend.preflight()
    out = dict(backend.generate(PROMPTS, PARAMS))  # both shut down: every attempt refused
    assert len(out) == 12 and not any(g.permanent for g in out.values())
    assert all(g.error.startswith("gave up after 3 attempts: connection to ") for g in out.values())
    assert backend.retries == 12 * 2  # FAST: 2 retries per request, as with one server


def test_cli_options_are_checked(tmp_path: Path, capsys) -> None:
    base = ["run", "nc", "--judge", "openai:label", "--out", str(tmp_path / "run")]
    assert main([*base, "--model", "baseline:repeat", "--model-id", "x"]) == 1
    assert main([*base, "--model", "openai:m", "--judge", "openai:x", "--judge-model-id", "a",
                 "--judge-model-id", "b", "--judge-model-id", "c"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "convbench: error: --model-id applies to openai: and anthropic: models only, not baseline:repeat",
        "convbench: error: --judge-model-id is given 3 times for 2 --judge: give it once (for every judge) or once "
        "per --judge, in the same order"]
