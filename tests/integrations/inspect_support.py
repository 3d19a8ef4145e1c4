"""Scripted models for the inspect_ai tests: one answer function, served to inspect (mockllm) and to
convbench's runner (a Backend) alike, so that both score exactly the same answers, offline."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.log import EvalLog
from inspect_ai.model import Model, ModelOutput, ModelUsage, get_model

from tests.support.scripted import Answer, Cut, ScriptedBackend, pick  # noqa: F401 - re-exported for the tests



def inspect_model(answer: Answer, name: str = "mockllm/model", cut: Cut | None = None,
                  stop: Callable[[list[dict[str, str]]], str | None] | None = None) -> Model:
    """inspect's mockllm answering with ``answer(messages)``, stopped by the token limit where ``cut`` says,
    or for the reason ``stop(messages)`` gives (an inspect stop reason: ``content_filter``...) where it
    gives one. Token usage is given, so that mockllm does not count tokens with tiktoken, which
    downloads its encoding (no network in tests)."""

    def output(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        plain = [{"role": m.role, "content": m.text} for m in messages]
        text = answer(plain)
        stopped = cut is not None and cut(plain, config.max_tokens)
        reason = (stop(plain) if stop is not None else None) or ("max_tokens" if stopped else "stop")
        result = ModelOutput.from_content(name, text, stop_reason=reason)  # type: ignore[arg-type]
        result.usage = ModelUsage(input_tokens=1, output_tokens=len(text) or 1, total_tokens=(len(text) or 1) + 1)
        return result

    return get_model(name, custom_outputs=output, memoize=False)


def run_inspect(task: Task | str, model: Model, log_dir: Path, grader: Model | None = None, **options: Any) -> EvalLog:
    """One inspect eval, quietly, logged under ``log_dir``; the root logger is left as it was (inspect
    adds its handler there on its first eval). Without inspect's realtime sample buffer (an SQLite
    database committed at each event, for live viewing only; the log file written is the same): it
    was about half the time of an eval of scripted answers."""
    options.setdefault("log_realtime", False)
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
