"""The stage's guards (review of issue #10): a server that refuses every request alike is a run-level
error, never a set of stored per-row errors; backends of later stages are preflighted before the
first request of an earlier one, unless that stage is answered wholly from the cache."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.engine import Backend, Generation, GenerationParams, ResponseCache
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy
from convbench_datasets.engine.stage import ServerRefusesAll, complete
from tests.support.network import closed_url
from tests.support.openai_server import affected, openai_server

FAST = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02)
PARAMS = GenerationParams(max_new_tokens=8)
PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(12)]
REFUSED = [p for p in PROMPTS if affected(p)]  # the server's "refuse" mode answers 400 to these (5 of 12)
ANSWERED = [p for p in PROMPTS if not affected(p)]


class Scripted(Backend):
    """Answers "ok", or refuses with ``status`` and the message ``refusal(prompt)``; logs what it does."""

    kind = "stub"

    def __init__(self, log: list[str], name: str = "gen", status: int | None = None, refusal=None) -> None:
        self.model, self.log, self.status, self.refusal, self.calls = name, log, status, refusal, 0

    def preflight(self) -> None:
        self.log.append(f"preflight {self.model}")

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        self.log.append(f"generate {self.model}")
        for i, messages in enumerate(prompts):
            self.calls += 1
            if self.status is None:
                yield i, Generation("ok")
            else:
                yield i, Generation("", error=f"refused for this row: HTTP {self.status} from stub: {self.refusal(messages)}",
                                    permanent=True, status=self.status)


def test_a_server_refusing_every_request_alike_is_a_run_error(tmp_path: Path) -> None:
    # Before the fix each request's 400 became a stored per-row error, the run exited 0, and reruns
    # reused the errors without asking.
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = OpenAICompatBackend("reject-param", base_url=url, retry=FAST)
        with pytest.raises(ServerRefusesAll) as err:
            complete(backend, PROMPTS, PARAMS, cache, desc="generate", progress=False)
        assert str(err.value) == (
            f"generate: all 12 requests to openai:reject-param were refused alike (HTTP 400 from {url}/chat/completions: "
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
            "instead.); nothing was recorded as a row error: check the model name, the server address and the "
            "generation settings")
        assert cache.stats()["errors"] == 0 and state.count() == 12
        with pytest.raises(ServerRefusesAll):  # asked again: nothing false was stored
            complete(OpenAICompatBackend("reject-param", base_url=url, retry=FAST), PROMPTS, PARAMS, cache,
                     desc="generate", progress=False)
        assert state.count() == 24


def test_a_small_stage_refused_whole_is_a_run_error_too(tmp_path: Path) -> None:
    # fewer than 3 prompts: all of them refused alike is enough (stub answers: HTTP 404, one message)
    with ResponseCache(tmp_path / "c.sqlite") as cache, pytest.raises(ServerRefusesAll, match="HTTP 404 from stub: no such model"):
        complete(Scripted([], status=404, refusal=lambda m: "no such model"), PROMPTS[:2], PARAMS, cache, desc="judge",
                 progress=False)


def test_refusals_stay_the_rows_own_when_they_differ_or_the_model_answered(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        # the same status, messages that differ (a context-length error quotes each prompt's length)
        stage = complete(Scripted([], status=400, refusal=lambda m: f"{len(m[0]['content']) * 1000} tokens is too long"),
                         [[{"role": "user", "content": "x" * n}] for n in range(1, 5)], PARAMS, cache, desc="g",
                         progress=False)
        assert stage.errors == 4 and cache.stats()["errors"] == 4
    with openai_server() as (url, state), ResponseCache(tmp_path / "c2.sqlite") as cache:
        # some answered, some refused with one message: per-row errors, stored (the server's "refuse" mode)
        stage = complete(OpenAICompatBackend("refuse", base_url=url, retry=FAST), PROMPTS, PARAMS, cache, desc="g",
                         progress=False)
        assert stage.errors == len(REFUSED) == cache.stats()["errors"]
        # a resume that asks only the refused ones again (--retry-errors): all refused alike, but this
        # model answered the stage's other prompts (from the cache), so they are still the rows' errors
        again = complete(OpenAICompatBackend("refuse", base_url=url, retry=FAST), PROMPTS, PARAMS, cache, desc="g",
                         progress=False, retry_errors=True)
        assert again.errors == len(REFUSED) == cache.stats()["errors"] and state.count() == 12 + len(REFUSED)


def test_run_exits_1_without_recording_rows_when_every_request_is_refused(nico_built: Path, tmp_path: Path,
                                                                           capsys) -> None:
    args = ["run", "nico", "--task", "open_domain", "--split", "train", "--model", "openai:reject-param",
            "--dataset", str(nico_built), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
            "--no-progress"]
    with openai_server() as (url, state):
        assert main([*args, "--base-url", url]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "were refused alike (HTTP 400 from" in err[0] and "Unsupported parameter" in err[0]
    assert not (tmp_path / "run" / "results.json").exists()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.stats()["errors"] == 0


def test_later_backends_are_preflighted_before_the_first_request(tmp_path: Path) -> None:
    # Before the fix a judge server that could not work showed up only after the whole generation stage.
    log: list[str] = []
    generator, judge = Scripted(log), Scripted(log, "judge")
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        complete(generator, PROMPTS, PARAMS, cache, desc="generate", progress=False, preflight_also=[judge, None])
        assert log == ["preflight gen", "preflight judge", "generate gen"]
        # answered wholly from the cache: nothing is sent and nothing checked, so a finished run resumes offline
        log.clear()
        complete(generator, PROMPTS, PARAMS, cache, desc="generate", progress=False, preflight_also=[judge])
        assert [entry for entry in log if entry.startswith("preflight")] == [] and generator.calls == 12


def test_a_cocoeval_judge_server_that_cannot_work_fails_before_the_simulation(cocoeval_built: Path,
                                                                             tmp_path: Path) -> None:
    from convbench_datasets.engine.error_rate import TooManyErrors
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.runs.api import run_cocoeval
    from tests.cocoeval.test_cocoeval_run import Scripted as Simulator

    closed = closed_url()
    simulator = Simulator()
    with pytest.raises(ConvbenchError, match="refused"):
        run_cocoeval(model=simulator, judge="openai:label", judge_options={"base_url": closed}, out=tmp_path / "run",
                     config="iq2", limit=1, dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=10,
                     progress=False)
    assert simulator.calls == 0  # before the fix: the whole simulation ran first
    # the label server answers an NC label, never CoCoEval's JSON: the one instance is not compared, a run that
    # measured nothing (no limit accepts it), so the run writes its folder, then raises
    unmeasured = r"^0 of 1 instances compared \(judge_unusable 1\): this run measured nothing$"
    with openai_server() as (url, state):
        with pytest.raises(TooManyErrors, match=unmeasured):
            run_cocoeval(model=Simulator(), judge="openai:label", judge_options={"base_url": url},
                         out=tmp_path / "run", config="iq2", limit=1, dataset=cocoeval_built,
                         cache=tmp_path / "c.sqlite", n_bootstrap=10, progress=False,
                         max_unparsed_rate=1)  # its 1 answer of 1 cannot be read
        assert state.gets == 1
    # the judge server is gone, every answer is cached: the same run again needs no server at all
    with pytest.raises(TooManyErrors, match=unmeasured) as caught:
        run_cocoeval(model=Simulator(), judge="openai:label", judge_options={"base_url": url}, out=tmp_path / "run",
                     config="iq2", limit=1, dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=10,
                     progress=False, max_unparsed_rate=1)
    again = caught.value.result
    assert len(again.records) == 1 and (tmp_path / "run" / "results.json").is_file()


def test_an_nc_judge_server_that_cannot_work_fails_before_generation(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets import run_nc
    from tests.nc.test_judge_template_run import Recorder

    closed = closed_url()
    generator = Recorder("Sure.")
    kwargs = dict(config="basic", limit=3, dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    with pytest.raises(ConvbenchError, match="refused"):
        run_nc(model=generator, judge="openai:label", judge_options={"base_url": closed}, out=tmp_path / "run", **kwargs)
    assert generator.calls == 0  # the judge is checked before the generator makes any call
    with openai_server() as (url, state):
        run_nc(model=Recorder("Sure."), judge="openai:label", judge_options={"base_url": url}, out=tmp_path / "run",
               **kwargs)
        assert state.gets == 1
    # every answer is cached and the server is gone: the same run again needs no server
    again = run_nc(model=Recorder("Sure."), judge="openai:label", judge_options={"base_url": url}, out=tmp_path / "run",
                   **kwargs)
    assert len(again.records) == 3
