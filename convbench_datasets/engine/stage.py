"""One pipeline stage: answer a list of prompts with a backend, from the cache where possible.

Identical prompts are asked once. Each new answer is stored the moment it arrives: the answers that
arrived together (those waiting when the stage takes the next, ``Backend.generate_batches``) share one
commit, none waits for another to arrive, and each is committed before the stage hands it on
(``on_result``, a following stage, the result), so a killed process loses only requests in flight and
answers it had received but not yet stored, never one it had handed on. Before the first
request the backend's preflight runs (skipped when the cache answers everything, so that resumes and
re-scores work offline), with that of every backend a later stage will use (``preflight_also``): a
judge server that cannot work is found before hours of generation, not after.

Failures come in two kinds. A per-row error (``Generation.permanent``: the server refused the
prompt, or never gave a usable answer for it) is the row's result: it is stored apart from answers
and handed back with ``error`` set, and reruns reuse it unless ``retry_errors``. Any other failure
(timeouts, 5xx after the retries) is not stored; once every other prompt is answered the stage raises
:class:`RunIncomplete`, so a rerun of the same command retries just those.

A server that refuses every request alike (a parameter it rejects: the same HTTP 400 on each; an unknown
model or route, HTTP 404, is never a per-row error of the openai backend's) is the run's problem, not the
rows': when every request sent
failed for good with one HTTP status and one message (at least 3 of them, or all of a smaller stage)
and the backend never answered this stage or any earlier one, the stage raises
:class:`ServerRefusesAll` and stores none of those errors.

Processes sharing one cache (several runs at once, shards) ask each prompt once: before sending, a
stage claims its uncached prompts in the cache (see ``engine/cache.py``). Prompts another live process
has claimed are not sent: the stage sends its own, then waits for the others' answers (polling the
cache, every ``POLL_FIRST`` seconds at first, backing off to ``POLL_MAX``), and asks itself any whose
claim ended without an answer (released after a failure, or expired: its claimant died). Claims end
as answers are stored and are all released when the stage ends, however it ends.

A backend whose answers depend on the prompts it answers together (``fixed_batches``, an int: the hf
backend with ``batch_order="file"``, where bf16 greedy answers change with a batch's other prompts) gets
fixed batches: the stage cuts its prompts, in their order, into consecutive blocks of that many (restarting
at each change of ``groups``, e.g. each data file of a benchmark whose released script runs one file at a time),
keys each answer with its block as well as its prompt, and always asks whole blocks, so an answer is the
same however much of its block was cached before. Such a stage never runs beside another (:func:`pipelines`).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import functools
import re
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConvbenchError
from .backends.base import Backend, Generation, GenerationParams, Messages
from .cache import ResponseCache, cache_keys, key_maker


class RunIncomplete(ConvbenchError):
    """Some prompts got no answer; everything else is cached, so rerunning the command resumes."""


class ServerRefusesAll(ConvbenchError):
    """Every request of a stage was refused alike (same HTTP status and message): nothing was recorded."""


# Backends that have given an answer (live or from the cache) in this process: a model that answered
# exists, so its later refusals are the rows' own (a later round of a multi-round stage whose prompts all grew too long).
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
    on_result: Callable[[int, Generation], None] | None = None,
    groups: Sequence[Any] | None = None,
) -> StageResult:
    """Answer ``prompts``: from the cache, else from ``backend`` (each answer cached as it arrives).

    Args:
        retry_errors: ask again the prompts whose per-row error is stored (default: reuse the error).
        preflight_also: backends of later stages, preflighted with this one when this stage has
            uncached work (a fully cached stage sends nothing, so a resume still works offline).
        claim: claim prompts in the cache before asking and wait for those another process is asking
            (default); False asks every uncached prompt at once, as before claims (benchmarks compare).
        on_result: called ``(index, generation)`` in this thread for each prompt as its outcome is known
            (an answer or a per-row error: cached ones after the preflight, the rest as they are stored), so
            that a later stage can start on it (see :func:`pipeline`); not called for failures left to a rerun.
        groups: one value per prompt; for a backend with ``fixed_batches``, no block spans two groups
            (see the module docstring). Ignored by other backends.

    An answer cut at the token limit is an answer (``finish_reason == "length"`` tells the caller,
    which decides whether its benchmark can use it). An empty answer to ``params.verdict`` prompts (a
    judge's) is not: it is the row's error (:func:`no_verdict`), stored as one when it arrives.
    """
    identity = backend.identity()
    blocks = fixed_blocks(backend, len(prompts), groups)
    keys = cache_keys(identity, prompts, params.to_dict()) if blocks is None else \
        block_keys(identity, prompts, params.to_dict(), blocks)
    verdict = judged(backend, params)
    found = _verdicts(cache.get_many(keys), verdict, cache, identity)
    if not retry_errors:
        found.update(cache.get_errors(k for k in keys if k not in found))
    todo = list(dict.fromkeys(k for k in keys if k not in found))  # unique, in order
    if todo:
        preflight([backend, *preflight_also])
    if any(g.error is None for g in found.values()):
        _mark_answered(backend)
    first_prompt = {k: p for k, p in zip(keys, prompts)}
    rows_of: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        rows_of.setdefault(key, []).append(index)

    def tell(key: str) -> None:  # hand the prompt's outcome (answer or per-row error) to the caller
        if on_result is not None:
            for index in rows_of[key]:
                on_result(index, found[key])

    outcomes = _Outcomes(backend, cache, identity, found, verdict=verdict)
    calls_before = backend.calls
    asked: list[str] = []  # the keys this stage sent (the rest came from the cache or another process)
    # a per-row error stored by another process is an outcome like an answer; with retry_errors only one
    # stored after this stage began (older ones are being asked again)
    errors_since = time.time() if retry_errors else 0.0
    holder = cache.hold(errors_since=errors_since) if claim and todo else None
    with _bar(progress, total=len(set(keys)), initial=len(set(keys)) - len(todo), desc=desc, unit="prompt") as bar, \
            holder or _NoClaims():
        outcomes.holder = holder
        for key in dict.fromkeys(k for k in keys if k in found):
            tell(key)
        pending, delay = todo, POLL_FIRST
        while pending:
            mine = holder.take(pending) if holder is not None else pending
            asked += mine
            arrivals = _batches(backend, [first_prompt[k] for k in mine], params) if blocks is None else \
                _whole_blocks(backend, prompts, keys, blocks, mine, params)
            for batch in arrivals if mine else ():
                answered = [(mine[position], generation) for position, generation in batch] if blocks is None else batch
                for key in outcomes.record_many(answered):
                    tell(key)
                bar.update(len(batch))
            # the rest are being asked by other processes: take their answers as they are stored
            taken = set(mine)
            waiting = [k for k in pending if k not in taken]
            arrived = outcomes.look(waiting, errors_since)
            for key in arrived:
                tell(key)
            bar.update(len(arrived))
            pending = [k for k in waiting if k not in arrived]
            if pending and not mine and not arrived:
                time.sleep(delay)
                delay = min(2 * delay, POLL_MAX)
            else:
                delay = POLL_FIRST
        outcomes.settle_held(desc, len(asked), len(set(keys)))
    outcomes.check_failures(desc, len(asked))
    sent = set(asked)
    hits = [k not in sent for k in keys]
    return _counted(backend, StageResult([found[k] for k in keys], hits, backend.calls - calls_before))


class _Outcomes:
    """What a stage does with each outcome, the same for :func:`complete` and a streamed stage: answers
    and per-row errors stored as they arrive, refusals held back while they may be the server's doing,
    passing failures counted for :class:`RunIncomplete`. ``found`` maps keys to outcomes."""

    def __init__(self, backend: Backend, cache: ResponseCache, identity: dict, found: dict[str, Generation], *,
                 verdict: bool = False) -> None:
        self.backend, self.cache, self.identity, self.found = backend, cache, identity, found
        self.verdict = verdict  # a judge's stage: an empty answer is the row's error (no_verdict)
        self.failures: list[str] = []
        self.holder: object | None = None  # the stage's claim holder, once it has one
        # refusals held back while every request so far was refused alike by a backend that never answered
        self.held: list[tuple[str, Generation]] | None = None if _has_answered(backend) else []

    def record(self, key: str, generation: Generation) -> bool:
        """Store one outcome of a request this stage sent; True when it is the prompt's outcome (not a
        passing failure left for a rerun)."""
        return bool(self.record_many([(key, generation)]))

    def record_many(self, arrived: Sequence[tuple[str, Generation]]) -> list[str]:
        """Store the outcomes of requests this stage sent that arrived together (the answers in one
        commit, made before this returns); the keys whose outcome is now known, in order (not passing
        failures, left for a rerun)."""
        answers: list[tuple[str, Mapping[str, Any], Generation]] = []
        known: list[str] = []
        released: list[str] = []
        for key, generation in arrived:
            generation = storable(generation)
            if self.verdict:
                generation = no_verdict(generation)
            if self.held is not None and not _same_refusal(generation, self.held):
                for earlier, refused in self.held:  # the refusals were the rows' own after all
                    self.cache.put_error(earlier, self.identity, refused)
                self.held = None
            if generation.error is None:
                answers.append((key, self.identity, generation))
                known.append(key)
            elif generation.permanent:
                if self.held is not None:
                    self.held.append((key, generation))
                else:
                    self.cache.put_error(key, self.identity, generation)
                self.found[key] = generation
                known.append(key)
            else:
                self.failures.append(str(generation.error))
                released.append(key)
        if answers:
            self.cache.put_many(answers)
            for key, _, generation in answers:
                self.found[key] = generation
            _mark_answered(self.backend)
        if released and self.holder is not None:  # not answered: another process may ask them now
            self.holder.release(released)  # type: ignore[attr-defined]
        return known

    def look(self, keys: Sequence[str], errors_since: float) -> dict[str, Generation]:
        """The outcomes other processes have stored for ``keys`` (answers, and per-row errors since ``errors_since``)."""
        if not keys:
            return {}
        arrived = self.cache.get_many(keys)
        if self.verdict:
            arrived = {key: no_verdict(generation) for key, generation in arrived.items()}
        arrived.update(self.cache.get_errors([k for k in keys if k not in arrived], since=errors_since))
        for key, generation in arrived.items():
            self.found[key] = generation
            if generation.error is None:
                _mark_answered(self.backend)
        return arrived

    def settle_held(self, desc: str, asked: int, unique: int) -> None:
        """At the stage's end: refusals still held are the server's (:class:`ServerRefusesAll`) or the rows'."""
        if self.held:
            if len(self.held) == asked and len(self.held) >= min(SAME_REFUSAL_MIN, unique):
                reason = str(self.held[0][1].error).removeprefix("refused for this row: ")
                raise ServerRefusesAll(
                    f"{desc}: all {len(self.held)} requests to {self.backend.spec} were refused alike ({reason}); nothing "
                    "was recorded as a row error: check the model name, the server address and the generation settings")
            for key, refused in self.held:
                self.cache.put_error(key, self.identity, refused)

    def check_failures(self, desc: str, asked: int) -> None:
        if self.failures:
            raise RunIncomplete(
                f"{desc}: {len(self.failures)} of {asked} requests to {self.backend.spec} failed (first: "
                f"{self.failures[0]}); the others are cached: run the same command again to retry"
            )


NO_VERDICT = "the judge's answer is empty: no verdict"
# who is told of every stage's outcomes in this context (a run's Session: its count of empty answers per role)
_LISTENER: contextvars.ContextVar[Callable[[Backend, StageResult], None] | None] = \
    contextvars.ContextVar("convbench_stage_listener", default=None)


@contextlib.contextmanager
def listening(listener: Callable[[Backend, StageResult], None]) -> Iterator[None]:
    """Within the block, ``listener(backend, result)`` hears every stage's result in this context (a
    :func:`complete` and each stage of a :func:`pipeline`), whoever runs the stage (a benchmark's own loop too)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def _counted(backend: Backend, result: StageResult) -> StageResult:
    listener = _LISTENER.get()
    if listener is not None:
        listener(backend, result)
    return result


def empty_outcome(generation: Generation) -> bool:
    """Whether an outcome is an empty answer: an answer with no text but blanks, or the row's error because
    the reply was empty (a judge's, :data:`NO_VERDICT`; a served backend's ``reply is empty``)."""
    if generation.error is None:
        return not generation.text.strip()
    return generation.error == NO_VERDICT or "reply is empty" in generation.error


def no_verdict(generation: Generation) -> Generation:
    """A judge's answer, or the row's error when it is empty or blank: an empty verdict is never read as one
    (from any backend, or from a cache written before this rule)."""
    if generation.error is not None or generation.text.strip():
        return generation
    return Generation("", seconds=generation.seconds, error=NO_VERDICT, finish_reason=generation.finish_reason,
                      permanent=True)


_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, always a lone one: JSON's escaped pairs decode to one character


def storable(generation: Generation) -> Generation:
    """``generation`` with any lone surrogate in its text or error (JSON may escape one, ``"\\ud800"``; it is
    no character and cannot be written as UTF-8) replaced by U+FFFD, as a decoder replaces undecodable
    bytes: the answer can then be stored and written, where it stopped the run at the cache before."""
    text, error = generation.text, generation.error
    if not _SURROGATE.search(text) and not (error and _SURROGATE.search(error)):
        return generation
    return dataclasses.replace(generation, text=_SURROGATE.sub("\ufffd", text),
                               error=None if error is None else _SURROGATE.sub("\ufffd", error))


def judged(backend: Backend, params: GenerationParams) -> bool:
    """Whether a stage reads ``backend``'s empty answers as rows' errors: its answers are verdicts
    (``params.verdict``) of a model. A ``baseline:`` answerer is no model: what it answers is what it is for."""
    return params.verdict and getattr(backend, "kind", "") != "baseline"


def _verdicts(found: dict[str, Generation], verdict: bool, cache: ResponseCache,
              identity: Mapping[str, Any]) -> dict[str, Generation]:
    """Cached answers as a stage reads them. With ``verdict``, an empty answer (an earlier run's, from before
    this rule) is demoted in the cache to the row's error (:meth:`.cache.ResponseCache.demote`) and left out:
    read as that error, or asked again with ``retry_errors``, never read as a verdict."""
    if not verdict:
        return found
    blank = [key for key, g in found.items() if g.error is None and not g.text.strip()]
    if blank:
        cache.demote(blank, identity, NO_VERDICT)
    return {key: g for key, g in found.items() if key not in blank}


@dataclass(frozen=True)
class Follow:
    """A stage that :func:`pipeline` feeds from the first stage's arrivals: its backend, parameters and label."""

    backend: Backend
    params: GenerationParams
    desc: str


def pipelines(backend: Backend) -> bool:
    """Whether a stage on ``backend`` may run beside another stage (:func:`pipeline`): a backend behind a
    server, or one in this process that holds no model weights (``holds_weights`` False). A local model
    (``hf:``) is not: one local model at a time, the earlier stage's freed before it loads; nor is a backend
    with fixed batches (a pipelined stage gets its prompts one at a time)."""
    return not getattr(backend, "holds_weights", False) and fixed_batch_size(backend) is None


def fixed_batch_size(backend: Backend) -> int | None:
    """The size of the fixed batches ``backend`` needs (its ``fixed_batches``), or None."""
    size = getattr(backend, "fixed_batches", None)
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 1 else None


def fixed_blocks(backend: Backend, n: int, groups: Sequence[Any] | None = None) -> list[range] | None:
    """For a backend with fixed batches: the positions ``0..n-1`` cut into consecutive blocks of its batch
    size, a new block at each change of ``groups`` (as a released script that runs each data file on its
    own); None for any other backend.

    Example:
        >>> class B: fixed_batches = 2
        >>> fixed_blocks(B(), 5, ["a", "a", "a", "b", "b"])
        [range(0, 2), range(2, 3), range(3, 5)]
    """
    size = fixed_batch_size(backend)
    if size is None:
        return None
    if groups is not None and len(groups) != n:
        raise ValueError(f"got {len(groups)} groups for {n} prompts")
    blocks: list[range] = []
    start = 0
    for end in range(1, n + 1):
        if end == n or end - start == size or (groups is not None and groups[end] != groups[start]):
            blocks.append(range(start, end))
            start = end
    return blocks


def block_keys(identity: Mapping[str, Any], prompts: Sequence[Messages], params: Mapping[str, Any],
               blocks: Sequence[range]) -> list[str]:
    """Cache keys for answers given in fixed batches: each prompt's key holds its block's prompts too, so an
    answer made beside other prompts is never taken for this block's."""
    import hashlib
    import json

    keys: list[str] = []
    for block in blocks:
        together = hashlib.sha256(json.dumps([prompts[i] for i in block], sort_keys=True,
                                             ensure_ascii=False).encode("utf-8")).hexdigest()
        keys += cache_keys({**identity, "batch": together}, [prompts[i] for i in block], params)
    return keys


def _whole_blocks(backend: Backend, prompts: Sequence[Messages], keys: Sequence[str], blocks: Sequence[range],
                  mine: Sequence[str], params: GenerationParams) -> Iterator[list[tuple[str, Generation]]]:
    """Ask each block holding a key of ``mine`` whole, in order (one ``generate`` call per block, so the
    backend batches exactly that block); hand on the answers of ``mine``'s keys (each key once), as
    ``(key, generation)`` lists. The block's other answers are the ones its cached keys hold already."""
    wanted = set(mine)
    for block in blocks:
        if not wanted.intersection(keys[i] for i in block):
            continue
        arrived = []
        for position, generation in backend.generate([prompts[i] for i in block], params):
            key = keys[block[position]]
            if key in wanted:
                wanted.discard(key)
                arrived.append((key, generation))
        yield arrived


def pipeline(
    backend: Backend,
    prompts: Sequence[Messages],
    params: GenerationParams,
    cache: ResponseCache,
    *,
    follow: Callable[[int, Generation], Messages | None],
    then: Sequence[Follow],
    desc: str,
    progress: bool = True,
    retry_errors: bool = False,
    claim: bool = True,
    bound: int | None = None,
    groups: Sequence[Any] | None = None,
) -> tuple[StageResult, list[tuple[list[int], StageResult]]]:
    """Run a stage and, beside it, the stages ``then`` on its results as they arrive: a judge starts on a
    row as soon as that row's answer is stored, instead of after the whole first stage.

    ``follow(index, generation)`` makes the next stages' prompt for prompt ``index`` of the first stage
    (None: nothing to ask for it, e.g. a failed generation). Each following stage runs in its own thread
    with its own connection to the cache file and keeps every guarantee of :func:`complete`: identical
    prompts asked once, each outcome stored as it arrives, per-row errors, claims, :class:`ServerRefusesAll`
    and :class:`RunIncomplete`. Its backend is preflighted with the first stage (or, when the first stage
    has nothing to ask, before its own first request). At most ``bound`` prompts (default: twice the
    backend's concurrency, at least 64) wait unanswered per following stage: when a judge falls behind,
    the first stage waits for it. Every backend must :func:`pipelines`.

    When the first stage fails (:class:`RunIncomplete`, say), the following stages still finish what
    arrived, so a rerun asks only what is missing, then the first stage's error is raised; when a
    following stage fails, the first stops and that error is raised.

    Returns the first stage's result and, per following stage, the indices of the prompts it was given
    (in arrival order) with its result for them, in that order.
    """
    for other in [backend, *(f.backend for f in then)]:
        if not pipelines(other):
            raise ValueError(f"{other.spec} holds a local model: run its stage on its own (stage.complete)")
    streams = [_Stream(f, cache.path, bound=bound, progress=progress, retry_errors=retry_errors, claim=claim)
               for f in then]
    for stream in streams:
        stream.start()

    def arrived(index: int, generation: Generation) -> None:
        prompt = follow(index, generation)
        for stream in streams:
            if stream.error is not None:
                raise _Stopped()
            if prompt is not None:
                stream.feed(index, prompt)

    first_error: BaseException | None = None
    try:
        first = complete(backend, prompts, params, cache, desc=desc, progress=progress, retry_errors=retry_errors,
                         preflight_also=[f.backend for f in then], claim=claim, on_result=arrived, groups=groups)
    except _Stopped:
        first = None
    except ConvbenchError as err:  # the first stage's own failure: let the others finish what arrived
        first, first_error = None, err
    except BaseException:  # Ctrl-C and the like: stop everything now
        for stream in streams:
            stream.abort()
        raise
    for stream in streams:
        stream.end()
    for stream in streams:
        stream.join()
    if first_error is not None:
        raise first_error
    for stream in streams:
        if stream.error is not None:
            raise stream.error
    assert first is not None
    for stream in streams:  # counted here, in the caller's context (the first stage was, by complete)
        _counted(stream.follow.backend, stream.result)  # type: ignore[arg-type]
    return first, [(s.rows, s.result) for s in streams]  # type: ignore[misc]


class _Stopped(Exception):
    """Raised into the first stage of a pipeline when a following stage has failed."""


class _Stream:
    """A stage whose prompts arrive one by one (fed from another thread), run in a thread of its own."""

    def __init__(self, follow: Follow, cache_path: object, *, bound: int | None, progress: bool,
                 retry_errors: bool, claim: bool) -> None:
        import queue
        import threading

        self.follow, self.cache_path = follow, cache_path
        self.progress, self.retry_errors, self.claim = progress, retry_errors, claim
        self.workers = max(1, int(getattr(follow.backend, "concurrency", 1) or 1))
        self.slots = threading.Semaphore(bound if bound is not None else max(64, 2 * self.workers))
        self.inbox: queue.Queue[tuple] = queue.Queue()  # prompts (from the feeder), results (from the workers), end
        self.rows: list[int] = []
        self.result: StageResult | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True, name="convbench-stage")

    def start(self) -> None:
        self._thread.start()

    def feed(self, index: int, prompt: Messages) -> None:
        """Hand over one prompt; waits while ``bound`` prompts are already waiting for answers."""
        while not self.slots.acquire(timeout=0.1):
            if self.error is not None:
                raise _Stopped()
        self.inbox.put(("prompt", index, prompt))

    def end(self) -> None:
        self.inbox.put(("end",))

    def abort(self) -> None:
        self._stop.set()
        self.inbox.put(("end",))

    def join(self) -> None:
        self._thread.join()

    def _main(self) -> None:
        try:
            with ResponseCache(self.cache_path) as cache:  # type: ignore[arg-type]
                self.result = self._run(cache)
        except BaseException as err:  # handed to the pipeline's thread
            self.error = err
            self._stop.set()

    def _run(self, cache: ResponseCache) -> StageResult:
        import queue
        import threading

        backend, params = self.follow.backend, self.follow.params
        # a backend on the event loop is asked through its futures (no thread per request in flight): at most
        # ``workers`` of them running, the rest waiting their turn here; else through worker threads
        submit = getattr(backend, "submit", None)
        running: dict[str, Any] = {}  # key: its future
        turns: collections.deque[str] = collections.deque()
        identity = backend.identity()
        key_of = key_maker(identity, params.to_dict())  # the prompts' keys, as they arrive
        keys: list[str] = []
        first_prompt: dict[str, Messages] = {}
        found: dict[str, Generation] = {}
        outcomes = _Outcomes(backend, cache, identity, found, verdict=judged(backend, params))
        jobs: queue.Queue[str | None] = queue.Queue()
        started: list[threading.Thread] = []
        asked: list[str] = []
        waiting: list[str] = []
        in_flight, ended, checked = 0, False, False
        errors_since = time.time() if self.retry_errors else 0.0
        holder = cache.hold(errors_since=errors_since) if self.claim else None
        outcomes.holder = holder
        calls_before = backend.calls

        def work() -> None:
            while True:
                key = jobs.get()
                if key is None or self._stop.is_set():
                    return
                try:
                    for _, generation in backend.generate([first_prompt[key]], params):
                        self.inbox.put(("result", key, generation))
                except BaseException as err:
                    self.inbox.put(("result", key, err))

        def landed(key: str, future: Any) -> None:  # on the loop's thread: handed to this one
            outcome = _Stopped() if future.cancelled() else (future.exception() or future.result())
            self.inbox.put(("result", key, outcome))

        def start_turns() -> None:
            while turns and len(running) < self.workers:
                key = turns.popleft()
                running[key] = future = submit(first_prompt[key], params)
                future.add_done_callback(functools.partial(landed, key))

        def send(mine: list[str]) -> None:
            nonlocal in_flight, checked
            if mine and not checked:  # before the stage's first request, whichever path sends it
                preflight([backend])  # once per backend: a no-op when checked with the first stage
                checked = True
            asked.extend(mine)
            in_flight += len(mine)
            if submit is not None:
                turns.extend(mine)
                start_turns()
                return
            for key in mine:
                jobs.put(key)
            while len(started) < min(self.workers, len(asked)):
                started.append(threading.Thread(target=work, daemon=True, name="convbench-stage-worker"))
                started[-1].start()

        delay, next_look = POLL_FIRST, 0.0
        try:
            with _bar(self.progress, total=None, desc=self.follow.desc, unit="prompt") as bar, \
                    holder or _NoClaims():
                while not (ended and in_flight == 0 and not waiting):
                    timeout = max(0.0, next_look - time.monotonic()) if waiting else None
                    try:
                        items = [self.inbox.get(timeout=timeout)]
                    except queue.Empty:
                        items = []
                    while True:
                        try:
                            items.append(self.inbox.get_nowait())
                        except queue.Empty:
                            break
                    if self._stop.is_set():
                        raise _Stopped()
                    new: list[str] = []
                    answered: list[tuple[str, Generation]] = []  # outcomes that arrived together: stored at once
                    failed: BaseException | None = None
                    for item in items:
                        if item[0] == "end":
                            ended = True
                        elif item[0] == "prompt":
                            _, index, prompt = item
                            key = key_of(prompt)
                            keys.append(key)
                            self.rows.append(index)
                            if key in first_prompt:  # asked (or being asked) already: no new work
                                self.slots.release()
                            else:
                                first_prompt[key] = prompt
                                new.append(key)
                        else:
                            _, key, outcome = item
                            if isinstance(outcome, BaseException):
                                failed = outcome
                                break
                            in_flight -= 1
                            running.pop(key, None)
                            answered.append((key, outcome))
                    if answered:
                        outcomes.record_many(answered)
                        for _ in answered:
                            self.slots.release()
                        bar.update(len(answered))
                    if failed is not None:
                        raise failed
                    start_turns()
                    if new:
                        # the claim leaves out the keys with an outcome stored (an answer; a per-row error the
                        # stage reuses: the holder's errors_since), so only the keys it did not take are
                        # looked up afterwards (#20)
                        mine = holder.take(new) if holder is not None else []
                        taken = set(mine)
                        rest = [k for k in new if k not in taken]
                        cached = _verdicts(cache.get_many(rest), outcomes.verdict, cache, identity) if rest else {}
                        if rest and not self.retry_errors:
                            cached.update(cache.get_errors(k for k in rest if k not in cached))
                        found.update(cached)
                        if any(g.error is None for g in cached.values()):
                            _mark_answered(backend)
                        for _ in cached:
                            self.slots.release()
                        bar.update(len(cached))
                        if holder is None:  # claims off: every key not found is this stage's to ask
                            mine = [k for k in rest if k not in cached]
                            taken = set(mine)
                        if mine:
                            send(mine)
                        waiting += [k for k in rest if k not in cached and k not in taken]
                    if waiting and time.monotonic() >= next_look:
                        mine = holder.take(waiting) if holder is not None else waiting
                        send(mine)
                        taken = set(mine)
                        rest = [k for k in waiting if k not in taken]
                        arrived = outcomes.look(rest, errors_since)
                        for _ in arrived:
                            self.slots.release()
                        bar.update(len(arrived))
                        waiting = [k for k in rest if k not in arrived]
                        delay = POLL_FIRST if (mine or arrived) else min(2 * delay, POLL_MAX)
                        next_look = time.monotonic() + delay
                outcomes.settle_held(self.follow.desc, len(asked), len(set(keys)))
        finally:
            self._stop.set()
            turns.clear()
            for future in running.values():  # an abort or a failure: the requests in flight end now
                future.cancel()
            for _ in started:
                jobs.put(None)
        outcomes.check_failures(self.follow.desc, len(asked))
        sent = set(asked)
        return StageResult([found[k] for k in keys], [k not in sent for k in keys], backend.calls - calls_before)


def _bar(progress: bool, **settings: Any) -> Any:
    """A stage's tqdm progress bar; with ``progress`` off, :class:`_NoBar` (tqdm is then never imported)."""
    if not progress:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(**settings)


class _NoBar:
    """Stands in for a progress bar that is off: it shows nothing (what tqdm does with ``disable=True``)."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None


class _NoClaims:
    """Stands in for a claim holder when a stage claims nothing (nothing to ask, or claims turned off)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _batches(backend: Backend, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[list[tuple[int, Generation]]]:
    """``backend``'s answers in lists of those that arrived together (one per list for a backend that
    does not group them, or one that is not a :class:`Backend` subclass)."""
    grouped = getattr(backend, "generate_batches", None)
    if grouped is not None and not _overrides_generate_below_batches(type(backend)):
        return grouped(prompts, params)
    return ([item] for item in backend.generate(prompts, params))


def _overrides_generate_below_batches(cls: type) -> bool:
    """Whether ``cls`` (a user's subclass, say) redefines ``generate`` below the class whose
    ``generate_batches`` it inherits: that grouping would bypass its ``generate``, so it is not used."""
    def owner(name: str) -> type | None:
        return next((klass for klass in cls.__mro__ if name in vars(klass)), None)

    generate, batches = owner("generate"), owner("generate_batches")
    return generate is not None and batches is not None and generate is not batches and issubclass(generate, batches)


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


_URL = re.compile(r"\bhttps?://\S+?(?=:\s|[\s;,)]|:?$)")  # an endpoint's address (its port kept in it)


def refusal_text(error: str) -> str:
    """A refusal's message without the endpoint's address, so that replicas refusing alike read alike.

    Example:
        >>> refusal_text("refused for this row: HTTP 400 from http://10.0.0.2:8000/v1/chat/completions: bad field")
        'refused for this row: HTTP 400 from <endpoint>: bad field'
    """
    return _URL.sub("<endpoint>", error)


def _same_refusal(generation: Generation, held: list[tuple[str, Generation]]) -> bool:
    """Whether ``generation`` is refused for good with an HTTP status, like every refusal held so far (whichever
    replica said it: the endpoint's address is not compared)."""
    if not (generation.permanent and generation.error is not None and generation.status is not None):
        return False
    if not held:
        return True
    first = held[0][1]
    return first.status == generation.status and refusal_text(str(first.error)) == refusal_text(generation.error)
