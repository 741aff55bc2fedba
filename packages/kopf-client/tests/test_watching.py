"""
Watch-streams: events as they arrive, and all the ways a stream ends.

The fake server streams real chunked HTTP responses, line by line or in
arbitrary chunks, and then ends them, drops them, or hangs. The tests of
timeouts use real (short) time, since the timeouts are aiohttp's and the
event loop's own, not the client's sleeps.
"""
from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Awaitable, Callable, List, Optional

import pytest
from aiohttp import web

import kopf
from kopf import clients
from kopf_client import AiohttpClient
from kopf_client._watching import make_watch_timeout

if TYPE_CHECKING:
    from conftest import FakeApi

KEX = kopf.Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
KEX_PATH = '/apis/kopf.dev/v1/namespaces/ns/kopfexamples'
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _line(event_type: str, obj: Any) -> bytes:
    return json.dumps({'type': event_type, 'object': obj}).encode() + b'\n'


def _stream(*chunks: bytes, then: str = 'end', disconnected: Optional[asyncio.Event] = None) -> Handler:
    """A streaming handler: send the chunks, then ``end``, ``drop`` or ``hang``."""
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={'Content-Type': 'application/json'})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        if then == 'drop':
            assert request.transport is not None
            request.transport.close()
        if then in ('drop', 'hang'):
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:  # the client has disconnected
                if disconnected is not None:
                    disconnected.set()
                raise
        await response.write_eof()
        return response
    return handler


async def _collect(client: AiohttpClient, **kwargs: Any) -> List[clients.RawEvent]:
    return [event async for event in client.watch_objects(KEX, namespace='ns', **kwargs)]


async def test_events_are_yielded_in_order(api: FakeApi, client: AiohttpClient) -> None:
    api.add_handler(KEX_PATH, _stream(
        _line('ADDED', {'metadata': {'name': 'a'}}),
        _line('MODIFIED', {'metadata': {'name': 'a'}}),
        _line('BOOKMARK', {'metadata': {'resourceVersion': '5'}}),
        _line('DELETED', {'metadata': {'name': 'a'}}),
    ))
    events = await _collect(client)
    assert [event['type'] for event in events] == ['ADDED', 'MODIFIED', 'BOOKMARK', 'DELETED']


async def test_watch_request_asks_for_bookmarks_and_the_resource_version(
        api: FakeApi, client: AiohttpClient,
) -> None:
    api.add_handler(KEX_PATH, _stream())
    await _collect(client, resource_version='123', timeout_seconds=600.5)
    assert api.requests[0].query == {
        'watch': 'true',
        'allowWatchBookmarks': 'true',
        'resourceVersion': '123',
        'timeoutSeconds': '600',
    }


async def test_watch_request_can_go_without_bookmarks_and_versions(api: FakeApi, client: AiohttpClient) -> None:
    api.add_handler(KEX_PATH, _stream())
    await _collect(client, allow_bookmarks=False)
    assert api.requests[0].query == {'watch': 'true'}


async def test_lines_split_across_chunks_are_joined(api: FakeApi, client: AiohttpClient) -> None:
    line1 = _line('ADDED', {'metadata': {'name': 'a'}})
    line2 = _line('ADDED', {'metadata': {'name': 'b'}})
    api.add_handler(KEX_PATH, _stream(line1[:10], line1[10:] + b'\n' + line2[:5], line2[5:]))
    events = await _collect(client)
    assert [event['object']['metadata']['name'] for event in events] == ['a', 'b']


async def test_last_line_without_a_line_break_is_not_lost(api: FakeApi, client: AiohttpClient) -> None:
    api.add_handler(KEX_PATH, _stream(_line('ADDED', {'metadata': {'name': 'a'}}).rstrip(b'\n')))
    events = await _collect(client)
    assert [event['type'] for event in events] == ['ADDED']


async def test_huge_lines_are_streamed(api: FakeApi, client: AiohttpClient) -> None:
    huge_value = 'x' * (3 * 1024 * 1024)
    huge = _line('ADDED', {'metadata': {'name': 'huge'}, 'data': {'blob': huge_value}})
    chunks = [huge[i:i + 65536] for i in range(0, len(huge), 65536)]
    api.add_handler(KEX_PATH, _stream(*chunks, _line('ADDED', {'metadata': {'name': 'small'}})))
    events = await _collect(client)
    assert len(events[0]['object']['data']['blob']) == len(huge_value)
    assert events[1]['object']['metadata']['name'] == 'small'


async def test_gone_error_event_raises_gone_after_the_preceding_events(
        api: FakeApi, client: AiohttpClient,
) -> None:
    api.add_handler(KEX_PATH, _stream(
        _line('ADDED', {'metadata': {'name': 'a'}}),
        _line('ERROR', {'kind': 'Status', 'code': 410, 'reason': 'Expired', 'message': 'too old'}),
        _line('ADDED', {'metadata': {'name': 'never'}}),
    ))
    events: List[clients.RawEvent] = []
    with pytest.raises(clients.APIGoneError, match='too old'):
        async for event in client.watch_objects(KEX, namespace='ns'):
            events.append(event)
    assert [event['object']['metadata']['name'] for event in events] == ['a']


async def test_dropped_stream_ends_quietly_and_discards_the_incomplete_line(
        api: FakeApi, client: AiohttpClient,
) -> None:
    complete = _line('ADDED', {'metadata': {'name': 'a'}})
    incomplete = _line('ADDED', {'metadata': {'name': 'b'}})[:15]
    api.add_handler(KEX_PATH, _stream(complete, incomplete, then='drop'))
    events = await asyncio.wait_for(_collect(client), timeout=5)
    assert [event['object']['metadata']['name'] for event in events] == ['a']


async def test_silent_stream_fails_after_the_inactivity_timeout(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings,
) -> None:
    settings.watching.inactivity_timeout = 0.05
    api.add_handler(KEX_PATH, _stream(_line('ADDED', {'metadata': {'name': 'a'}}), then='hang'))
    events: List[clients.RawEvent] = []
    with pytest.raises(asyncio.TimeoutError):
        async for event in client.watch_objects(KEX, namespace='ns'):
            events.append(event)
    assert len(events) == 1


async def test_client_timeout_ends_the_stream_quietly(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings,
) -> None:
    settings.watching.client_timeout = 0.05
    api.add_handler(KEX_PATH, _stream(_line('ADDED', {'metadata': {'name': 'a'}}), then='hang'))
    events = await asyncio.wait_for(_collect(client), timeout=5)
    assert len(events) == 1


async def test_cancellation_closes_the_connection(api: FakeApi, client: AiohttpClient) -> None:
    disconnected = asyncio.Event()
    received = asyncio.Event()
    api.add_handler(KEX_PATH, _stream(_line('ADDED', {'metadata': {'name': 'a'}}),
                                      then='hang', disconnected=disconnected))

    async def consume() -> None:
        async for _ in client.watch_objects(KEX, namespace='ns'):
            received.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(received.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(disconnected.wait(), timeout=5)


async def test_establishing_a_stream_is_retried_on_server_errors(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1, 2]
    api.add(KEX_PATH, {'kind': 'Status', 'code': 503}, status=503)
    api.add_handler(KEX_PATH, _stream(_line('ADDED', {'metadata': {'name': 'a'}})))
    events = await _collect(client)
    assert len(events) == 1
    assert sleeps == [1]


async def test_forbidden_watching_raises_at_once(
        api: FakeApi, client: AiohttpClient, sleeps: List[float],
) -> None:
    api.add(KEX_PATH, {'kind': 'Status', 'code': 403, 'message': 'RBAC says no'}, status=403)
    with pytest.raises(clients.APIForbiddenError, match='RBAC says no'):
        await _collect(client)
    assert sleeps == []


@pytest.mark.parametrize('watching, networking, expected', [
    pytest.param(7, 8, 7, id='watching-connect-timeout'),
    pytest.param(None, 8, 8, id='networking-connect-timeout'),
    pytest.param(None, None, 9, id='networking-request-timeout'),
])
def test_watch_connect_timeout_falls_back_to_networking_timeouts(
        settings: kopf.OperatorSettings, watching: float | None, networking: float | None, expected: float,
) -> None:
    settings.watching.connect_timeout = watching
    settings.networking.connect_timeout = networking
    settings.networking.request_timeout = 9
    settings.watching.client_timeout = 123
    timeout = make_watch_timeout(settings)
    assert timeout.sock_connect == expected
    assert timeout.total == 123
