"""A total deadline per HTTP request for urllib.

urllib's ``timeout`` bounds each socket operation, not the request: a server that trickles one byte
a second holds a request for as long as it likes. Here the host name is resolved in a helper thread
that is waited for only until the deadline, each TCP connect gets the time that is left as its
timeout, and a timer shuts the connected socket down when the deadline passes, which ends a blocked
TLS handshake or read at once; the caller then sees ``Deadline.expired`` (or a ``TimeoutError``).
Proxies and TLS settings keep working (these are urllib's own handlers, only handed a connection
class that connects through :meth:`Deadline.connect`).
"""

from __future__ import annotations

import functools
import http.client
import socket
import threading
import time
import urllib.request
from typing import Any


class Deadline:
    """``with Deadline(seconds) as d:`` arms a timer; sockets attached to ``d`` are shut down when it fires."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._ends = time.monotonic() + seconds

    def __enter__(self) -> Deadline:
        self._ends = time.monotonic() + self.seconds
        self._timer.start()
        return self

    def remaining(self) -> float:
        """Seconds left before the deadline (0 once it has passed)."""
        return max(0.0, self._ends - time.monotonic())

    def connect(self, address: tuple[str, int], timeout: Any = None, source_address: Any = None) -> socket.socket:
        """``socket.create_connection`` within the deadline: the name lookup is waited for only while
        time is left (getaddrinfo cannot be interrupted, so it runs in a daemon thread), and each
        connect attempt's timeout is the time left. The socket comes back attached."""
        host, port = address
        found: list[Any] = []

        def lookup() -> None:
            try:
                found.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
            except BaseException as err:  # noqa: BLE001  # handed to the waiting thread
                found.append(err)

        resolver = threading.Thread(target=lookup, daemon=True, name="convbench-resolve")
        resolver.start()
        resolver.join(self.remaining())
        if not found:
            raise TimeoutError(f"looking up {host} took longer than {self.seconds:g}s")
        if isinstance(found[0], BaseException):
            raise found[0]
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in found[0]:
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
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def attach(self, sock: socket.socket) -> None:
        # A duplicate of the descriptor: shutdown() acts on the connection itself, so it still works
        # after TLS has wrapped (and detached) the original socket object, and it is ours to close.
        with self._lock:
            own = sock.dup()
            self._sockets.append(own)
            if self.expired:
                _shutdown(own)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)


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
