"""What convbench's inspect_ai tasks share: chat messages, the grader, finish reasons and epochs.

Metrics are declared ``scores="unreduced"``: they receive every epoch's scores, group them by the
epoch each score records (``metadata["epoch"]``), compute convbench's statistic over each epoch's
samples (a corpus statistic stays a corpus statistic) and report the mean over epochs. With one
epoch, the default, that is exactly convbench's number.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
    model_roles,
)
from inspect_ai.scorer import SampleScore
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ..._version import __version__
from ...engine.backends.openai_compat import reply_error
from ...errors import ConvbenchError

GRADER_ROLE = "grader"
# the error of a sample scored without any output (inspect scores a sample a limit stopped before its answer)
NO_OUTPUT = "no output: the sample stopped before the model answered (an inspect message, token, time or working limit)"
# inspect's stop reasons as convbench's records name them (``length``: cut at the token limit)
_FINISH_REASONS: dict[str, str | None] = {
    "stop": "stop", "max_tokens": "length", "model_length": "length", "content_filter": "content_filter",
    "tool_calls": "tool_calls", "unknown": None,
}
_MESSAGE_TYPES: dict[str, type[ChatMessage]] = {
    "system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant,  # type: ignore[dict-item]
}


def chat_messages(messages: Sequence[Mapping[str, str]]) -> list[ChatMessage]:
    """convbench's ``{"role", "content"}`` messages as inspect chat messages (roles system, user, assistant).

    Example:
        >>> [type(m).__name__ for m in chat_messages([{"role": "system", "content": "Be brief."},
        ...                                           {"role": "user", "content": "Hi"}])]
        ['ChatMessageSystem', 'ChatMessageUser']
    """
    converted = []
    for index, message in enumerate(messages):
        kind = _MESSAGE_TYPES.get(message["role"])
        if kind is None:
            raise ValueError(f"message {index}: role {message['role']!r} is not system, user or assistant")
        converted.append(kind(content=message["content"]))
    return converted


def greedy(max_tokens: int) -> GenerateConfig:
    """Greedy decoding with this token limit (convbench's default decoding, as the papers')."""
    if max_tokens < 1:
        raise ValueError(f"token limits must be at least 1, got {max_tokens}")
    return GenerateConfig(temperature=0.0, max_tokens=max_tokens)


def finish_reason(output: ModelOutput) -> str | None:
    """Why generation stopped, as convbench's records say it (``length`` for inspect's ``max_tokens``)."""
    if not output.choices:
        return None
    return _FINISH_REASONS.get(output.choices[0].stop_reason, output.choices[0].stop_reason)


def output_error(output: ModelOutput) -> str | None:
    """Why a model's output is no answer (the row's error, as ``convbench run`` records one), or None: there
    is none (``NO_OUTPUT``: a limit stopped the sample first), or by the runner's rule for replies
    (``reply_error``: withheld by a content filter, or empty and cut at the token limit). Such a row is
    not judged; it fails like a per-row error of ``convbench run``.

    Example:
        >>> output_error(ModelOutput.from_content("m", "", stop_reason="max_tokens"))[:40]
        'reply is empty, cut at the token limit ('
        >>> output_error(ModelOutput.from_content("m", "Sure, here", stop_reason="max_tokens")) is None
        True
        >>> output_error(ModelOutput(model="m")) == NO_OUTPUT
        True
    """
    if output.empty:
        return NO_OUTPUT
    return reply_error(output.completion, finish_reason(output))


def grader(task: str) -> Model:
    """The judge: the model bound to the ``grader`` role (``--model-role grader=...`` or the task's ``judge``)."""
    if GRADER_ROLE not in model_roles():
        raise ValueError(f"{task} needs a judge: bind one with --model-role grader=PROVIDER/MODEL "
                         f"(or the task argument -T judge=PROVIDER/MODEL)")
    return get_model(role=GRADER_ROLE)


@solver
def require_grader(task: str) -> Solver:
    """A task's setup step: stop at once, before any model call, when no judge is bound."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        grader(task)
        return state

    return solve


def judge_roles(judge: str | None) -> dict[str, str | Model] | None:
    """The task's ``model_roles`` for a ``judge`` argument (an eval's ``--model-role grader=`` wins)."""
    return {GRADER_ROLE: judge} if judge else None


@contextlib.contextmanager
def prerequisites(task: str) -> Iterator[None]:
    """Within the block, a convbench error making the task (no upstream mirror and no network, a missing
    extra, a folder that is not a build) is inspect's ``PrerequisiteError``: one clean line, not a traceback."""
    from inspect_ai._util.error import PrerequisiteError  # inspect's own, the class its CLI prints plainly

    try:
        yield
    except ConvbenchError as err:
        raise PrerequisiteError(f"convbench/{task}: {err}") from None


def task_dataset(name: str, dataset: str | None) -> str | None:
    """The dataset a task reads: ``dataset`` when given, else ``hub/<name>`` when the folder the README's
    ``convbench build <name> --out hub/<name>`` writes is here, else None (convbench's cached build)."""
    if dataset is not None:
        return dataset
    here = Path("hub") / name
    return str(here) if (here / "README.md").is_file() else None


def sampled(rows: list[Any], sample: int | None, seed: int, strata: Sequence[str]) -> tuple[list[Any], dict[str, Any]]:
    """``sample`` of ``rows`` drawn with ``seed`` across ``strata`` (as ``convbench run --sample``), and the
    signature field that records it ({} for every row)."""
    if sample is None:
        return rows, {}
    from ...counts import check_count
    from ...engine.sample import stratified_sample

    n = check_count("sample", sample, least=1)
    return stratified_sample(rows, n, strata, seed), {"sample": {"n": n, "seed": seed, "by": list(strata)}}


def task_metadata(benchmark: str, rows: Sequence[Mapping[str, Any]], ids: Sequence[str], **settings: Any) -> dict[str, Any]:
    """What the importer needs besides the samples: convbench's signature fields of this task, and the
    sample ids in the dataset's order (a log keeps samples in another order)."""
    return {"convbench": {"benchmark": benchmark, "convbench_version": __version__, "rows": len(rows),
                          "row_ids": list(ids), **settings}}


def by_epoch(scores: Sequence[SampleScore]) -> list[list[SampleScore]]:
    """The scores grouped by the epoch their metadata records, epochs in order, each epoch's samples in the
    order of their ids: inspect passes them in the order they finished, and a bootstrap over an epoch's
    samples (the ``*_stderr`` metrics) must not depend on it."""
    groups: dict[int, list[SampleScore]] = {}
    for sample_score in sorted(scores, key=lambda s: str(s.sample_id)):
        epoch = (sample_score.score.metadata or {}).get("epoch", 1)
        groups.setdefault(int(epoch), []).append(sample_score)
    return [groups[epoch] for epoch in sorted(groups)]


def mean_over_epochs(scores: Sequence[SampleScore],
                     compute: Callable[[list[SampleScore]], Mapping[str, float | int | None]]) -> dict[str, float | None]:
    """``compute`` (convbench's numbers for one epoch's samples) averaged over the epochs, key by key;
    a key undefined (None) in some epoch is None. One epoch: ``compute``'s numbers unchanged."""
    per_epoch = [compute(group) for group in by_epoch(scores)]
    if not per_epoch:
        return {}
    keys = list(dict.fromkeys(key for values in per_epoch for key in values))
    means: dict[str, float | None] = {}
    for key in keys:
        values = [values.get(key) for values in per_epoch]
        means[key] = None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type, misc]
    return means
