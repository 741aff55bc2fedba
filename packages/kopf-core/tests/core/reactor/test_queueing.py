"""
Queueing: per-object workers, batching, stale events after our own patches, delays and throttling.

The processor is a fake at the seam between the queues and the processing (it
records what it is given and answers with a prepared result); the time is
fake (looptime), so every assertion is on exact loop seconds.
"""
import asyncio
from typing import Any, AsyncIterator, Callable, Dict, List, Optional

import pytest

from kopf import clients
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers.typedefs import RawBody, RawEvent
from kopf._core.reactor.cycles import CycleResult
from kopf._core.reactor.queueing import watcher


def event(name: str, version: int, type: str = 'MODIFIED', **spec: Any) -> RawEvent:
    body: RawBody = {'metadata': {'name': name, 'namespace': 'ns', 'uid': f'uid-{name}',
                                  'resourceVersion': str(version)}, 'spec': spec}
    return RawEvent(type=type, object=body)


class FakeProcessor:
    """Records the processed events with their loop time; answers with the results it is told to."""

    def __init__(self, answer: Callable[[RawEvent], CycleResult] = lambda _: CycleResult()) -> None:
        self.answer = answer
        self.calls: List[tuple[float, str, str]] = []

    async def __call__(self, raw_event: RawEvent) -> CycleResult:
        meta = raw_event['object']['metadata']
        self.calls.append((asyncio.get_running_loop().time(), meta['name'], meta['resourceVersion']))
        return self.answer(raw_event)


def timeline(processor: FakeProcessor) -> List[tuple[float, str, str]]:
    return [(round(time, 3), name, version) for time, name, version in processor.calls]


async def stream(*items: Any) -> AsyncIterator[RawEvent]:
    """The events, with pauses (numbers: seconds of loop time) between them; then it stays open."""
    for item in items:
        if isinstance(item, (int, float)):
            await asyncio.sleep(item)
        else:
            yield item
    await asyncio.Event().wait()


def windowed() -> OperatorSettings:
    """The settings of most tests here: a batching window of 0.1 s, to see the timing of the merges."""
    settings = OperatorSettings()
    settings.queueing.batch_window = 0.1
    return settings


async def run_watcher(events: AsyncIterator[RawEvent], processor: FakeProcessor, *, until: float,
                      settings: Optional[OperatorSettings] = None) -> None:
    settings = settings or windowed()
    task = asyncio.create_task(watcher(events=events, processor=processor, settings=settings))
    await asyncio.sleep(until)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.looptime
async def test_events_arriving_together_are_processed_once_as_the_newest() -> None:
    processor = FakeProcessor()
    await run_watcher(stream(event('a', 1), 0.05, event('a', 2), 0.05, event('a', 3)), processor, until=10)
    assert timeline(processor) == [(0.2, 'a', '3')]  # the batch window (0.1 s) after the last one


@pytest.mark.looptime
async def test_by_default_events_are_processed_at_once_and_those_arrived_together_merged() -> None:
    processor = FakeProcessor()
    await run_watcher(stream(event('a', 1), event('a', 2), 0.05, event('a', 3)), processor, until=10,
                      settings=OperatorSettings())
    assert timeline(processor) == [(0.0, 'a', '2'), (0.05, 'a', '3')]  # no window: no waiting


@pytest.mark.looptime
async def test_objects_are_processed_independently() -> None:
    processor = FakeProcessor()
    await run_watcher(stream(event('a', 1), event('b', 2)), processor, until=10)
    assert sorted(name for _, name, _ in processor.calls) == ['a', 'b']


@pytest.mark.looptime
async def test_events_older_than_our_own_patch_are_skipped() -> None:
    def answer(raw_event: RawEvent) -> CycleResult:
        version = int(raw_event['object']['metadata']['resourceVersion'])
        if version == 1:  # our patch produces version 5
            return CycleResult(patched_body=event('a', 5)['object'])
        return CycleResult()

    processor = FakeProcessor(answer)
    await run_watcher(stream(event('a', 1), 1, event('a', 3), 1, event('a', 5)), processor, until=10)
    assert [version for _, _, version in processor.calls] == ['1', '5']


@pytest.mark.looptime
async def test_a_listing_that_jumps_over_the_awaited_version_is_fresh() -> None:
    processor = FakeProcessor(lambda e: CycleResult(patched_body=event('a', 5)['object'])
                              if e['object']['metadata']['resourceVersion'] == '1' else CycleResult())
    await run_watcher(stream(event('a', 1), 1, event('a', 7)), processor, until=10)
    assert [version for _, _, version in processor.calls] == ['1', '7']


@pytest.mark.looptime
async def test_deletions_are_never_stale() -> None:
    processor = FakeProcessor(lambda e: CycleResult(patched_body=event('a', 5)['object'])
                              if e['type'] == 'MODIFIED' else CycleResult())
    await run_watcher(stream(event('a', 1), 1, event('a', 3, type='DELETED')), processor, until=10)
    assert [version for _, _, version in processor.calls] == ['1', '3']


@pytest.mark.looptime
async def test_the_latest_state_is_processed_again_after_the_handlers_delay() -> None:
    results = iter([CycleResult(delay=30), CycleResult()])
    processor = FakeProcessor(lambda _: next(results))
    await run_watcher(stream(event('a', 1)), processor, until=100)
    assert timeline(processor) == [(0.1, 'a', '1'), (30.1, 'a', '1')]


@pytest.mark.looptime
async def test_a_new_event_comes_before_the_delay_is_over() -> None:
    results = iter([CycleResult(delay=30), CycleResult()])
    processor = FakeProcessor(lambda _: next(results))
    await run_watcher(stream(event('a', 1), 10, event('a', 2)), processor, until=100)
    assert timeline(processor) == [(0.1, 'a', '1'), (10.1, 'a', '2')]


@pytest.mark.looptime
async def test_unexpected_errors_are_throttled_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    outcomes: List[Optional[Exception]] = [ValueError('boom'), ValueError('boom'), None]

    def answer(_: RawEvent) -> CycleResult:
        error = outcomes.pop(0)
        if error is not None:
            raise error
        return CycleResult()

    settings = OperatorSettings()
    settings.queueing.error_delays = [5, 7]
    processor = FakeProcessor(answer)
    await run_watcher(stream(event('a', 1)), processor, until=100, settings=settings)
    assert [round(time, 1) for time, _, _ in processor.calls] == [0.0, 5.0, 12.0]  # no batching window
    messages = [record.getMessage() for record in caplog.records if record.name == 'kopf.reactor.queueing']
    assert messages == ["Unexpected error while processing uid-a: ValueError('boom'). Throttling for 5 seconds.",
                        "Unexpected error while processing uid-a: ValueError('boom'). Throttling for 7 seconds."]


@pytest.mark.looptime
async def test_a_success_starts_the_error_delays_from_their_beginning() -> None:
    # error (5 s), error (7 s), success with a handlers' delay (1 s), error: 5 s again, not 7.
    outcomes: List[Optional[Exception]] = [ValueError('boom'), ValueError('boom'), None, ValueError('boom'), None]

    def answer(_: RawEvent) -> CycleResult:
        error = outcomes.pop(0)
        if error is not None:
            raise error
        return CycleResult(delay=1) if outcomes else CycleResult()

    settings = OperatorSettings()
    settings.queueing.error_delays = [5, 7]
    processor = FakeProcessor(answer)
    await run_watcher(stream(event('a', 1)), processor, until=100, settings=settings)
    assert [round(time, 1) for time, _, _ in processor.calls] == [0.0, 5.0, 12.0, 13.0, 18.0]


@pytest.mark.looptime
async def test_an_idle_worker_exits_and_a_new_one_starts_for_new_events() -> None:
    processor = FakeProcessor(lambda _: CycleResult(delay=1) if not processor.calls[1:] else CycleResult())
    await run_watcher(stream(event('a', 1), 50, event('a', 2)), processor, until=100)
    assert [(round(time, 1), version) for time, _, version in processor.calls] == \
        [(0.1, '1'), (1.1, '1'), (50.1, '2')]


@pytest.mark.looptime
async def test_the_worker_limit_serialises_the_objects() -> None:
    active: Dict[str, int] = {'now': 0, 'max': 0}

    async def slow(raw_event: RawEvent) -> CycleResult:
        active['now'] += 1
        active['max'] = max(active['max'], active['now'])
        await asyncio.sleep(1)
        active['now'] -= 1
        return CycleResult()

    settings = OperatorSettings()
    task = asyncio.create_task(watcher(events=stream(event('a', 1), event('b', 1), event('c', 1)),
                                       processor=slow, settings=settings, limiter=asyncio.Semaphore(1)))
    await asyncio.sleep(10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert active['max'] == 1


@pytest.mark.looptime
async def test_requests_are_hinted_to_go_by_when_the_change_arrived() -> None:
    hints: Dict[str, List[Optional[float]]] = {}

    async def processor(raw_event: RawEvent) -> CycleResult:
        name = raw_event['object']['metadata']['name']
        hints.setdefault(name, []).append(clients.request_priority.get())
        return CycleResult(delay=1.0 if hints == {'a': [1.0]} else None)

    # 'a' is handled twice for its first change (a repeat after 1 s), then settles; later, it changes again.
    events = stream(1, event('a', 1), 2, event('b', 2), 3, event('a', 3))
    task = asyncio.create_task(watcher(events=events, processor=processor, settings=OperatorSettings()))
    await asyncio.sleep(20)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert hints == {'a': [1.0, 2.0, 6.0], 'b': [3.0]}  # when each change arrived; the repeat: when repeated
