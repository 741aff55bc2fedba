"""
Orchestration: one watch-stream per served resource and namespace, kept in
line with the current insights (resources and namespaces come and go).

When automatic sharding changes the served slots, every stream restarts with
the new shard selector; what it knew of the objects that stay (and that were
settled when it stopped) is carried into its restart, so that its listing
reports only the objects new to it (e.g. of a killed replica) and the changes
it has missed, not again all those that it has just processed.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from typing import AsyncIterator, Awaitable, Callable, Dict, Optional, Set, Tuple

from kopf._cogs.aiokits import aioretries, aiostopping
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, references
from kopf._cogs.structs import shards as shards_
from kopf._core.engines import indexing
from kopf._core.engines.endpoints import probing
from kopf._core.reactor import cycles, observation, processing, queueing, sharding, watching

logger = logging.getLogger('kopf.reactor.orchestration')

StreamKey = Tuple[references.Resource, references.Namespace]


async def orchestrator(
        *,
        context: cycles.ProcessingContext,
        settings: configuration.OperatorSettings,
        insights: observation.Insights,
        readiness: indexing.IndexingReadiness,
        operating: asyncio.Event,
        listing: Optional[probing.ListingReadiness] = None,
        shards: Optional[sharding.ShardServing] = None,
        entitled: Optional[queueing.Admission] = None,
) -> None:
    """Start and stop the watch-streams as the insights (and the slots of ``shards``) change, until cancelled."""
    listing = listing if listing is not None else probing.ListingReadiness()
    streams: Dict[StreamKey, asyncio.Task[None]] = {}
    knowledge: Dict[StreamKey, _Knowledge] = {}
    limiter = asyncio.Semaphore(settings.queueing.worker_limit) if settings.queueing.worker_limit else None
    selector: Optional[str] = None  # of the running streams (automatic sharding only)
    await insights.ready_resources.wait()
    await insights.ready_namespaces.wait()
    try:
        while True:
            insights.changed.clear()
            version = shards.version if shards is not None else 0
            wanted = _wanted(insights, operating=operating, shards=shards)
            if operating.is_set():
                _expect_listings(wanted, context=context, readiness=readiness, listing=listing)
            new_selector = shards.selector if shards is not None else None
            restarted = set(streams) if new_selector != selector else set()
            await _stop_streams(streams, (set(streams) - wanted) | restarted)
            for key in set(knowledge) - wanted:
                del knowledge[key]  # e.g. paused: the streams list everything afresh when resumed
            selector = new_selector
            for key in wanted - set(streams):
                resource, namespace = key
                carried = knowledge.get(key)
                knowledge[key] = carried.carried(selector) if carried is not None else _Knowledge()
                serve = functools.partial(_serve, context=context, settings=settings, resource=resource,
                                          namespace=namespace, limiter=limiter, readiness=readiness,
                                          listing=listing, shard_selector=selector, knowledge=knowledge[key],
                                          admitted=_admission(operating, shards, selector, entitled))
                streams[key] = asyncio.create_task(
                    _serve_persistently(serve, key, knowledge[key]),
                    name=f'watcher of {resource!r} {watching.where(namespace)}')
                streams[key].add_done_callback(_report_failure)
            if shards is not None:
                await shards.mark_applied(version)
            await insights.changed.wait()
    finally:
        await aiostopping.stop_tasks(list(streams.values()), title='Streaming', logger=logger)


@dataclasses.dataclass
class _Knowledge:
    """What one stream knows of its objects, and which of them were in flux when it stopped."""
    known: watching.Knowledge = dataclasses.field(default_factory=dict)
    unsettled: Set[str] = dataclasses.field(default_factory=set)

    def carried(self, selector: Optional[str]) -> _Knowledge:
        """For the stream's restart with another selector: the objects that stay in it and were settled."""
        inside = shards_.parse(selector).matches if selector is not None else (lambda body: True)
        known = {uid: trace for uid, trace in self.known.items()
                 if uid not in self.unsettled and inside(trace.as_body(uid))}
        return _Knowledge(known=known)

    def forget(self) -> None:
        self.known.clear()
        self.unsettled.clear()


def _wanted(
        insights: observation.Insights,
        *,
        operating: asyncio.Event,
        shards: Optional[sharding.ShardServing],
) -> Set[StreamKey]:
    """The streams to run: none while paused (peering, leadership) or without slots (sharding)."""
    if not operating.is_set() or (shards is not None and shards.idle):
        return set()
    return {
        (resource, namespace if resource.namespaced else None)
        for resource in insights.resources
        for namespace in insights.namespaces
    }


def _expect_listings(
        wanted: Set[StreamKey],
        *,
        context: cycles.ProcessingContext,
        readiness: indexing.IndexingReadiness,
        listing: probing.ListingReadiness,
) -> None:
    """The handlers wait until the indexed streams existing now are listed (once, at start); so does the probe."""
    readiness.expect({key for key in wanted if context.registry.has_indexing_handlers(resource=key[0])})
    listing.expect(wanted)


async def _stop_streams(streams: Dict[StreamKey, asyncio.Task[None]], keys: Set[StreamKey]) -> None:
    for key in keys:
        task = streams.pop(key)
        task.cancel()
        await asyncio.wait([task])


def _admission(
        operating: asyncio.Event,
        shards: Optional[sharding.ShardServing],
        selector: Optional[str],
        entitled: Optional[queueing.Admission],
) -> queueing.Admission:
    """
    Whether a stream of this selector may start a cycle now: cheap, as it is asked before each one.

    ``entitled`` says if the operator's Leases (leadership, sharding) are still
    renewed in time, by the clock: no cycle starts past the renew deadline,
    even before the elector or the sharder (in the same loop) have stepped down.
    """
    def admitted() -> bool:
        return (operating.is_set()
                and (shards is None or shards.selector == selector)
                and (entitled is None or entitled()))
    return admitted


def _report_failure(task: asyncio.Task[None]) -> None:
    """A stream that died (beyond the restarts) must not die silently: nothing restarts it then."""
    if not task.cancelled() and task.exception() is not None:
        logger.error(f"The {task.get_name()} has failed and stopped: {task.exception()!r}",
                     exc_info=task.exception())


async def _serve_persistently(serve: Callable[[], Awaitable[None]], key: StreamKey, knowledge: _Knowledge) -> None:
    """Serve the stream until cancelled; if it dies of an unexpected error, restart it (afresh) after a delay."""
    resource, namespace = key
    failures = 0
    while True:
        try:
            await serve()
            return
        except Exception as e:  # a resource left unserved until a restart is worse than a retry
            delay = aioretries.backoff(failures)
            failures += 1
            logger.error(f"The watch-stream of {resource!r} {watching.where(namespace)} has failed; "
                         f"restarting it in {delay:g}s (attempt {failures}). The error: {e!r}",
                         exc_info=e)
            knowledge.forget()
            await asyncio.sleep(delay)


async def _serve(
        *,
        context: cycles.ProcessingContext,
        settings: configuration.OperatorSettings,
        resource: references.Resource,
        namespace: references.Namespace,
        limiter: Optional[asyncio.Semaphore],
        readiness: indexing.IndexingReadiness,
        listing: probing.ListingReadiness,
        shard_selector: Optional[str] = None,
        admitted: Optional[queueing.Admission] = None,
        knowledge: Optional[_Knowledge] = None,
) -> None:
    async def process(raw_event: typedefs.RawEvent) -> cycles.CycleResult:
        return await processing.process_resource_event(context=context, resource=resource, raw_event=raw_event)

    async def index(raw_event: typedefs.RawEvent) -> None:
        await processing.index_resource_event(context=context, resource=resource, raw_event=raw_event)

    listed = asyncio.Event()
    indexed = context.registry.has_indexing_handlers(resource=resource)
    knowledge = knowledge if knowledge is not None else _Knowledge()
    events = _honouring_cancellation(watching.continuous_watch(
        client=context.client, settings=settings, resource=resource, namespace=namespace, on_listed=listed,
        shard_selector=shard_selector, known=knowledge.known), knowledge.unsettled)
    marker = asyncio.create_task(_mark_when_listed(listed, (readiness, listing), (resource, namespace)))
    try:
        with watching.announced(resource, namespace):
            await queueing.watcher(events=events, processor=process, settings=settings, limiter=limiter,
                                   preprocessor=index if indexed else None, resource=resource.name,
                                   admitted=admitted, unsettled=knowledge.unsettled)
    finally:
        marker.cancel()


async def _honouring_cancellation(
        events: AsyncIterator[typedefs.RawEvent],
        unsettled: Set[str],
) -> AsyncIterator[typedefs.RawEvent]:
    """
    Stop the stream at its next event if its task is being cancelled, even if the cancellation got lost.

    On Python 3.11, ``asyncio.wait_for()`` (e.g. the watch's inactivity timeout) returns the
    result instead of raising when the cancellation meets a chunk that has just arrived: the
    stream would go on for ever, and a paused operator, or a replica after a hand-over of its
    shards, would keep handling the objects. The event dropped so is one in flux (``unsettled``).
    """
    task = asyncio.current_task()
    cancelling = getattr(task, 'cancelling', None)  # Python 3.11+: the cancellations requested and not undone
    async for event in events:
        if cancelling is not None and cancelling():
            unsettled.add(bodies.object_key(event.get('object', {})))
            raise asyncio.CancelledError()
        yield event


async def _mark_when_listed(
        listed: asyncio.Event,
        readinesses: Tuple[indexing.IndexingReadiness, probing.ListingReadiness],
        key: StreamKey,
) -> None:
    await listed.wait()
    for readiness in readinesses:
        readiness.mark_listed(key)


