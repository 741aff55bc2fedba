"""
Waiting with timeouts that never lose a cancellation, even one that meets the awaited completion.

With ``asyncio.wait_for()`` of Python 3.11, such a cancellation is lost: the call
returns the result, and a loop around it never stops.
"""
import asyncio

import pytest

from kopf._cogs.aiokits import aiowaiting


async def test_an_event_set_in_time_is_reported() -> None:
    event = asyncio.Event()
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await aiowaiting.wait_event(event, 1.0)


@pytest.mark.looptime
async def test_an_event_not_set_in_time_is_reported_after_the_timeout() -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert not await aiowaiting.wait_event(asyncio.Event(), 5)
    assert loop.time() - start == 5


async def test_a_cancellation_that_meets_the_event_being_set_is_not_lost() -> None:
    event = asyncio.Event()
    rounds = 0

    async def woken_again_and_again() -> None:
        nonlocal rounds
        while True:
            await aiowaiting.wait_event(event, 10)
            event.clear()
            rounds += 1

    task = asyncio.create_task(woken_again_and_again())
    await asyncio.sleep(0)
    event.set()
    task.cancel()  # in the same loop iteration as the event's setting
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rounds == 0


async def test_a_result_in_time_is_returned() -> None:
    async def quick() -> str:
        return 'done'
    assert await aiowaiting.run_within(quick(), 1.0) == 'done'
    assert await aiowaiting.run_within(quick(), None) == 'done'


@pytest.mark.looptime
async def test_a_result_too_late_is_a_timeout_and_the_work_is_cancelled() -> None:
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(asyncio.TimeoutError):
        await aiowaiting.run_within(slow(), 3)
    assert cancelled.is_set()


async def test_a_cancellation_that_meets_the_result_is_not_lost() -> None:
    result: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def awaited() -> str:
        return await result

    async def caller() -> str:
        return await aiowaiting.run_within(awaited(), 10)

    task = asyncio.create_task(caller())
    await asyncio.sleep(0.01)
    result.set_result('done')
    task.cancel()  # in the same loop iteration as the result
    with pytest.raises(asyncio.CancelledError):
        await task
