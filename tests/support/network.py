"""Addresses on 127.0.0.1 that nobody listens on: a connection to them is refused at once."""

from __future__ import annotations

import socket


def closed_port() -> int:
    """A local port that was free a moment ago (bound, then released): connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def closed_url() -> str:
    """An OpenAI-style base URL on a :func:`closed_port`."""
    return f"http://127.0.0.1:{closed_port()}/v1"
