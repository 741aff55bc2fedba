"""
Stopping groups of tasks: the log lines in Kopf's words, and the tasks that do not stop in time.
"""
import asyncio
import logging

import pytest

from kopf._cogs.aiokits import aiostopping

LOGGER = logging.getLogger('test.stopping')


async def forever() -> None:
    await asyncio.Event().wait()


async def stubborn(released: asyncio.Event) -> None:
    while not released.is_set():
        try:
            await released.wait()
        except asyncio.CancelledError:
            pass  # ignores the cancellation until released


async def test_no_tasks_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger='test.stopping'):
        assert await aiostopping.stop_tasks([], title='Hung', logger=LOGGER) == set()
    assert caplog.messages == ["Hung tasks stopping is skipped: no tasks given."]


async def test_cancelled_tasks_are_stopped(caplog: pytest.LogCaptureFixture) -> None:
    tasks = [asyncio.create_task(forever()), asyncio.create_task(forever())]
    with caplog.at_level(logging.DEBUG, logger='test.stopping'):
        assert await aiostopping.stop_tasks(tasks, title='Root', logger=LOGGER) == set()
    assert all(task.cancelled() for task in tasks)
    assert caplog.messages == ["Root tasks are stopped: finishing normally; tasks left: set()"]


@pytest.mark.looptime
async def test_tasks_ignoring_the_cancellation_are_left_after_the_timeout(caplog: pytest.LogCaptureFixture) -> None:
    released = asyncio.Event()
    task = asyncio.create_task(stubborn(released))
    await asyncio.sleep(0)  # let it start, so that it can ignore the cancellation
    with caplog.at_level(logging.DEBUG, logger='test.stopping'):
        assert await aiostopping.stop_tasks([task], title='Hung', logger=LOGGER, timeout=5) == {task}
    assert caplog.messages == [f"Hung tasks are not stopped: finishing normally; tasks left: {{{task!r}}}"]
    released.set()
    await task
