"""
The posting of the queued k8s-events: the poster and its per-object workers.

The poster routes the events of the queue (see :mod:`posting`) to per-object
workers, which post each object's events in order, retrying the failed posts with
their back-offs; at most ``settings.posting.worker_limit`` workers at a time, each
exiting after ``settings.posting.idle_timeout`` without events.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any, Dict, Hashable, Mapping, Set

from kopf._cogs.clients import errors, protocols
from kopf._cogs.configs import configuration
from kopf._core.engines import retrying
from kopf._core.engines.events import posting

logger = logging.getLogger('kopf._core.engines.posting')  # the same logger as posting's: its lines stay as they were


def build_event_body(event: posting.K8sEvent, *, settings: configuration.OperatorSettings) -> Dict[str, Any]:
    """The core v1 ``Event`` object, as the API expects it, named and attributed as the settings say."""
    # The API expects RFC 3339 with the "Z" suffix for UTC.
    timestamp = event.timestamp.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    return {
        'apiVersion': 'v1',
        'kind': 'Event',
        'metadata': {
            'namespace': _get_event_namespace(event.ref),
            'generateName': settings.posting.event_name_prefix,
        },
        'involvedObject': dict(event.ref),
        'type': event.type,
        'reason': event.reason,
        'message': event.message,
        'source': {'component': settings.posting.reporting_component},
        'reportingComponent': settings.posting.reporting_component,
        'reportingInstance': settings.posting.reporting_instance,
        'firstTimestamp': timestamp,
        'lastTimestamp': timestamp,
        'count': 1,
    }


def _get_event_namespace(ref: Mapping[str, Any]) -> str:
    # Events of cluster-scoped objects live in "default", as kubectl and the API server expect.
    namespace = ref.get('namespace')
    return str(namespace) if namespace else 'default'


class _WorkerSlots:
    """
    The slots of the posting workers: at most ``settings.posting.worker_limit`` at once.

    The limit is read whenever a worker is about to start, so that it can be set
    at any time (usually in the startup handlers, after the poster has started).
    """

    def __init__(self, settings: configuration.OperatorSettings) -> None:
        self._settings = settings
        self._busy = 0
        self._freed = asyncio.Condition()

    def _is_full(self) -> bool:
        limit = self._settings.posting.worker_limit
        return limit is not None and self._busy >= limit

    async def acquire(self) -> None:
        async with self._freed:
            await self._freed.wait_for(lambda: not self._is_full())
            self._busy += 1

    async def release(self) -> None:
        async with self._freed:
            self._busy -= 1
            self._freed.notify_all()


def _object_key(ref: Mapping[str, Any]) -> Hashable:
    """The object's identity for ordering its events: the uid, or the names if there is no uid."""
    uid = ref.get('uid')
    if uid:
        return str(uid)
    return (ref.get('apiVersion'), ref.get('kind'), ref.get('namespace'), ref.get('name'))


async def poster(
        *,
        event_queue: asyncio.Queue[posting.K8sEvent],
        client: protocols.ObjectWriter,
        settings: configuration.OperatorSettings,
) -> None:
    """
    Route the queued k8s-events to the per-object workers, for as long as the operator runs.

    Each object's events go to its worker's backlog, in order; a new worker is started
    for an object that has none (waiting for a free slot if the workers are limited).
    Failures are logged and the events are lost: events are a best-effort channel,
    and the operator must continue regardless of them.
    """
    slots = _WorkerSlots(settings)
    backlogs: Dict[Hashable, asyncio.Queue[posting.K8sEvent]] = {}
    workers: Set[asyncio.Task[None]] = set()
    try:
        while True:
            event = await event_queue.get()
            key = _object_key(event.ref)
            if key not in backlogs:
                await slots.acquire()
                # Bounded as the main queue is: one object's flood while its posts are retried
                # drops that object's newest events instead of growing the memory without a bound.
                backlogs[key] = asyncio.Queue(maxsize=posting.QUEUE_LIMIT)
                worker = asyncio.create_task(_post_backlog(
                    key=key, backlogs=backlogs, slots=slots,
                    event_queue=event_queue, client=client, settings=settings),
                    name=f'poster of events for {key!r}')
                workers.add(worker)
                worker.add_done_callback(workers.discard)
            try:
                backlogs[key].put_nowait(event)
            except asyncio.QueueFull:
                logger.debug(f"Too many k8s-events are queued; dropping one: {event.reason}: {event.message}")
                event_queue.task_done()
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def _post_backlog(
        *,
        key: Hashable,
        backlogs: Dict[Hashable, asyncio.Queue[posting.K8sEvent]],
        slots: _WorkerSlots,
        event_queue: asyncio.Queue[posting.K8sEvent],
        client: protocols.ObjectWriter,
        settings: configuration.OperatorSettings,
) -> None:
    """Post one object's events in order; exit when none come for ``settings.posting.idle_timeout``."""
    backlog = backlogs[key]
    try:
        while True:
            try:
                event = await asyncio.wait_for(backlog.get(), timeout=settings.posting.idle_timeout)
            except asyncio.TimeoutError:
                # No await between this check and the removal below: the router sees either
                # this backlog with the new event in it, or no backlog and starts a new worker.
                if backlog.empty():
                    break
                continue
            try:
                if settings.posting.enabled:
                    await post_event(event=event, client=client, settings=settings)
            finally:
                event_queue.task_done()
    finally:
        if backlogs.get(key) is backlog:
            del backlogs[key]
        await slots.release()


async def post_event(
        *,
        event: posting.K8sEvent,
        client: protocols.ObjectWriter,
        settings: configuration.OperatorSettings,
) -> None:
    """Post one k8s-event, retrying it with its back-offs; log (but never raise) the final error."""
    body = build_event_body(event, settings=settings)
    namespace = body['metadata']['namespace']
    what = f"POST {posting.EVENTS.get_url(namespace=namespace)}"
    try:
        # Only the posting's back-offs apply, as in Kopf: none of the client's own retries under each of them.
        await retrying.request_with_backoffs(
            lambda: client.create_object(posting.EVENTS, namespace=namespace, body=body, backoffs=()),
            what=what, backoffs=event.backoffs, settings=settings, logger=logger)
    except errors.APIError as exc:
        # As Kopf 1.45 words it, for users' log searches and alerts (sic: no separator before "Event:").
        logger.warning(f"Failed to post an event. Ignoring and continuing. "
                       f"Code: {exc.code}. Message: {exc}. Details: {exc.details}"
                       f"Event: type={event.type!r}, reason={event.reason!r}, message={event.message!r}.")
    except Exception as exc:
        logger.warning(f"Failed to post an event. Ignoring and continuing. "
                       f"Error: {exc!r}. "
                       f"Event: type={event.type!r}, reason={event.reason!r}, message={event.message!r}.")
