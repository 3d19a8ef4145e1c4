"""The paper's judge as typed: ``--judge openai:o4-mini`` against a local server that behaves like
OpenAI's reasoning models (tests/support/openai_server.py: ``max_tokens`` and a temperature other than
1 refused with HTTP 400, ``max_completion_tokens`` spent first on hidden reasoning)."""

from __future__ import annotations

from pathlib import Path

from convbench_datasets.runs.api import run_cocoeval
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy
from tests.cocoeval.test_cocoeval_run import Scripted
from tests.support.openai_server import ServerState, openai_server

HI = [[{"role": "user", "content": "hi"}]]


def test_the_papers_judge_o4_mini_judges_a_run(cocoeval_built: Path, tmp_path: Path) -> None:
    # Paper, section 3.3: "We use OpenAI o4-mini as LLM-as-a-Judge". The server answers as the scripted judge
    # of the runner's tests would; every request it accepted is kept.
    script, seen = Scripted(), []

    def answer(request: dict) -> str:
        seen.append(request)
        ((_, generation),) = script.generate([request["messages"]], GenerationParams())
        return generation.text

    with openai_server(ServerState(answer=answer)) as (url, state):
        run = run_cocoeval(model=Scripted(), judge="openai:o4-mini", judge_options={"base_url": url},
                           out=tmp_path / "run", config="qmsum_committee", limit=2, dataset=cocoeval_built,
                           cache=tmp_path / "c.sqlite", n_bootstrap=0, progress=False)
    # 2 instances x 2 continuations x 2 judgements = 8 first requests (repairs of the script's bad JSON add more)
    assert len(seen) >= 8 and state.count("o4-mini") == len(seen)
    # o4-mini takes max_completion_tokens (25,000 by default, room for its reasoning) and no temperature
    assert {r["max_completion_tokens"] for r in seen} == {25_000}
    assert not any("max_tokens" in r or "temperature" in r for r in seen)
    assert run.results["errors"] == 0 and run.results["n_compared"] == 2
    assert run.results["signature"]["judge_generation"]["max_new_tokens"] == 25_000
    # scripted judge: human continuations 2 Repetition, simulated ones 1 (tests/cocoeval/test_cocoeval_run.py)
    assert run.results["human_mean"]["Repetition"] == 2.0 and run.results["model_mean"]["Repetition"] == 1.0


def test_a_reasoning_models_budget_goes_to_its_reasoning_first() -> None:
    # the server's o4-mini spends 2,000 tokens reasoning: 1,024 (the default for other judges) leaves no
    # answer, an empty reply cut at the limit, which is the row's error; 25,000 leaves room
    with openai_server(ServerState(answer=lambda request: '{"consistency": 7, "collaborativeness": 6}')) as (url, state):
        backend = OpenAICompatBackend("o4-mini", base_url=url, retry=RetryPolicy(max_retries=0))
        short = dict(backend.generate(HI, GenerationParams(max_new_tokens=1024)))[0]
        assert short.error is not None and "cut at the token limit" in short.error and short.permanent
        ample = dict(backend.generate(HI, GenerationParams(max_new_tokens=25_000)))[0]
        assert ample.error is None and ample.text == '{"consistency": 7, "collaborativeness": 6}'


def test_other_models_still_get_max_tokens_and_temperature() -> None:
    seen: list[dict] = []
    with openai_server(ServerState(answer=lambda request: seen.append(request) or "ok")) as (url, _):
        backend = OpenAICompatBackend("gpt-4.1", base_url=url)
        assert dict(backend.generate(HI, GenerationParams(max_new_tokens=64)))[0].text == "ok"
    assert seen[0]["max_tokens"] == 64 and seen[0]["temperature"] == 0.0 and "max_completion_tokens" not in seen[0]


def test_the_test_server_refuses_what_a_reasoning_model_does_not_take() -> None:
    # the server's side of the contract: without the backend's mapping these requests fail with HTTP 400
    from tests.support.openai_server import reasoning_refusal

    assert "max_completion_tokens" in reasoning_refusal({"max_tokens": 5})
    assert "temperature" in reasoning_refusal({"temperature": 0.0, "max_completion_tokens": 5})
    assert reasoning_refusal({"max_completion_tokens": 5}) is None


def test_the_papers_build_model_writes_summaries_with_room_for_its_reasoning(tmp_path: Path) -> None:
    # reported: with o4-mini (the paper's build model) the summary stage was sent max_completion_tokens 300, all
    # spent on hidden reasoning (the test server spends 2,000 first): every summary came back empty. A
    # reasoning model gets the judges' reasoning default (25,000), so its summary arrives
    from convbench_datasets.cocoeval.model_made import abstractive_summaries

    rows = [{"id": f"r{i}", "metadata": {"setting": "A meeting."}, "summary": "extractive", "summary_method": "x"}
            for i in range(2)]
    earlier = [[{"speaker": "Ann", "utterance": f"point {i}"}] for i in range(2)]
    with openai_server(ServerState(answer=lambda request: "They discussed the budget.")) as (url, state):
        record = abstractive_summaries(rows, earlier, "openai:o4-mini", {"base_url": url}, progress=False,
                                       cache=tmp_path / "c.sqlite")
    assert {b["max_completion_tokens"] for b in state.bodies} == {25_000}
    assert [r["summary"] for r in rows] == ["They discussed the budget."] * 2 and not record.failures
