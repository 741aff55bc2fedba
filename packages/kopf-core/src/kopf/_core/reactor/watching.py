"""
Watching: a continuous stream of events of one resource in one namespace.

The stream starts with a paginated listing (its objects come as events of
type ``None``, "the initial listing"; ``settings.watching.chunk_size`` objects
per page, all at once if ``None``), then watches from the listing's
resourceVersion, and re-watches from the last seen version when the server
closes the stream (bookmarks keep that version fresh). When the version is too
old (``410 Gone``), it re-lists: objects that disappeared meanwhile are
reported as ``DELETED`` so that no change is lost, and objects that did not
change are not reported again, so that none is duplicated.

With ``settings.watching.initial_streaming``, the listing is a streaming list
instead: one watch request whose initial events are the objects, ended by a
bookmark; an API server that refuses it gets a paginated listing after all.
The selectors of ``settings.watching`` go with every request (see :mod:`selecting`).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
from typing import Any, AsyncGenerator, AsyncIterator, Dict, Iterator, Literal, Mapping, NamedTuple, Optional, Set

from kopf._cogs.aiokits import aioretries
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import instruments, typedefs
from kopf._cogs.structs import references, shards
from kopf._core.reactor import permissions, selecting

logger = logging.getLogger('kopf.reactor.watching')

LISTING_ITEMS_PER_TURN = 10
"""How many listed objects are taken before the event loop gets a turn (the listing's items are decoded as taken)."""


def where(namespace: references.Namespace) -> str:
    return 'cluster-wide' if namespace is None else f'in {namespace!r}'


@contextlib.contextmanager
def announced(resource: references.Resource, namespace: references.Namespace) -> Iterator[None]:
    """Log the start and the end of serving a watch-stream, in Kopf's words (users' tests wait for them)."""
    logger.debug(f"Starting the watch-stream for {resource!r} {where(namespace)}.")
    try:
        yield
    finally:
        logger.debug(f"Stopping the watch-stream for {resource!r} {where(namespace)}.")


async def continuous_watch(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        resource: references.Resource,
        namespace: references.Namespace,
        on_listed: Optional[asyncio.Event] = None,
        retry_forbidden: bool = True,
        shard_selector: Optional[str] = None,
        known: Optional[Knowledge] = None,
) -> AsyncIterator[typedefs.RawEvent]:
    """
    Yield the events of the resource forever (until cancelled).

    A missing permission to list or watch is logged and retried (see :mod:`permissions`),
    unless ``retry_forbidden`` is false: then it escalates, for the callers that
    have a fallback for it. A ``shard_selector`` (of automatic sharding) replaces the settings' one.
    ``known`` is what an earlier stream of the same objects knew and processed (see
    ``orchestration``): those objects are not reported again by the listing unless they changed.
    """
    query = selecting.make_query(settings, resource)
    if shard_selector is not None:
        query = dataclasses.replace(query, shard_selector=shard_selector)
    stream = _Stream(query=query, shards=selecting.ShardFilter(query.shard_selector, resource=resource),
                     streaming=settings.watching.initial_streaming, on_listed=on_listed,
                     known=known if known is not None else {})
    health = _Health(forbidden=permissions.ForbiddenRetries(resource=resource, namespace=namespace),
                     broken=aioretries.Outage(what=f"stream {resource!r} {where(namespace)}",
                                              meanwhile="reconnecting from the last known version"))
    # Counted while the stream lives (the source is dropped with it), read only when the metrics are.
    instruments.OBJECTS_WATCHED.add_weak_source((resource.name,), stream, lambda owner: len(owner.known))
    for attempt in itertools.count():  # every attempt but the first is a restart of the stream
        instruments.WATCH_RESTARTS.inc((resource.name,), 1.0 if attempt else 0.0)
        health.verb = 'list' if stream.resource_version is None and not stream.streaming else 'watch'  # RBAC's
        try:
            attempt_events = _list_and_watch(client=client, settings=settings, resource=resource,
                                             namespace=namespace, stream=stream, health=health)
            async with contextlib.aclosing(attempt_events):  # when this stream ends, not when collected
                async for event in attempt_events:
                    yield event
        except Exception as e:
            action = await _recover(e, resource=resource, namespace=namespace, stream=stream, health=health,
                                    retry_forbidden=retry_forbidden)
            if action == 'raise':
                raise
            if action == 'restart':
                continue
        await asyncio.sleep(settings.watching.reconnect_backoff)


@dataclasses.dataclass
class _Health:
    """What a stream's restarts remember of its failures, and the RBAC verb of its current request."""
    forbidden: permissions.ForbiddenRetries
    broken: aioretries.Outage
    verb: str = 'list'
    absences: int = 0  # how many times in a row the resource was not found

    def succeeded(self) -> None:
        self.forbidden.succeeded(self.verb)
        self.broken.over()


async def _list_and_watch(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        resource: references.Resource,
        namespace: references.Namespace,
        stream: _Stream,
        health: _Health,
) -> AsyncGenerator[typedefs.RawEvent, None]:
    """One attempt of the stream: the listing if needed, then watching until the server closes it."""
    if stream.resource_version is None and not stream.streaming:
        async for event in _list_as_events(client=client, settings=settings, resource=resource,
                                           namespace=namespace, stream=stream):
            health.succeeded()  # at the first page already: the listing may take long
            yield event
        health.verb = 'watch'
    async for watched in _watch_as_events(client=client, settings=settings, resource=resource,
                                          namespace=namespace, stream=stream):
        health.succeeded()  # a bookmark (None here) proves the stream works too
        health.absences = 0
        if watched is not None:
            yield watched
    health.succeeded()


async def _recover(
        e: Exception,
        *,
        resource: references.Resource, namespace: references.Namespace,
        stream: _Stream,
        health: _Health,
        retry_forbidden: bool,
) -> Literal['raise', 'restart', 'reconnect']:
    """After a failed attempt: raise the error, restart at once (after the wait here, if any), or reconnect later."""
    if isinstance(e, apierrors.APIForbiddenError):
        if not retry_forbidden:
            return 'raise'
        await health.forbidden.wait(health.verb, e)
        return 'restart'
    if isinstance(e, apierrors.APIGoneError):
        logger.debug(f"The resourceVersion of {resource!r} is too old: re-listing.")
        stream.resource_version = None
        return 'reconnect'
    if isinstance(e, apierrors.APINotFoundError):
        # The resource is gone (its CRD deleted): the observer stops this stream soon;
        # until then, re-list (the CRD may come back), slower and slower, not hammering the API.
        delay = aioretries.backoff(health.absences)
        health.absences += 1
        logger.debug(f"The resource {resource!r} is not found: re-listing in {delay:g}s.")
        stream.resource_version = None
        await asyncio.sleep(delay)
        return 'restart'
    if isinstance(e, asyncio.TimeoutError):
        # Silent for longer than settings.watching.inactivity_timeout: presumed dead (in Kopf's words).
        logger.debug(f"Watch-stream for {resource!r} {where(namespace)} is inactive, reconnecting.")
        return 'reconnect'
    if isinstance(e, (apierrors.APIServerError, apierrors.APITooManyRequestsError, OSError)):
        # A dead or broken stream: reconnect from the last known version.
        logger.debug(f"The watch-stream of {resource!r} is interrupted: {e!r}; reconnecting.")
        return 'reconnect'
    if isinstance(e, apierrors.APIError):
        if not _refuses_streaming(stream, e):
            return 'raise'  # other refusals of the API are not transient: the orchestrator restarts the stream
        logger.warning(f"The API server refuses streaming lists of {resource!r} ({e}): listing them instead. "
                       f"Kubernetes 1.34+ streams lists by default (1.27-1.33 with the WatchList "
                       f"feature gate); or turn settings.watching.initial_streaming off.")
        stream.streaming = False
        return 'restart'
    if isinstance(e, shards.ShardSelectorError):
        return 'raise'  # the configuration is wrong: no retry will fix it
    # The client's transport failed after its retries (the core does not know its classes,
    # e.g. a disconnect or a cut payload): the stream reconnects, slower and slower.
    await health.broken.wait(e)
    return 'restart'


@dataclasses.dataclass
class _Stream:
    """The state of one resource's stream across its requests: where to continue, what is known."""
    query: selecting.Query
    shards: selecting.ShardFilter
    streaming: bool  # the initial listing is a streaming list (a watch with the initial events)
    on_listed: Optional[asyncio.Event]
    resource_version: Optional[str] = None  # None: (re-)list first
    first: bool = True  # the objects of the first listing are events of type None ("the initial listing")
    # uid -> a light trace: to tell changes and deletions on re-listing
    known: Dict[str, Trace] = dataclasses.field(default_factory=dict)

    def listed(self, resource_version: str) -> None:
        self.resource_version = resource_version
        self.first = False
        if self.on_listed is not None:
            self.on_listed.set()


def _refuses_streaming(stream: _Stream, error: apierrors.APIError) -> bool:
    """Whether the error is the API server's refusal of streaming lists (not of the selectors)."""
    return (stream.streaming and stream.resource_version is None and error.status in (400, 422)
            and 'sendInitialEvents' in str(error))


class Trace(NamedTuple):
    """What is remembered of a watched object: enough to report its deletion, not its body."""
    resource_version: str
    api_version: Optional[str]
    kind: Optional[str]
    namespace: Optional[str]
    name: Optional[str]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Trace:
        meta = raw.get('metadata', {})
        return cls(meta.get('resourceVersion', ''), raw.get('apiVersion'), raw.get('kind'),
                   meta.get('namespace'), meta.get('name'))

    def as_body(self, uid: str) -> typedefs.RawBody:
        meta = {'uid': uid, 'name': self.name, 'namespace': self.namespace,
                'resourceVersion': self.resource_version}
        return {'apiVersion': self.api_version, 'kind': self.kind,
                'metadata': {key: val for key, val in meta.items() if val is not None}}


Knowledge = Dict[str, Trace]  # uid -> what is known of the object (e.g. carried into a restarted stream)


def _remember(known: Dict[str, Trace], raw_event: typedefs.RawEvent) -> None:
    raw = raw_event.get('object', {})
    uid = raw.get('metadata', {}).get('uid')
    if uid is None:
        return
    if raw_event.get('type') == 'DELETED':
        known.pop(uid, None)
    else:
        known[uid] = Trace.of(raw)


class _Listing:
    """
    The objects of one listing turned into events, whether paginated or streamed.

    On re-listing, unchanged objects are skipped and vanished ones become
    ``DELETED`` events. The known objects are updated as they come, so that a
    listing that starts over (an expired continue token, a broken streaming
    list) does not report again what it has reported already.
    """

    def __init__(self, stream: _Stream) -> None:
        self.stream = stream
        self.seen: Set[str] = set()

    def take(self, raw: typedefs.RawBody) -> Optional[typedefs.RawEvent]:
        if not self.stream.shards.keeps(raw):
            return None
        uid = raw.get('metadata', {}).get('uid', '')
        trace = Trace.of(raw)
        previous = self.stream.known.get(uid)
        self.seen.add(uid)
        self.stream.known[uid] = trace
        if previous is not None and previous.resource_version == trace.resource_version:
            return None
        event_type = None if self.stream.first else ('MODIFIED' if previous is not None else 'ADDED')
        return typedefs.RawEvent(type=event_type, object=raw)

    def finish(self) -> Iterator[typedefs.RawEvent]:
        known = self.stream.known
        for uid in set(known) - self.seen:
            yield typedefs.RawEvent(type='DELETED', object=known.pop(uid).as_body(uid))


async def _list_as_events(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        resource: references.Resource,
        namespace: references.Namespace,
        stream: _Stream,
) -> AsyncIterator[typedefs.RawEvent]:
    """Yield the listed objects page by page as events; pages are processed as they come, never accumulated."""
    listing = _Listing(stream)
    query = stream.query
    continue_token: Optional[str] = None
    while True:
        try:
            page = await client.list_objects(resource, namespace=namespace, limit=settings.watching.chunk_size,
                                             continue_token=continue_token,
                                             label_selector=query.label_selector,
                                             field_selector=query.field_selector,
                                             shard_selector=query.shard_selector)
        except apierrors.APIGoneError:
            # The continue token expired between pages: start the listing over.
            continue_token = None
            listing.seen.clear()
            continue
        stream.shards.confirm(page.shard_selector)
        for index, raw in enumerate(page.items, start=1):
            event = listing.take(raw)
            if event is not None:
                yield event
            if index % LISTING_ITEMS_PER_TURN == 0:
                # Let the workers of the objects taken so far run before more are taken:
                # a long listing (e.g. of all objects at once) is never in memory as a whole.
                await asyncio.sleep(0)
        continue_token = page.continue_token
        if not continue_token:
            break
    for event in listing.finish():
        yield event
    stream.listed(page.resource_version)


async def _watch_as_events(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        resource: references.Resource,
        namespace: references.Namespace,
        stream: _Stream,
) -> AsyncIterator[Optional[typedefs.RawEvent]]:
    """
    Yield the events of one watch request, from the stream's resourceVersion (``None`` for bookmarks).

    Without a resourceVersion, it is a streaming list: the initial ``ADDED``
    events are the listing's objects (of type ``None`` on the first listing, as
    Kopf does), until the bookmark that ends them; the stream then goes on as
    a watch. If it breaks before that bookmark, the streaming list starts over.
    """
    query = stream.query
    listing = _Listing(stream) if stream.resource_version is None else None
    if listing is not None:
        stream.shards.unconfirm()
    async for raw_event in client.watch_objects(
            resource, namespace=namespace, resource_version=stream.resource_version,
            timeout_seconds=settings.watching.server_timeout, allow_bookmarks=True,
            label_selector=query.label_selector, field_selector=query.field_selector,
            shard_selector=query.shard_selector, send_initial_events=listing is not None):
        raw = raw_event.get('object', {})
        new_version = raw.get('metadata', {}).get('resourceVersion')
        if listing is not None:
            if raw_event.get('type') == 'BOOKMARK':
                if not _ends_initial_events(raw):
                    logger.debug(f"The initial events of {resource!r} end with a bookmark without "
                                 f"{protocols.INITIAL_EVENTS_END!r}: the server did not stream the list.")
                for deleted in listing.finish():
                    yield deleted
                stream.listed(new_version or '')
                listing = None
                yield None
            else:
                yield listing.take(raw)
            continue
        stream.resource_version = new_version or stream.resource_version
        if raw_event.get('type') == 'BOOKMARK' or not stream.shards.keeps(raw):
            yield None
            continue
        _remember(stream.known, raw_event)
        yield raw_event


def _ends_initial_events(raw: Mapping[str, Any]) -> bool:
    annotations = raw.get('metadata', {}).get('annotations') or {}
    return str(annotations.get(protocols.INITIAL_EVENTS_END, '')).lower() == 'true'
