"""
A watch-stream that dies of an unexpected error is restarted with backoff, not left dead.

The time is fake (looptime): the delays between the restarts are exact loop seconds.
"""
import asyncio
import itertools
import logging
from typing import List

import pytest

from kopf._cogs.structs import references
from kopf._core.reactor import orchestration

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)


@pytest.mark.looptime
async def test_a_failed_stream_is_restarted_with_backoff(caplog: pytest.LogCaptureFixture) -> None:
    starts: List[float] = []

    async def serve() -> None:
        starts.append(asyncio.get_running_loop().time())
        if len(starts) <= 6:
            raise RuntimeError(f"boom {len(starts)}")

    await orchestration._serve_persistently(serve, (RESOURCE, 'ns1'), orchestration._Knowledge())
    assert [later - earlier for earlier, later in itertools.pairwise(starts)] == [1, 2, 4, 8, 10, 10]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 6
    assert errors[0].getMessage() == ("The watch-stream of kopfexamples.v1.kopf.dev in 'ns1' has failed; "
                                      "restarting it in 1s (attempt 1). The error: RuntimeError('boom 1')")
    assert errors[0].exc_info is not None


@pytest.mark.looptime
async def test_a_cancelled_stream_is_not_restarted(caplog: pytest.LogCaptureFixture) -> None:
    starts: List[float] = []

    async def serve() -> None:
        starts.append(asyncio.get_running_loop().time())
        await asyncio.Event().wait()

    task = asyncio.create_task(orchestration._serve_persistently(serve, (RESOURCE, None), orchestration._Knowledge()))
    await asyncio.sleep(5)
    task.cancel()
    await asyncio.wait([task])
    assert task.cancelled()
    assert len(starts) == 1
    assert caplog.records == []
