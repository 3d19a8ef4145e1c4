"""A total deadline per HTTP request for urllib.

urllib's ``timeout`` bounds each socket operation, not the request: a server that trickles one byte
a second holds a request for as long as it likes. Here a timer shuts the request's socket down when
its deadline passes, which ends a blocked connect, TLS handshake or read at once; the caller then
sees ``Deadline.expired``. Proxies and TLS settings keep working (these are urllib's own handlers,
only handed a connection class that reports its socket).
"""

from __future__ import annotations

import functools
import http.client
import socket
import threading
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

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

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
                create = self._create_connection

                def create_and_attach(*a: Any, **k: Any) -> socket.socket:
                    sock = create(*a, **k)
                    deadline.attach(sock)
                    return sock

                self._create_connection = create_and_attach

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
