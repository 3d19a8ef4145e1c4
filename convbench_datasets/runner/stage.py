"""One pipeline stage: answer a list of prompts with a backend, from the cache where possible.

Identical prompts are asked once. Each new answer is stored the moment it arrives. Before the first
request the backend's preflight runs (skipped when the cache answers everything, so that resumes and
re-scores work offline).

Failures come in two kinds. A per-row error (``Generation.permanent``: the server refused the
prompt, or never gave a usable answer for it) is the row's result: it is stored apart from answers
and handed back with ``error`` set, and reruns reuse it unless ``retry_errors``. Any other failure
(timeouts, 5xx after the retries) is not stored; once every other prompt is answered the stage raises
:class:`RunIncomplete`, so a rerun of the same command retries just those.
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
    """Per prompt: the answer or per-row error, and whether it came from the cache (not asked now)."""

    generations: list[Generation]
    cache_hits: list[bool]
    model_calls: int

    @property
    def errors(self) -> int:
        """How many prompts ended in a per-row error."""
        return sum(g.error is not None for g in self.generations)


def complete(
    backend: Backend,
    prompts: Sequence[Messages],
    params: GenerationParams,
    cache: ResponseCache,
    *,
    desc: str,
    progress: bool = True,
    retry_errors: bool = False,
) -> StageResult:
    """Answer ``prompts``: from the cache, else from ``backend`` (each answer cached as it arrives).

    Args:
        retry_errors: ask again the prompts whose per-row error is stored (default: reuse the error).

    An answer cut at the token limit is an answer (``finish_reason == "length"`` tells the caller,
    which decides whether its benchmark can use it).
    """
    from tqdm.auto import tqdm

    identity = backend.identity()
    keys = [cache_key(identity, p, params.to_dict()) for p in prompts]
    found = cache.get_many(keys)
    if not retry_errors:
        found.update(cache.get_errors(k for k in keys if k not in found))
    todo = list(dict.fromkeys(k for k in keys if k not in found))  # unique, in order
    if todo:
        backend.preflight()
    first_prompt = {k: p for k, p in zip(keys, prompts)}
    failures: list[str] = []
    calls_before = backend.calls
    with tqdm(total=len(set(keys)), initial=len(set(keys)) - len(todo), desc=desc, unit="prompt", disable=not progress) as bar:
        for position, generation in backend.generate([first_prompt[k] for k in todo], params):
            key = todo[position]
            if generation.error is None:
                cache.put(key, identity, generation)
                found[key] = generation
            elif generation.permanent:
                cache.put_error(key, identity, generation)
                found[key] = generation
            else:
                failures.append(generation.error)
            bar.update(1)
    if failures:
        raise RunIncomplete(
            f"{desc}: {len(failures)} of {len(todo)} requests to {backend.spec} failed (first: {failures[0]}); "
            "the others are cached: run the same command again to retry"
        )
    asked = set(todo)
    hits = [k not in asked for k in keys]
    return StageResult([found[k] for k in keys], hits, backend.calls - calls_before)
