"""The per-server limiter of concurrent generations (``lion_nb.models.slots``): at most N in
flight, the rest queued unsent, across tasks, event loops and threads; a cancelled waiter
leaves no trace."""

from __future__ import annotations

import asyncio
import threading

from lion_nb.models.slots import ServerSlots, slots_for


class Gauge:
    """How many are inside at once (the most ever)."""

    def __init__(self) -> None:
        self.now = self.most = self.done = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1
            self.done += 1


async def _work(slots: ServerSlots, limit: int | None, gauge: Gauge, seconds: float) -> None:
    async with slots.hold(limit):
        gauge.enter()
        await asyncio.sleep(seconds)
        gauge.leave()


async def test_at_most_the_limit_is_in_flight_and_every_request_runs() -> None:
    slots, gauge = ServerSlots(), Gauge()
    await asyncio.gather(*(_work(slots, 2, gauge, 0.02) for _ in range(7)))
    assert gauge.most == 2 and gauge.done == 7
    assert slots.active == 0 and slots.waiting == 0


async def test_without_a_limit_nothing_waits() -> None:
    slots, gauge = ServerSlots(), Gauge()
    await asyncio.gather(*(_work(slots, None, gauge, 0.05) for _ in range(5)))
    assert gauge.most == 5


async def test_each_caller_brings_its_own_limit() -> None:
    """A model given max_concurrent=1 waits for an idle server even while another model on
    it may send four."""
    slots = ServerSlots()
    entered: list[str] = []

    async def one(name: str, limit: int) -> None:
        async with slots.hold(limit):
            entered.append(f"{name}:{slots.active}")
            await asyncio.sleep(0.05)

    await asyncio.gather(one("a", 4), one("b", 4), one("solo", 1))
    assert entered[:2] == ["a:1", "b:2"]
    assert entered[2] == "solo:1"  # entered only once a and b had left


async def test_a_cancelled_waiter_leaves_the_queue_and_the_slot_free() -> None:
    slots = ServerSlots()
    release = asyncio.Event()

    async def holder() -> None:
        async with slots.hold(1):
            await release.wait()

    first = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    assert slots.active == 1 and slots.waiting == 1
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert slots.waiting == 0
    release.set()
    await first
    assert slots.active == 0
    async with slots.hold(1):  # free again at once
        assert slots.active == 1


async def test_a_waiter_woken_and_cancelled_together_hands_its_slot_on() -> None:
    slots = ServerSlots()
    gate = asyncio.Event()

    async def holder() -> None:
        async with slots.hold(1):
            await gate.wait()

    first = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    second = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    gate.set()
    await first  # grants the slot to `second`, whose task has not run yet
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    assert slots.active == 0 and slots.waiting == 0


def test_one_limit_across_event_loops_in_threads() -> None:
    """A kernel's loop and a sync helper's loop in a thread share one server's slots."""
    slots, gauge = ServerSlots(), Gauge()

    def run() -> None:
        async def many() -> None:
            await asyncio.gather(*(_work(slots, 1, gauge, 0.02) for _ in range(3)))

        asyncio.run(many())

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert gauge.done == 9 and gauge.most == 1
    assert slots.active == 0 and slots.waiting == 0


def test_one_limiter_per_server_key() -> None:
    assert slots_for("server:http://127.0.0.1:1") is slots_for("server:http://127.0.0.1:1")
    assert slots_for("server:http://127.0.0.1:1") is not slots_for("server:http://127.0.0.1:2")
