"""Several servers for one model: requests spread over replicas, a failing one taken out for a while.

An :class:`EndpointPool` holds the base URLs of one role (``--base-url URL1,URL2``). Each request goes
to the endpoint in rotation with the fewest requests in flight; ties go to the one with fewer failures
in a row, then to the one furthest behind its share by speed (requests sent lately over its speed:
replies per second per request in flight, by Little's law, all decayed with a half-life of
``SPEED_HALF_LIFE`` seconds; one that has not replied yet counts as the mean of those that have), then
to the one picked least recently. Under load, fewest-in-flight keeps as many requests at each endpoint,
so each answers as many as its speed allows; the tie-break shares out by speed too what that leaves
open (one request at a time, an odd number in flight, the ends of a stage): equal servers take turns,
one twice as fast gets twice the share. With a run-wide limit (:meth:`EndpointPool.share_slots`), each
request first waits for one of the run's slots (:class:`~.slots.RequestSlots`).

An endpoint leaves the rotation for
``cooldown`` seconds when a connection to it cannot be made (refused, unknown host, no route) or it
answers that it does not serve the model (HTTP 404), or after ``max_failures`` failures in a row
(timeouts, 5xx, 429, malformed or unusable replies, refusals another endpoint answered); it comes back after the
cool-down on probation (one more failure sends it out again), and any reply from it clears its
record. When every endpoint is out, a request goes to the one whose cool-down ends first, so a single
server behaves as it did before pools existed and the caller's retry policy decides when to give up.

Example:
    >>> pool = EndpointPool(["http://a/v1", "http://b/v1"], clock=lambda: 0.0)
    >>> first, second = pool.acquire(), pool.acquire()
    >>> (first.public, second.public)
    ('http://a/v1', 'http://b/v1')
    >>> pool.release(first, ok=True)
    False
    >>> pool.acquire().public  # a has nothing in flight, b has one
    'http://a/v1'
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ...errors import ConvbenchError
from .slots import RequestSlots

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_COOLDOWN = 30.0  # seconds an endpoint stays out of rotation
DEFAULT_MAX_FAILURES = 3  # failures in a row that take an endpoint out
SPEED_HALF_LIFE = 60.0  # seconds: how fast an endpoint's measured speed forgets the past
_UNREACHABLE_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH}


@functools.lru_cache(maxsize=1024)  # called for every request: a pool's few URLs, parsed once
def public_url(url: str) -> str:
    """``url`` without user-info or query string, for records and messages (a port that is no number is
    left out: a client's error would quote it, and it may be a key typed in the wrong place).

    Example:
        >>> public_url("http://user:sk-1234@host:8000/v1?key=x"), public_url("http://[::1]:8000/v1")
        ('http://host:8000/v1', 'http://[::1]:8000/v1')
    """
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port:
        host = f"{host}:{port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a base URL, or None. Credentials in it (``http://user:KEY@host``) are refused:
    the HTTP client would send them (as Basic auth, to whatever host the URL names) and quote them in its
    errors; the key belongs in an environment variable (``--api-key-env``).
    A message never shows more of the URL than :func:`public_url`.

    Example:
        >>> url_problem("http://user:sk-1234@host/v1")
        'base URL http://host/v1 carries user-info (user:password@): convbench never sends credentials from a URL; put the key in an environment variable and name it with --api-key-env (default OPENAI_API_KEY)'
        >>> url_problem("http://host:8000/v1") is None
        True
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"base URL must start with http:// or https://, got {public_url(url)!r}"
    if "@" in parts.netloc:
        return (f"base URL {public_url(url)} carries user-info (user:password@): convbench never sends credentials "
                "from a URL; put the key in an environment variable and name it with --api-key-env (default "
                "OPENAI_API_KEY)")
    try:
        parts.port  # noqa: B018 (raises for a port that is no number from 0 to 65535)
    except ValueError:
        return f"base URL {public_url(url)} has a port that is not a number from 0 to 65535 (not shown)"
    if not parts.hostname:
        return f"base URL {public_url(url)!r} names no host"
    return None


def endpoint_urls(base_url: str | Sequence[str] | None) -> list[str]:
    """The base URLs ``base_url`` names, in order: a URL, a comma-separated list, or a sequence of
    either (a repeated command-line option); None (or empty) means ``$OPENAI_BASE_URL`` (one URL, not
    split), else OpenAI's. Trailing slashes are dropped. An empty entry, a URL that is not http(s), one
    with user-info or a bad port (:func:`url_problem`) and a URL given twice are one-line errors (URLs
    shown without credentials)."""
    given = [base_url] if isinstance(base_url, str) else list(base_url or [])
    if not any(given):
        url = (os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        problem = url_problem(url)
        if problem:
            raise ConvbenchError(f"$OPENAI_BASE_URL: {problem}")
        return [url]
    urls: list[str] = []
    seen: dict[str, str] = {}
    for value in given:
        for piece in str(value).split(","):
            url = piece.strip().rstrip("/")
            if not url:
                shown_list = ", ".join(",".join(public_url(p.strip()) for p in str(v).split(",")) for v in given)
                raise ConvbenchError(f"base URL list {shown_list!r} has an empty entry; separate URLs with single "
                                     "commas")
            problem = url_problem(url)
            if problem:
                raise ConvbenchError(problem)
            shown = public_url(url)
            if shown in seen:
                raise ConvbenchError(f"base URL {shown} is given twice; list each server once")
            seen[shown] = url
            urls.append(url)
    return urls


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` (a connection error, or a wrapper keeping one in ``reason``) means no connection could be
    made at all: refused, an unknown host, no route. Such an endpoint leaves the rotation at once."""
    reason = getattr(error, "reason", error)
    if isinstance(reason, socket.gaierror):
        return True
    return isinstance(reason, OSError) and reason.errno in _UNREACHABLE_ERRNOS


@dataclass(eq=False)
class Endpoint:
    """One server of a pool and its standing; read and written under the pool's lock."""

    url: str  # as given (may carry user-info): requests go here
    public: str  # without user-info or query: what records and messages show
    outstanding: int = 0  # requests in flight
    failures: int = 0  # failures in a row
    out_until: float | None = None  # when its cool-down ends (clock time); None while in rotation
    last_pick: int = -1  # sequence number of the last time it was picked
    answered: int = 0  # requests it replied to
    reason: str = ""  # why it last left the rotation
    missing: bool = False  # its last verdict was HTTP 404: it does not serve the model (until it answers again)
    # decayed tallies (see SPEED_HALF_LIFE): requests sent, replies, and request-seconds in flight
    recent_sent: float = 0.0
    recent_replies: float = 0.0
    recent_busy: float = 0.0

    def speed(self) -> float | None:
        """Replies per second per request in flight, lately (1 / its latency); None before its first reply."""
        if self.recent_replies <= 0 or self.recent_busy <= 0:
            return None
        return self.recent_replies / self.recent_busy


class EndpointPool:
    """The endpoints of one role, chosen by least outstanding requests; see the module docstring.

    Thread-safe: the workers of one backend share it. ``clock`` (``time.monotonic``) is replaceable
    so that tests can move time on."""

    def __init__(self, urls: Sequence[str], *, cooldown: float = DEFAULT_COOLDOWN,
                 max_failures: int = DEFAULT_MAX_FAILURES, clock: Callable[[], float] = time.monotonic) -> None:
        if not urls:
            raise ConvbenchError("an endpoint pool needs at least one base URL")
        if cooldown < 0:
            raise ConvbenchError(f"endpoint cool-down must be 0 seconds or more, got {cooldown}")
        if max_failures < 1:
            raise ConvbenchError(f"max_failures must be at least 1, got {max_failures}")
        self.endpoints = [Endpoint(url, public_url(url)) for url in urls]
        self.cooldown = cooldown
        self.max_failures = max_failures
        self._clock = clock
        self._lock = threading.Lock()
        self._picks = 0
        self._stats_at = clock()
        self._slots: RequestSlots | None = None

    def __len__(self) -> int:
        return len(self.endpoints)

    def share_slots(self, slots: RequestSlots | None) -> None:
        """Make every request of this pool take a slot of ``slots`` (the run's limit, shared with the
        run's other backends) before it goes out; None: no limit beyond the caller's own workers."""
        self._slots = slots

    def acquire(self, avoid: Iterable[Endpoint] = ()) -> Endpoint:
        """The endpoint for the next request, counted as in flight until :meth:`release`: the one in
        rotation with the fewest requests in flight, preferring those not in ``avoid`` (endpoints this
        request already failed on), ties broken as the module docstring says; when none is in rotation,
        the one whose cool-down ends first. With shared slots, waits for one first."""
        slots = self._slots
        if slots is not None:
            slots.acquire()
        return self._choose(avoid)

    async def acquire_async(self, avoid: Iterable[Endpoint] = ()) -> Endpoint:
        """:meth:`acquire` for a request that is a task on an event loop: waiting for a shared slot
        suspends the task, never the loop (:meth:`.RequestSlots.wait`)."""
        if self._slots is not None:
            await self._slots.wait()
        return self._choose(avoid)

    def _choose(self, avoid: Iterable[Endpoint]) -> Endpoint:
        """:meth:`acquire`'s pick, once the request holds its slot (given back if the pick fails)."""
        slots = self._slots
        avoided = set(map(id, avoid))
        try:
            with self._lock:
                self._advance()
                live = self._live()
                choices = [e for e in live if id(e) not in avoided] or live
                if choices:
                    behind = self._behind()
                    chosen = min(choices, key=lambda e: (e.outstanding, e.failures, behind(e), e.last_pick))
                else:
                    chosen = min(self.endpoints, key=lambda e: (e.out_until, e.last_pick))
                chosen.outstanding += 1
                chosen.recent_sent += 1
                chosen.last_pick = self._picks
                self._picks += 1
                return chosen
        except BaseException:
            if slots is not None:
                slots.release()
            raise

    def _advance(self) -> None:
        """Bring the decayed tallies up to now (under the lock): request-seconds in flight added, all decayed."""
        now = self._clock()
        elapsed = max(0.0, now - self._stats_at)
        self._stats_at = now
        if not elapsed:
            return
        keep = 0.5 ** (elapsed / SPEED_HALF_LIFE)
        for endpoint in self.endpoints:
            endpoint.recent_busy = endpoint.recent_busy * keep + endpoint.outstanding * elapsed
            endpoint.recent_sent *= keep
            endpoint.recent_replies *= keep

    def _behind(self) -> Callable[[Endpoint], float]:
        """How far each endpoint is ahead of its share by speed: requests sent lately over its speed
        (lower: further behind, picked first among ties); one that has not replied yet counts as the
        mean speed of those that have."""
        known = [s for s in (e.speed() for e in self.endpoints) if s is not None]
        fallback = sum(known) / len(known) if known else 1.0
        return lambda e: e.recent_sent / (e.speed() or fallback)

    def release(self, endpoint: Endpoint, ok: bool | None, *, unreachable: bool = False, missing: bool = False,
                reason: str = "") -> bool:
        """End a request to ``endpoint``. ``ok``: True when the server replied (an answer, or a refusal
        that is the row's or the key's), False when the attempt failed (``unreachable``: no connection
        could be made; ``missing``: the server says it does not serve the model or the route, HTTP 404;
        either takes it out at once), None when it was abandoned without a verdict (or the verdict
        waits for another endpoint: :meth:`settle`). Returns whether the endpoint is out of rotation now."""
        try:
            with self._lock:
                self._advance()
                endpoint.outstanding -= 1
                if ok:
                    endpoint.recent_replies += 1
                if ok is not None:
                    endpoint.missing = missing and not ok
                return self._verdict(endpoint, ok, unreachable or missing, reason)
        finally:
            if self._slots is not None:
                self._slots.release()

    def settle(self, endpoint: Endpoint, ok: bool, *, reason: str = "") -> bool:
        """Record the verdict on a request to ``endpoint`` released without one: a refusal that another
        endpoint was asked to confirm (``ok`` False: that one answered, so the refusal was this
        endpoint's fault, a failure like a timeout). Returns whether it is out of rotation now."""
        with self._lock:
            return self._verdict(endpoint, ok, False, reason)

    def _verdict(self, endpoint: Endpoint, ok: bool | None, at_once: bool, reason: str) -> bool:
        if ok is None:
            return endpoint.out_until is not None
        if ok:
            endpoint.failures = 0
            endpoint.out_until = None
            endpoint.answered += 1
            return False
        endpoint.failures += 1
        if at_once or endpoint.failures >= self.max_failures:
            self._take_out(endpoint, reason)
        return endpoint.out_until is not None

    def take_out(self, endpoint: Endpoint, reason: str) -> None:
        """Put ``endpoint`` out of rotation for the cool-down (a preflight found it dead)."""
        with self._lock:
            self._take_out(endpoint, reason)

    def all_missing(self) -> bool:
        """Whether every endpoint's last verdict was HTTP 404: none serves the model, so no request can succeed."""
        with self._lock:
            return all(e.missing for e in self.endpoints)

    def live(self, exclude: Iterable[Endpoint] = ()) -> list[Endpoint]:
        """The endpoints in rotation now, less ``exclude``."""
        excluded = set(map(id, exclude))
        with self._lock:
            return [e for e in self._live() if id(e) not in excluded]

    def _take_out(self, endpoint: Endpoint, reason: str) -> None:
        endpoint.out_until = self._clock() + self.cooldown  # a failure while out renews the cool-down
        endpoint.reason = reason

    def _live(self) -> list[Endpoint]:
        now = self._clock()
        for endpoint in self.endpoints:
            if endpoint.out_until is not None and endpoint.out_until <= now:
                endpoint.out_until = None  # back after the cool-down, on probation:
                endpoint.failures = self.max_failures - 1  # one more failure sends it out again
        return [e for e in self.endpoints if e.out_until is None]
