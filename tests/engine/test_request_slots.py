"""RequestSlots (engine/backends/slots.py), the run-wide limit on requests in flight: never more than the total,
granted first come first served (a request that waits gets the next slot freed, before any asked later), a
raised total handed to waiters at once, and a slot never lost to an interrupted waiter. Threads here only wait
on each other (their order is read from the slots' own queue); the join timeouts are a safety net, not a check."""

from __future__ import annotations

import asyncio
import threading

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends.slots import RequestSlots


def _waiter(slots: RequestSlots, order: list[str], name: str) -> threading.Thread:
    """A thread that takes a slot, notes its name, and keeps the slot; started once it is queued."""
    queued = len(slots._waiting)

    def take() -> None:
        slots.acquire()
        order.append(name)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    while len(slots._waiting) == queued and thread.is_alive():
        threading.Event().wait(0.001)
    return thread


def test_waiters_get_slots_in_the_order_they_asked() -> None:
    slots, order = RequestSlots(1), []
    slots.acquire()
    threads = [_waiter(slots, order, name) for name in ("first", "second", "third")]
    assert order == [] and slots.busy == 1
    for n, thread in enumerate(threads, 1):
        slots.release()  # the freed slot goes to the longest waiter, none other
        thread.join(5)
        assert order == ["first", "second", "third"][:n] and slots.busy == 1
    assert slots.peak == 1


def test_a_new_request_does_not_pass_a_waiting_one() -> None:
    # a slot freed while someone waits is handed over: a request asked after cannot take it first
    slots, order = RequestSlots(1), []
    slots.acquire()
    waiting = _waiter(slots, order, "waiting")
    slots.release()
    waiting.join(5)
    assert order == ["waiting"] and slots.busy == 1
    late = _waiter(slots, order, "late")
    assert late.is_alive() and order == ["waiting"]  # all in use: it waits
    slots.release()
    late.join(5)
    assert order == ["waiting", "late"]


def test_a_raised_total_lets_waiters_in_and_never_more() -> None:
    slots, order = RequestSlots(2), []
    slots.acquire(), slots.acquire()
    threads = [_waiter(slots, order, f"w{i}") for i in range(3)]
    slots.at_least(4)  # two more slots: the first two waiters get them, the third still waits
    for thread in threads[:2]:
        thread.join(5)
    # both are let in at once, so which of them runs first is the scheduler's: the first two, not the third
    assert sorted(order) == ["w0", "w1"] and slots.busy == 4 and threads[2].is_alive()
    slots.at_least(3)  # never lowered
    assert slots.total == 4
    slots.release()
    threads[2].join(5)
    assert sorted(order[:2]) == ["w0", "w1"] and order[2:] == ["w2"] and slots.busy == 4 and slots.peak == 4


def test_an_interrupted_waiter_leaves_no_slot_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    slots = RequestSlots(1)
    slots.acquire()

    class Interrupted(BaseException):
        pass

    real_lock = threading.Lock

    class Gate:  # the waiter's gate: its second acquire (the wait) is interrupted, as Ctrl-C would
        def __init__(self) -> None:
            self.lock, self.calls = real_lock(), 0

        def acquire(self, *args: object) -> bool:
            self.calls += 1
            if self.calls == 2:
                raise Interrupted()
            return self.lock.acquire(*args)

        def release(self) -> None:
            self.lock.release()

    monkeypatch.setattr("convbench_datasets.engine.backends.slots.threading.Lock", Gate)
    with pytest.raises(Interrupted):
        slots.acquire()
    monkeypatch.undo()
    assert list(slots._waiting) == [] and slots.busy == 1  # it left the queue
    slots.release()
    assert slots.busy == 0  # the freed slot went to no one who was gone


def test_the_total_is_a_checked_count() -> None:
    for bad in (0, 1.5, True, 2000):
        with pytest.raises(ConvbenchError, match="concurrency"):
            RequestSlots(bad)  # type: ignore[arg-type]


def test_tasks_wait_without_blocking_their_loop_and_queue_with_threads() -> None:
    """The openai: backend's requests are tasks on one loop thread: a task waiting for a slot must leave the loop
    free to finish the requests that hold them (a blocking wait there would hang the run), and queue in one line
    with waiting threads (first come, first served across both)."""
    import asyncio

    slots, order = RequestSlots(1), []

    async def scenario() -> None:
        await slots.wait()  # the task holds the only slot
        thread = _waiter(slots, order, "thread")  # a thread queues first...

        async def task() -> None:
            await slots.wait()
            order.append("task")

        second = asyncio.ensure_future(task())  # ...then a second task
        while len(slots._waiting) < 2:
            await asyncio.sleep(0)
        ticked = []
        asyncio.get_running_loop().call_soon(ticked.append, True)
        await asyncio.sleep(0)
        assert ticked == [True] and order == []  # the loop runs while the task waits
        slots.release()  # to the thread, which asked first
        await asyncio.to_thread(thread.join, 5)
        assert order == ["thread"] and not second.done()
        slots.release()  # the thread's slot, now to the task
        await asyncio.wait_for(second, 5)
        assert order == ["thread", "task"] and slots.busy == 1

    asyncio.run(scenario())


def test_a_cancelled_task_leaves_no_slot_behind() -> None:
    """A task cancelled while it waits leaves the queue; one cancelled after it was handed a slot passes it on."""
    import asyncio

    slots = RequestSlots(1)

    async def scenario() -> None:
        await slots.wait()
        queued = asyncio.ensure_future(slots.wait())
        await asyncio.sleep(0)
        queued.cancel()  # still waiting: it leaves the line
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert not slots._waiting and slots.busy == 1
        handed = asyncio.ensure_future(slots.wait())
        await asyncio.sleep(0)
        slots.release()  # handed the slot (its future resolves on the loop's next turn)...
        handed.cancel()  # ...and cancelled before it runs: the slot must come back
        with pytest.raises(asyncio.CancelledError):
            await handed
        assert slots.busy == 0 and not slots._waiting

    asyncio.run(scenario())


def test_a_slot_freed_on_the_loops_own_thread_is_handed_over_without_waking_the_loop() -> None:
    # a served request's reply frees its slot on the loop's thread: the waiting task gets it at once, not
    # through call_soon_threadsafe (a self-pipe write and read per request, ~6% of the client's CPU)
    slots = RequestSlots(1)
    woken: list[str] = []

    async def handed_over() -> tuple[int, bool]:
        loop = asyncio.get_running_loop()
        real = loop.call_soon_threadsafe
        def noted(callback, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            if "_grant" in getattr(callback, "__qualname__", ""):  # the slots' own (to_thread uses it too)
                woken.append("threadsafe")
            return real(callback, *args, **kwargs)

        loop.call_soon_threadsafe = noted  # type: ignore[method-assign]
        await slots.wait()
        waiter = asyncio.ensure_future(slots.wait())
        await asyncio.sleep(0)
        slots.release()  # here, on the loop's thread
        await asyncio.wait_for(waiter, 5)
        from_thread = asyncio.ensure_future(slots.wait())
        await asyncio.sleep(0)
        await asyncio.to_thread(slots.release)  # another thread: the loop must be woken
        await asyncio.wait_for(from_thread, 5)
        return slots.busy, waiter.done()

    assert asyncio.run(handed_over()) == (1, True)
    assert woken == ["threadsafe"]  # once: for the release from the other thread only
