"""A served judge with the generator's own spec: the generator's twin, pipelined beside it on the event loop."""

from __future__ import annotations

import threading
from pathlib import Path

from convbench_datasets import run_nc
from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.backends import ModelRole
from convbench_datasets.engine.session import Session
from tests.support.openai_server import ServerState, label_for, openai_server

JUDGE_MARK = "Classify"  # every judge prompt of the released template asks to classify the response


def _is_judge(body: dict) -> bool:
    return any(JUDGE_MARK in m["content"] for m in body["messages"])


def test_a_twin_shares_identity_preflight_and_connections_and_counts_its_own_calls() -> None:
    state = ServerState()
    with openai_server(state) as (url, _):
        original = backend_from_spec("openai:echo", base_url=url)
        twin = original.twin()
        assert twin is not None and twin is not original
        assert twin.identity() == original.identity() and twin.spec == original.spec  # same cache keys
        assert twin.twin()._twin_of is original  # a twin's twin is the original's
        twin.preflight()
        original.preflight()
        twin.twin().preflight()
        assert state.gets == 1  # one check for all of them
        prompt = [{"role": "user", "content": "hello"}]
        assert [g.text for _, g in twin.generate([prompt], GenerationParams(8))] == ["hello"]
        assert (twin.calls, original.calls) == (1, 0)
        twin.close()  # the twin's connections are the original's: still open for it
        assert original._http is not None
        assert [g.text for _, g in original.generate([prompt], GenerationParams(8))] == ["hello"]
        assert (twin.calls, original.calls) == (1, 1)
        original.close()
        assert original._http is None


def test_a_session_gives_a_served_same_spec_judge_a_twin_and_a_local_one_the_generator(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as store:
        role = ModelRole("openai:m", base_url="http://127.0.0.1:9/v1")
        served = Session(store, role, [role], progress=False)
        assert served.same
        judge = served.judge(0)
        assert judge is not served.generator and judge._twin_of is served.generator
        assert served.identities()["judge_identity"] == served.identities()["model_identity"]
        baseline = Session(store, "baseline:repeat", ["baseline:repeat"], progress=False)
        assert baseline.same and baseline.judge(0) is baseline.generator  # no twin: one object in both roles


def test_a_same_spec_served_judge_runs_beside_generation_with_one_preflight(tmp_path: Path, nc_built: Path) -> None:
    workers: list[int] = []  # convbench-stage-worker threads alive at each judge request

    def answer(request: dict) -> str:
        if _is_judge(request):
            workers.append(sum(t.name == "convbench-stage-worker" for t in threading.enumerate()))
        return label_for(request["messages"])

    state = ServerState(delay_seconds=0.02, answer=answer)
    with openai_server(state) as (url, _):
        kwargs = dict(model="openai:delay", judge="openai:delay", config="basic", limit=48, dataset=nc_built,
                      progress=False, backend_options={"base_url": url, "concurrency": 4},
                      max_unparsed_rate=1)  # label_for answers "I am not sure" on ~1 row in 6 (openai_server.py)
        run = run_nc(out=tmp_path / "run", cache=tmp_path / "a.sqlite", **kwargs)
        judged = [_is_judge(b) for b in state.bodies]
        assert len(judged) == 96 and sum(judged) == 48
        # the judge's first request came before generation's last: the stages overlapped
        assert judged.index(True) < len(judged) - 1 - judged[::-1].index(False)
        assert state.gets == 1  # the twin's preflight is the generator's
        assert workers and max(workers) == 0  # asked on the event loop, no thread per request
        assert run.results["stats"]["model_calls"] == 48 and run.results["stats"]["judge_calls"] == 48
        sequential = run_nc(out=tmp_path / "seq", cache=tmp_path / "b.sqlite", pipelined=False, **kwargs)
        later = [_is_judge(b) for b in state.bodies[96:]]
        assert later == [False] * 48 + [True] * 48  # not pipelined: every generation request first
    assert run.records == sequential.records
    def without_time(results: dict) -> dict:
        return {**results, "stats": {k: v for k, v in results["stats"].items() if k not in ("seconds", "created")}}

    assert without_time(run.results) == without_time(sequential.results)


def test_a_loop_fed_judge_keeps_its_own_concurrency(tmp_path: Path, nc_built: Path) -> None:
    gen, judge = ServerState(delay_seconds=0.02), ServerState(delay_seconds=0.05)
    with openai_server(gen) as (gen_url, _), openai_server(judge) as (judge_url, _):
        run_nc(model="openai:delay", judge="openai:delay", config="basic", limit=40, dataset=nc_built, progress=False,
               out=tmp_path / "run", cache=tmp_path / "a.sqlite", backend_options={"base_url": gen_url, "concurrency": 8},
               judge_options={"base_url": judge_url, "concurrency": 3},
               max_unparsed_rate=1)  # the fake judge answers "I am not sure" on ~1 row in 6 (openai_server.py)
    assert judge.count() == 40 and judge.peak == 3  # at most its 3 in flight, and it used them all
