"""
Queueing: per-object serialisation of the events of one resource.

The watch-stream multiplexes the events of all objects; here they are
demultiplexed into per-object workers. One object is processed by one worker
at a time, and only its latest state is processed: events that arrive while
a cycle runs are batched, and the older ones are dropped. A worker lives only
while its object has something to do (then exits after the idle timeout), so
memory is bounded by the objects in flux, not by all objects ever seen.

After the framework patches an object, the events older than that patch are
stale (they would, for example, show no diff-base and cause a repeated
creation); they are skipped until the patched version comes in the stream.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from typing import AsyncIterator, Awaitable, Callable, Dict, Iterable, Iterator, Optional

from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs
from kopf._core.reactor import processing

logger = logging.getLogger('kopf.reactor.queueing')

Processor = Callable[[typedefs.RawEvent], Awaitable[processing.CycleResult]]


@dataclasses.dataclass
class _Stream:
    queue: asyncio.Queue[typedefs.RawEvent]
    task: Optional[asyncio.Task[None]] = None


def object_key(raw_event: typedefs.RawEvent) -> str:
    meta = raw_event.get('object', {}).get('metadata', {})
    return str(meta.get('uid') or f"{meta.get('namespace')}/{meta.get('name')}")


async def watcher(
        *,
        events: AsyncIterator[typedefs.RawEvent],
        processor: Processor,
        settings: configuration.OperatorSettings,
        limiter: Optional[asyncio.Semaphore] = None,
        preprocessor: Optional[Callable[[typedefs.RawEvent], Awaitable[None]]] = None,
) -> None:
    """
    Dispatch the events to per-object workers until the stream ends or is cancelled.

    The preprocessor (e.g. indexing) runs for every event in the stream's order,
    before the workers see it, and never waits for the workers.
    """
    streams: Dict[str, _Stream] = {}
    try:
        async for raw_event in events:
            if preprocessor is not None:
                await preprocessor(raw_event)
            key = object_key(raw_event)
            stream = streams.get(key)
            if stream is None:
                stream = streams[key] = _Stream(queue=asyncio.Queue())
            stream.queue.put_nowait(raw_event)
            if stream.task is None or stream.task.done():
                stream.task = asyncio.create_task(
                    _worker(key=key, streams=streams, processor=processor, settings=settings, limiter=limiter),
                    name=f'worker for {key}')
    finally:
        await _stop_workers(streams.values(), timeout=settings.batching.exit_timeout)


async def _stop_workers(streams: Iterable[_Stream], *, timeout: Optional[float]) -> None:
    tasks = [stream.task for stream in streams if stream.task is not None and not stream.task.done()]
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)


async def _worker(
        *,
        key: str,
        streams: Dict[str, _Stream],
        processor: Processor,
        settings: configuration.OperatorSettings,
        limiter: Optional[asyncio.Semaphore],
) -> None:
    stream = streams[key]
    queue = stream.queue
    latest: Optional[typedefs.RawEvent] = None
    awaited_version: Optional[str] = None  # skip the events older than our own patch
    delay: Optional[float] = None
    error_delays: Iterator[float] = iter(())
    try:
        while True:
            timeout = delay if delay is not None else settings.batching.idle_timeout
            try:
                event = await asyncio.wait_for(queue.get(), timeout=timeout)
            except asyncio.TimeoutError:
                if delay is None or latest is None:
                    # Idle: the object has nothing to do. No await between this check and
                    # the removal, so the watcher cannot put an event into a dying queue.
                    if queue.empty():
                        streams.pop(key, None)
                        return
                    continue
                event = latest  # the handlers' delay is over: process the latest known state
            else:
                event = await _batch(queue, event, window=settings.batching.batch_window)
                if awaited_version is not None and not _is_fresh(event, awaited_version):
                    # Still only the events from before our own patch: stale, skip them.
                    continue
                awaited_version = None

            latest = event
            try:
                async with (limiter or contextlib.nullcontext()):
                    result = await processor(event)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                throttle = next(error_delays, None)
                if throttle is None:
                    error_delays = iter(settings.batching.error_delays)
                    throttle = next(error_delays, None)
                logger.exception(f"Unexpected error while processing {key}: {e!r}. "
                                 f"Throttling for {throttle} seconds.")
                delay = throttle
                continue
            error_delays = iter(())
            delay = result.delay
            if result.patched_body is not None:
                patched = typedefs.RawEvent(type='MODIFIED', object=result.patched_body)
                awaited_version = result.patched_body.get('metadata', {}).get('resourceVersion')
                latest = patched
            elif delay is None and queue.empty():
                # Nothing to wait for (no own patch to see back, no delayed handlers): free the
                # memory now instead of lingering, e.g. after the initial listing of many objects.
                streams.pop(key, None)
                return
    finally:
        if streams.get(key) is stream and queue.empty():
            del streams[key]


async def _batch(
        queue: asyncio.Queue[typedefs.RawEvent],
        event: typedefs.RawEvent,
        *,
        window: float,
) -> typedefs.RawEvent:
    """Take the newest of the events arriving within the batching window."""
    latest = event
    while True:
        try:
            latest = await asyncio.wait_for(queue.get(), timeout=window)
        except asyncio.TimeoutError:
            return latest


def _is_fresh(event: typedefs.RawEvent, awaited_version: str) -> bool:
    """Whether the event is at or after the awaited version (deletions always are)."""
    if event.get('type') == 'DELETED':
        return True
    version = event.get('object', {}).get('metadata', {}).get('resourceVersion')
    if version == awaited_version:
        return True
    # Versions are opaque in the API contract, but are etcd's revisions in practice:
    # a listing after a reconnect can jump over the awaited version.
    if version is not None and version.isdigit() and awaited_version.isdigit():
        return int(version) > int(awaited_version)
    return False
