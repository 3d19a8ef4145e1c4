"""Request parameters per role (``--param`` / ``--judge-param``, ``backend_options={"params": ...}``, a sweep
model's ``params``): sent as given, part of the cache key and the signature, never lent to a judge; and
OpenAI's reasoning models (o-series, gpt-5*) asked as they take it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import GenerationParams, backend_from_spec, check_params, make_role, params_from_flags
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy, reasoning_model
from convbench_datasets.engine.cache import ResponseCache, cache_key
from convbench_datasets.engine.backends import ModelRole
from convbench_datasets.runs.run_config import judge_role
from convbench_datasets.engine.session import Session
from tests.support.openai_server import openai_server

FAST = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02)
PROMPT = [{"role": "user", "content": "hello"}]
# the fake server's judges answer "I am not sure" now and then on purpose: accepted where the request is what is tested
ANY_UNREAD = ["--max-unparsed-rate", "1"]


def _body(model: str, params: dict | None, generation: GenerationParams = GenerationParams(16)) -> dict:
    """The JSON body the backend sent for one prompt (the server answered it)."""
    with openai_server() as (url, state):
        backend = OpenAICompatBackend(model, base_url=url, retry=FAST, params=params)
        ((_, answer),) = list(backend.generate([PROMPT], generation))
    assert answer.error is None, answer.error
    (body,) = state.bodies
    return {k: v for k, v in body.items() if k not in ("model", "messages")}


def test_flags_parse_values_as_json_else_as_strings() -> None:
    assert params_from_flags(["temperature=0.7", "seed=3", 'stop=["\\n", "User:"]', "reasoning_effort=low",
                              "top_p=null", "logit_bias={\"50256\": -100}", "note=a=b"]) == {
        "temperature": 0.7, "seed": 3, "stop": ["\n", "User:"], "reasoning_effort": "low", "top_p": None,
        "logit_bias": {"50256": -100}, "note": "a=b"}
    assert params_from_flags(None) is None
    with pytest.raises(ValueError, match=r"^--judge-param expects KEY=VALUE"):
        params_from_flags(["temperature"], "--judge-param")
    with pytest.raises(ValueError, match=r"^--param seed=\.\.\. is given twice"):
        params_from_flags(["seed=1", "seed=2"])


def test_check_params_refuses_what_convbench_builds_and_non_json() -> None:
    assert check_params({}) is None and check_params({"b": 1, "a": 2}) == {"a": 2, "b": 1}
    with pytest.raises(ConvbenchError, match="'messages' is built by convbench"):
        check_params({"messages": []}, "--param")
    with pytest.raises(ConvbenchError, match=r"^--param: x=nan is not a JSON value"):
        check_params({"x": float("nan")}, "--param")


def test_default_request_is_unchanged() -> None:
    # no params: what the backend always sent, and the identity (so every cache key) it always had
    assert _body("label", None) == {"max_tokens": 16, "temperature": 0.0}
    backend = OpenAICompatBackend("label", base_url="http://127.0.0.1:9/v1")
    assert backend.identity() == {"kind": "openai", "model": "label", "base_url": "http://127.0.0.1:9/v1"}


def test_params_are_sent_as_given_and_null_leaves_a_field_out() -> None:
    body = _body("label", {"temperature": 0.7, "top_p": 0.9, "seed": 3, "stop": ["\n"], "frequency_penalty": None})
    assert body == {"max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "seed": 3, "stop": ["\n"]}
    assert _body("label", {"temperature": None}) == {"max_tokens": 16}
    # a token limit of the user's replaces convbench's (never both fields)
    assert _body("label", {"max_completion_tokens": 99}) == {"max_completion_tokens": 99, "temperature": 0.0}


@pytest.mark.parametrize("model", ["o4-mini", "o3", "gpt-5", "gpt-5-mini"])
def test_reasoning_models_work_as_typed(model: str) -> None:
    # the server refuses max_tokens and temperature 0 for these, as OpenAI does
    assert reasoning_model(model)
    assert _body(model, None, GenerationParams(25_000)) == {"max_completion_tokens": 25_000}
    assert _body(model, {"reasoning_effort": "low"}, GenerationParams(25_000)) == {
        "max_completion_tokens": 25_000, "reasoning_effort": "low"}


def test_params_are_in_the_identity_and_the_cache_key() -> None:
    plain = OpenAICompatBackend("m", base_url="http://127.0.0.1:9/v1")
    hot = OpenAICompatBackend("m", base_url="http://127.0.0.1:9/v1", params={"temperature": 0.7})
    cold = OpenAICompatBackend("m", base_url="http://127.0.0.1:9/v1", params={"temperature": 0.2})
    assert hot.identity() == {**plain.identity(), "params": {"temperature": 0.7}}
    keys = {cache_key(b.identity(), PROMPT, GenerationParams(16).to_dict()) for b in (plain, hot, cold)}
    assert len(keys) == 3


def test_a_second_run_with_other_params_asks_again(tmp_path: Path) -> None:
    with openai_server() as (url, state), ResponseCache(tmp_path / "c.sqlite") as store:
        from convbench_datasets.engine.stage import complete

        for params in ({"seed": 1}, {"seed": 1}, {"seed": 2}, None):
            backend = backend_from_spec("openai:label", base_url=url, params=params)
            complete(backend, [PROMPT], GenerationParams(8), store, desc="x", progress=False)
        assert [b.get("seed") for b in state.bodies] == [1, 2, None]  # the repeat came from the cache


def test_a_judge_never_borrows_the_generators_params(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as store:
        options = {"base_url": "http://127.0.0.1:9/v1", "params": {"temperature": 1.0}}
        generator = ModelRole("openai:m", **options)  # type: ignore[arg-type]
        # a judge given no options of its own is lent the generator's, never its params (RunConfig.make)
        session = Session(store, generator, [judge_role("openai:m", None, generator)], progress=False)
        assert not session.same
        assert session.judge().identity() == {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
        assert session.generator.identity()["params"] == {"temperature": 1.0}
        same = Session(store, generator, [judge_role("openai:m", options, generator)], progress=False)
        assert same.same


def test_baselines_and_hf_refuse_params_they_cannot_send() -> None:
    with pytest.raises(ConvbenchError, match=r"^baseline:repeat sends no requests"):
        backend_from_spec("baseline:repeat", params={"temperature": 1})
    backend_from_spec("baseline:repeat", params=None)


@pytest.mark.parametrize("judge", ["o4-mini", "gpt-5-mini"])
def test_an_nc_reasoning_judge_works_as_typed(tmp_path: Path, nc_built: Path, judge: str) -> None:
    # NC-Bench's judge limit is 128 tokens (the released pipeline's); the test server's reasoning model spends
    # 2,000 of max_completion_tokens on hidden reasoning first, so a reasoning judge gets 25,000 by default
    with openai_server() as (url, state):
        assert main(["run", "nc", "--model", "openai:label", "--judge", f"openai:{judge}", "--base-url", url,
                     "--out", str(tmp_path / "r"), "--dataset", str(nc_built), "--limit", "3", "--no-progress",
                     "--cache", str(tmp_path / "c.sqlite"), *ANY_UNREAD]) == 0
    judged = [b for b in state.bodies if b["model"] == judge]
    assert len(judged) == 3 and {b["max_completion_tokens"] for b in judged} == {25_000}
    assert not any("max_tokens" in b or "temperature" in b for b in judged)
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["errors"] == 0 and results["signature"]["judge_generation"]["max_new_tokens"] == 25_000
    # a judge that is no reasoning model keeps the released pipeline's 128; --judge-max-new-tokens sets it for any
    with openai_server() as (url, state):
        assert main(["run", "nc", "--model", "openai:label", "--judge", "openai:label", "--judge-base-url", url,
                     "--base-url", url, "--out", str(tmp_path / "r2"), "--dataset", str(nc_built), "--limit", "1",
                     "--no-progress", "--cache", str(tmp_path / "c2.sqlite"), *ANY_UNREAD]) == 0
        assert main(["run", "nc", "--model", "openai:label", "--judge", f"openai:{judge}", "--base-url", url,
                     "--out", str(tmp_path / "r3"), "--dataset", str(nc_built), "--limit", "1", "--no-progress",
                     "--cache", str(tmp_path / "c3.sqlite"), "--judge-max-new-tokens", "3000", *ANY_UNREAD]) == 0
    assert sorted(b.get("max_tokens", b.get("max_completion_tokens")) for b in state.bodies) == [128, 1024, 1024, 3000]



def test_each_judge_keeps_its_own_token_limit(tmp_path: Path, nc_built: Path) -> None:
    # a reasoning judge beside another (judge agreement): 25,000 for it alone; the other keeps the released
    # pipeline's 128 (a server refuses a limit above its model's), and its signature entry as with one judge
    with openai_server() as (url, state):
        assert main(["run", "nc", "--model", "openai:label", "--judge", "openai:label", "--judge", "openai:o4-mini",
                     "--base-url", url, "--out", str(tmp_path / "r"), "--dataset", str(nc_built), "--limit", "2",
                     "--no-progress", "--cache", str(tmp_path / "c.sqlite"), *ANY_UNREAD]) == 0
    judged = [b for b in state.bodies if b["model"] == "o4-mini"]
    labelled = [b for b in state.bodies if b["model"] == "label" and b.get("max_tokens") != 1024]
    assert [b["max_completion_tokens"] for b in judged] == [25_000] * 2 and [b["max_tokens"] for b in labelled] == [128] * 2
    signature = json.loads((tmp_path / "r" / "results.json").read_text())["signature"]
    assert signature["judge_generation"] == {"max_new_tokens": 128, "temperature": 0.0}
    assert [g["max_new_tokens"] for g in signature["judge_generation_per_judge"]] == [128, 25_000]


def test_cli_param_reaches_the_request_and_the_signature(tmp_path: Path, nc_built: Path) -> None:
    with openai_server() as (url, state):
        assert main(["run", "nc", "--model", "openai:label", "--judge", "openai:o4-mini", "--base-url", url,
                     "--out", str(tmp_path / "r"), "--dataset", str(nc_built), "--limit", "2", "--no-progress",
                     "--cache", str(tmp_path / "c.sqlite"), "--param", "temperature=0.5", "--param", "seed=7",
                     "--judge-param", "reasoning_effort=low", "--judge-param", "max_completion_tokens=4000",
                     *ANY_UNREAD]) == 0
    generated = [b for b in state.bodies if b["model"] == "label"]
    judged = [b for b in state.bodies if b["model"] == "o4-mini"]
    assert len(generated) == 2 and all(b["temperature"] == 0.5 and b["seed"] == 7 for b in generated)
    # the judge's own token limit replaces NC-Bench's (the server's hidden reasoning spends 2,000 first)
    assert len(judged) == 2 and all(b["reasoning_effort"] == "low" and b["max_completion_tokens"] == 4000
                                    and "seed" not in b and "temperature" not in b for b in judged)
    signature = json.loads((tmp_path / "r" / "results.json").read_text())["signature"]
    assert signature["model_identity"]["params"] == {"seed": 7, "temperature": 0.5}
    assert signature["judge_identity"]["params"] == {"max_completion_tokens": 4000, "reasoning_effort": "low"}


@pytest.mark.parametrize("flags,message", [
    (["--param", "temperature"], "--param expects KEY=VALUE"),
    (["--judge-param", "messages=[]"], "--judge-param: 'messages' is built by convbench"),
    (["--param", "seed=1", "--param", "seed=2"], "--param seed=... is given twice"),
])
def test_cli_param_errors_are_one_line_naming_the_flag(flags: list[str], message: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "nc", "--model", "openai:m", "--judge", "openai:j", "--base-url", "http://127.0.0.1:9/v1",
                 "--out", str(tmp_path / "r"), *flags]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_sweep_model_params_count_in_the_cell(tmp_path: Path) -> None:
    from convbench_datasets.runs.sweep_file import read_sweep

    def cell(model: object) -> object:
        (found,) = read_sweep({"out": str(tmp_path), "models": [model], "judges": ["baseline:smoke-judge"],
                               "benchmarks": {"nc": {"config": "basic"}}}).cells
        return found

    plain = cell({"spec": "openai:m", "base_url": "http://127.0.0.1:9/v1"})
    hot = cell({"spec": "openai:m", "base_url": "http://127.0.0.1:9/v1", "params": {"temperature": 0.7}})
    assert hot.model.options["params"] == {"temperature": 0.7} and plain.model.options.get("params") is None
    assert hot.digest() != plain.digest() and hot.model.identity()["params"] == {"temperature": 0.7}
    judge = read_sweep({"out": str(tmp_path), "models": ["openai:m"], "judges": [
        {"spec": "openai:j", "params": {"reasoning_effort": "high"}}], "benchmarks": {"nc": {}}}).cells[0].judges[0]
    assert make_role(judge.spec, judge.options).params == {"reasoning_effort": "high"}  # the role the cell runs
    with pytest.raises(ConvbenchError, match=r"models\[0\]\.params: 'model' is built by convbench"):
        cell({"spec": "openai:m", "params": {"model": "x"}})
    with pytest.raises(ConvbenchError, match=r"models\[0\]\.params: baseline:repeat sends no requests"):
        cell({"spec": "baseline:repeat", "params": {"seed": 1}})
