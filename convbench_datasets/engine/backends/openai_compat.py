"""Any server that speaks OpenAI's ``/v1/chat/completions``: vLLM, TGI, Ollama, OpenAI itself.

Requests run concurrently (``concurrency`` at a time, as tasks on the process's HTTP event loop:
:mod:`.transport`, aiohttp; answers are handed over as they arrive, those that arrived
together in one list by :meth:`OpenAICompatBackend.generate_batches`, so that a stage stores them in one
commit) and each is retried on 429, 5xx, timeouts, dropped connections and malformed
JSON, with exponential backoff plus jitter, honouring a
``Retry-After`` header; if those still fail, the answer is a (non-permanent) error and the run is
incomplete. ``timeout`` is a total deadline per attempt (name lookup and connect included), however
slowly the server sends: a timeout around the whole exchange (a client's own timeouts are per phase).

Per-row (permanent) errors: a request the server refuses for that row alone (400, 413, 422: a
prompt too long, say), a reply stopped by a content filter (``finish_reason: "content_filter"``), and a
reply with no usable answer (empty ``choices``, ``message.content: null``, an empty text cut at the
token limit) that stays so after the retries. HTTP 404 is never the row's: the server does not serve
the model (or the route), so the request gives up at once, not stored (a rerun asks it again). Any
other HTTP error (401, 403, ...) stops the run with
the server's message, after every answer that had already arrived has been handed over; requests
in flight or waiting to be retried then stop, unrecorded. Ctrl-C stops every request and retry at once.
:meth:`OpenAICompatBackend.preflight` checks once that the server answers, accepts the key and knows
the model.

Several base URLs (replicas of one model) form an :class:`~.endpoints.EndpointPool`: each request goes
to the endpoint with the fewest requests in flight; an endpoint that cannot be connected to or answers
404, or fails ``max_failures`` times in a row, leaves the rotation for ``cooldown`` seconds, and the
request that found it so goes at once to another endpoint in rotation (without using up a retry); with
none left, the retry policy above applies unchanged (a 404 from every endpoint gives up at once). An
answer that depends on the replica is never a per-row error: a refusal for the row is asked of
another endpoint in rotation before it stands (when that one answers, the refusal counts as the first
endpoint's failure), and a reply with no usable answer is a per-row error only when two endpoints, or
the only one in rotation, gave none (a retry goes to another endpoint first).

An empty reply (``content: ""`` with ``finish_reason: "stop"``, what a reasoning parser that moved the
whole answer to ``reasoning_content`` or a chat template that ends at once produce) is never a judge's
verdict (``GenerationParams.verdict``): retried like a reply with no usable answer, then the row's error.
A generator's empty reply can be its real answer (a benchmark may score silence): it stands when the only
endpoint gives it, or when a second endpoint in rotation answers empty too; when the second answers, the
first endpoint's empty reply counts as its failure (enough of them take it out of rotation) and the
second's answer is the row's, so one replica answering empty never writes its empties into the cache.
Everything else above
(deadline, redaction, no redirects) holds for each endpoint. When no endpoint has answered for ``stall_timeout``
seconds (default 5 minutes), the next failed attempt stops the run with one line naming the endpoints: a server
that died mid-run is not retried prompt by prompt for half an hour, and the same command resumes from the cache. The preflight checks every endpoint: a dead one is left out
with a warning while another works. The cache identity is ``model_id`` when given (kind, model and
``model_id``, no URL), else kind, model and the URL for one endpoint (as before pools existed), else
kind and model alone: the user vouches that the replicas serve the same weights.

OpenAI's reasoning models (o-series names: ``o1``, ``o3``, ``o4-mini``..., and ``gpt-5*``: :func:`.reasoning.reasoning_model`)
refuse ``max_tokens`` and any temperature but their own: they are sent ``max_completion_tokens`` (their hidden
reasoning counts against it) and no temperature, so they sample at their default whatever
``GenerationParams.temperature`` says.

``params`` (``--param KEY=VALUE``, ``backend_options={"params": {...}}``) are request fields set as given on top
of that (``temperature``, ``top_p``, ``seed``, ``stop``, ``reasoning_effort``, any field the server takes; None
leaves a field out); a token limit among them (``max_tokens`` or ``max_completion_tokens``) replaces
convbench's. They are part of :meth:`OpenAICompatBackend.identity` (so of every cache key and the run's
signature) when given; without them the identity, and so every cache key, is what it was.

The API key is read from an environment variable at request time. It is never stored on the object,
in the cache key, in records, results or error messages (a server that echoes it back has it
redacted from every message), and redirects are refused so that it is never sent to another host.
The server URL is recorded without user-info or query string.

Built on aiohttp rather than the official ``openai`` client or httpx (measured by
``benchmarks/http_client_choice.py``; the figures and the reasons are in :mod:`.transport`). The request
body is convbench's own JSON, as before, so servers see the same requests and cache keys are unchanged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import json
import os
import queue
import random
import re
import socket
import time
import urllib.parse
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...counts import MAX_CONCURRENCY, check_count, check_seconds
from ...errors import ConvbenchError
from ..redact import redact
from .. import ahead
from .base import Backend, Generation, GenerationParams, Messages, check_params
from . import transport
from .reasoning import reasoning_model
from .endpoints import (
    DEFAULT_COOLDOWN,
    DEFAULT_MAX_FAILURES,
    Endpoint,
    EndpointPool,
    endpoint_urls,
    public_url,
    unreachable,
)

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_KEY_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what a key looks like though it is a valid variable name: a provider's key prefix (Groq gsk_, Hugging Face hf_,
# OpenAI/Stripe-style sk_/pk_/rk_, GitHub ghp_/gho_/github_pat_, xAI xai_, GitLab glpat), or a long run of mixed
# letters and digits no variable name has
_KEY_LIKE = re.compile(r"^(gsk|hf|sk|pk|rk|ghp|gho|ghs|github_pat|xai|glpat|key)_|[A-Za-z0-9]{24,}")


def shown_key_env(name: str) -> str:
    """How a message names the API key's variable: ``$NAME``, unless the name given looks like a key itself
    (``gsk_...``, ``hf_...``: valid variable names too), which is never shown.

    Example:
        >>> shown_key_env("OPENAI_API_KEY"), shown_key_env("gsk_8Hq2mZ0aLx")
        ('$OPENAI_API_KEY', 'the variable given to --api-key-env (not shown: it looks like a key)')
    """
    if _KEY_ENV_NAME.fullmatch(name) and not _KEY_LIKE.search(name) and not _mixed(name):
        return f"${name}"
    return "the variable given to --api-key-env (not shown: it looks like a key)"


def _mixed(name: str) -> bool:
    """Letters of both cases and digits together in one stretch of 12 or more: a key's, not a variable's."""
    return any(len(part) >= 12 and any(c.islower() for c in part) and any(c.isupper() for c in part)
               and any(c.isdigit() for c in part) for part in name.split("_"))
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
REDIRECT_STATUS = {301, 302, 303, 307, 308}  # refused: the key would go with the request to another host
ROW_REFUSED_STATUS = {400, 413, 422}
# the server does not serve the model (or the route): vLLM's, Ollama's and OpenAI's unknown model, a proxy's
# unknown path. That is the endpoint's fault, never the row's: not stored, never a per-row error
MISSING_STATUS = 404
KEY_REFUSED_STATUS = {401, 403}
TOKEN_FIELDS = ("max_tokens", "max_completion_tokens")  # a token limit in --param replaces convbench's


def decoding_fields(model: str, params: GenerationParams) -> dict[str, Any]:
    """The request's token limit and temperature: ``max_tokens`` and ``temperature``, or for a reasoning
    model ``max_completion_tokens`` alone."""
    if reasoning_model(model):
        return {"max_completion_tokens": params.max_new_tokens}
    if params.temperature is None:  # none set: the server samples at its own default
        return {"max_tokens": params.max_new_tokens}
    return {"max_tokens": params.max_new_tokens, "temperature": params.temperature}


def request_fields(model: str, params: GenerationParams, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The request's fields besides model and messages: :func:`decoding_fields`, ``presence_penalty`` when
    set, then ``extra`` (the backend's ``params``) on top: a value set as given, None leaving the field out;
    a token limit in ``extra`` replaces convbench's.

    Example:
        >>> request_fields("gpt-4.1", GenerationParams(16), {"seed": 1, "temperature": None})
        {'max_tokens': 16, 'seed': 1}
        >>> request_fields("o4-mini", GenerationParams(16), {"max_tokens": 8, "reasoning_effort": "low"})
        {'max_tokens': 8, 'reasoning_effort': 'low'}
    """
    fields = decoding_fields(model, params)
    if params.presence_penalty is not None:  # sent only when set: servers that lack it never see it
        fields["presence_penalty"] = params.presence_penalty
    if extra:
        if any(extra.get(name) is not None for name in TOKEN_FIELDS):
            for name in TOKEN_FIELDS:
                fields.pop(name, None)
        for name, value in extra.items():
            if value is None:
                fields.pop(name, None)
            else:
                fields[name] = value
    return fields


def key_env_problem(name: Any) -> str | None:
    """Why ``name`` cannot be the name of the API key's environment variable, or None.

    A name is letters, digits and ``_``, not starting with a digit. Anything else is refused without
    being shown: it is most likely the key itself (``--api-key sk-...``, or a key pasted where its
    variable's name goes), and messages, records and logs must never hold a key.

    Example:
        >>> key_env_problem("MY_KEY") is None
        True
        >>> "sk-" in key_env_problem("sk-abc123")
        False
    """
    if isinstance(name, str) and _KEY_ENV_NAME.fullmatch(name):
        return None
    what = f"a {type(name).__name__}" if not isinstance(name, str) else "not a variable name"
    return (f"api_key_env (--api-key-env) names the environment variable that holds the API key, and what was given "
            f"is {what} (letters, digits and _, not starting with a digit); it is not shown, since it may be the key "
            f"itself: put the key in a variable and give its name, e.g. --api-key-env {DEFAULT_KEY_ENV}")


class BackendError(ConvbenchError):
    """A request the server refused for good (bad key...): retrying cannot help, nor can other rows."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status, when there was one


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, status: int | None = None,
                 unreachable: bool = False) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.status = status  # the HTTP status, when the server replied at all
        self.unreachable = unreachable  # no connection could be made (refused, unknown host, no route)


class _InvalidReply(_Retryable):
    """A well-formed reply without a usable answer: retried, then a per-row error (if two endpoints, or
    the only one in rotation, gave none)."""


class _EmptyReply(_InvalidReply):
    """A reply whose answer is empty though not cut: never a judge's verdict (retried, then the row's error,
    as :class:`_InvalidReply`); a generator's answer only where a second endpoint in rotation answers empty
    too, or none is left to ask (one replica's empty replies while another answers are that replica's fault).
    ``generation``: the empty answer, kept for the generator's case."""

    def __init__(self, generation: Generation, where: str = "") -> None:
        super().__init__(f"reply is empty (finish_reason {generation.finish_reason!r}){where}")
        self.generation = generation


class _Missing(_Retryable):
    """HTTP 404: the endpoint does not serve the model or the route. It leaves the rotation at once and the
    request goes to another endpoint; once every endpoint has said so, the request gives up (not stored)."""


class _RowRefused(Exception):
    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.status = status  # the HTTP status; None for a content filter (a verdict on the row itself)


DEFAULT_STALL_TIMEOUT = 300.0  # seconds with no answer from any endpoint before a run stops (--stall-timeout)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 600.0  # a server's own Retry-After is honoured up to this

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2**attempt)
        return backoff / 2 + rng.uniform(0, backoff / 2)  # "equal jitter": never zero, never in lockstep


class OpenAICompatBackend(Backend):
    """``openai:<model>`` behind one or more OpenAI-compatible servers (see the module docstring).

    Args:
        base_url: a URL, a comma-separated list of replicas, or a sequence of either (default
            ``$OPENAI_BASE_URL``, else OpenAI's).
        model_id: the name the cache knows this model by, instead of its server(s); see :meth:`identity`.
        concurrency: requests in flight at once, over all endpoints together.
        timeout: total seconds per attempt (name lookup and connect included).
        cooldown, max_failures: how long an endpoint stays out of rotation, and after how many
            failures in a row it leaves it (a connection that cannot be made: at once).
        stall_timeout: seconds with no answer from any endpoint (counted from the first request, or the last
            reply) after which a failed attempt stops the run instead of being retried.
        params: request fields sent with every request (see :func:`request_fields`); in the identity.
    """

    kind = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | Sequence[str] | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
        concurrency: int = 8,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        model_id: str | None = None,
        cooldown: float = DEFAULT_COOLDOWN,
        max_failures: int = DEFAULT_MAX_FAILURES,
        params: Mapping[str, Any] | None = None,
        stall_timeout: float = DEFAULT_STALL_TIMEOUT,
    ) -> None:
        if not model:
            raise ConvbenchError("openai backend needs a model name: openai:<model>")
        self.params = check_params(params)
        concurrency = check_count("concurrency (--concurrency)", concurrency, least=1, most=MAX_CONCURRENCY)
        timeout = check_seconds("timeout (--timeout)", timeout)  # NaN would pass `<= 0` and never expire
        problem = key_env_problem(api_key_env)
        if problem:
            raise ConvbenchError(problem)
        if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
            raise ConvbenchError(f"model id must be a non-empty name, got {model_id!r}")
        urls = endpoint_urls(base_url)
        self.model = model
        self.model_id = model_id
        self._pool = EndpointPool(urls, cooldown=cooldown, max_failures=max_failures)
        self.base_url = public_url(urls[0])
        self.base_urls = [e.public for e in self._pool.endpoints]
        if len(urls) > 1 and model_id is None:
            warnings.warn(f"{self.spec}: {len(urls)} endpoints share one cache identity (kind and model name, "
                          "without the URLs): you vouch that they serve the same weights; name them with "
                          "--model-id (model_id) to keep their answers apart from other servers of that name",
                          stacklevel=2)
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout = timeout
        self.stall_timeout = check_seconds("stall timeout (--stall-timeout)", stall_timeout)
        self._heard = _Heard()  # when an endpoint last answered (a twin shares it: the same servers)
        self.retry = retry or RetryPolicy()
        self.calls = 0
        self.retries = 0
        self._rng = random.Random()
        self._http: tuple[asyncio.AbstractEventLoop, Any] | None = None  # (its loop, aiohttp.ClientSession)
        self._sleep = None  # tests may replace the wait between attempts
        self._checked = False
        self._twin_of: OpenAICompatBackend | None = None  # the backend this one is a twin of (see twin)

    def identity(self) -> dict[str, Any]:
        """The cache's name for this model: with ``model_id``, kind, model and model_id (no URL: any
        server, or replica list, answering under that id shares the entries); else, for one endpoint,
        kind, model and its URL (as before pools existed, so older caches stay valid); for several,
        kind and model alone, whichever replica answers and in whatever order they are listed. Request
        ``params``, when given, are in it too (``params``, sorted by field)."""
        if self.model_id is not None:
            identity = {"kind": self.kind, "model": self.model, "model_id": self.model_id}
        elif len(self.base_urls) == 1:
            identity = {"kind": self.kind, "model": self.model, "base_url": self.base_url}
        else:
            identity = {"kind": self.kind, "model": self.model}
        if self.params:  # without params: the identity every earlier cache entry has
            identity["params"] = dict(self.params)
        return identity

    def twin(self) -> OpenAICompatBackend:
        """This backend for a second role (:meth:`Backend.twin`): the same endpoints (their measured speed
        and rotation), connections, retry policy and preflight; its own ``calls`` and ``retries``."""
        other = copy.copy(self)
        other.calls = other.retries = 0
        other._twin_of = self._twin_of or self
        return other

    def submit(self, messages: Messages, params: GenerationParams) -> concurrent.futures.Future[Generation]:
        """One prompt's answer on the process's event loop (see :class:`Backend`), with the retry policy;
        cancelling the future cancels the request."""
        future = transport.submit(self._complete(messages, params))
        ahead.requests_out()
        return future

    def share_slots(self, slots: Any) -> None:
        """Each chat request takes one of the run's ``slots`` while in flight (:meth:`.EndpointPool.share_slots`)."""
        self._pool.share_slots(slots)

    def preflight(self) -> None:
        """One ``GET /models`` per endpoint (once per backend; several endpoints at the same time): fail
        at once, in one line, when a server refuses the key (401/403) or when no endpoint can be reached
        (refused, unknown host, no reply within ``timeout``). An endpoint that cannot be reached while
        another can is left out of rotation for the cool-down, with a warning. Any other reply means
        the server is there; its chat requests have their own retries and rules. When a server lists
        models and this one is not among them, see :meth:`_check_model`. A twin's is its original's."""
        if self._twin_of is not None:
            return self._twin_of.preflight()
        if self._checked:
            return
        transport.call(self._preflight())
        self._checked = True

    async def _preflight(self) -> None:
        endpoints = self._pool.endpoints
        # every probe runs to its end, then the first endpoint's fatal error (a refused key) is raised first
        outcomes = await asyncio.gather(*(self._probe(e) for e in endpoints), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        dead = [(e, reason) for e, (_, reason) in zip(endpoints, outcomes) if reason is not None]
        if len(dead) == len(endpoints):
            if len(endpoints) == 1:
                raise ConvbenchError(f"{dead[0][1]} ({self.spec}); check --base-url and that the server is running")
            raise ConvbenchError(f"no endpoint of {self.spec} can be reached: {'; '.join(r for _, r in dead)}; "
                                 "check --base-url and that the servers are running")
        for endpoint, (listing, reason) in zip(endpoints, outcomes):
            if reason is None:
                await self._check_model(listing, endpoint)
        for endpoint, reason in dead:
            self._pool.take_out(endpoint, reason)
            warnings.warn(f"{self.spec}: {reason}; left out of rotation for {self._pool.cooldown:g}s, then tried "
                          f"again ({len(endpoints) - len(dead)} of {len(endpoints)} endpoints answer)", stacklevel=2)

    async def _probe(self, endpoint: Endpoint) -> tuple[bytes, str | None]:
        """``GET /models`` at ``endpoint``: (the listing, None) when the server is there (b"" when its
        reply is not a listing), (b"", reason) when it cannot be reached; a refused key or a redirect raises."""
        try:
            return await self._send("GET", f"{endpoint.url}/models"), None
        except BackendError as err:
            if err.status in KEY_REFUSED_STATUS:
                raise BackendError(f"{err}{self._key_hint()}", err.status) from None
            if err.status is None:  # a refused redirect: every request would meet it
                raise
        except _Retryable as err:
            if err.status is None:  # no HTTP reply at all: nothing will work there
                return b"", str(err)
        except _RowRefused:
            pass
        return b"", None

    async def _check_model(self, listing: bytes, endpoint: Endpoint | None = None) -> None:
        """Fail in one line, naming the model and some the server lists, when the server's non-empty
        model list lacks this model and a one-token chat request for it is refused (HTTP 400/404/422...).
        The list alone does not decide: some servers answer any name (TGI, llama.cpp) or route names the
        list does not show (Azure deployments); those answer the request, and the run goes on.
        ``endpoint``: the server that sent ``listing`` (default: the first)."""
        served = _served_models(listing)
        if not served or _listed(self.model, served):
            return
        endpoint = endpoint or self._pool.endpoints[0]
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": "ping"}],
                           **decoding_fields(self.model, GenerationParams(max_new_tokens=1))}).encode("utf-8")
        try:
            await self._post_to(endpoint, body)
        except (_RowRefused, _Missing) as err:
            more = f" and {len(served) - 5} more" if len(served) > 5 else ""
            raise ConvbenchError(f"model {self.model!r} is not served by {endpoint.public}: it lists "
                                 f"{', '.join(served[:5])}{more}, and refused a request for it ({err}); "
                                 f"check the model name in {self.spec}") from None
        except _Retryable:
            pass  # a passing failure: the stage's own retries deal with it

    def _key_hint(self) -> str:
        if os.environ.get(self.api_key_env):
            return ""
        return (f" (no API key was sent: {shown_key_env(self.api_key_env)} is not set; set it or name another variable "
                "with --api-key-env)")

    def generate(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        with contextlib.closing(self.generate_batches(prompts, params)) as batches:
            for batch in batches:
                yield from batch

    def generate_batches(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[list[tuple[int, Generation]]]:
        """The answers as they arrive, each list holding those that were waiting together (see
        :meth:`Backend.generate_batches`): under load a caller stores several in one transaction."""
        if len(prompts) == 1:  # one prompt (a pipelined stage's workers ask one at a time)
            ahead.requests_out()  # the work waiting starts ahead.PAUSE after this request is submitted
            yield [(0, transport.call(self._complete(prompts[0], params)))]
            return
        results: queue.SimpleQueue[tuple[int, Generation | BaseException]] = queue.SimpleQueue()
        running = transport.submit(self._complete_all(prompts, params, results))
        ahead.requests_out()  # the run's end-of-run work, while these wait for the server
        try:
            left = len(prompts)
            while left:
                batch: list[tuple[int, Generation]] = []
                item = results.get()
                while True:
                    index, outcome = item
                    left -= 1
                    if isinstance(outcome, BaseException):
                        running.cancel()  # requests in flight or waiting for a retry stop, unrecorded
                        batch += _arrived(results)
                        if batch:
                            yield batch
                        raise outcome
                    batch.append((index, outcome))
                    if not left:
                        break
                    try:
                        item = results.get_nowait()
                    except queue.Empty:
                        break
                yield batch
        finally:
            running.cancel()  # an interrupted run (Ctrl-C, a consumer that stops) ends every request at once

    async def _complete_all(self, prompts: Sequence[Messages], params: GenerationParams,
                            results: queue.SimpleQueue[tuple[int, Generation | BaseException]]) -> None:
        """Every prompt, ``concurrency`` at a time, each outcome put in ``results`` as it comes (an error
        that stops the run too: then no new request starts)."""
        todo = iter(enumerate(prompts))
        stop = asyncio.Event()

        async def work() -> None:
            for index, messages in todo:
                if stop.is_set():
                    return
                try:
                    results.put((index, await self._complete(messages, params, stop)))
                except Exception as err:  # handed to the caller's thread  # noqa: BLE001
                    stop.set()
                    results.put((index, err))

        workers = [asyncio.ensure_future(work()) for _ in range(min(self.concurrency, len(prompts)))]
        try:
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()

    def _request(self, messages: Messages, params: GenerationParams) -> dict[str, Any]:
        """The request body for one prompt (a subclass speaking another API builds its own)."""
        return {"model": self.model, "messages": messages, **request_fields(self.model, params, self.params)}

    def _read(self, reply: Any, seconds: float) -> Generation:
        """The answer in a parsed reply; raises :class:`_InvalidReply` / :class:`_RowRefused` for none, and
        :class:`_EmptyReply` for an empty one (see :meth:`_post`)."""
        return _generation(reply, seconds, self._redact)

    async def _complete(self, messages: Messages, params: GenerationParams,
                        stop: asyncio.Event | None = None) -> Generation:
        """One prompt's answer, with the retry policy; ``stop`` (set when the run stops) ends the retries."""
        self.calls += 1  # only ever on the loop's thread
        body = json.dumps(self._request(messages, params)).encode("utf-8")
        start = time.perf_counter()
        failures: list[tuple[Endpoint, _Retryable]] = []  # this prompt's failed attempts, by endpoint
        stop = stop or asyncio.Event()
        self._heard.start()
        try:
            return await self._attempts(messages, params, body, start, failures, stop)
        finally:
            self._heard.end()

    async def _attempts(self, messages: Messages, params: GenerationParams, body: bytes, start: float,
                        failures: list[tuple[Endpoint, _Retryable]], stop: asyncio.Event) -> Generation:
        """:meth:`_complete`'s attempts at one prompt (the retry policy)."""
        last_error: _Retryable | None = None

        def read(reply: Any) -> Generation:
            return self._read(reply, time.perf_counter() - start)

        for attempt in range(self.retry.max_retries + 1):
            if stop.is_set():
                return Generation("", seconds=time.perf_counter() - start, error="stopped before an answer")
            try:
                generation = await self._post(body, read, failures, verdict=params.verdict)
                self._heard.now()
                return generation
            except _RowRefused as err:
                self._heard.now()  # a reply: the server is there
                return Generation("", seconds=time.perf_counter() - start, error=f"refused for this row: {err}",
                                  permanent=True, status=err.status)
            except _Retryable as err:
                last_error = err
                self._check_stall(err)
                if attempt == self.retry.max_retries or self._missing_everywhere(failures):
                    break
                self.retries += 1
                wait = self.retry.delay(attempt, err.retry_after, self._rng)
                if self._sleep is not None:
                    self._sleep(wait)
                else:
                    with contextlib.suppress(TimeoutError):  # cut short when the run stops: the loop's check says so
                        await asyncio.wait_for(stop.wait(), wait)
        # an answer the server keeps failing to give is this row's error; a server failing is the run's
        error = f"gave up after {attempt + 1} attempts: {last_error}"
        if isinstance(last_error, _Missing):
            error += f" (the server does not serve {self.model!r} there: check the model name and --base-url)"
        return Generation("", seconds=time.perf_counter() - start, error=error,
                          permanent=self._unusable_for_the_row(last_error, failures))

    def _check_stall(self, error: _Retryable) -> None:
        """Stop the run (:class:`BackendError`) when no endpoint has answered for ``stall_timeout`` seconds: a
        server that died is not retried request by request for half an hour. What arrived is cached, so the
        same command resumes once the server is back."""
        silent = self._heard.silent_for()
        if silent > max(self.stall_timeout, self.timeout):  # one attempt may take the whole --timeout
            where = ", ".join(self.base_urls)
            raise BackendError(f"no answer from {self.spec} at {where} for {silent:.0f}s (--stall-timeout "
                               f"{self.stall_timeout:g}); last: {error}. The answers so far are cached: run the "
                               "same command again once the server answers")

    def _missing_everywhere(self, failures: Sequence[tuple[Endpoint, _Retryable]]) -> bool:
        """Whether every endpoint has answered HTTP 404, to this prompt or (its last verdict) to another: waiting
        and asking again cannot help, so the prompt gives up at once, as with one endpoint."""
        missing = {id(endpoint) for endpoint, err in failures if isinstance(err, _Missing)}
        return missing >= {id(endpoint) for endpoint in self._pool.endpoints} or (
            bool(missing) and self._pool.all_missing())

    def _unusable_for_the_row(self, last_error: _Retryable | None, failures: Sequence[tuple[Endpoint, _Retryable]]) -> bool:
        """Whether a prompt that ended with no usable answer is the row's error (stored, not asked again):
        two endpoints gave none, or no other endpoint is in rotation to ask. One replica's empty replies
        while another answers are that replica's fault, never the row's."""
        if not isinstance(last_error, _InvalidReply):
            return False
        unusable = {id(endpoint): endpoint for endpoint, err in failures if isinstance(err, _InvalidReply)}
        return len(unusable) > 1 or not self._pool.live(exclude=unusable.values())

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": "convbench"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _redact(self, text: str) -> str:
        """``text`` without the API key or any Authorization value (servers may echo them)."""
        return redact(text, [os.environ.get(self.api_key_env)])

    async def _post(self, body: bytes, read: Callable[[Any], Generation],
                    failures: list[tuple[Endpoint, _Retryable]], *, verdict: bool = False) -> Generation:
        """One chat attempt at the pool's choice of endpoint, its reply ``read`` into the answer (``read``
        raises for a reply that is no answer). ``failures``: this prompt's earlier failed attempts, whose
        endpoints are avoided while others are in rotation; each new failure is added to it.

        An endpoint this attempt takes out of rotation hands the request at once to another in rotation
        (each at most once). A refusal for the row stands only when another endpoint in rotation refuses
        the request too, or none is left to ask: when the other answers, the refusal was the first
        endpoint's fault and counts as its failure (enough of them take it out). An empty answer is
        doubted the same way for a generator; for a judge (``verdict``) it is no answer at all, a failure
        of the endpoint that gave it. The last failure is raised for the caller's retry policy."""
        tried: list[Endpoint] = []
        # a refusal or a generator's empty answer, waiting for another endpoint's word
        doubted: tuple[Endpoint, _RowRefused | _EmptyReply] | None = None
        while True:
            # a second opinion must come from another endpoint; otherwise earlier failures are avoided too
            avoid = tried if doubted is not None else [*tried, *(endpoint for endpoint, _ in failures)]
            chosen = await self._pool.acquire_async(avoid=avoid)
            outcome: bool | None = None  # the endpoint's: it answered (True), failed (False), or not yet known
            try:
                try:
                    generation = read(await self._post_to(chosen, body))
                except _EmptyReply as empty:
                    if verdict:
                        raise  # a judge's empty reply is no verdict: the endpoint failed (below)
                    tried.append(chosen)
                    if doubted is None and self._pool.live(exclude=tried):
                        doubted = (chosen, empty)  # asked of another endpoint before it stands
                        continue
                    if doubted is not None and (doubted[0] is chosen or not isinstance(doubted[1], _EmptyReply)):
                        # no confirmation: the same endpoint again, or one that refused where this one is empty
                        raise _InvalidReply(f"replicas disagree: {doubted[1]}; then {empty}") from None
                    generation = empty.generation  # the only endpoint left, or a second one, answers empty
                outcome = True
            except _Retryable as err:
                outcome = False
                out = self._pool.release(chosen, False, unreachable=err.unreachable, missing=isinstance(err, _Missing),
                                         reason=str(err))
                tried.append(chosen)
                failures.append((chosen, err))
                if out and self._pool.live(exclude=tried):
                    continue  # fail over now: another endpoint is in rotation
                raise
            except _RowRefused as err:
                tried.append(chosen)
                if doubted is None and self._pool.live(exclude=tried):
                    doubted = (chosen, err)  # its verdict waits for the other endpoint's (released without one)
                    continue
                if doubted is not None and (doubted[0] is chosen or not isinstance(doubted[1], _RowRefused)):
                    # no confirmation (the same endpoint, or an empty reply before this refusal): asked again
                    raise _InvalidReply(f"replicas disagree: {doubted[1]}; then refused: {err}") from None
                outcome = True  # the server replied: the refusal is the row's
                if doubted is not None:
                    self._pool.settle(doubted[0], True)  # confirmed: both refused the row
                raise
            except BackendError:
                outcome = True  # the server replied: the key's refusal
                raise
            finally:
                if outcome is not False:
                    self._pool.release(chosen, outcome)
            if doubted is not None:  # another endpoint answered: the first's refusal or empty answer was its fault
                same = isinstance(doubted[1], _EmptyReply) and not generation.text.strip()
                self._pool.settle(doubted[0], same, reason="" if same else
                                  f"{'refused' if isinstance(doubted[1], _RowRefused) else 'answered empty'} a "
                                  f"request another endpoint answered ({doubted[1]})")
            return generation

    async def _post_to(self, endpoint: Endpoint, body: bytes) -> dict[str, Any]:
        """``POST /chat/completions`` at ``endpoint``: the parsed reply; failures as :meth:`_send` raises them."""
        url = f"{endpoint.url}/chat/completions"
        payload = await self._send("POST", url, body)
        try:
            return json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError):
            # redacted whole, then shortened: a cut first could leave part of a key that no longer matches
            excerpt = repr(self._redact(payload.decode("utf-8", errors="replace")))[:80]
            raise _Retryable(f"malformed JSON from {public_url(url)}: {excerpt}") from None

    def _session(self) -> Any:
        """This backend's ``aiohttp.ClientSession`` (its connection pool), made on the loop it runs on."""
        if self._twin_of is not None:  # a twin's connections are its original's
            return self._twin_of._session()
        running = asyncio.get_running_loop()
        if self._http is None or self._http[0] is not running:  # first use, or a forked child's new loop
            self._http = (running, transport.session(self.timeout))
            transport.discard(self, *self._http)
        return self._http[1]

    async def _send(self, method: str, url: str, body: bytes | None = None) -> bytes:
        """The reply body, within ``timeout`` in all; HTTP and connection errors as the exceptions above."""
        import aiohttp

        shown = public_url(url)
        session = self._session()
        try:  # the whole attempt within the deadline: lookup, connect, every byte of the reply
            status, headers, reason, payload = await transport.within(
                self.timeout, transport.exchange(session, method, url, body, self._headers()))
        except asyncio.TimeoutError:
            raise _Retryable(f"no complete reply from {shown} within {self.timeout:g}s") from None
        except aiohttp.ClientError as err:  # refused, unknown host, reset, a reply that is not HTTP...
            detail = " ".join(self._redact(_said(err)).split())  # one line, even for a garbled status line
            raise _Retryable(f"connection to {shown} failed: {detail}", unreachable=_unreachable(err)) from None
        if status < 300:
            return payload
        if status in REDIRECT_STATUS and "Location" in headers:
            target = public_url(urllib.parse.urljoin(url, headers["Location"]))
            raise BackendError(f"the server redirected {shown} to {target}; point --base-url at the final address "
                               "(redirects are refused so the API key stays with one host)")
        detail = _error_detail(payload, reason, self._redact)
        message = f"HTTP {status} from {shown}: {detail}"
        if status in RETRY_STATUS:
            raise _Retryable(message, _retry_after(headers), status=status)
        filtered = status not in KEY_REFUSED_STATUS and _filtered(detail)
        if status == MISSING_STATUS and not filtered:
            raise _Missing(message, status=status)
        if status in ROW_REFUSED_STATUS or filtered:
            raise _RowRefused(message, None if filtered else status)
        raise BackendError(message, status)

    def close(self) -> None:
        """Close the connections this backend keeps open (a twin's are its original's: closed with it)."""
        if self._twin_of is None and self._http is not None:
            running, session = self._http
            self._http = None
            if running.is_running():
                asyncio.run_coroutine_threadsafe(session.close(), running).result()


class _Heard:
    """When a backend's endpoints last answered (monotonic seconds): a reply of any kind (an answer, a refusal)
    counts, failures do not; a request sent while none is in flight starts the clock again, so time the backend
    spent idle (a notebook's pause, a judge waiting for generation) is never taken for silence."""

    def __init__(self) -> None:
        self.last: float | None = None
        self.in_flight = 0

    def start(self) -> None:
        if self.last is None or self.in_flight == 0:
            self.last = time.monotonic()
        self.in_flight += 1

    def end(self) -> None:
        self.in_flight -= 1

    def now(self) -> None:
        self.last = time.monotonic()

    def silent_for(self) -> float:
        return 0.0 if self.last is None else time.monotonic() - self.last


def _unreachable(error: BaseException) -> bool:
    """Whether a client error means no connection could be made at all (refused, unknown host, no route:
    :func:`.endpoints.unreachable` of the operating system's error aiohttp keeps). A failed name lookup is
    one whatever the resolver: aiohttp's threaded one keeps a ``socket.gaierror``, its aiodns one (the
    ``aiohttp[speedups]`` install) an ``OSError`` with no errno."""
    import aiohttp

    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return True
    return unreachable(getattr(error, "os_error", error))


def _said(error: BaseException) -> str:
    """A client error in words: the operating system's (``Connection refused``, the lookup's own message),
    the parser's for a reply that is not HTTP; never the URL aiohttp would add (it may carry a query)."""
    cause = getattr(error, "os_error", None)
    if isinstance(cause, socket.gaierror) or (isinstance(cause, OSError) and cause.errno is None):
        return str(cause)
    if isinstance(cause, OSError):
        return os.strerror(cause.errno)
    return str(getattr(error, "message", "") or error) or type(error).__name__


def _served_models(listing: bytes) -> list[str]:
    """The model ids in a ``GET /models`` reply (OpenAI's ``{"data": [{"id": ...}]}``); [] if none or unreadable."""
    try:
        reply = json.loads(listing)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return []
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list):
        return []
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def _listed(model: str, served: list[str]) -> bool:
    """Whether ``model`` is among ``served``, allowing Ollama's ``:latest`` tag and Gemini's ``models/`` prefix."""
    return bool({model, f"{model}:latest", f"models/{model}"} & set(served))


def _arrived(results: queue.SimpleQueue) -> Iterator[tuple[int, Generation]]:
    """Answers already waiting in the queue (handed over before an error is raised)."""
    while True:
        try:
            index, outcome = results.get_nowait()
        except queue.Empty:
            return
        if isinstance(outcome, Generation):
            yield index, outcome


def _generation(reply: Any, seconds: float, clean: Any = str) -> Generation:
    """The answer in an OpenAI-style reply; ``clean`` redacts server text quoted in errors."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not choices and isinstance(reply, dict) and _filtered(str(reply.get("error", ""))):
        raise _RowRefused(f"content filter: {clean(str(reply['error']))[:200]}")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        # server text is redacted whole, then shortened (a cut first could leave part of a key)
        raise _InvalidReply(f"reply has no choices: {clean(str(reply))[:120]}")
    choice = choices[0]
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else None
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    problem = reply_error(text if isinstance(text, str) else "", finish)
    if finish == "content_filter":
        raise _RowRefused(str(problem))  # a verdict on the row: not asked again
    if text is None:
        raise _InvalidReply(f"reply has message.content null (finish_reason {finish!r})")
    if not isinstance(text, str):
        raise _InvalidReply(f"reply content is not text: {clean(str(text))[:120]}")
    if problem is not None:
        raise _InvalidReply(problem)  # asked again; if it stays empty, the row's error
    usage = reply.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return _nonempty(Generation(
        text,
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        seconds=seconds,
        finish_reason=finish,
    ), message.get("reasoning_content") if isinstance(message, dict) else None)


def _nonempty(generation: Generation, reasoning: Any = None) -> Generation:
    """``generation``, or :class:`_EmptyReply` when its text is empty or blank (``reasoning``: the reply's
    separate reasoning text, named in the reason when a reasoning parser moved everything there)."""
    if generation.text.strip():
        return generation
    where = (", all of it in reasoning_content (a reasoning parser may have moved the answer there)"
             if isinstance(reasoning, str) and reasoning.strip() else "")
    raise _EmptyReply(generation, where)


def reply_error(text: str | None, finish_reason: str | None) -> str | None:
    """Why a reply is no answer (the row's error), or None: the server's content filter withheld it
    (``finish_reason`` ``content_filter``), or it is empty and was cut at the token limit (``length``:
    a reasoning model that spent its budget on hidden reasoning; an empty turn would be judged as Silence).

    This backend's rule (a filtered reply is refused for its row, an empty cut one asked again and then
    the row's error); convbench's inspect scorers and ``convbench import-inspect`` read replies by it too.

    Example:
        >>> reply_error("", "length")
        "reply is empty, cut at the token limit (finish_reason 'length'); a reasoning model may need a higher token limit"
        >>> reply_error("Sure, here it", "length") is None
        True
    """
    if finish_reason == "content_filter":
        return "content filter: the server withheld the answer (finish_reason 'content_filter')"
    if finish_reason == "length" and not (text or "").strip():
        return ("reply is empty, cut at the token limit (finish_reason 'length'); a reasoning model "
                "may need a higher token limit")
    return None


def _filtered(text: str) -> bool:
    """Whether an error message says a content filter stopped the answer (OpenAI, Azure wordings)."""
    folded = text.casefold()
    return any(s in folded for s in ("content_filter", "content filter", "content management policy"))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        from email.utils import parsedate_to_datetime

        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_detail(payload: bytes, reason: str | None, clean: Any = str) -> str:
    """The server's message in an HTTP error reply (OpenAI's ``{"error": {"message": ...}}``, else its text)."""
    text = payload.decode("utf-8", errors="replace")
    try:
        message = json.loads(text).get("error", {})
        text = message.get("message", text) if isinstance(message, dict) else str(message)
    except (json.JSONDecodeError, AttributeError):
        pass
    # redacted before it is shortened: a cut could leave the head of a key that no longer matches
    return clean(" ".join(text.split()))[:200] or clean(reason or "")
