"""
``settings.queueing``: how long the per-object workers linger, wait at exit, and throttle errors.

The watch-stream is scripted on fake loop time (looptime); the loop time of
every processing and of the watcher's return shows the settings' effect.
"""
import asyncio
from typing import AsyncIterator, List

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import typedefs
from kopf._core.reactor import queueing
from kopf._core.reactor.cycles import CycleResult

EVENT = typedefs.RawEvent(type='MODIFIED', object={'metadata': {'uid': 'uid1', 'resourceVersion': '1'}})
PATCHED = {'metadata': {'uid': 'uid1', 'resourceVersion': '2'}}


async def one_event() -> AsyncIterator[typedefs.RawEvent]:
    yield EVENT  # and the stream ends at once: the watcher stops its workers


@pytest.fixture()
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.queueing.batch_window = 0.1
    settings.persistence.consistency_timeout = 0  # our own patch is not awaited: only idling
    return settings


async def patching_processor(_: typedefs.RawEvent) -> CycleResult:
    return CycleResult(patched_body=PATCHED)  # the worker lingers for the events after the patch


@pytest.mark.looptime
@pytest.mark.parametrize('idle_timeout, exit_timeout, expected', [
    pytest.param(1.0, 10.0, 1.1, id='idle-first'),  # the worker exits on its own after idling
    pytest.param(10.0, 2.0, 2.0, id='exit-first'),  # the worker is cancelled at the exit timeout
])
async def test_workers_linger_for_the_idle_timeout_within_the_exit_timeout(
        settings: OperatorSettings, idle_timeout: float, exit_timeout: float, expected: float) -> None:
    settings.queueing.idle_timeout = idle_timeout
    settings.queueing.exit_timeout = exit_timeout
    loop = asyncio.get_running_loop()
    start = loop.time()
    await queueing.watcher(events=one_event(), processor=patching_processor, settings=settings)
    assert loop.time() - start == pytest.approx(expected)


@pytest.mark.looptime
@pytest.mark.parametrize('error_delays, expected', [
    pytest.param([3], [0.1, 3.1, 3.1 + 3], id='repeated'),  # the sequence restarts when it is over
    pytest.param([2, 5], [0.1, 2.1, 7.1], id='sequence'),
])
async def test_unexpected_errors_are_throttled_with_the_error_delays(
        settings: OperatorSettings, error_delays: List[float], expected: List[float]) -> None:
    settings.queueing.error_delays = error_delays
    settings.queueing.exit_timeout = 100
    loop = asyncio.get_running_loop()
    start = loop.time()
    calls: List[float] = []

    async def failing_processor(_: typedefs.RawEvent) -> CycleResult:
        calls.append(round(loop.time() - start, 3))
        if len(calls) < 3:
            raise ValueError("boom")
        return CycleResult()

    async def events() -> AsyncIterator[typedefs.RawEvent]:
        yield EVENT
        await asyncio.sleep(20)

    await queueing.watcher(events=events(), processor=failing_processor, settings=settings)
    assert calls == pytest.approx(expected)


@pytest.mark.looptime
async def test_workers_idle_from_their_last_cycle_when_the_patched_version_never_comes(
        settings: OperatorSettings) -> None:
    settings.persistence.consistency_timeout = 5
    settings.queueing.idle_timeout = 5
    settings.queueing.exit_timeout = 100
    loop = asyncio.get_running_loop()
    start = loop.time()
    await queueing.watcher(events=one_event(), processor=patching_processor, settings=settings)
    assert loop.time() - start == pytest.approx(5.1)  # not the consistency timeout plus the idle timeout
