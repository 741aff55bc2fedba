"""
Following Leases by a watch-stream: their changes are seen as they happen, not at the next poll.

The leader election's candidates follow their one Lease (by its name), and
automatic sharding's members follow their group's Leases (by its label). A
change seen in the stream is noticed at the moment it arrives, which is after
the API server stored it: the expiries counted from there are never early,
and are late by no more than the stream's delay (a poll is late by up to a
retry period). Where watching is not permitted, it is said once, and the
callers poll, as they would anyway; broken streams are re-opened.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Mapping, Optional

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._core.engines.coordination import leases

logger = logging.getLogger('kopf.engines.leasewatching')

WATCH_TIMEOUT = 300  # seconds: a server-side limit of one watch request of the Leases
FORBIDDEN_BACKOFF = 10  # retry periods between the attempts to watch when it is not permitted

EventCallback = Callable[[str, Mapping[str, Any]], None]  # the event's type (ADDED, MODIFIED, DELETED), the Lease


async def follow(
        client: protocols.ApiClient,
        *,
        namespace: str,
        what: str,
        retry_period: float,
        on_event: EventCallback,
        on_watching: Callable[[bool], None] = lambda watching: None,
        quiet: Callable[[], bool] = lambda: False,
        label_selector: Optional[str] = None,
        field_selector: Optional[str] = None,
) -> None:
    """
    Feed the Leases' changes to ``on_event`` until cancelled.

    ``what`` names the Leases in the messages; ``on_watching`` says whether a
    stream is open (then the caller need not poll); ``quiet`` says whether a
    refusal is already reported by the caller (then it is only a debug line).
    """
    said_forbidden = False
    while True:
        try:
            stream = client.watch_objects(leases.LEASES, namespace=namespace, timeout_seconds=WATCH_TIMEOUT,
                                          allow_bookmarks=False, label_selector=label_selector,
                                          field_selector=field_selector)
            async for event in stream:
                kind, body = event.get('type'), event.get('object')
                if kind in ('ADDED', 'MODIFIED', 'DELETED') and isinstance(body, Mapping):
                    on_watching(True)
                    on_event(str(kind), body)
        except apierrors.APIForbiddenError as e:
            if quiet() or said_forbidden:
                logger.debug(f"Not permitted to watch {what}: {e}")
            else:
                logger.warning(f"Not permitted to watch {what}: polling every {retry_period:g}s instead "
                               f"(grant 'watch' on the leases of coordination.k8s.io to take over faster). "
                               f"The error: {e}")
                said_forbidden = True
        except (Exception, asyncio.TimeoutError) as e:  # the stream broke: polled meanwhile, re-watched
            logger.debug(f"The watch-stream of {what} has ended: {e!r}")
        on_watching(False)
        await asyncio.sleep(retry_period * (FORBIDDEN_BACKOFF if said_forbidden else 1))


def is_older(record: leases.LeaseRecord, than: Optional[leases.LeaseRecord]) -> bool:
    """Whether a record is older than the one known (a listing answered before a change that the stream showed)."""
    if than is None or record.resource_version is None or than.resource_version is None:
        return False
    if not record.resource_version.isdigit() or not than.resource_version.isdigit():
        return False  # opaque versions (not etcd's revisions): no order to rely on
    return int(record.resource_version) < int(than.resource_version)
