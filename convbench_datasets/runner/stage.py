"""One pipeline stage: answer a list of prompts with a backend, from the cache where possible.

Identical prompts are asked once. Each new answer is stored the moment it arrives. Answers that
failed after the backend's retries are not stored; once every other prompt is answered the stage
raises :class:`RunIncomplete`, so a rerun of the same command retries just those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConvbenchError
from .backends.base import Backend, Generation, GenerationParams, Messages
from .cache import ResponseCache, cache_key


class RunIncomplete(ConvbenchError):
    """Some prompts got no answer; everything else is cached, so rerunning the command resumes."""


@dataclass(frozen=True)
class StageResult:
    generations: list[Generation]
    cache_hits: list[bool]
    model_calls: int


def complete(
    backend: Backend,
    prompts: Sequence[Messages],
    params: GenerationParams,
    cache: ResponseCache,
    *,
    desc: str,
    progress: bool = True,
) -> StageResult:
    from tqdm.auto import tqdm

    identity = backend.identity()
    keys = [cache_key(identity, p, params.to_dict()) for p in prompts]
    found = cache.get_many(keys)
    todo = list(dict.fromkeys(k for k in keys if k not in found))  # unique, in order
    first_prompt = {k: p for k, p in zip(keys, prompts)}
    failures: list[str] = []
    calls_before = backend.calls
    with tqdm(total=len(set(keys)), initial=len(set(keys)) - len(todo), desc=desc, unit="prompt", disable=not progress) as bar:
        for position, generation in backend.generate([first_prompt[k] for k in todo], params):
            key = todo[position]
            if generation.error is not None:
                failures.append(generation.error)
            else:
                cache.put(key, identity, generation)
                found[key] = generation
            bar.update(1)
    if failures:
        raise RunIncomplete(
            f"{desc}: {len(failures)} of {len(todo)} requests to {backend.spec} failed (first: {failures[0]}); "
            "the others are cached: run the same command again to retry"
        )
    asked = set(todo)
    hits = [k not in asked for k in keys]
    return StageResult([found[k] for k in keys], hits, backend.calls - calls_before)
