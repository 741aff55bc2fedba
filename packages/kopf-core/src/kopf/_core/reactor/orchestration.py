"""
Orchestration: one watch-stream per served resource and namespace, kept in
line with the current insights (resources and namespaces come and go).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Dict, Optional, Tuple

from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import references
from kopf._core.engines import indexing
from kopf._core.reactor import observation, processing, queueing, watching

logger = logging.getLogger('kopf.reactor.orchestration')

StreamKey = Tuple[references.Resource, references.Namespace]


def _where(namespace: references.Namespace) -> str:
    return 'cluster-wide' if namespace is None else f'in {namespace!r}'


async def orchestrator(
        *,
        context: processing.ProcessingContext,
        settings: configuration.OperatorSettings,
        insights: observation.Insights,
        readiness: indexing.IndexingReadiness,
        operating: asyncio.Event,
) -> None:
    """Start and stop the watch-streams as the insights change, until cancelled."""
    streams: Dict[StreamKey, asyncio.Task[None]] = {}
    limiter = asyncio.Semaphore(settings.batching.worker_limit) if settings.batching.worker_limit else None
    await insights.ready_resources.wait()
    await insights.ready_namespaces.wait()
    try:
        while True:
            insights.changed.clear()
            # While paused in favour of other operators (peering), nothing is served.
            wanted = set() if not operating.is_set() else {
                (resource, namespace if resource.namespaced else None)
                for resource in insights.resources
                for namespace in insights.namespaces
            }
            # The handlers wait until the indexed streams existing now are listed (once, at start).
            if operating.is_set():
                readiness.expect({key for key in wanted
                                  if context.registry.has_indexing_handlers(resource=key[0])})
            for key in set(streams) - wanted:
                resource, namespace = key
                logger.debug(f"Stopping the watch-stream for {resource!r} {_where(namespace)}.")
                task = streams.pop(key)
                task.cancel()
                await asyncio.wait([task])
            for key in wanted - set(streams):
                resource, namespace = key
                logger.debug(f"Starting the watch-stream for {resource!r} {_where(namespace)}.")
                streams[key] = asyncio.create_task(
                    _serve(context=context, settings=settings, resource=resource, namespace=namespace,
                           limiter=limiter, readiness=readiness),
                    name=f'watcher of {resource!r} {_where(namespace)}')
            await insights.changed.wait()
    finally:
        for task in streams.values():
            task.cancel()
        if streams:
            await asyncio.wait(streams.values())


async def _serve(
        *,
        context: processing.ProcessingContext,
        settings: configuration.OperatorSettings,
        resource: references.Resource,
        namespace: references.Namespace,
        limiter: Optional[asyncio.Semaphore],
        readiness: indexing.IndexingReadiness,
) -> None:
    async def process(raw_event: typedefs.RawEvent) -> processing.CycleResult:
        return await processing.process_resource_event(context=context, resource=resource, raw_event=raw_event)

    async def index(raw_event: typedefs.RawEvent) -> None:
        await processing.index_resource_event(context=context, resource=resource, raw_event=raw_event)

    listed = asyncio.Event()
    indexed = context.registry.has_indexing_handlers(resource=resource)
    events = watching.continuous_watch(client=context.client, settings=settings,
                                       resource=resource, namespace=namespace, on_listed=listed)
    marker = asyncio.create_task(_mark_when_listed(listed, readiness, (resource, namespace)))
    try:
        await queueing.watcher(events=events, processor=process, settings=settings, limiter=limiter,
                               preprocessor=index if indexed else None)
    finally:
        marker.cancel()


async def _mark_when_listed(listed: asyncio.Event, readiness: indexing.IndexingReadiness, key: StreamKey) -> None:
    await listed.wait()
    readiness.mark_listed(key)


