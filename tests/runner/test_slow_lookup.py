"""A name lookup slower than the request deadline: shared by the requests waiting on it, and remembered
once it ends, so a slow resolver does not fail every request (nor leave a stuck thread per attempt)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from convbench_datasets.runner.backends.deadline import forget_lookups, lookup


def test_a_slow_lookup_is_shared_and_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    release = threading.Event()

    def slow(host, port, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        calls.append(host)
        release.wait(5)  # answers only once the test says so: later than every caller waits
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    forget_lookups()
    try:
        for _ in range(3):  # three requests give up on the one lookup under way
            with pytest.raises(TimeoutError, match="looking up slow.example took longer than 1s"):
                lookup("slow.example", 80, 0.05, 1.0)
        assert calls == ["slow.example"]  # one lookup, not one per attempt
        release.set()
        for _ in range(50):
            if not any(t.name == "convbench-resolve" for t in threading.enumerate()):  # the lookup ended
                break
            time.sleep(0.02)
        # it ended after its callers gave up, and is remembered: the next request needs no lookup
        assert lookup("slow.example", 80, 0.05, 1.0)[0][4] == ("127.0.0.1", 80)
        assert calls == ["slow.example"]
    finally:
        release.set()
        forget_lookups()

