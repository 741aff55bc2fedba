"""
Watching: a continuous stream of events of one resource in one namespace.

The stream starts with a paginated listing (its objects come as events of
type ``None``, "the initial listing"), then watches from the listing's
resourceVersion, and re-watches from the last seen version when the server
closes the stream (bookmarks keep that version fresh). When the version is too
old (``410 Gone``), it re-lists: objects that disappeared meanwhile are
reported as ``DELETED`` so that no change is lost, and objects that did not
change are not reported again, so that none is duplicated.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, AsyncIterator, Dict, Iterator, Mapping, NamedTuple, Optional

from kopf._cogs.aiokits import aioretries
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import references
from kopf._core.reactor import permissions

logger = logging.getLogger('kopf.reactor.watching')

LIST_PAGE_SIZE = 500


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
) -> AsyncIterator[typedefs.RawEvent]:
    """
    Yield the events of the resource forever (until cancelled).

    A missing permission to list or watch is logged and retried (see :mod:`permissions`),
    unless ``retry_forbidden`` is false: then it escalates, for the callers that
    have a fallback for it.
    """
    known: Dict[str, _Trace] = {}  # uid -> a light trace: to tell changes and deletions on re-listing
    resource_version: Optional[str] = None
    first_listing = True
    forbidden = permissions.ForbiddenRetries(resource=resource, namespace=namespace)
    broken = aioretries.Outage(what=f"stream {resource!r} {where(namespace)}",
                               meanwhile="reconnecting from the last known version")
    absences = 0  # how many times in a row the resource was not found
    while True:
        verb = 'list' if resource_version is None else 'watch'
        try:
            if resource_version is None:
                async for event in _list_as_events(client=client, resource=resource, namespace=namespace,
                                                   known=known, first=first_listing):
                    forbidden.succeeded(verb)  # at the first page already: the listing may take long
                    broken.over()
                    if isinstance(event, str):
                        resource_version = event
                    else:
                        yield event
                first_listing = False
                absences = 0
                if on_listed is not None:
                    on_listed.set()
                verb = 'watch'
            async for raw_event in client.watch_objects(
                    resource, namespace=namespace, resource_version=resource_version,
                    timeout_seconds=settings.watching.server_timeout, allow_bookmarks=True):
                forbidden.succeeded(verb)
                broken.over()
                new_version = raw_event.get('object', {}).get('metadata', {}).get('resourceVersion')
                if raw_event.get('type') == 'BOOKMARK':
                    resource_version = new_version or resource_version
                    continue
                _remember(known, raw_event)
                resource_version = new_version or resource_version
                yield raw_event
            forbidden.succeeded(verb)
            broken.over()
        except apierrors.APIForbiddenError as e:
            if not retry_forbidden:
                raise
            await forbidden.wait(verb, e)
            continue
        except apierrors.APIGoneError:
            logger.debug(f"The resourceVersion of {resource!r} is too old: re-listing.")
            resource_version = None
        except apierrors.APINotFoundError:
            # The resource is gone (its CRD deleted): the observer stops this stream soon;
            # until then, re-list (the CRD may come back), slower and slower, not hammering the API.
            delay = aioretries.backoff(absences)
            absences += 1
            logger.debug(f"The resource {resource!r} is not found: re-listing in {delay:g}s.")
            resource_version = None
            await asyncio.sleep(delay)
            continue
        except (asyncio.TimeoutError, apierrors.APIServerError, apierrors.APITooManyRequestsError, OSError) as e:
            # A dead or broken stream: reconnect from the last known version.
            logger.debug(f"The watch-stream of {resource!r} is interrupted: {e!r}; reconnecting.")
        except apierrors.APIError:
            raise  # other refusals of the API are not transient: the orchestrator restarts the stream
        except Exception as e:
            # The client's transport failed after its retries (the core does not know its classes,
            # e.g. a disconnect or a cut payload): the stream reconnects, slower and slower.
            await broken.wait(e)
            continue
        await asyncio.sleep(settings.watching.reconnect_backoff)


class _Trace(NamedTuple):
    """What is remembered of a watched object: enough to report its deletion, not its body."""
    resource_version: str
    api_version: Optional[str]
    kind: Optional[str]
    namespace: Optional[str]
    name: Optional[str]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> _Trace:
        meta = raw.get('metadata', {})
        return cls(meta.get('resourceVersion', ''), raw.get('apiVersion'), raw.get('kind'),
                   meta.get('namespace'), meta.get('name'))

    def as_body(self, uid: str) -> typedefs.RawBody:
        meta = {'uid': uid, 'name': self.name, 'namespace': self.namespace,
                'resourceVersion': self.resource_version}
        return {'apiVersion': self.api_version, 'kind': self.kind,
                'metadata': {key: val for key, val in meta.items() if val is not None}}


def _remember(known: Dict[str, _Trace], raw_event: typedefs.RawEvent) -> None:
    raw = raw_event.get('object', {})
    uid = raw.get('metadata', {}).get('uid')
    if uid is None:
        return
    if raw_event.get('type') == 'DELETED':
        known.pop(uid, None)
    else:
        known[uid] = _Trace.of(raw)


async def _list_as_events(
        *,
        client: protocols.ApiClient,
        resource: references.Resource,
        namespace: references.Namespace,
        known: Dict[str, _Trace],
        first: bool,
) -> AsyncIterator[typedefs.RawEvent | str]:
    """
    Yield the listed objects page by page as events, then the list's resourceVersion.

    On re-listing, unchanged objects are skipped and vanished ones become
    ``DELETED`` events. Pages are processed as they come, never accumulated.
    """
    seen: Dict[str, _Trace] = {}
    continue_token: Optional[str] = None
    resource_version = ''
    while True:
        try:
            page = await client.list_objects(resource, namespace=namespace, limit=LIST_PAGE_SIZE,
                                             continue_token=continue_token)
        except apierrors.APIGoneError:
            # The continue token expired between pages: start the listing over.
            continue_token = None
            seen.clear()
            continue
        for raw in page.items:
            uid = raw.get('metadata', {}).get('uid', '')
            trace = seen[uid] = _Trace.of(raw)
            previous = known.get(uid)
            if not first and previous is not None and previous.resource_version == trace.resource_version:
                continue
            event_type = None if first else ('MODIFIED' if uid in known else 'ADDED')
            yield typedefs.RawEvent(type=event_type, object=raw)  # type: ignore[typeddict-item]
        resource_version = page.resource_version
        continue_token = page.continue_token
        if not continue_token:
            break
    if not first:
        for uid in set(known) - set(seen):
            yield typedefs.RawEvent(type='DELETED', object=known[uid].as_body(uid))
    known.clear()
    known.update(seen)
    yield resource_version
