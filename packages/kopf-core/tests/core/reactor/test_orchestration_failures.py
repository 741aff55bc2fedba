"""
A watch-stream task that dies beyond the restarts must say so: nothing restarts it then.
"""
import asyncio
import logging

import pytest

from kopf._core.reactor import orchestration


async def test_a_failed_stream_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def fail() -> None:
        raise RuntimeError("boom")

    task = asyncio.create_task(fail(), name='watcher of kopfexamples.v1.kopf.dev cluster-wide')
    task.add_done_callback(orchestration._report_failure)
    await asyncio.wait([task])
    await asyncio.sleep(0)  # the done-callbacks run soon after
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == ("The watcher of kopfexamples.v1.kopf.dev cluster-wide has failed and stopped: "
                                   "RuntimeError('boom')")
    assert record.exc_info is not None


async def test_a_cancelled_stream_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    task = asyncio.create_task(asyncio.sleep(10))
    task.add_done_callback(orchestration._report_failure)
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.wait([task])
    await asyncio.sleep(0)
    assert caplog.records == []
