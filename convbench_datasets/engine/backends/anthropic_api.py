"""Anthropic's Messages API through the official ``anthropic`` client (the ``anthropic`` extra): ``anthropic:<model>``.

Everything but the wire is the openai backend's (:class:`~.openai_compat.OpenAICompatBackend`, which this
subclasses): concurrency, replicas (``base_url`` may list several), the retry policy and its backoff, per-row
errors, refusals confirmed by another replica, the identity (so cache keys and signatures), key hygiene and
the preflight. The client is built with ``max_retries=0``: convbench's own policy decides.

The request: system messages go to the top-level ``system`` field (joined by blank lines), the others stay
``messages``; ``max_tokens`` (which the API requires) is the stage's token limit, ``temperature`` its
temperature; ``params`` (``--param``) on top, as for openai (``top_p``, ``top_k``, ``stop_sequences``,
``thinking``, ``metadata``...; None leaves a field out, but never ``max_tokens``). OpenAI's names for
Anthropic's fields (``max_completion_tokens``, ``stop``) are refused, naming the field to use. ``presence_penalty`` (a benchmark's repetition
countermeasure) is not in Anthropic's API: a request that would carry it is an error that says so.

Errors, as the openai backend classifies them: 429 (its ``Retry-After`` honoured), 408, 409, 5xx and 529
(overloaded) are retried, as are timeouts, dropped connections and malformed replies (truncated JSON, a proxy's
HTML page with status 200: retried, then the row's error, as the openai backend does); 400, 413 and 422 are the row's refusal;
404 is the endpoint's (a model it does not serve); 401 and 403 stop the run. A reply is read from its
``content`` text blocks: ``stop_reason`` ``max_tokens`` is ``finish_reason`` ``length`` (an empty cut reply is
asked again, then the row's error), ``refusal`` is refused for the row (as a content filter), the rest ``stop``.
An empty reply (``content: []``) is treated as the openai backend treats one: never a judge's verdict, and a
generator's answer only when a second replica agrees.

Requests run on the openai backend's transport (:mod:`.transport`): the client's asynchronous form
(``AsyncAnthropic``) on the process's HTTP event loop, with ``timeout`` a total deadline per attempt
(:func:`.transport.within` around the client's call: name lookup, connect and every byte of the reply); the
client's own per-phase timeouts are ``timeout`` too. Redirects are not followed (the key stays with one host).

The key is read from ``$ANTHROPIC_API_KEY`` (``api_key_env``) at request time and given to the client; the
default base URL is ``$ANTHROPIC_BASE_URL``, else https://api.anthropic.com (the client adds ``/v1/messages``).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

from ...errors import ConvbenchError
from .base import Generation, GenerationParams, Messages
from . import transport
from .endpoints import Endpoint, public_url
from .openai_compat import (
    KEY_REFUSED_STATUS,
    MISSING_STATUS,
    RETRY_STATUS,
    ROW_REFUSED_STATUS,
    BackendError,
    OpenAICompatBackend,
    _InvalidReply,
    _int,
    _Missing,
    _nonempty,
    _Retryable,
    _retry_after,
    _RowRefused,
    reply_error,
    shown_key_env,
)

EXTRA_HINT = "the anthropic backend needs the official client: pip install 'convbench[anthropic]'"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_URL = "https://api.anthropic.com"
OVERLOADED_STATUS = 529  # Anthropic's "overloaded": retried like a 503
_FINISH = {"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop",
           "pause_turn": "stop", "refusal": "content_filter"}


# OpenAI's names for fields Anthropic's Messages API names otherwise: refused before any request (each row
# would be refused with HTTP 400), naming the field to use
_OPENAI_NAMES = {"max_completion_tokens": "max_tokens", "stop": "stop_sequences (a list of strings)"}


def check_fields(spec: str, params: dict[str, Any]) -> None:
    """Refuse request parameters Anthropic's API cannot take as given: OpenAI's names for its fields, and
    ``max_tokens`` left out (the API requires it)."""
    for name, theirs in _OPENAI_NAMES.items():
        if params.get(name) is not None:  # null leaves the field out, as it asks
            raise ConvbenchError(f"{spec}: {name} is OpenAI's name; Anthropic's Messages API takes {theirs}: "
                                 f"--param {theirs.split()[0]}=...")
    if "max_tokens" in params and params["max_tokens"] is None:
        raise ConvbenchError(f"{spec}: Anthropic's Messages API requires max_tokens, so max_tokens=null cannot leave "
                             "it out; give a number (--param max_tokens=N) or leave it to the benchmark")


class AnthropicBackend(OpenAICompatBackend):
    """``anthropic:<model>`` (see the module docstring); options as :class:`OpenAICompatBackend`'s."""

    kind = "anthropic"

    def __init__(self, model: str, *, base_url: str | Sequence[str] | None = None,
                 api_key_env: str = DEFAULT_KEY_ENV, **options: Any) -> None:
        try:
            import anthropic
        except ImportError as err:
            raise ConvbenchError(f"{EXTRA_HINT} ({err})") from None
        if not model:
            raise ConvbenchError("anthropic backend needs a model name: anthropic:<model>")
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_URL
        super().__init__(model, base_url=base_url, api_key_env=api_key_env, **options)
        check_fields(self.spec, self.params or {})
        self._anthropic = anthropic
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, Any]] = {}  # by endpoint: (its loop, client)

    def _anthropic_client(self, endpoint: Endpoint) -> Any:
        """One client per endpoint (its connection pool shared by the requests in flight), made on the loop
        it runs on (only ever touched there); the key read now. A twin's are its original's."""
        if self._twin_of is not None:
            return self._twin_of._anthropic_client(endpoint)
        running = asyncio.get_running_loop()
        made = self._clients.get(id(endpoint))
        key = os.environ.get(self.api_key_env) or ""
        if made is None or made[0] is not running or made[1].api_key != key:
            client = self._anthropic.AsyncAnthropic(
                api_key=key, base_url=endpoint.url, max_retries=0, timeout=self.timeout,
                default_headers={"User-Agent": "convbench"},
                http_client=transport.client(self.concurrency, self.timeout, _httpx()))
            self._clients[id(endpoint)] = made = (running, client)
        return made[1]

    def _key_hint(self) -> str:
        if os.environ.get(self.api_key_env):
            return ""
        return (f" (no API key was sent: {shown_key_env(self.api_key_env)} is not set; set it or name another "
                "variable with --api-key-env)")

    def _request(self, messages: Messages, params: GenerationParams) -> dict[str, Any]:
        system = [m["content"] for m in messages if m["role"] == "system"]
        request: dict[str, Any] = {"model": self.model, "max_tokens": params.max_new_tokens,
                                   "messages": [m for m in messages if m["role"] != "system"]}
        if params.temperature is not None:  # none set: the API's default
            request["temperature"] = params.temperature
        if system:
            request["system"] = "\n\n".join(system)
        if params.presence_penalty is not None:
            request["presence_penalty"] = params.presence_penalty
        for name, value in (self.params or {}).items():
            if value is None:
                request.pop(name, None)
            else:
                request[name] = value
        if "presence_penalty" in request:
            raise ConvbenchError(f"{self.spec}: Anthropic's Messages API has no presence_penalty (a repetition "
                                 "countermeasure sets it): run with --no-repetition-countermeasure, or "
                                 "--param presence_penalty=null to send none")
        return request

    def _read(self, reply: Any, seconds: float) -> Generation:
        if not isinstance(reply, dict) or not isinstance(reply.get("content"), list):
            raise _InvalidReply(f"reply has no content: {self._redact(str(reply))[:120]}")
        texts = [b.get("text") for b in reply["content"] if isinstance(b, dict) and b.get("type") == "text"]
        text = "".join(t for t in texts if isinstance(t, str))
        finish = _FINISH.get(str(reply.get("stop_reason")), None)
        problem = reply_error(text, finish)
        if finish == "content_filter":
            raise _RowRefused("the model refused (stop_reason 'refusal')")
        if problem is not None:
            raise _InvalidReply(problem)
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        return _nonempty(Generation(text, prompt_tokens=_int(usage.get("input_tokens")),
                                    completion_tokens=_int(usage.get("output_tokens")), seconds=seconds,
                                    finish_reason=finish))

    async def _post_to(self, endpoint: Endpoint, body: bytes) -> dict[str, Any]:
        request = json.loads(body)

        async def create(client: Any) -> Any:
            # fields this client version names go as keywords, the rest (temperature, top_k in some) as extra_body
            named = _named_fields(client)
            extra = {k: v for k, v in request.items() if k not in named}
            keywords = {k: v for k, v in request.items() if k in named}
            reply = await client.messages.create(**keywords, **({"extra_body": extra} if extra else {}))
            if not hasattr(reply, "model_dump"):  # a body that is not JSON (a proxy's HTML page): the client's text
                raise _Malformed(reply)
            return reply.model_dump()

        return await self._call(endpoint, create)

    async def _probe(self, endpoint: Endpoint) -> tuple[bytes, str | None]:
        """``GET /v1/models`` through the client: a refused key stops the run; no connection, the endpoint is dead."""
        try:
            await self._call(endpoint, lambda client: client.models.list(limit=1))
        except BackendError as err:
            if err.status in KEY_REFUSED_STATUS:
                raise BackendError(f"{err}{self._key_hint()}", err.status) from None
        except _Retryable as err:
            if err.status is None:
                return b"", str(err)
        except _RowRefused:
            pass
        return b"", None

    async def _call(self, endpoint: Endpoint, call: Any) -> Any:
        """``await call(client)`` within the deadline, its failures as the openai backend's exceptions (see the
        module docstring)."""
        anthropic = self._anthropic
        shown = public_url(endpoint.url)
        try:
            return await transport.within(self.timeout, call(self._anthropic_client(endpoint)))
        except (_Malformed, json.JSONDecodeError, anthropic.APIResponseValidationError) as err:
            # truncated JSON, a page that is not JSON, a reply not shaped as the API's: retried, as the openai
            # backend does, then the row's error; never a stop of the run. Redacted whole, then shortened.
            said = err.body if isinstance(err, _Malformed) else str(err)
            excerpt = repr(self._redact(" ".join(str(said).split())))[:80]
            raise _Retryable(f"malformed reply from {shown}: {excerpt}") from None
        except asyncio.TimeoutError:
            raise _Retryable(f"no complete reply from {shown} within {self.timeout:g}s") from None
        except anthropic.APIStatusError as err:
            code = err.status_code
            detail = self._redact(" ".join(str(getattr(err, "message", err)).split()))[:200]
            message = f"HTTP {code} from {shown}: {detail}"
            if code in RETRY_STATUS or code == OVERLOADED_STATUS or code >= 500:
                raise _Retryable(message, _retry_after(err.response.headers), status=code) from None
            if code == MISSING_STATUS:
                raise _Missing(message, status=code) from None
            if code in ROW_REFUSED_STATUS:
                raise _RowRefused(message, code) from None
            raise BackendError(message, code) from None
        except anthropic.APITimeoutError:
            raise _Retryable(f"no complete reply from {shown} within {self.timeout:g}s") from None
        except anthropic.APIConnectionError as err:
            httpx = _httpx()
            cause = err.__cause__
            if isinstance(cause, httpx.TimeoutException):
                raise _Retryable(f"no complete reply from {shown} within {self.timeout:g}s") from None
            reason = self._redact(" ".join(str(cause or err).split()))[:200]
            raise _Retryable(f"connection to {shown} failed: {reason}",
                             unreachable=isinstance(cause, httpx.ConnectError)) from None

    def close(self) -> None:
        """Close the clients' connections (a twin's are its original's: closed with it)."""
        if self._twin_of is not None:
            return
        clients, self._clients = list(self._clients.values()), {}
        for running, client in clients:
            if running.is_running():
                asyncio.run_coroutine_threadsafe(client.close(), running).result()
        super().close()


class _Malformed(Exception):
    """The client handed back text where a Messages API reply belongs (a body that is not JSON)."""

    def __init__(self, body: Any) -> None:
        super().__init__("not a Messages API reply")
        self.body = body


def _named_fields(client: Any) -> frozenset[str]:
    """The request fields ``client.messages.create`` takes by name (they differ between client versions)."""
    import inspect

    return frozenset(inspect.signature(client.messages.create).parameters) - {"extra_body", "extra_headers",
                                                                             "extra_query", "timeout"}


def _httpx() -> Any:
    """The httpx module the installed client is built on (``httpx``, or ``httpx2`` in its newer releases):
    its client, transport and exceptions must be that module's."""
    from anthropic import _base_client

    module = getattr(_base_client, "httpx2", None) or getattr(_base_client, "httpx", None)
    if module is None:
        import httpx as module
    return module
