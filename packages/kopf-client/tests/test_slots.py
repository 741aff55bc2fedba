"""
The slots of the requests in flight: bounded, and let in by the framework's priority hint.
"""
from __future__ import annotations

import asyncio
import contextvars
from typing import List, Optional

import pytest

from kopf import clients
from kopf_client._slots import PrioritySlots


async def _hold(slots: PrioritySlots, name: str, order: List[str], priority: Optional[float],
                release: asyncio.Event) -> None:
    clients.request_priority.set(priority)
    async with slots:
        order.append(name)
        await release.wait()


def _start(slots: PrioritySlots, name: str, order: List[str], priority: Optional[float],
           release: asyncio.Event) -> asyncio.Task[None]:
    # Each task in a context of its own, as each object's worker has (a task copies the current context).
    return contextvars.Context().run(asyncio.create_task, _hold(slots, name, order, priority, release))


async def test_no_more_holders_than_the_limit() -> None:
    slots, release = PrioritySlots(2), asyncio.Event()
    order: List[str] = []
    tasks = [_start(slots, f'r{i}', order, None, release) for i in range(5)]
    await asyncio.sleep(0)
    assert order == ['r0', 'r1'] and slots.waiting == 3
    release.set()
    await asyncio.gather(*tasks)
    assert order == ['r0', 'r1', 'r2', 'r3', 'r4']


async def test_the_waiting_ones_go_by_priority_then_by_arrival() -> None:
    slots, release = PrioritySlots(1), asyncio.Event()
    order: List[str] = []
    first = _start(slots, 'holder', order, 0.0, release)
    await asyncio.sleep(0)
    rest = [_start(slots, name, order, priority, release)
            for name, priority in [('late', 30.0), ('early', 10.0), ('middle', 20.0), ('early-too', 10.0)]]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(first, *rest)
    assert order == ['holder', 'early', 'early-too', 'middle', 'late']


async def test_requests_without_the_hint_rank_by_the_time_they_are_made() -> None:
    loop = asyncio.get_running_loop()
    slots, release = PrioritySlots(1), asyncio.Event()
    order: List[str] = []
    first = _start(slots, 'holder', order, None, release)
    await asyncio.sleep(0)
    rest = [_start(slots, 'started-later', order, loop.time() + 100, release),
            _start(slots, 'no-hint', order, None, release),
            _start(slots, 'started-earlier', order, loop.time() - 100, release)]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(first, *rest)
    assert order == ['holder', 'started-earlier', 'no-hint', 'started-later']


async def test_a_cancelled_waiter_does_not_take_a_slot() -> None:
    slots, release = PrioritySlots(1), asyncio.Event()
    order: List[str] = []
    first = _start(slots, 'holder', order, None, release)
    await asyncio.sleep(0)
    cancelled = _start(slots, 'cancelled', order, None, release)
    waiting = _start(slots, 'waiting', order, None, release)
    await asyncio.sleep(0)
    cancelled.cancel()
    release.set()
    await asyncio.gather(first, waiting)
    assert order == ['holder', 'waiting']
    assert cancelled.cancelled()


async def test_a_slot_given_to_a_waiter_cancelled_meanwhile_is_passed_on() -> None:
    slots = PrioritySlots(1)
    await slots.acquire()
    given = asyncio.create_task(slots.acquire())
    after = asyncio.create_task(slots.acquire())
    await asyncio.sleep(0)
    slots.release()  # the slot goes to `given`, which is cancelled before it runs again
    given.cancel()
    await asyncio.wait_for(after, timeout=1)
    assert given.cancelled() and slots.waiting == 0


async def test_free_slots_are_counted_back() -> None:
    slots = PrioritySlots(2)
    for _ in range(3):
        await slots.acquire()
        await slots.acquire()
        slots.release()
        slots.release()
    assert slots.waiting == 0
    await asyncio.wait_for(asyncio.gather(slots.acquire(), slots.acquire()), timeout=1)


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match='must be positive'):
        PrioritySlots(0)
