"""
The slots of the regular requests in flight: a bounded number, let in by priority.

Like :class:`asyncio.Semaphore`, but the waiting requests are let in by the
framework's hint (:data:`kopf.clients.request_priority`: the lowest first, i.e. the earliest change),
and in their order of arrival among equals. A request without the hint ranks
by the time it is made, so it neither jumps ahead of the objects already in
handling nor waits behind the ones that start later.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import List, Tuple

from kopf import clients

_Waiter = Tuple[float, int, 'asyncio.Future[None]']


class PrioritySlots:
    """At most ``limit`` holders at once; the others wait in the order of their priority."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"The limit of the requests in flight must be positive, got {limit!r}.")
        self._free = limit
        self._waiters: List[_Waiter] = []
        self._arrivals = itertools.count()  # the tie-breaker: first come, first served

    @property
    def waiting(self) -> int:
        return sum(1 for *_, future in self._waiters if not future.done())

    async def acquire(self) -> None:
        # Free slots exist only while nobody waits: release() hands a slot over to a waiter directly.
        if self._free > 0:
            self._free -= 1
            return
        loop = asyncio.get_running_loop()
        rank = _current_priority(loop)
        future: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._waiters, (rank, next(self._arrivals), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the slot was given, but is not taken: pass it on
            raise  # a cancelled waiter stays in the heap until release() skips it

    def release(self) -> None:
        while self._waiters:
            *_, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)  # the slot goes over to it directly
                return
        self._free += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *_: object) -> None:
        self.release()


def _current_priority(loop: asyncio.AbstractEventLoop) -> float:
    hint = clients.request_priority.get()
    return hint if hint is not None else loop.time()
