"""One model-made build stage, shared by the summarizer, the cleaner and the metadata model.

A stage fills its prompt template (``templates/build_stages.yaml``) once per item and has the runner
answer every prompt (:func:`convbench_datasets.engine.stage.complete`: each answer cached as it arrives,
so an interrupted build resumes and a rebuild with the same model makes no calls). Each answer is then
parsed by the stage; an unusable one (or one cut at the token limit: never kept, however it parses)
is asked once more, with the model's answer and the problem shown and twice the token limit (the
runner's ``CUT_RETRY_FACTOR``, as for a cut simulation reply), and if it is still unusable the item
keeps its rule-made value and the failure is counted and named in the card.

A per-item model error (the server refused the prompt, or never gave a usable reply) gets the runner's
per-row accounting: the item keeps its rule-made value, the error is counted and named in the card, and it
is stored in the cache, so a rebuild records it again without asking unless ``retry_errors`` (``convbench
build --retry-errors``). When more than ``max_error_rate`` of a stage's prompts (default 5%, as for runs)
ended in an error, the build stops after that stage with their count
(:class:`~convbench_datasets.engine.error_rate.TooManyErrors`), before
anything is written; fewer are a warning.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from string import Template
from typing import TYPE_CHECKING, Any

from .._resources import read_yaml
from ..engine.error_rate import DEFAULT_MAX_ERROR_RATE, check_error_rate

if TYPE_CHECKING:
    from ..engine.backends import Backend

Parse = Callable[[int, str], "tuple[Any, str | None]"]  # (item index, answer) -> (value or None, problem or None)
CARD_FAILURES_SHOWN = 20  # failures named one by one in the card; the rest are counted


def stage_templates(stage: str) -> dict[str, str]:
    """The stage's ``prompt`` and ``repair`` texts."""
    return read_yaml(__package__, "templates/build_stages.yaml")[stage]


@dataclass
class StageRecord:
    """What the card says about one model-made stage (all of it the same on a rebuild from the cache)."""

    stage: str
    spec: str
    identity: dict[str, Any]
    prompt_sha256: str
    asked: int = 0
    repaired: int = 0  # answers unusable at first and usable after the one retry
    failures: list[tuple[str, str]] = field(default_factory=list)  # (item, problem): rule-made value kept
    errors: list[tuple[str, str]] = field(default_factory=list)  # (item, model error): rule-made value kept
    notes: str = ""  # the stage's own counts, one sentence (the stage sets it)


def run_stage(stage: str, model: str | Backend, options: Mapping[str, Any], fields: Sequence[Mapping[str, Any]],
              labels: Sequence[str], parse: Parse, *, what: str, max_new_tokens: int,
              cache: Any = None, progress: bool = True, retry_errors: bool = False,
              max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> tuple[list[Any], StageRecord]:
    """Ask ``model`` (a spec or Backend) the stage's prompt filled with each of ``fields``.

    Returns one parsed value per item (None where the answer stayed unusable or the model gave an error:
    keep the rule-made value) and the stage's record. ``labels`` name the items in errors and in the
    card; ``what`` is what an answer gives ("summary"); ``cache`` is the response cache file (default:
    convbench's). ``retry_errors``: ask again the prompts whose per-row error is cached (default: record
    it again). More errors than ``max_error_rate`` of the prompts raise
    :class:`~convbench_datasets.engine.error_rate.TooManyErrors`.
    """
    from ..engine.backends import GenerationParams, backend_from_spec
    from ..engine.backends.reasoning import judge_token_limit, reasoning_judge
    from ..engine.cache import ResponseCache
    from .simulation_loop import CUT_RETRY_FACTOR
    from ..engine.stage import complete

    texts = stage_templates(stage)
    prompts = [[{"role": "user", "content": Template(texts["prompt"]).substitute(f)}] for f in fields]
    backend = backend_from_spec(model, **options)
    # an OpenAI reasoning model spends its limit on hidden reasoning first: a 300-token summary limit came back
    # empty every time from o4-mini, the paper's build model; it gets the reasoning default, as judges do
    max_new_tokens = judge_token_limit([backend], max_new_tokens) if reasoning_judge(backend) else max_new_tokens
    record = StageRecord(stage, backend.spec, backend.identity(), _sha256(texts), asked=len(fields))
    params = GenerationParams(max_new_tokens=max_new_tokens)
    name = stage.replace("_", " ")
    errors: dict[int, str] = {}  # item -> its model error (the rule-made value is kept)
    with ResponseCache(cache) as store, _closing(backend, owned=backend is not model):
        first = complete(backend, prompts, params, store, desc=name, progress=progress, retry_errors=retry_errors)
        errors.update(_errors(first.generations, range(len(prompts))))
        values, problems = _parse_all(first.generations, range(len(prompts)), parse, max_new_tokens)
        again = [i for i in range(len(prompts)) if problems[i] is not None and i not in errors]
        if again:
            repairs = [[*prompts[i], {"role": "assistant", "content": first.generations[i].text},
                        {"role": "user", "content": Template(texts["repair"]).substitute(fields[i], problem=problems[i])}]
                       for i in again]
            # twice the room: a greedy answer cut at the limit would be cut there again
            larger = GenerationParams(max_new_tokens=CUT_RETRY_FACTOR * max_new_tokens)
            second = complete(backend, repairs, larger, store, desc=f"{name} (retry)", progress=progress,
                              retry_errors=retry_errors)
            errors.update(_errors(second.generations, again))
            retried, still = _parse_all(second.generations, again, parse, larger.max_new_tokens)
            for i, value, problem in zip(again, retried, still):
                values[i], problems[i] = value, problem
                record.repaired += problem is None and i not in errors
    for i in errors:
        values[i], problems[i] = None, None
    record.failures = [(labels[i], p) for i, p in enumerate(problems) if p is not None]
    record.errors = [(labels[i], errors[i]) for i in sorted(errors)]
    _account_errors(record, name, what, max_error_rate)
    return values, record


def _errors(generations: Sequence[Any], items: Sequence[int]) -> dict[int, str]:
    """The items whose generation is a model error, with the error (one line)."""
    return {i: " ".join(str(g.error).split()) for i, g in zip(items, generations) if g.error is not None}


def _account_errors(record: StageRecord, name: str, what: str, max_error_rate: float) -> None:
    """Stop the build (``TooManyErrors``) when more than ``max_error_rate`` of the stage's prompts ended in
    an error; warn about fewer. Either way every error is in the record (and so in the card)."""
    if not record.errors:
        return
    item, error = record.errors[0]
    first = error if len(error) <= 200 else error[:199] + "…"
    retry = "once the cause is fixed, the same `convbench build` command with --retry-errors asks them again"
    check_error_rate(len(record.errors), record.asked, max_error_rate, what=f"prompts of the {name} {record.spec}",
                     subject="cocoeval", advice=(f"first: {item}: {first}; nothing was written: {retry} (a higher "
                                                 f"--max-error-rate accepts them, each keeping its rule-made {what})"))
    warnings.warn(f"cocoeval: {len(record.errors)} of {record.asked} prompts of the {name} {record.spec} ended in an "
                  f"error; each keeps its rule-made {what}, named in the card; {retry}", stacklevel=3)


@contextmanager
def _closing(backend: Any, *, owned: bool) -> Iterator[None]:
    """Close ``backend`` after the stage when this module built it from a spec; a Backend object passed in
    is the caller's (as in a run's session): left open."""
    try:
        yield
    finally:
        if owned:
            backend.close()


def _parse_all(generations: Sequence[Any], items: Sequence[int], parse: Parse,
               max_new_tokens: int) -> tuple[list[Any], list[str | None]]:
    values: list[Any] = []
    problems: list[str | None] = []
    for i, generation in zip(items, generations):
        if generation.finish_reason == "length":  # a cut answer is never kept, however it parses
            value, problem = None, f"the answer was cut at the {max_new_tokens}-token limit"
        else:
            value, problem = parse(i, generation.text)
        values.append(value)
        problems.append(problem)
    return values, problems


def _sha256(texts: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(texts), sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def card_section(records: Sequence[StageRecord]) -> str:
    """The card's account of the model-made stages: a table, then each stage's counts and failures."""
    if not records:
        return "None: every stage of this build is rule-made (no `--cleaner`, `--summarizer` or `--metadata-model`)."
    lines = ["| stage | model | identity | prompt sha256 | asked | fixed by the retry | kept rule-made | model errors |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.stage.replace('_', ' ')} | `{r.spec}` | `{json.dumps(r.identity, sort_keys=True)}` | "
              f"`{r.prompt_sha256}` | {r.asked} | {r.repaired} | {len(r.failures)} | {len(r.errors)} |" for r in records]
    lines.append("")
    for r in records:
        lines.append(f"- {r.stage.replace('_', ' ')}: {r.notes}")
        lines += _listed("kept rule-made", r.failures)
        lines += _listed("model error, kept rule-made", r.errors)
    return "\n".join(lines)


def _listed(heading: str, items: Sequence[tuple[str, str]]) -> list[str]:
    """The card's lines naming ``items`` (item, why) one by one, the first ``CARD_FAILURES_SHOWN``; the rest counted."""
    lines = [f"  - {heading}: {item} ({why})" for item, why in items[:CARD_FAILURES_SHOWN]]
    if len(items) > CARD_FAILURES_SHOWN:
        lines.append(f"  - and {len(items) - CARD_FAILURES_SHOWN} more")
    return lines
