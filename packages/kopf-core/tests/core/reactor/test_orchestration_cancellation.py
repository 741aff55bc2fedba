"""
A stream whose cancellation got lost inside (as Python 3.11's ``asyncio.wait_for()`` can lose it) still stops.

Inputs: an events' source that swallows a cancellation and goes on yielding (as the watch's
inactivity timeout does when the cancellation meets a chunk that has just arrived).
Outputs: the consuming task ends as cancelled at the next event, not after the source runs dry.
"""
import asyncio
import sys
from typing import Any, AsyncIterator, List, Set

import pytest

from kopf._core.reactor import orchestration


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Tasks tell their pending cancellations since Python 3.11.")
async def test_a_lost_cancellation_stops_the_stream_at_its_next_event() -> None:
    swallowed = asyncio.Event()

    async def source() -> AsyncIterator[Any]:
        for index in range(1000):
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                swallowed.set()  # lost here, as wait_for() returning a result despite the cancellation
            yield {'type': 'MODIFIED', 'object': {'metadata': {'name': f'obj{index}'}}}

    seen: List[Any] = []
    unsettled: Set[str] = set()

    async def consume() -> None:
        async for event in orchestration._honouring_cancellation(source(), unsettled):
            seen.append(event)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    task.cancel()
    await asyncio.wait([task], timeout=1)
    assert swallowed.is_set()
    assert task.cancelled()
    assert len(seen) < 100  # stopped at once, not after the source's 1000 events
    assert unsettled == {f'None/obj{len(seen)}'}  # the event dropped is not taken as processed by a restart


async def test_events_pass_through_unchanged_when_not_cancelled() -> None:
    async def source() -> AsyncIterator[Any]:
        for index in range(3):
            yield {'type': None, 'object': {'metadata': {'name': f'obj{index}'}}}

    events = [event async for event in orchestration._honouring_cancellation(source(), set())]
    assert [event['object']['metadata']['name'] for event in events] == ['obj0', 'obj1', 'obj2']
