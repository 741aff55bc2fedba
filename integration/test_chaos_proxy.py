"""
The chaos proxy's faults, against a small HTTP server standing for the API server.

Unit tests of the proxy alone (the soak itself runs against the real API
server): each fault is armed and its effect seen by a client, as the operator
would see it.
"""
import asyncio
import json
import pathlib
import socket
import ssl
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from integration.chaos import _records, _schedule
from integration.chaos._proxy import FaultProxy


class Upstream:
    """An API server stand-in: GET/PATCH echo their method; a watch streams one event per 0.1 s."""

    def __init__(self) -> None:
        self.patches = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.query.get('watch') == 'true':
            response = web.StreamResponse()
            await response.prepare(request)
            for index in range(1000):
                await response.write(json.dumps({'type': 'ADDED', 'object': {'index': index}}).encode() + b'\n')
                await asyncio.sleep(0.1)
            return response
        if request.method == 'PATCH':
            self.patches += 1
            return web.json_response({'kind': 'Status', 'code': 404}, status=404)
        return web.json_response({'method': request.method})


def fault(kind: str, *, count: int = 1, seconds: float = 0.0, status: int = 0) -> _schedule.Fault:
    return _schedule.Fault(at=0, kind=kind, count=count, seconds=seconds, status=status)


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Upstream, str]]:
    server = Upstream()
    app = web.Application()
    app.router.add_route('*', '/{tail:.*}', server.handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    await web.SockSite(runner, sock).start()
    yield server, f'http://127.0.0.1:{sock.getsockname()[1]}'
    await runner.cleanup()


@pytest.fixture
async def proxy(upstream: tuple[Upstream, str], tmp_path: pathlib.Path) -> AsyncIterator[FaultProxy]:
    proxy = FaultProxy(upstream[1], ssl.create_default_context(), tmp_path / 'faults.jsonl')
    await proxy.start()
    yield proxy
    await proxy.stop()


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as session:
        yield session


async def read_events(response: aiohttp.ClientResponse, count: int) -> list[dict[str, object]]:
    return [json.loads(await response.content.readline()) for _ in range(count)]


async def test_requests_pass_through_unharmed(proxy: FaultProxy, client: aiohttp.ClientSession) -> None:
    async with client.get(f'{proxy.url}/api/v1/things') as response:
        assert response.status == 200
        assert await response.json() == {'method': 'GET'}


async def test_throttling_answers_429_with_retry_after_for_the_next_requests(
        proxy: FaultProxy, client: aiohttp.ClientSession) -> None:
    proxy.inject(fault(_schedule.THROTTLE, count=2, seconds=3, status=429))
    statuses = []
    for _ in range(3):
        async with client.get(f'{proxy.url}/api/v1/things') as response:
            statuses.append((response.status, response.headers.get('Retry-After')))
    assert statuses == [(429, '3'), (429, '3'), (200, None)]


async def test_server_errors_answer_the_status_of_the_fault(proxy: FaultProxy, client: aiohttp.ClientSession) -> None:
    proxy.inject(fault(_schedule.SERVER_ERROR, status=503))
    async with client.get(f'{proxy.url}/api/v1/things') as response:
        assert response.status == 503
        assert (await response.json())['reason'] == 'ServiceUnavailable'


async def test_a_dropped_request_reaches_the_server_but_gets_no_answer(
        proxy: FaultProxy, client: aiohttp.ClientSession, upstream: tuple[Upstream, str],
        tmp_path: pathlib.Path) -> None:
    proxy.inject(fault(_schedule.DROP_REQUEST))
    with pytest.raises(aiohttp.ClientError):
        async with client.patch(f'{proxy.url}/apis/g/v1/namespaces/ns/things/o1', json={}) as response:
            await response.read()
    assert upstream[0].patches == 1
    journal = _records.read(tmp_path / 'faults.jsonl')
    assert [(r['fault'], r['method'], r['path']) for r in journal] == [
        ('drop-request', 'PATCH', '/apis/g/v1/namespaces/ns/things/o1')]


async def test_failed_patches_are_journaled(proxy: FaultProxy, client: aiohttp.ClientSession,
                                            tmp_path: pathlib.Path) -> None:
    async with client.patch(f'{proxy.url}/apis/g/v1/namespaces/ns/things/o1', json={}) as response:
        assert response.status == 404
    journal = _records.read(tmp_path / 'faults.jsonl')
    assert [(r['event'], r['path'], r['reason']) for r in journal] == [
        ('patch-failed', '/apis/g/v1/namespaces/ns/things/o1', 'answered 404')]


async def test_a_gone_watch_gets_a_410_error_event_and_ends(proxy: FaultProxy,
                                                            client: aiohttp.ClientSession) -> None:
    async with client.get(f'{proxy.url}/apis/g/v1/things?watch=true') as response:
        first = await read_events(response, 1)
        assert proxy.open_watches == 1  # the first event came through it
        proxy.inject(fault(_schedule.GONE_WATCH))
        rest = [json.loads(line) async for line in response.content]
    assert first[0]['type'] == 'ADDED'
    assert rest[-1]['type'] == 'ERROR' and rest[-1]['object']['code'] == 410
    assert all(event['type'] == 'ADDED' for event in rest[:-1])


async def test_a_dropped_watch_breaks_mid_stream(proxy: FaultProxy, client: aiohttp.ClientSession) -> None:
    async with client.get(f'{proxy.url}/apis/g/v1/things?watch=true') as response:
        await read_events(response, 1)
        assert proxy.open_watches == 1  # the first event came through it
        proxy.inject(fault(_schedule.DROP_WATCH))
        with pytest.raises(aiohttp.ClientPayloadError):
            async for _ in response.content:
                pass


async def test_a_stalled_watch_goes_silent_then_resumes_without_losing_events(
        proxy: FaultProxy, client: aiohttp.ClientSession) -> None:
    async with client.get(f'{proxy.url}/apis/g/v1/things?watch=true') as response:
        events = await read_events(response, 1)
        assert proxy.open_watches == 1  # the first event came through it
        proxy.inject(fault(_schedule.STALL_WATCH, seconds=1.5))
        loop = asyncio.get_running_loop()
        started = loop.time()
        events += await read_events(response, 3)
        waited = loop.time() - started
    assert waited >= 1.0  # silent for the stall (not a performance bound: the stall's own length)
    assert [event['object']['index'] for event in events] == [0, 1, 2, 3]  # type: ignore[index]


async def test_a_watch_fault_with_no_open_watch_is_journaled_as_missed(
        proxy: FaultProxy, tmp_path: pathlib.Path) -> None:
    proxy.inject(fault(_schedule.DROP_WATCH))
    assert [r.get('missed') for r in _records.read(tmp_path / 'faults.jsonl')] == [True]


def test_process_faults_are_refused_by_the_proxy(tmp_path: pathlib.Path) -> None:
    proxy = FaultProxy('http://127.0.0.1:1', ssl.create_default_context(), tmp_path / 'faults.jsonl')
    with pytest.raises(ValueError, match='not a fault of the wire'):
        proxy.inject(fault(_schedule.KILL_OPERATOR))
