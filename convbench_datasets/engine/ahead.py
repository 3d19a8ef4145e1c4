"""Work a run needs after its stages, done while its first requests wait for the server.

A served run's wall time is its requests' span plus its fixed cost: everything before the first request
and after the last answer. Between the two the client mostly waits, and right after its first requests
go out it has nothing at all to do for as long as the server takes to answer (hundreds of milliseconds
for a model). Work that the run only needs at its end (importing the scoring's numpy, hashing the rows
for the signature) is handed to :func:`later`; a backend whose requests wait on a server calls
:func:`requests_out` once its first requests are submitted, and the work waiting then runs in one
background thread, after :data:`PAUSE` (writing those requests comes first: they are on the critical
path, this work is not; on a machine shared with the server, the server's reading them too). The code
that needs the outcome calls :meth:`Later.result`: it waits for the thread, or, when nothing started
the work (a fully cached run, a local model, which keeps the CPU busy itself), does it at once in the
calling thread. The outcome is the same either way; an error is raised
by :meth:`Later.result`, where the work would have been done without this module.

Measured by ``benchmarks/run_client_cost.py`` (this is convbench's own: no library schedules work into a
client's idle time): see its docstring.

Example:
    >>> with later(lambda: 1 / 0) as dropped:
    ...     pass           # nothing asked for it: never done
    >>> work = later(lambda: sum(range(10)))
    >>> work.result()      # nothing was sent: done here, now
    45
    >>> work = later(lambda: 2 + 2); requests_out(); work.result()
    4
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

# seconds between the first requests' submission and the start of the work waiting: the event loop opens their
# connections and writes them meanwhile, and the server reads them. 128 requests on a slow 2-core machine shared
# with the server: with 0.05 s the work began mid-wave and the 64th request reached the server 120-160 ms after
# the submission; with 0.15 s, 70-80 ms, as with no work at all. Most model servers answer later than this (the
# work of a run whose answers come sooner is done by Later.result, where it is needed)
PAUSE = 0.15

_waiting: list[Later] = []
_lock = threading.Lock()


class Later(Generic[T]):
    """One piece of work handed to :func:`later`: done once, by the background thread or by :meth:`result`."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._claimed = False
        self._claim = threading.Lock()
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def _do(self) -> None:
        """Do the work unless another thread has claimed it; record its value or its error."""
        with self._claim:
            if self._claimed:
                return
            self._claimed = True
        self._unlist()
        try:
            self._value = self._work()
        except BaseException as err:  # raised again by result(), in the thread that needs it
            self._error = err
        finally:
            self._done.set()

    def _unlist(self) -> None:
        with _lock:
            if self in _waiting:
                _waiting.remove(self)

    def __enter__(self) -> Later[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        """Leaving the block: work nobody started is dropped (never done, its arguments let go); work under
        way is waited for (a process that exits while a daemon thread is still importing C extensions
        crashes)."""
        with self._claim:
            claimed, self._claimed = self._claimed, True
        if claimed:
            self._done.wait()
            return
        self._unlist()
        self._error = RuntimeError("this work was dropped before it was done (its with-block ended)")
        self._done.set()

    def result(self) -> T:
        """The work's value: waited for if the background thread is doing it, else done now, here."""
        self._do()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def later(work: Callable[[], T]) -> Later[T]:
    """Hand ``work`` (no arguments) to the next :func:`requests_out`; its value comes from :meth:`Later.result`.

    Used as a context manager (``with later(work) as handle:``), work that nothing started by the end of
    the block is dropped: a run that fails or needs no request leaves nothing waiting for the next one."""
    handle = Later(work)
    with _lock:
        _waiting.append(handle)
    return handle


def requests_out() -> None:
    """Start the work waiting, in a background thread after :data:`PAUSE` (a no-op when none waits):
    called by a backend when it has submitted requests that a server will take a while to answer."""
    with _lock:
        if not _waiting:
            return
        todo = list(_waiting)
        _waiting.clear()  # handed over: a later call starts no second thread for them
    threading.Thread(target=_do_all, args=(todo,), daemon=True, name="convbench-ahead").start()


def _do_all(todo: list[Later]) -> None:
    time.sleep(PAUSE)
    for handle in todo:
        handle._do()


__all__ = ["Later", "later", "requests_out", "PAUSE"]
