"""Reading the samples of an inspect log of a convbench task: shared by the importer and each
benchmark's ``log_records`` (in its ``inspect_task.py``), which turns them into that benchmark's records."""

from __future__ import annotations

from inspect_ai.log import EvalSample
from inspect_ai.scorer import Score


def convbench_score(sample: EvalSample, key: str) -> Score | None:
    """The sample's convbench score (the one whose metadata has ``key``), or None when it has none."""
    for score in (sample.scores or {}).values():
        if key in (score.metadata or {}):
            return score
    return None


def stopped(sample: EvalSample) -> str | None:
    """The row's error when inspect did not let the sample finish: its ``error``, or one of its limits."""
    if sample.error is not None:
        message = sample.error.message.strip()
        return f"inspect: {message.splitlines()[0] if message else 'sample failed'}"
    if sample.limit is not None:
        return f"inspect: {sample.limit.type} limit ({sample.limit.limit:g})"
    return None


def failure(sample: EvalSample) -> str:
    return stopped(sample) or "inspect: no convbench score"


def output_text(sample: EvalSample) -> str:
    return sample.output.completion if sample.output is not None else ""


__all__ = ["convbench_score", "stopped", "failure", "output_text"]
