"""Any server that speaks OpenAI's ``/v1/chat/completions``: vLLM, TGI, Ollama, OpenAI itself.

Requests run concurrently (``concurrency`` at a time) and each is retried on 429, 5xx, timeouts,
dropped connections and malformed replies, with exponential backoff plus jitter, honouring a
``Retry-After`` header. Other HTTP errors (400, 401, 404...) stop the run with the server's message.
The API key is read from an environment variable at request time; it is never stored on the object's
public fields, in the cache key, in records or in error messages.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ...errors import ConvbenchError
from .base import Backend, Generation, GenerationParams, Messages

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class BackendError(ConvbenchError):
    """A request the server refused for good (bad model name, bad key...): retrying cannot help."""


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        backoff = min(self.max_delay, self.base_delay * 2**attempt)
        return backoff / 2 + rng.uniform(0, backoff / 2)  # "equal jitter": never zero, never in lockstep


class OpenAICompatBackend(Backend):
    kind = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
        concurrency: int = 8,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not model:
            raise ConvbenchError("openai backend needs a model name: openai:<model>")
        if concurrency < 1:
            raise ConvbenchError(f"concurrency must be at least 1, got {concurrency}")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.calls = 0
        self.retries = 0
        self._rng = random.Random()
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model, "base_url": self.base_url}

    def generate(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="convbench-openai") as pool:
            pending: dict[Future[Generation], int] = {}
            queue = iter(enumerate(prompts))
            try:
                for index, messages in queue:
                    pending[pool.submit(self._complete, messages, params)] = index
                    if len(pending) >= self.concurrency * 2:
                        yield from self._drain(pending)
                while pending:
                    yield from self._drain(pending)
            finally:
                for future in pending:
                    future.cancel()

    @staticmethod
    def _drain(pending: dict[Future[Generation], int]) -> Iterator[tuple[int, Generation]]:
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            index = pending.pop(future)
            yield index, future.result()  # re-raises BackendError from the worker

    def _complete(self, messages: Messages, params: GenerationParams) -> Generation:
        with self._lock:
            self.calls += 1
        body = json.dumps(
            {
                "model": self.model,
                "messages": messages,
                "max_tokens": params.max_new_tokens,
                "temperature": params.temperature,
            }
        ).encode("utf-8")
        start = time.perf_counter()
        last_error = ""
        for attempt in range(self.retry.max_retries + 1):
            try:
                reply = self._post(body)
                return _generation(reply, time.perf_counter() - start)
            except _Retryable as err:
                last_error = str(err)
                if attempt == self.retry.max_retries:
                    break
                with self._lock:
                    self.retries += 1
                time.sleep(self.retry.delay(attempt, err.retry_after, self._rng))
        return Generation("", seconds=time.perf_counter() - start,
                          error=f"gave up after {self.retry.max_retries + 1} attempts: {last_error}")

    def _post(self, body: bytes) -> dict[str, Any]:
        url = f"{self.base_url}/chat/completions"
        headers = {"Content-Type": "application/json", "User-Agent": "convbench"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as err:
            detail = _error_detail(err)
            if err.code in RETRY_STATUS:
                raise _Retryable(f"HTTP {err.code} from {url}: {detail}", _retry_after(err.headers)) from None
            raise BackendError(f"HTTP {err.code} from {url}: {detail}") from None
        except (TimeoutError, socket.timeout) as err:
            raise _Retryable(f"no reply from {url} within {self.timeout:g}s") from err
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError) as err:
            raise _Retryable(f"connection to {url} failed: {getattr(err, 'reason', err)}") from err
        try:
            return json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _Retryable(f"malformed JSON from {url}: {payload[:80]!r}") from None


def _generation(reply: dict[str, Any], seconds: float) -> Generation:
    try:
        text = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _Retryable(f"reply has no choices[0].message.content: {str(reply)[:120]}") from None
    usage = reply.get("usage") or {}
    return Generation(
        text or "",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        seconds=seconds,
    )


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _error_detail(err: urllib.error.HTTPError) -> str:
    try:
        text = err.read().decode("utf-8", errors="replace")
    except OSError:
        text = ""
    try:
        message = json.loads(text).get("error", {})
        text = message.get("message", text) if isinstance(message, dict) else str(message)
    except (json.JSONDecodeError, AttributeError):
        pass
    return " ".join(text.split())[:200] or err.reason
