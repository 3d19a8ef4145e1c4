"""One pipeline stage: answer a list of prompts with a backend, from the cache where possible.

Identical prompts are asked once. Each new answer is stored the moment it arrives. Before the first
request the backend's preflight runs (skipped when the cache answers everything, so that resumes and
re-scores work offline), with that of every backend a later stage will use (``preflight_also``): a
judge server that cannot work is found before hours of generation, not after.

Failures come in two kinds. A per-row error (``Generation.permanent``: the server refused the
prompt, or never gave a usable answer for it) is the row's result: it is stored apart from answers
and handed back with ``error`` set, and reruns reuse it unless ``retry_errors``. Any other failure
(timeouts, 5xx after the retries) is not stored; once every other prompt is answered the stage raises
:class:`RunIncomplete`, so a rerun of the same command retries just those.

A server that refuses every request alike (an unknown model or route: HTTP 404 on each; a parameter it
rejects: the same HTTP 400 on each) is the run's problem, not the rows': when every request sent
failed for good with one HTTP status and one message (at least 3 of them, or all of a smaller stage)
and the backend never answered this stage or any earlier one, the stage raises
:class:`ServerRefusesAll` and stores none of those errors.

Processes sharing one cache (several runs at once, shards) ask each prompt once: before sending, a
stage claims its uncached prompts in the cache (see ``runner/cache.py``). Prompts another live process
has claimed are not sent: the stage sends its own, then waits for the others' answers (polling the
cache, every ``POLL_FIRST`` seconds at first, backing off to ``POLL_MAX``), and asks itself any whose
claim ended without an answer (released after a failure, or expired: its claimant died). Claims end
as answers are stored and are all released when the stage ends, however it ends.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import ConvbenchError
from .backends.base import Backend, Generation, GenerationParams, Messages
from .cache import ResponseCache, cache_key


class RunIncomplete(ConvbenchError):
    """Some prompts got no answer; everything else is cached, so rerunning the command resumes."""


class ServerRefusesAll(ConvbenchError):
    """Every request of a stage was refused alike (same HTTP status and message): nothing was recorded."""


# Backends that have given an answer (live or from the cache) in this process: a model that answered
# exists, so its later refusals are the rows' own (a CoCoEval round whose prompts all grew too long).
_ANSWERED: weakref.WeakSet[Backend] = weakref.WeakSet()
SAME_REFUSAL_MIN = 3  # requests refused alike before a stage calls it the server's doing (fewer: all of them)
POLL_FIRST, POLL_MAX = 0.05, 2.0  # seconds between looks for answers another process is asking for (doubling)


def preflight(backends: Iterable[Backend | None]) -> None:
    """Run each backend's preflight (a server reachable, its key accepted, its model known; once per
    backend). A pipeline calls it, or passes ``preflight_also`` to its first stage, before a long stage
    for every backend a later stage will use. None entries are skipped."""
    for backend in backends:
        if backend is not None:
            backend.preflight()


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
    preflight_also: Iterable[Backend | None] = (),
    claim: bool = True,
) -> StageResult:
    """Answer ``prompts``: from the cache, else from ``backend`` (each answer cached as it arrives).

    Args:
        retry_errors: ask again the prompts whose per-row error is stored (default: reuse the error).
        preflight_also: backends of later stages, preflighted with this one when this stage has
            uncached work (a fully cached stage sends nothing, so a resume still works offline).
        claim: claim prompts in the cache before asking and wait for those another process is asking
            (default); False asks every uncached prompt at once, as before claims (benchmarks compare).

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
        preflight([backend, *preflight_also])
    if any(g.error is None for g in found.values()):
        _mark_answered(backend)
    first_prompt = {k: p for k, p in zip(keys, prompts)}
    failures: list[str] = []
    # refusals held back while every request so far was refused alike by a backend that never answered
    held: list[tuple[str, Generation]] | None = None if _has_answered(backend) else []
    calls_before = backend.calls
    asked: list[str] = []  # the keys this stage sent (the rest came from the cache or another process)
    # a per-row error stored by another process is an outcome like an answer; with retry_errors only one
    # stored after this stage began (older ones are being asked again)
    errors_since = time.time() if retry_errors else 0.0
    holder = cache.hold(errors_since=errors_since) if claim and todo else None
    with tqdm(total=len(set(keys)), initial=len(set(keys)) - len(todo), desc=desc, unit="prompt", disable=not progress) as bar, \
            holder or _NoClaims():
        pending, delay = todo, POLL_FIRST
        while pending:
            mine = holder.take(pending) if holder is not None else pending
            asked += mine
            for position, generation in backend.generate([first_prompt[k] for k in mine], params) if mine else ():
                key = mine[position]
                if held is not None and not _same_refusal(generation, held):
                    for earlier, refused in held:  # the refusals were the rows' own after all
                        cache.put_error(earlier, identity, refused)
                    held = None
                if generation.error is None:
                    cache.put(key, identity, generation)
                    found[key] = generation
                    _mark_answered(backend)
                elif generation.permanent:
                    if held is not None:
                        held.append((key, generation))
                    else:
                        cache.put_error(key, identity, generation)
                    found[key] = generation
                else:
                    failures.append(generation.error)
                    if holder is not None:  # not answered: another process may ask it now
                        holder.release([key])
                bar.update(1)
            # the rest are being asked by other processes: take their answers as they are stored
            taken = set(mine)
            waiting = [k for k in pending if k not in taken]
            arrived = cache.get_many(waiting) if waiting else {}
            if waiting:
                arrived.update(cache.get_errors([k for k in waiting if k not in arrived], since=errors_since))
            for key, generation in arrived.items():
                found[key] = generation
                if generation.error is None:
                    _mark_answered(backend)
            bar.update(len(arrived))
            pending = [k for k in waiting if k not in arrived]
            if pending and not mine and not arrived:
                time.sleep(delay)
                delay = min(2 * delay, POLL_MAX)
            else:
                delay = POLL_FIRST
        if held:
            if len(held) == len(asked) and len(held) >= min(SAME_REFUSAL_MIN, len(set(keys))):
                reason = str(held[0][1].error).removeprefix("refused for this row: ")
                raise ServerRefusesAll(
                    f"{desc}: all {len(held)} requests to {backend.spec} were refused alike ({reason}); nothing was "
                    "recorded as a row error: check the model name, the server address and the generation settings")
            for key, refused in held:
                cache.put_error(key, identity, refused)
    if failures:
        raise RunIncomplete(
            f"{desc}: {len(failures)} of {len(asked)} requests to {backend.spec} failed (first: {failures[0]}); "
            "the others are cached: run the same command again to retry"
        )
    sent = set(asked)
    hits = [k not in sent for k in keys]
    return StageResult([found[k] for k in keys], hits, backend.calls - calls_before)


class _NoClaims:
    """Stands in for a claim holder when a stage claims nothing (nothing to ask, or claims turned off)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _has_answered(backend: Backend) -> bool:
    try:
        return backend in _ANSWERED
    except TypeError:  # a backend that cannot be hashed or weakly referenced: never known to answer
        return False


def _mark_answered(backend: Backend) -> None:
    try:
        _ANSWERED.add(backend)
    except TypeError:
        pass


def _same_refusal(generation: Generation, held: list[tuple[str, Generation]]) -> bool:
    """Whether ``generation`` is refused for good with an HTTP status, like every refusal held so far."""
    if not (generation.permanent and generation.error is not None and generation.status is not None):
        return False
    return not held or (held[0][1].status, held[0][1].error) == (generation.status, generation.error)
