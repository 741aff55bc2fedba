"""
The admission of cycles: once a stream is not admitted, no new cycle starts, however long its backlog.

This is what keeps a replica that steps down (its Lease not renewed in time,
its shards given away) from handling the objects that are the next owner's.
"""
import asyncio
from typing import AsyncIterator, List

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import typedefs
from kopf._core.reactor import queueing
from kopf._core.reactor.cycles import CycleResult


def event(uid: str) -> typedefs.RawEvent:
    return typedefs.RawEvent(type='ADDED', object={'metadata': {'uid': uid, 'resourceVersion': '1'}})


@pytest.fixture()
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.queueing.batch_window = 0
    settings.queueing.exit_timeout = 100
    return settings


async def listing(count: int) -> AsyncIterator[typedefs.RawEvent]:
    for index in range(count):
        yield event(f'uid{index}')  # and the stream ends: the watcher waits for its workers


@pytest.mark.looptime
async def test_the_backlog_behind_the_worker_limit_is_dropped_once_not_admitted(settings: OperatorSettings) -> None:
    processed: List[str] = []
    admitted = True

    async def processor(raw_event: typedefs.RawEvent) -> CycleResult:
        nonlocal admitted
        processed.append(raw_event['object']['metadata']['uid'])
        await asyncio.sleep(1)
        admitted = len(processed) < 3  # stepping down while the third cycle runs
        return CycleResult()

    await queueing.watcher(events=listing(10), processor=processor, settings=settings,
                           limiter=asyncio.Semaphore(1), admitted=lambda: admitted)
    assert processed == ['uid0', 'uid1', 'uid2']  # the cycle in flight finishes; none starts after it


@pytest.mark.looptime
async def test_a_delayed_retry_is_not_run_once_not_admitted(settings: OperatorSettings) -> None:
    loop = asyncio.get_running_loop()
    calls: List[float] = []
    admitted = True

    async def processor(_: typedefs.RawEvent) -> CycleResult:
        calls.append(loop.time())
        return CycleResult(delay=5)  # a handler to retry in 5 s

    async def stepping_down() -> None:
        nonlocal admitted
        await asyncio.sleep(7)
        admitted = False

    task = asyncio.create_task(stepping_down())
    start = loop.time()
    await queueing.watcher(events=listing(1), processor=processor, settings=settings, admitted=lambda: admitted)
    await task
    assert [call - start for call in calls] == [0, 5]  # not at 10: the worker exits then instead
    assert loop.time() - start == 10


@pytest.mark.looptime
async def test_without_an_admission_every_cycle_runs(settings: OperatorSettings) -> None:
    processed: List[str] = []

    async def processor(raw_event: typedefs.RawEvent) -> CycleResult:
        processed.append(raw_event['object']['metadata']['uid'])
        return CycleResult()

    await queueing.watcher(events=listing(5), processor=processor, settings=settings, limiter=asyncio.Semaphore(1))
    assert sorted(processed) == [f'uid{index}' for index in range(5)]
