"""
``settings.persistence.consistency_timeout``: how long the events older than our own patch are skipped.

The watch-stream is scripted on fake loop time (looptime): the first event is
processed and "patched" to version 2; then a stale event of version 1 comes,
and maybe the patched version 2 later. What is processed, and when, shows the
waiting.
"""
import asyncio
from typing import Any, AsyncIterator, List, Tuple

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import typedefs
from kopf._core.reactor import queueing
from kopf._core.reactor.cycles import CycleResult


def event(version: str, label: str) -> typedefs.RawEvent:
    body = {'metadata': {'uid': 'uid1', 'resourceVersion': version, 'labels': {'seen': label}}}
    return typedefs.RawEvent(type='MODIFIED', object=body)


async def scripted(script: List[Tuple[float, typedefs.RawEvent]]) -> AsyncIterator[typedefs.RawEvent]:
    loop = asyncio.get_running_loop()
    start = loop.time()
    for at, raw_event in script:
        await asyncio.sleep(max(0.0, start + at - loop.time()))
        yield raw_event
    await asyncio.sleep(60)  # the stream stays open while the worker works


async def run(settings: OperatorSettings, script: List[Tuple[float, typedefs.RawEvent]]) -> List[Tuple[float, str]]:
    loop = asyncio.get_running_loop()
    start = loop.time()
    processed: List[Tuple[float, str]] = []

    async def processor(raw_event: typedefs.RawEvent) -> CycleResult:
        label: str = raw_event['object']['metadata']['labels']['seen']
        processed.append((round(loop.time() - start, 3), label))
        if label == 'first':  # our own patch produces version 2
            patched: Any = {'metadata': {'uid': 'uid1', 'resourceVersion': '2', 'labels': {'seen': 'patched'}}}
            return CycleResult(patched_body=patched)
        return CycleResult()

    await queueing.watcher(events=scripted(script), processor=processor, settings=settings)
    return processed


@pytest.fixture()
def settings() -> OperatorSettings:
    settings = OperatorSettings()
    settings.queueing.batch_window = 0.1
    return settings


@pytest.mark.looptime
@pytest.mark.parametrize('timeout, expected_at', [
    pytest.param(5.0, 5.1, id='default'),  # counted from the patch at 0.1
    pytest.param(2.0, 2.1, id='shorter'),
    pytest.param(0, 1.1, id='disabled'),
])
async def test_stale_event_is_processed_after_the_consistency_timeout(
        settings: OperatorSettings, timeout: float, expected_at: float) -> None:
    settings.persistence.consistency_timeout = timeout
    processed = await run(settings, [(0, event('1', 'first')), (1, event('1', 'stale'))])
    assert processed == [(0.1, 'first'), (expected_at, 'stale')]


@pytest.mark.looptime
async def test_patched_version_ends_the_waiting_and_the_stale_event_is_dropped(settings: OperatorSettings) -> None:
    processed = await run(settings, [(0, event('1', 'first')), (1, event('1', 'stale')), (2, event('2', 'fresh'))])
    assert processed == [(0.1, 'first'), (2.1, 'fresh')]
