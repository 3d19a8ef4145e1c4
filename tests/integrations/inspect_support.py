"""Scripted models for the inspect_ai tests: one answer function, served to inspect (mockllm) and to
convbench's runner (a Backend) alike, so that both score exactly the same answers, offline."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.log import EvalLog
from inspect_ai.model import Model, ModelOutput, ModelUsage, get_model

from convbench_datasets.runner.backends import Backend, Generation, GenerationParams

Answer = Callable[[list[dict[str, str]]], str]
Cut = Callable[[list[dict[str, str]], int], bool]  # (messages, token limit) -> is the answer cut at the limit?


def pick(text: str, choices: Sequence[str]) -> str:
    """A choice that depends only on ``text`` (sha256, so the same on every run and machine)."""
    return choices[hashlib.sha256(text.encode("utf-8")).digest()[0] % len(choices)]


def inspect_model(answer: Answer, name: str = "mockllm/model", cut: Cut | None = None) -> Model:
    """inspect's mockllm answering with ``answer(messages)``, stopped by the token limit where ``cut`` says.
    Token usage is given, so that mockllm does not count tokens with tiktoken, which downloads its
    encoding (no network in tests)."""

    def output(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        plain = [{"role": m.role, "content": m.text} for m in messages]
        text = answer(plain)
        stopped = cut is not None and cut(plain, config.max_tokens)
        result = ModelOutput.from_content(name, text, stop_reason="max_tokens" if stopped else "stop")
        result.usage = ModelUsage(input_tokens=1, output_tokens=len(text) or 1, total_tokens=(len(text) or 1) + 1)
        return result

    return get_model(name, custom_outputs=output, memoize=False)


class ScriptedBackend(Backend):
    """convbench's side of the same script: ``answer(messages)`` for each prompt."""

    kind = "stub"

    def __init__(self, answer: Answer, model: str = "scripted", cut: Cut | None = None) -> None:
        self.answer, self.model, self.cut = answer, model, cut

    def generate(self, prompts: Sequence[list[dict[str, str]]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            stopped = self.cut is not None and self.cut(list(messages), params.max_new_tokens)
            yield i, Generation(self.answer(list(messages)), completion_tokens=1,
                                finish_reason="length" if stopped else "stop")


def run_inspect(task: Task | str, model: Model, log_dir: Path, grader: Model | None = None, **options: Any) -> EvalLog:
    """One inspect eval, quietly, logged under ``log_dir``; the root logger is left as it was (inspect
    adds its handler there on its first eval)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        (log,) = eval(task, model=model, model_roles={"grader": grader} if grader is not None else None,
                      log_dir=str(log_dir), display="none", **options)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert log.status == "success", log.error
    return log


def reported(log: EvalLog) -> dict[str, float]:
    """The metrics an inspect run reports, by name."""
    assert log.results is not None
    return {name: metric.value for score in log.results.scores for name, metric in score.metrics.items()}
