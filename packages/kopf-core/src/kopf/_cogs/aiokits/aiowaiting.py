"""
Waiting with a timeout (for an event, for a result), without ever losing a cancellation.

``asyncio.wait_for(event.wait(), timeout)`` of Python 3.11 returns normally
instead of raising when the task's cancellation meets the event being set:
a loop around it (e.g. a sharder woken by its peers' changes) then runs on
for ever, and the operator cannot stop. ``asyncio.wait()`` has no such race.
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, Optional, TypeVar

T = TypeVar('T')


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until the event is set, but no longer than the timeout; whether it is set."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait([waiter], timeout=max(0.0, timeout))
    finally:
        waiter.cancel()
    return event.is_set()


async def run_within(awaitable: Awaitable[T], timeout: Optional[float]) -> T:
    """
    The awaitable's result, or :class:`asyncio.TimeoutError` if it takes longer (then it is cancelled).

    As ``asyncio.wait_for()``, but a cancellation of the caller is never lost,
    even when it meets the awaitable's completion (Python 3.11's race).
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait([task], timeout=None if timeout is None else max(0.0, timeout))
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        await asyncio.wait([task])
        raise asyncio.TimeoutError()
    return task.result()
