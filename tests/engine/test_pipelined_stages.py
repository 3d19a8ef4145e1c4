"""Pipelined stages: the judge works on each row as soon as its generation is stored (stage.pipeline)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.engine import Backend, Generation, GenerationParams, ResponseCache
from convbench_datasets import run_nc
from convbench_datasets.engine.stage import RunIncomplete
from tests.support.openai_server import ServerState, openai_server


def _digit(messages: Sequence[dict]) -> int:
    return int(hashlib.sha256(json.dumps(list(messages), sort_keys=True).encode()).hexdigest()[0], 16)


class Writer(Backend):
    """A generator: answer from the prompt's hash; prompts whose hash digit is 0 are refused for good."""

    kind, model = "stub", "writer"

    def __init__(self) -> None:
        self.calls, self.closed, self.log = 0, False, []

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            self.log.append("generate")
            if _digit(messages) == 0:
                yield i, Generation("", error="HTTP 400: too long", permanent=True)
            else:
                yield i, Generation(f"Could you repeat that? ({_digit(messages)})")

    def close(self) -> None:
        self.closed = True


class Labeller(Backend):
    """A judge: a label from the prompt's hash; digit ``refuse`` is refused for good, digits in ``flaky`` fail for now."""

    kind = "stub"

    def __init__(self, name: str, refuse: int = 1, flaky: Sequence[int] = (), log: list[str] | None = None) -> None:
        self.model, self.refuse, self.flaky, self.calls, self.log = name, refuse, set(flaky), 0, log

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            if self.log is not None:
                self.log.append("judge")
            digit = _digit(messages)
            if digit == self.refuse:
                yield i, Generation("", error="HTTP 400: filtered", permanent=True)
            elif digit in self.flaky:
                yield i, Generation("", error="HTTP 503 after retries")
            else:
                yield i, Generation(["Repeat", "Answer", "Other", "PreClosing"][digit % 4])


class LocalLabeller(Labeller):
    """As Labeller, but a model in this process (an hf model stands for it): never pipelined."""

    holds_weights = True


def _run(tmp_path: Path, nc_built: Path, name: str, **kwargs):
    judges = kwargs.pop("judges", None) or [Labeller("a"), Labeller("b", refuse=2)]
    return run_nc(model=kwargs.pop("model", None) or Writer(), judge=judges, out=tmp_path / name, config="basic",
                  limit=40, dataset=nc_built, cache=kwargs.pop("cache", tmp_path / f"{name}.sqlite"), progress=False,
                  max_error_rate=1, **kwargs)  # the refusing judges' errors are counted, not a failed run


def _without_time(results: dict) -> dict:
    stats = {k: v for k, v in results["stats"].items() if k not in ("seconds", "created")}
    return {**results, "stats": stats}


def test_pipelined_run_equals_sequential(tmp_path: Path, nc_built: Path) -> None:
    on = _run(tmp_path, nc_built, "on", pipelined=True)
    off = _run(tmp_path, nc_built, "off", pipelined=False)
    assert on.records == off.records
    assert _without_time(on.results) == _without_time(off.results)
    errors = [r["error"] for r in on.records]
    # some rows fail in generation (not judged), some in the primary judge; none are dropped
    assert sum(e is not None and e.startswith("model:") for e in errors) > 0
    assert sum(e is not None and e.startswith("judge:") for e in errors) > 0
    assert on.stats["model_calls"] == 40 and on.stats["judge_calls"] == off.stats["judge_calls"]
    assert on.stats["judge_calls"] == 2 * sum(not (e or "").startswith("model:") for e in errors)
    # the same command again: everything from the cache, pipelined or not
    again = _run(tmp_path, nc_built, "again", pipelined=True, cache=tmp_path / "on.sqlite")
    assert again.stats["model_calls"] == 0 and again.stats["judge_calls"] == 0
    assert all(r["model_cache_hit"] for r in again.records)
    assert [r["judge_cache_hit"] for r in again.records] == [None if (r["error"] or "").startswith("model:") else True
                                                             for r in on.records]
    assert [_strip_hits(r) for r in again.records] == [_strip_hits(r) for r in on.records]


def _strip_hits(record: dict) -> dict:
    out = {k: v for k, v in record.items() if not k.endswith("cache_hit")}
    if "judges" in record:
        out["judges"] = [{k: v for k, v in j.items() if k != "judge_cache_hit"} for j in record["judges"]]
    return out


def test_pipelined_judge_failures_leave_run_incomplete_then_resume(tmp_path: Path, nc_built: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    with pytest.raises(RunIncomplete, match=r"judge 1/2: \d+ of \d+ requests to stub:a failed"):
        _run(tmp_path, nc_built, "first", judges=[Labeller("a", flaky=[5, 6]), Labeller("b", refuse=2)], cache=cache)
    with ResponseCache(cache) as store:  # everything that arrived was stored, flaky judgements excepted
        before = store.stats()
    retry = [Labeller("a"), Labeller("b", refuse=2)]
    run = _run(tmp_path, nc_built, "second", judges=retry, cache=cache)
    with ResponseCache(cache) as store:
        after = store.stats()
    assert run.stats["model_calls"] == 0 and retry[1].calls == 0
    flaky = [r for r in run.records if r["judge_cache_hit"] is False]
    assert retry[0].calls == len(flaky) > 0
    assert (after["entries"] - before["entries"], after["errors"] - before["errors"]) == (len(flaky), 0)
    fresh = _run(tmp_path, nc_built, "fresh", pipelined=False)
    assert [_strip_hits(r) for r in run.records] == [_strip_hits(r) for r in fresh.records]

class GatedWriter(Writer):
    """A generator that holds its last answer until a judge has been asked something (at most ``wait`` s)."""

    def __init__(self, judge_called: threading.Event, wait: float) -> None:
        super().__init__()
        self.judge_called, self.wait, self.judged_before_last = judge_called, wait, None

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, generation in super().generate(prompts, params):
            if i == len(prompts) - 1:
                self.judged_before_last = self.judge_called.wait(self.wait)
            yield i, generation


class SignallingLabeller(Labeller):
    def __init__(self, name: str, called: threading.Event, generator: Writer, holds_weights: bool) -> None:
        super().__init__(name)
        self.called, self.generator, self.holds_weights, self.generator_closed = called, generator, holds_weights, None

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        if self.generator_closed is None:
            self.generator_closed = self.generator.closed
        self.called.set()
        yield from super().generate(prompts, params)


@pytest.mark.parametrize("local", [False, True])
def test_judge_starts_during_generation_unless_it_holds_a_local_model(tmp_path: Path, nc_built: Path, local: bool) -> None:
    called = threading.Event()
    writer = GatedWriter(called, wait=0.5 if local else 10)  # local: nothing can set it
    judge = SignallingLabeller("j", called, writer, holds_weights=local)
    run = _run(tmp_path, nc_built, "run", model=writer, judges=[judge])
    # a judge holding a local model (hf) starts once generation is done; any other judge before the last answer.
    # The generator, an object passed in, is the caller's: never closed by the run
    assert (writer.judged_before_last, judge.generator_closed, writer.closed) == (not local, False, False)
    reference = _run(tmp_path, nc_built, "ref", judges=[Labeller("j")], pipelined=False)
    assert [_strip_hits(r) for r in run.records] == [_strip_hits(r) for r in reference.records]


def test_judge_server_starts_before_generation_ends(tmp_path: Path, nc_built: Path) -> None:
    gen_state, judge_state = ServerState(delay_seconds=0.02), ServerState(delay_seconds=0.02)
    with openai_server(gen_state) as (gen_url, _), openai_server(judge_state) as (judge_url, _):
        kwargs = dict(model="openai:delay", judge="openai:delay", config="basic", limit=48, dataset=nc_built,
                      progress=False, backend_options={"base_url": gen_url, "concurrency": 4},
                      judge_options={"base_url": judge_url, "concurrency": 4},
                      max_unparsed_rate=1)  # the fake judge answers "I am not sure" on ~1 row in 6 (openai_server.py)
        run = run_nc(out=tmp_path / "run", cache=tmp_path / "a.sqlite", **kwargs)
        assert len(gen_state.arrived) == 48 and len(judge_state.arrived) == 48
        assert judge_state.arrived[0] < gen_state.arrived[-1]
        sequential = run_nc(out=tmp_path / "seq", cache=tmp_path / "b.sqlite", pipelined=False, **kwargs)
        assert len(gen_state.arrived) == 96 and len(judge_state.arrived) == 96
        assert min(judge_state.arrived[48:]) > max(gen_state.arrived[48:])
    assert run.records == sequential.records
    assert _without_time(run.results) == _without_time(sequential.results)


def test_a_judge_prompt_repeated_while_the_first_is_in_flight_is_asked_once(tmp_path: Path) -> None:
    # Every row's answer leads to the same judge prompt. The judge holds its first answer until the generator
    # has handed on its last (so every repeat reaches the judge's stage while the first is in flight, and its
    # inbox, first in first out, holds them before that answer): the prompt is asked once and its answer is
    # every row's, as stage.complete asks identical prompts once (a stage that looked only at the cache and
    # at answers already stored asked it 8 times)
    from convbench_datasets.engine.stage import Follow, pipeline

    all_handed_on = threading.Event()

    class Feeder(Backend):
        kind, model = "stub", "feeder"

        def __init__(self) -> None:
            self.calls = 0

        def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
            for i, _ in enumerate(prompts):
                self.calls += 1
                yield i, Generation(f"answer {i}")
            all_handed_on.set()  # reached once the last answer is stored and its judge prompt fed

    class HeldJudge(Backend):
        kind, model = "stub", "held-judge"

        def __init__(self) -> None:
            self.calls, self.waited = 0, []

        def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
            for i, _ in enumerate(prompts):
                self.calls += 1
                self.waited.append(all_handed_on.wait(10))
                yield i, Generation("Repeat")

    prompts = [[{"role": "user", "content": f"question {i}"}] for i in range(8)]
    judge_prompt = [{"role": "user", "content": "label this answer"}]
    feeder, judge = Feeder(), HeldJudge()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        first, [(rows, judged)] = pipeline(feeder, prompts, GenerationParams(max_new_tokens=16), cache,
                                           follow=lambda i, generation: judge_prompt,
                                           then=[Follow(judge, GenerationParams(max_new_tokens=8), "judge")],
                                           desc="generate", progress=False)
    assert feeder.calls == 8 and first.model_calls == 8
    assert judge.waited == [True]  # one request, held until all 8 rows had been handed over
    assert judge.calls == 1 and judged.model_calls == 1
    assert sorted(rows) == list(range(8)) and [g.text for g in judged.generations] == ["Repeat"] * 8


@pytest.mark.parametrize("claim", [True, False])
def test_a_pipelined_judge_asks_each_prompt_once_with_claims_on_or_off(tmp_path: Path, claim: bool) -> None:
    # claims off (one process alone on its cache): every uncached prompt is the stage's to ask, at once; none
    # may also be left waiting for another process's answer (the stage would never end)
    from convbench_datasets.engine.stage import Follow, pipeline

    prompts = [[{"role": "user", "content": f"question {i}"}] for i in range(20)]
    writer, judge = Writer(), Labeller("j", refuse=-1)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        first, [(rows, judged)] = pipeline(writer, prompts, GenerationParams(max_new_tokens=16), cache,
                                           follow=lambda i, g: None if g.error else [{"role": "user", "content": g.text}],
                                           then=[Follow(judge, GenerationParams(max_new_tokens=8), "judge")],
                                           desc="generate", progress=False, claim=claim)
    answered = [i for i, g in enumerate(first.generations) if g.error is None]
    distinct = {json.dumps([{"role": "user", "content": first.generations[i].text}]) for i in answered}
    assert sorted(rows) == answered and judge.calls == judged.model_calls == len(distinct)  # each distinct prompt once
    assert all(g.error is None for g in judged.generations)
