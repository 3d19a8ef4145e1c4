"""The HTTP transport of the served backends: aiohttp, on one event-loop thread per process.

Why aiohttp (``benchmarks/http_client_choice.py``: 1,440 chat requests at concurrency 128 against a
200 ms server, each client a fresh process; CPU seconds of the whole process, median of 2 rounds on a
shared 2-core machine): aiohttp 1.6 s; httpx2 (the successor of httpx that huggingface_hub, openai and
anthropic are built on) 4.1 s asynchronous, 3.8 s synchronous; the official ``openai`` client 10 s
(httpx2 underneath, plus a pydantic model per reply and its own retries, which convbench does not want:
it has its own policy); httpx 0.28 33 s asynchronous, 15 s synchronous (its connection pool, httpcore
1.0, checks every connection for every request: at 128 in flight that is most of its time). A
synchronous client also needs a thread per request in flight and cannot bound a name lookup (it calls
``getaddrinfo`` in the calling thread). aiohttp is the one whose cost stays small at the rates a server
farm reaches; it is a core dependency for it.

aiohttp does the HTTP: a connection pool with keep-alive, name lookups reused for 10 s, TLS, proxies
from the environment (``HTTPS_PROXY``, ``NO_PROXY``..., read once per URL: :func:`env_proxy`); redirects are not followed (the backends refuse
them: the key stays with one host). The total deadline per attempt is the backends' own
(:func:`within` around each exchange: name lookup, connect and every byte of the reply), since a
client's timeouts bound a phase (each connect, each read) and a server trickling bytes would hold a
request as long as it liked. What is left here is what no client does for a synchronous caller:

- the event-loop thread: the runner's stages are synchronous code. :func:`submit` hands a coroutine to
  the process's loop (a daemon thread, started on first use, again in a forked child); :func:`call`
  waits for it, and a wait that ends early (Ctrl-C, a consumer that stops) cancels it at once. Every
  request of the process is a task on that one thread: no thread per request, none per worker.
- :func:`session` / :func:`client`: the connection settings the backends share.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import sys
import threading
import weakref
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None  # the loop's
_lock = threading.Lock()


def loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for HTTP, running in a daemon thread (started on first use)."""
    global _loop, _thread
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, daemon=True, name="convbench-http")
            _thread.start()
        return _loop


def _forget_after_fork() -> None:
    """In a forked child the parent's loop thread does not exist (and the lock may have been held)."""
    global _loop, _thread, _lock
    _loop, _thread, _lock = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def submit(coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run ``coroutine`` on the process's loop; cancelling the future cancels it."""
    return asyncio.run_coroutine_threadsafe(coroutine, loop())


def call(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine``'s outcome, waited for in this thread; cancelled when the wait ends early (Ctrl-C).

    Example:
        >>> async def two() -> int:
        ...     return 2
        >>> call(two())
        2
    """
    future = submit(coroutine)
    try:
        return future.result()
    finally:
        future.cancel()  # nothing once it is done; else the coroutine stops at its next await


def session(timeout: float) -> Any:
    """An ``aiohttp.ClientSession`` for one backend (make it on the loop: it belongs to it). No limit on
    connections (the callers bound the requests in flight: a request queued for a connection would spend
    its deadline there); name lookups reused for 10 s (aiohttp's default); ``timeout`` bounds each
    connect and each read (the backend's deadline bounds the whole attempt). Not ``trust_env``: with it,
    aiohttp reads the proxy settings and ``~/.netrc`` again in a worker thread for every request (two
    thread hand-offs a request, a third of the client's CPU at 600 requests a second), and a netrc entry
    for the host would clash with the key's Authorization header; :func:`env_proxy` reads the proxy once."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=10)
    phases = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
    return aiohttp.ClientSession(connector=connector, timeout=phases)


@functools.lru_cache(maxsize=256)
def env_proxy(url: str) -> tuple[str | None, Any]:
    """The proxy the environment names for ``url`` (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``..., as
    aiohttp's ``trust_env`` reads them) and its credentials: (None, None) for none. Read once per URL
    in a process."""
    from aiohttp.helpers import get_env_proxy_for_url  # what trust_env calls for every request
    from yarl import URL  # aiohttp's URL type (one of its own dependencies)

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None
    return str(proxy), auth


async def exchange(session: Any, method: str, url: str, body: bytes | None,
                   headers: dict[str, str]) -> tuple[int, Any, str | None, bytes]:
    """One request, redirects not followed: (status, headers, reason, the whole body)."""
    proxy, proxy_auth = env_proxy(url)
    async with session.request(method, url, data=body, headers=headers, allow_redirects=False, proxy=proxy,
                               proxy_auth=proxy_auth) as response:
        return response.status, response.headers, response.reason, await response.read()


if sys.version_info >= (3, 11):
    async def within(seconds: float, awaitable: Awaitable[T]) -> T:
        """``await awaitable``, cancelled after ``seconds`` (``asyncio.TimeoutError``)."""
        async with asyncio.timeout(seconds):  # no task of its own, unlike wait_for
            return await awaitable
else:  # Python 3.10
    async def within(seconds: float, awaitable: Awaitable[T]) -> T:
        """``await awaitable``, cancelled after ``seconds`` (``asyncio.TimeoutError``)."""
        return await asyncio.wait_for(awaitable, seconds)


def discard(owner: object, running: asyncio.AbstractEventLoop, session: Any) -> None:
    """Close ``session`` (on ``running``) once ``owner`` is garbage (or at exit), if nobody closed it:
    aiohttp reports a session left open as an error."""

    def close() -> None:
        if running.is_closed() or not running.is_running():
            return
        future = asyncio.run_coroutine_threadsafe(session.close(), running)  # a no-op once closed
        if threading.current_thread() is not _thread:  # never wait on the loop's own thread
            with contextlib.suppress(Exception):
                future.result(timeout=2)

    weakref.finalize(owner, close)


def client(connections: int, timeout: float, httpx: Any) -> Any:
    """An ``AsyncClient`` of ``httpx`` (the module a client library is built on: ``httpx`` or ``httpx2``)
    for one backend, made on the loop: ``connections`` kept alive between requests, no limit on them (as
    :func:`session`), ``timeout`` per phase, redirects not followed."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=connections)
    return httpx.AsyncClient(limits=limits, timeout=timeout, follow_redirects=False)
