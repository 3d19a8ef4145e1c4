"""The run-wide limit on requests in flight: :class:`RequestSlots`, shared by every backend of a run.

A run's ``concurrency`` is the number of requests it has in flight at once, over every stage and every
backend together: a pipelined run's generator and judges draw from one set of slots. Each request (one
HTTP attempt; a retry's wait holds none) takes a slot before it goes out and gives it back when its reply
(or failure) is in. Slots are granted first come, first served: a request that waits gets the next slot
freed, before any request that asks later, so no stage starves another (a judge's requests queue
between generation's, and generation cannot take every slot back as it frees them).

Requests made by threads wait with :meth:`RequestSlots.acquire`; requests that are tasks on an event loop
(the ``openai:`` backend's, all on one loop thread per process) wait with :meth:`RequestSlots.wait`, which
suspends the task instead of blocking the loop: a blocked loop thread could never finish the requests that
hold the slots. Both kinds queue in one line.

Example:
    >>> slots = RequestSlots(2)
    >>> slots.acquire(); slots.acquire(); slots.busy
    2
    >>> slots.release(); slots.busy, slots.peak
    (1, 2)
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any

from ...counts import MAX_CONCURRENCY, check_count


class RequestSlots:
    """At most ``total`` requests in flight, granted in the order they were asked for (thread-safe).

    ``total`` may be raised later (:meth:`at_least`), never lowered. ``busy`` is the number in flight,
    ``peak`` the most there ever were at once."""

    def __init__(self, total: int) -> None:
        self.total = check_count("concurrency (--concurrency)", total, least=1, most=MAX_CONCURRENCY)
        self.busy = 0
        self.peak = 0
        self._lock = threading.Lock()
        # in arrival order: a held lock per waiting thread, a future per waiting task (with its loop)
        self._waiting: deque[Any] = deque()

    def acquire(self) -> None:
        """Take a slot, waiting (behind every earlier waiter) while all ``total`` are in use."""
        with self._lock:
            if self.busy < self.total and not self._waiting:
                self._take()
                return
            gate = threading.Lock()
            gate.acquire()
            self._waiting.append(gate)
        try:
            gate.acquire()  # released by release(), which hands this waiter its slot
        except BaseException:  # interrupted while waiting
            self._give_up(gate)
            raise

    async def wait(self) -> None:
        """:meth:`acquire` for a task on an event loop: the task waits for its turn, the loop runs on.

        Example:
            >>> slots = RequestSlots(1)
            >>> async def two_in_turn() -> list[int]:
            ...     await slots.wait()
            ...     second = asyncio.ensure_future(slots.wait())
            ...     await asyncio.sleep(0)
            ...     seen = [slots.busy, second.done()]
            ...     slots.release(); await second
            ...     return seen + [slots.busy]
            >>> asyncio.run(two_in_turn())
            [1, False, 1]
        """
        with self._lock:
            if self.busy < self.total and not self._waiting:
                self._take()
                return
            loop = asyncio.get_running_loop()
            waiter = (loop, loop.create_future())
            self._waiting.append(waiter)
        try:
            await waiter[1]
        except BaseException:  # cancelled while waiting
            self._give_up(waiter)
            raise

    def _give_up(self, waiter: Any) -> None:
        """A waiter that stops waiting: it leaves the queue, or, if it was handed a slot meanwhile, gives it back."""
        with self._lock:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
                return
        self.release()

    def release(self) -> None:
        """Give a slot back: to the longest waiter if there is one (it stays in use), else free it."""
        with self._lock:
            if self._waiting:
                _grant(self._waiting.popleft())  # handed over: busy stays as it is
            else:
                self.busy -= 1

    def at_least(self, total: int) -> None:
        """Raise the limit to ``total`` if it is lower (a backend joining the run with more concurrency),
        handing the new slots to waiters at once."""
        total = check_count("concurrency (--concurrency)", total, least=1, most=MAX_CONCURRENCY)
        with self._lock:
            self.total = max(self.total, total)
            while self._waiting and self.busy < self.total:
                self._take()
                _grant(self._waiting.popleft())

    def _take(self) -> None:
        self.busy += 1
        self.peak = max(self.peak, self.busy)


def _grant(waiter: Any) -> None:
    """Wake a waiter handed a slot: a thread's lock is released; a task's future is resolved on its loop
    (a future cancelled meanwhile is left alone: :meth:`RequestSlots.wait` then passes the slot on). On the
    loop's own thread (where a served request's reply frees its slot) the future is resolved at once: going
    through ``call_soon_threadsafe`` would wake the loop through its self-pipe for every request (a write
    and a read per request: 2.70 -> 2.53 s of CPU for the 1,440 requests of benchmarks/run_client_cost.py)."""
    if isinstance(waiter, tuple):
        loop, future = waiter
        if _running_loop() is loop:
            if not future.done():
                future.set_result(None)
        else:
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result(None))
    else:
        waiter.release()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # a thread without a running loop
        return None
