"""A request seen through to its answer, even when its caller is cancelled meanwhile."""
import asyncio

import pytest

from kopf._cogs.aiokits import aiocompleting


async def answer_after(event: asyncio.Event, value: str) -> str:
    await event.wait()
    return value


async def test_the_result_is_returned_when_not_cancelled() -> None:
    released = asyncio.Event()
    released.set()
    assert await aiocompleting.complete(answer_after(released, 'done')) == 'done'


async def test_a_cancelled_caller_waits_for_the_answer_then_is_cancelled() -> None:
    released = asyncio.Event()
    finished: list[str] = []

    async def caller() -> None:
        finished.append(await aiocompleting.complete(answer_after(released, 'stored')))

    task = asyncio.create_task(caller())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0.01)
    assert not task.done()  # still waiting for the request, not gone at the cancellation
    task.cancel()  # a second cancellation does not cut it either
    await asyncio.sleep(0.01)
    assert not task.done()
    released.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == []  # the caller is cancelled after all: the answer is not used


async def test_the_requests_own_failure_is_raised() -> None:
    async def failing() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        await aiocompleting.complete(failing())


async def test_a_failure_after_a_cancellation_gives_the_cancellation() -> None:
    released = asyncio.Event()

    async def failing_later() -> None:
        await released.wait()
        raise ValueError("refused")

    task = asyncio.create_task(aiocompleting.complete(failing_later()))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0.01)
    released.set()
    with pytest.raises(asyncio.CancelledError):
        await task
