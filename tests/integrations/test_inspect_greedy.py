"""The inspect_ai tasks decode greedily (temperature 0), model and judge alike, as `convbench run` does
(GenerationParams' default, engine/backends/base.py), so that their numbers stand beside convbench's.

Each test records the GenerateConfig every request reaches the model with (mockllm hands it to the
answer function) and checks its temperature and token limit; offline."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
# inspect's retry set-up calls tenacity with a parameter tenacity deprecates, once per model call
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai.model import Model, ModelOutput, ModelUsage, get_model  # noqa: E402

from convbench_datasets.integrations.inspect import cocoeval, nc, nico
from convbench_datasets.runs.api import import_inspect_log# noqa: E402
from tests.integrations.inspect_support import pick, run_inspect  # noqa: E402
from tests.support.scripted import nc_turn, nico_turn  # noqa: E402


def recording_model(answer: Callable[[list[dict[str, str]]], str], seen: list[tuple[Any, Any]],
                    name: str = "mockllm/model") -> Model:
    """mockllm answering with ``answer(messages)``, noting each request's (temperature, max_tokens)."""

    def output(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        seen.append((config.temperature, config.max_tokens))
        text = answer([{"role": m.role, "content": m.text} for m in messages])
        result = ModelOutput.from_content(name, text, stop_reason="stop")
        result.usage = ModelUsage(input_tokens=1, output_tokens=len(text) or 1, total_tokens=(len(text) or 1) + 1)
        return result

    return get_model(name, custom_outputs=output, memoize=False)


def test_nc_asks_model_and_judge_greedily(nc_built: Path, tmp_path: Path) -> None:
    model_seen: list[tuple[Any, Any]] = []
    judge_seen: list[tuple[Any, Any]] = []
    model = recording_model(lambda m: nc_turn(m, ["REPEAT", "Sure."]), model_seen)
    judge = recording_model(lambda m: pick(m[-1]["content"], ["Repeat", "Answer"]), judge_seen, "mockllm/judge")
    log = run_inspect(nc(config="basic", dataset=str(nc_built)), model, tmp_path / "logs", grader=judge, limit=4)
    # temperature 0; the token limits are the task's defaults (1,024 for the model, 128 for the judge, as
    # `convbench run nc`: README, NC-Bench, Running a model)
    assert model_seen == [(0.0, 1024)] * 4
    assert judge_seen == [(0.0, 128)] * 4
    signature = import_inspect_log(log, tmp_path / "imported").results["signature"]
    assert signature["generation"]["temperature"] == 0.0 and signature["judge_generation"]["temperature"] == 0.0


def test_nico_asks_greedily(nico_built: Path, tmp_path: Path) -> None:
    seen: list[tuple[Any, Any]] = []
    log = run_inspect(nico(task="open_domain", split="train", dataset=str(nico_built)), recording_model(nico_turn, seen),
                      tmp_path / "logs", limit=3)
    assert [temperature for temperature, _ in seen] == [0.0] * 3
    signature = import_inspect_log(log, tmp_path / "imported").results["signature"]
    assert signature["generation"]["temperature"] == 0.0


def _simulator(messages: list[dict[str, str]]) -> str:
    # turns by the history's first speaker (whether the simulation can use them does not matter here)
    text = "\n".join(m["content"] for m in messages)
    wanted = re.search(r"the next (\d+) turns", text)
    speaker = text.split("The conversation so far:\n")[-1].split(":")[0]
    return "\n".join(f"{speaker}: simulated line {k}" for k in range(int(wanted.group(1)) if wanted else 5))


def _judge(messages: list[dict[str, str]]) -> str:
    if any("annotate conversations" in m["content"] for m in messages):
        return json.dumps({"Repetition": [1]})
    return json.dumps({"consistency": 5, "collaborativeness": 6})


def test_cocoeval_simulates_at_the_default_and_judges_greedily(cocoeval_built: Path, tmp_path: Path) -> None:
    model_seen: list[tuple[Any, Any]] = []
    judge_seen: list[tuple[Any, Any]] = []
    run_inspect(cocoeval(config="qmsum_committee", dataset=str(cocoeval_built), n_bootstrap=10),
                recording_model(_simulator, model_seen), tmp_path / "logs",
                grader=recording_model(_judge, judge_seen, "mockllm/judge"), limit=1)
    # the simulator is sent no temperature (the paper states none: the API's default, as convbench run); the
    # judge decodes greedily
    assert model_seen and {temperature for temperature, _ in model_seen} == {None}
    assert judge_seen and {temperature for temperature, _ in judge_seen} == {0.0}
