"""A total deadline per HTTP request for urllib.

urllib's ``timeout`` bounds each socket operation, not the request: a server that trickles one byte
a second holds a request for as long as it likes. Here the host name is resolved within the deadline,
each TCP connect gets the time that is left as its timeout, and when the deadline passes the connected
socket is shut down, which ends a blocked TLS handshake or read at once; the caller then sees
``Deadline.expired`` (or a ``TimeoutError``). Proxies and TLS settings keep working (these are urllib's
own handlers, only handed a connection class that connects through :meth:`Deadline.connect`).

Cost per request (a server farm takes hundreds a second): no thread of its own. One watchdog thread
per process fires every deadline when its time comes (a heap of deadlines, not a timer thread each).
An IP address needs no lookup; a host name is looked up in a helper thread that is waited for only
until the deadline (getaddrinfo cannot be interrupted), and a successful lookup is reused for
``LOOKUP_TTL`` seconds (as aiohttp does), so that the thread is started only when the name is really
looked up.
"""

from __future__ import annotations

import functools
import heapq
import http.client
import itertools
import os
import socket
import threading
import time
import urllib.request
from typing import Any

LOOKUP_TTL = 10.0  # seconds a successful name lookup is reused (aiohttp's default DNS cache time)


class Deadline:
    """``with Deadline(seconds) as d:`` arms the deadline; sockets attached to ``d`` are shut down when it passes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._armed = False
        self._ends = time.monotonic() + seconds

    def __enter__(self) -> Deadline:
        self._ends = time.monotonic() + self.seconds
        self._armed = True
        _WATCHDOG.arm(self)
        return self

    def remaining(self) -> float:
        """Seconds left before the deadline (0 once it has passed)."""
        return max(0.0, self._ends - time.monotonic())

    def connect(self, address: tuple[str, int], timeout: Any = None, source_address: Any = None) -> socket.socket:
        """``socket.create_connection`` within the deadline: the name lookup is waited for only while
        time is left (see :func:`lookup`), and each connect attempt's timeout is the time left. The
        socket comes back attached."""
        host, port = address
        addresses = lookup(host, port, self.remaining(), self.seconds)
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in addresses:
            left = self.remaining()
            if left <= 0:
                raise TimeoutError(f"no connection to {host} within {self.seconds:g}s")
            sock = socket.socket(family, kind, proto)
            try:
                per_operation = timeout if isinstance(timeout, (int, float)) else socket.getdefaulttimeout()
                sock.settimeout(left if per_operation is None else min(per_operation, left))
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
                sock.settimeout(per_operation)
            except OSError as err:
                sock.close()
                error = err
                continue
            self.attach(sock)
            return sock
        raise error or OSError(f"getaddrinfo returned no address for {host}")

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._armed = False
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()
        _WATCHDOG.disarm()

    def attach(self, sock: socket.socket) -> None:
        # A duplicate of the descriptor: shutdown() acts on the connection itself, so it still works
        # after TLS has wrapped (and detached) the original socket object, and it is ours to close.
        with self._lock:
            own = sock.dup()
            self._sockets.append(own)
            if self.expired:
                _shutdown(own)

    def _expire(self) -> None:
        """Called by the watchdog when the time is up (nothing happens once the ``with`` block has ended)."""
        with self._lock:
            if not self._armed:
                return
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)


class _Watchdog:
    """One daemon thread that expires every armed :class:`Deadline` when its time comes. Deadlines wait
    in a heap by end time; one that ends early (its request finished) stays there, disarmed, until it
    reaches the top or the heap is tidied."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._finished = 0  # deadlines disarmed since the heap was last tidied (an upper bound of those in it)
        self._thread: threading.Thread | None = None

    def arm(self, deadline: Deadline) -> None:
        entry = (deadline._ends, next(self._order), deadline)
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None or not self._thread.is_alive():  # first use (or first in a forked child)
                self._thread = threading.Thread(target=self._run, daemon=True, name="convbench-deadlines")
                self._thread.start()
            elif self._heap[0] is entry:  # the soonest now: the watchdog sleeps until a later one
                self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._finished += 1
            if self._finished > 1024 and 2 * self._finished > len(self._heap):
                self._heap = [e for e in self._heap if e[2]._armed]
                heapq.heapify(self._heap)
                self._finished = 0

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and not self._heap[0][2]._armed:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        due = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(wait)
            due._expire()  # outside the watchdog's lock: it takes the deadline's own

    def _after_fork(self) -> None:
        """In a forked child: no watchdog thread runs there, and the lock may have been held by one of the
        parent's threads at the fork; start afresh (the parent's deadlines are not the child's)."""
        self.__init__()  # type: ignore[misc]


_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHDOG._after_fork)

_lookups: dict[tuple[str, int], tuple[float, list[Any]]] = {}  # (host, port) -> (when it is stale, addresses)
# (host, port) -> the lookup under way and its outcome list: callers share it rather than each starting one
_pending: dict[tuple[str, int], tuple[threading.Thread, list[Any]]] = {}
_pending_lock = threading.Lock()


def lookup(host: str, port: int, wait: float, seconds: float) -> list[Any]:
    """``socket.getaddrinfo(host, port)`` (stream sockets), waited for at most ``wait`` seconds
    (``TimeoutError``, naming the deadline of ``seconds``, when it takes longer): the last successful
    lookup of ``(host, port)`` if made in the last ``LOOKUP_TTL`` seconds, else an IP address at once
    and a host name in a daemon helper thread (getaddrinfo cannot be interrupted). One lookup per name is
    under way at a time, shared by every caller, and one that ends after its callers gave up is still
    remembered (a slow resolver does not fail every request). Failures are not kept."""
    key = (host, port)
    known = _lookups.get(key)
    if known is not None and known[0] > time.monotonic():
        return known[1]
    if _numeric(host):  # getaddrinfo answers without looking anything up
        addresses = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        _lookups[key] = (time.monotonic() + LOOKUP_TTL, addresses)
        return addresses
    with _pending_lock:
        pending = _pending.get(key)
        if pending is None:
            pending = (threading.Thread(target=_resolve, args=(key,), daemon=True, name="convbench-resolve"), [])
            _pending[key] = pending
            pending[0].start()
    resolver, found = pending
    resolver.join(wait)
    if not found:
        raise TimeoutError(f"looking up {host} took longer than {seconds:g}s")
    if isinstance(found[0], BaseException):
        raise found[0]
    return found[0]  # type: ignore[no-any-return]


def _resolve(key: tuple[str, int]) -> None:
    """The lookup of ``key`` (in its own thread): remembered on success, handed to its waiters either way."""
    with _pending_lock:
        found = _pending[key][1]
    try:
        addresses = socket.getaddrinfo(key[0], key[1], 0, socket.SOCK_STREAM)
        _lookups[key] = (time.monotonic() + LOOKUP_TTL, addresses)
        found.append(addresses)
    except BaseException as err:  # noqa: BLE001  # handed to the waiting threads
        found.append(err)
    finally:
        with _pending_lock:
            del _pending[key]  # the next caller after a failure looks it up again


def _forget_pending_after_fork() -> None:
    global _pending_lock
    _pending_lock = threading.Lock()  # a parent's thread may have held it at the fork
    _pending.clear()  # the parent's lookup threads do not exist here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pending_after_fork)


def _numeric(host: str) -> bool:
    """Whether ``host`` is an IPv4 or IPv6 address (not a name to look up)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host.partition("%")[0])  # an IPv6 zone ("fe80::1%eth0") is not looked up
            return True
        except (OSError, ValueError):
            continue
    return False


def forget_lookups() -> None:
    """Drop the remembered name lookups (the next request to each host looks its name up again)."""
    _lookups.clear()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed by the other side
        pass


def _watched(base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
    class Watched(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, deadline: Deadline | None = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if deadline is not None:
                self._create_connection = deadline.connect  # name lookup and connect within the deadline

    return Watched


_HTTPConnection = _watched(http.client.HTTPConnection)
_HTTPSConnection = _watched(http.client.HTTPSConnection)


class DeadlineHTTPHandler(urllib.request.HTTPHandler):
    """Opens ``http://`` requests with the deadline found on ``request.deadline`` (if any)."""

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(functools.partial(_HTTPConnection, deadline=getattr(req, "deadline", None)), req)


class DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    """Opens ``https://`` requests with the deadline found on ``request.deadline`` (if any)."""

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(functools.partial(_HTTPSConnection, deadline=getattr(req, "deadline", None)), req,
                            context=self._context)
