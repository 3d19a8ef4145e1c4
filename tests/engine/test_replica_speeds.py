"""How a replica pool measures its replicas' speed (convbench_datasets.engine.backends.endpoints): only replies
count as replies (a replica that fails fast is not fast), speeds forget the past (SPEED_HALF_LIFE), a replica
with no reply yet counts as the mean of the others, and an ``anthropic:`` replica that refuses connections
leaves the rotation at its first failure. Time is the pool's replaceable clock, moved by hand."""

from __future__ import annotations

import warnings

import pytest

from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.backends.endpoints import SPEED_HALF_LIFE, EndpointPool
from convbench_datasets.engine.backends.openai_compat import RetryPolicy
from tests.support.network import closed_url


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _pool(n: int) -> tuple[EndpointPool, Clock, list]:
    clock = Clock()
    pool = EndpointPool([f"http://{name}/v1" for name in "abc"[:n]], clock=clock)
    return pool, clock, pool.endpoints


def test_the_half_life_is_a_minute() -> None:
    assert SPEED_HALF_LIFE == 60.0  # the module docstring's and docs/runner.md's figure


def test_a_failed_attempt_is_no_reply() -> None:
    pool, clock, (a, _) = _pool(2)
    chosen = pool.acquire(avoid=[pool.endpoints[1]])
    clock.now = 0.5
    pool.release(chosen, False)  # failed after half a second
    assert a.speed() is None  # no reply yet: no speed (a failure is none)
    pool.acquire(avoid=[pool.endpoints[1]])
    clock.now = 2.5
    pool.release(a, True)  # one reply, after 2 s
    # by hand: 1 reply over 0.5 + 2 = 2.5 request-seconds in flight, decayed alike (2.5 s is 1/24 of a half-life:
    # replies and busy time shrink by the same factor, within 3%); the failure would make it 2 / 2.5
    assert a.speed() == pytest.approx(1 / 2.5, rel=0.03)


def test_a_replica_that_fails_fast_does_not_win_ties() -> None:
    pool, clock, (a, b) = _pool(2)
    assert pool.acquire() is a and pool.acquire() is b  # t=0: one request at each
    clock.now = 1.0
    pool.release(a, True)  # a answers in 1 s
    assert pool.acquire() is a  # b still busy
    clock.now = 1.01
    pool.release(a, False)  # a fails at once (10 ms)
    assert pool.acquire() is a  # b still busy: the retry goes to a
    clock.now = 2.01
    pool.release(a, True)  # a answers in 1 s: its failure count is 0 again
    clock.now = 2.5
    pool.release(b, True)  # b answers in 2.5 s
    # now both are idle with no failure on record: the tie goes to the one further behind its share by speed,
    # requests sent over speed (replies per request-second). By hand, decay ignored (under 3% over 2.5 s, the
    # same factor for each tally of a replica):
    #   a: 3 sent, 2 replies over 1 + 0.01 + 1 = 2.01 s -> 3 / (2 / 2.01) = 3.015
    #   b: 1 sent, 1 reply over 2.5 s                   -> 1 / (1 / 2.5)  = 2.5    -> b is further behind: b
    # counting a's failure as a reply would make a 3 / (3 / 2.01) = 2.01: a, the replica that failed, would win
    assert pool.acquire() is b


def test_speeds_forget_the_past() -> None:
    pool, clock, (a, b) = _pool(2)
    assert pool.acquire() is a and pool.acquire() is b
    clock.now = 1.0
    pool.release(a, True)  # long ago, a was fast (1 s)...
    clock.now = 10.0
    pool.release(b, True)  # ...and b slow (10 s)
    start = 600.0  # ten half-lives later: the past weighs 2**-10 (about 0.001)
    clock.now = start
    x, y = pool.acquire(), pool.acquire()
    assert {x, y} == {a, b}
    clock.now = start + 1
    pool.release(b, True)  # now b is fast (1 s)...
    clock.now = start + 5
    pool.release(a, True)  # ...and a slow (5 s)
    # by hand: lately a has 1 reply over 5 s (speed 0.2), b 1 reply over 1 s (speed 1); the past adds about 0.001 of
    # its tallies. Never forgotten, a would be 2 replies over 6 s (0.33) and b 2 over 11 s (0.18)
    assert a.speed() == pytest.approx(0.2, rel=0.02)
    assert b.speed() == pytest.approx(1.0, rel=0.02)
    # ties go to the one further behind: a 1 sent / 0.2 = 5 against b 1 / 1 = 1: b (never forgotten: a 2 / 0.33 = 6
    # against b 2 / 0.18 = 11, a)
    assert pool.acquire() is b


def test_a_replica_that_has_not_replied_counts_as_the_mean_of_the_others() -> None:
    pool, clock, (a, b, c) = _pool(3)
    assert [pool.acquire() for _ in range(3)] == [a, b, c]  # t=0: one request at each
    clock.now = 1.0
    pool.release(c, None)  # c's request abandoned without a verdict: c has sent 1 and replied to none
    clock.now = 2.0
    pool.release(a, True)  # a: 1 reply in 2 s, speed 0.5
    clock.now = 4.0
    pool.release(b, True)  # b: 1 reply in 4 s, speed 0.25
    assert c.speed() is None
    # by hand, decay ignored (under 5% over 4 s, the same factor for each replica's tallies): requests sent over
    # speed, each has sent 1:
    #   a: 1 / 0.5 = 2;  b: 1 / 0.25 = 4;  c: 1 / mean(0.5, 0.25) = 1 / 0.375 = 2.67 -> a
    # were c counted at speed 1.0 it would be 1 / 1 = 1, the least: c
    assert pool.acquire() is a
    assert pool.acquire() is c  # then c (2.67) before b (4)


def test_an_anthropic_replica_that_refuses_connections_leaves_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("anthropic", reason="the anthropic backend needs the anthropic extra")
    from tests.support.anthropic_server import anthropic_server

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")  # the test server's key
    dead = closed_url()
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(4)]
    with anthropic_server() as (url, state), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*endpoints share one cache identity")
        backend = backend_from_spec("anthropic:claude-echo", base_url=[dead, url], concurrency=1,
                                    retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02))
        try:
            out = dict(backend.generate(prompts, GenerationParams(16)))  # no preflight: the first request finds it
        finally:
            backend.close()
    assert [out[i].text for i in range(4)] == ["q0", "q1", "q2", "q3"]
    # the first request goes to the dead replica (first in the list), whose refused connection takes it out at
    # once: the request moves to the live one without spending a retry, and the dead one is out of rotation
    # (counted as an ordinary failure it would stay in until its 3rd, and the request would be retried)
    assert backend.retries == 0 and len(state.bodies) == 4
    dead_endpoint = backend._pool.endpoints[0]
    assert dead_endpoint.out_until is not None and dead_endpoint.failures == 1
    assert [e.public for e in backend._pool.live()] == [url]
