"""
Watch-streams: one long GET request, one JSON document per line.

The lines are split here rather than with aiohttp's ``readline()``: its limit
is 64 KiB, and a single object (e.g. a ConfigMap or a CR with a large spec)
can easily be megabytes. The stream is never buffered as a whole: each line is
yielded as soon as it is complete.

How a stream ends:

* The server closes it (``timeoutSeconds`` is over): the iteration ends.
* The connection is dropped, or the client-side total timeout
  (``settings.watching.client_timeout``) is over: the iteration ends too,
  quietly — the caller reconnects from the last seen resource version, as
  with a normal end. The incomplete line, if any, is discarded.
* Nothing arrives for ``settings.watching.inactivity_timeout`` seconds:
  :class:`asyncio.TimeoutError` — the stream is presumed dead (e.g. a
  half-open TCP connection after a network change), which the caller may
  want to log differently from a normal end.
* An ``ERROR`` event: the matching :class:`kopf.clients.APIError`, e.g.
  :class:`kopf.clients.APIGoneError` for 410, so that the caller re-lists.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Dict, Optional, cast

import aiohttp

import kopf
from kopf import clients
from kopf_client import _jsons, _responses, _retrying, _transport

logger = logging.getLogger(__name__)


async def watch_objects(
        transport: _transport.Transport,
        settings: kopf.OperatorSettings,
        resource: clients.Resource,
        *,
        namespace: clients.Namespace,
        resource_version: Optional[str] = None,
        timeout_seconds: Optional[float] = None,
        allow_bookmarks: bool = True,
        label_selector: Optional[str] = None,
        field_selector: Optional[str] = None,
        shard_selector: Optional[str] = None,
        send_initial_events: bool = False,
) -> AsyncIterator[clients.RawEvent]:
    """Stream the events of one watch request (see the module's docstring for how it ends)."""
    params = {'watch': 'true', **make_selector_params(label_selector=label_selector, field_selector=field_selector,
                                                       shard_selector=shard_selector)}
    if allow_bookmarks or send_initial_events:  # the end of the initial events is a bookmark
        params['allowWatchBookmarks'] = 'true'
    if resource_version is not None:
        params['resourceVersion'] = resource_version
    if send_initial_events:
        params['sendInitialEvents'] = 'true'
        params['resourceVersionMatch'] = 'NotOlderThan'  # required with it: "at least as new as"
    if timeout_seconds is not None:
        params['timeoutSeconds'] = str(int(timeout_seconds))

    path = resource.get_url(namespace=namespace)
    timeout = make_watch_timeout(settings)
    async with transport.stream('GET', path, params=params, timeout=timeout) as response:
        lines = iter_lines(response.content, inactivity_timeout=settings.watching.inactivity_timeout)
        async for line in lines:
            event = parse_event(line)
            if event['type'] == 'ERROR':
                raise _responses.make_watch_error(event['object'])
            yield event


def make_selector_params(
        *,
        label_selector: Optional[str] = None,
        field_selector: Optional[str] = None,
        shard_selector: Optional[str] = None,
) -> Dict[str, str]:
    """The query parameters of the selectors, the same for lists and watches; empty ones are not sent."""
    params: Dict[str, str] = {}
    if label_selector:
        params['labelSelector'] = label_selector
    if field_selector:
        params['fieldSelector'] = field_selector
    if shard_selector:
        params['shardSelector'] = shard_selector
    return params


def make_watch_timeout(settings: kopf.OperatorSettings) -> aiohttp.ClientTimeout:
    """The client-side timeouts of watch requests, with the fallbacks the manual describes."""
    connect_timeout = settings.watching.connect_timeout
    if connect_timeout is None:
        connect_timeout = settings.networking.connect_timeout
    if connect_timeout is None:
        connect_timeout = settings.networking.request_timeout
    return aiohttp.ClientTimeout(total=settings.watching.client_timeout, sock_connect=connect_timeout)


def parse_event(line: bytes) -> clients.RawEvent:
    """Parse one line of a watch-stream into an event, insisting on its shape."""
    data: Any = _jsons.loads(line)
    if not isinstance(data, dict) or not isinstance(data.get('type'), str) or not isinstance(data.get('object'), dict):
        raise ValueError(f"Unexpected watch-event format: {line[:200]!r}")
    return cast(clients.RawEvent, data)


async def iter_lines(
        content: aiohttp.StreamReader,
        *,
        inactivity_timeout: Optional[float] = None,
) -> AsyncIterator[bytes]:
    """
    Yield the non-empty lines of a stream as they complete, of any length.

    The search for the line separator continues where it stopped in the
    previous chunk, so a huge line arriving in many small chunks is scanned
    once, not once per chunk.
    """
    buffer = bytearray()
    scanned = 0  # the buffer's prefix known to have no line separator
    while True:
        if inactivity_timeout is None:
            chunk = await _read_chunk(content)
        else:
            chunk = await asyncio.wait_for(_read_chunk(content), timeout=inactivity_timeout)
            _raise_if_cancelling()
        if chunk is None:  # broken: the incomplete line is useless
            return
        if not chunk:  # the end of the stream
            if buffer.strip():
                yield bytes(buffer)
            return
        buffer.extend(chunk)
        while (index := buffer.find(b'\n', scanned)) >= 0:
            line = bytes(buffer[:index])
            del buffer[:index + 1]
            scanned = 0
            if line.strip():
                yield line
        scanned = len(buffer)


async def _read_chunk(content: aiohttp.StreamReader) -> Optional[bytes]:
    """
    The next chunk: ``b''`` at the end of the stream, ``None`` if the stream broke.

    aiohttp's own total timeout ends up here too (as :class:`asyncio.TimeoutError`),
    while the inactivity timeout cancels this coroutine from the outside.
    """
    try:
        return await content.readany()
    except _retrying.NETWORK_ERRORS as exc:
        logger.debug(f"Watch-stream is interrupted, ending it: {exc!r}")
        return None


def _raise_if_cancelling() -> None:
    """
    Re-raise a cancellation that ``asyncio.wait_for()`` has swallowed.

    Before Python 3.12, when the awaited data arrives at the moment the waiting task
    is cancelled, ``wait_for()`` returns the data and the cancellation is lost: a
    stream being stopped would go on, and wait for its next data (or its timeout).
    """
    task = asyncio.current_task()
    cancelling = getattr(task, 'cancelling', None)  # Python 3.11+; 3.10 cannot tell
    if cancelling is not None and cancelling():
        raise asyncio.CancelledError()
