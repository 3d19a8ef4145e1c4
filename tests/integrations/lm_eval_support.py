"""Scripted models for the lm-eval tests: one answer function, served to lm-eval (an ``LM``) and to
convbench's runner (a ``Backend``) alike, so that both score exactly the same answers, offline."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from lm_eval import simple_evaluate
from lm_eval.api.model import LM
from lm_eval.loggers import EvaluationTracker
from lm_eval.tasks import TaskManager

from convbench_datasets.integrations.lm_eval import tasks_path
from tests.support.scripted import Answer, Cut, ScriptedBackend, pick  # noqa: F401 - re-exported for the tests



class ScriptedLM(LM):
    """lm-eval's side: ``answer(messages)`` for each generation request. With a chat template the context
    is the messages as JSON (as lm-eval's API chat models get them); without one, the plain prompt is
    the one user turn. ``contexts`` keeps every context asked, ``kwargs`` every request's settings."""

    def __init__(self, answer: Answer) -> None:
        super().__init__()
        self.answer = answer
        self.contexts: list[str] = []
        self.kwargs: list[dict[str, Any]] = []

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        answers = []
        for request in requests:
            context, kwargs = request.args
            self.contexts.append(context)
            self.kwargs.append(kwargs)
            answers.append(self.answer(self.messages(context)))
        return answers

    @staticmethod
    def messages(context: str) -> list[dict[str, str]]:
        try:
            chat = json.loads(context)
        except json.JSONDecodeError:
            return [{"role": "user", "content": context}]
        return chat if isinstance(chat, list) else [{"role": "user", "content": context}]

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        return json.dumps(chat_history, ensure_ascii=False)

    @property
    def tokenizer_name(self) -> str:
        return "scripted"

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError("convbench's tasks only generate")

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[Any]:
        raise NotImplementedError("convbench's tasks only generate")


def run_lm_eval(tasks: list[str], lm: LM, *, metadata: dict[str, Any] | None = None, chat: bool = True,
                limit: int | None = None, out: Path | None = None, gen_kwargs: str | None = None) -> dict[str, Any]:
    """``lm_eval.simple_evaluate`` on convbench's task folder only (lm-eval's own tasks are not indexed), with
    samples logged; with ``out``, the results and samples are written there as ``lm_eval --output_path``
    writes them. The root logger is left as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        manager = TaskManager(include_path=str(tasks_path()), include_defaults=False, metadata=metadata or {})
        tracker = EvaluationTracker(output_path=str(out)) if out is not None else None
        results = simple_evaluate(model=lm, tasks=tasks, task_manager=manager, log_samples=True, bootstrap_iters=0,
                                  apply_chat_template=chat, limit=limit, evaluation_tracker=tracker, gen_kwargs=gen_kwargs)
        if tracker is not None:
            samples = results.pop("samples")
            tracker.save_results_aggregated(results=results, samples=samples)
            for task in results["configs"]:
                tracker.save_results_samples(task_name=task, samples=samples[task])
            results["samples"] = samples
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return results


def reported(results: dict[str, Any], task: str) -> dict[str, Any]:
    """The metrics lm-eval reports for ``task`` (its only filter, ``none``), by name."""
    return {key.split(",")[0]: value for key, value in results["results"][task].items()
            if key.endswith(",none") and "_stderr" not in key}


def stderrs(results: dict[str, Any], task: str) -> dict[str, Any]:
    """The standard errors lm-eval reports for ``task``'s metrics, by metric name."""
    return {key.split(",")[0][: -len("_stderr")]: value for key, value in results["results"][task].items()
            if key.endswith("_stderr,none") and not key.endswith("_stderr_stderr,none")}


def samples_file(out: Path, task: str) -> Path:
    """The samples file lm-eval wrote under ``out`` for ``task``."""
    (path,) = out.glob(f"*/samples_{task}_*.jsonl")
    return path
