"""
The health endpoint under hostile clients: each test is an attack, with the production limits.

Inputs: raw bytes over real TCP connections on 127.0.0.1 to the health reporter as the operator
runs it (``probing.health_reporter`` with its default limits, no probe handlers).
Outputs: the responses (or the server closing the connection), the time it takes, and the log.
Nothing is mocked; the memory of a whole operator under a flood is measured in
``integration/test_security_health.py``.
"""
import asyncio
import contextlib
import logging
from typing import AsyncIterator, List, Optional, Tuple

import pytest

import kopf
from kopf._core.engines.endpoints import probeserver, probing

HEAD_LIMIT = 8192  # what the issue asks for; the tests do not read the module's constants on purpose
HEAD_TIMEOUT = 2.0
CONNECTION_LIMIT = 256


@pytest.fixture()
async def port() -> AsyncIterator[int]:
    async with serving(probeserver.Limits()) as bound_port:
        yield bound_port


@contextlib.asynccontextmanager
async def serving(limits: probeserver.Limits) -> AsyncIterator[int]:
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(probing.health_reporter(
        probing.parse_endpoint('http://127.0.0.1:0/healthz'), registry=kopf.OperatorRegistry(),
        settings=kopf.OperatorSettings(), memo=kopf.Memo(), extra_kwargs=dict, listing=probing.ListingReadiness(),
        stopping=asyncio.Event(), bound=bound, limits=limits))
    try:
        yield await bound
    finally:
        task.cancel()
        await asyncio.wait([task])


async def exchange(port: int, raw: bytes, *, timeout: float = 5) -> Optional[int]:
    """The response's status, or ``None`` if the server closed the connection without one."""
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    try:
        writer.write(raw)
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), timeout=timeout)
    except ConnectionResetError:
        return None
    finally:
        writer.close()
    return int(response.split(b' ', 2)[1]) if response else None


async def closed_by_server(reader: asyncio.StreamReader, timeout: float) -> bool:
    """Whether the server closes the connection (with or without an answer) within the time."""
    try:
        while await asyncio.wait_for(reader.read(65536), timeout=timeout):
            pass
    except asyncio.TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


@pytest.mark.parametrize('raw', [
    pytest.param(b'GET http://[::1/ HTTP/1.1\r\nHost: x\r\n\r\n', id='unclosed-ipv6-host'),
    pytest.param(b'HELLO\r\n\r\n', id='one-word'),
    pytest.param(b'GET /healthz\r\n\r\n', id='no-version'),
    pytest.param(b'GET /healthz HTTP/1.1 more\r\n\r\n', id='four-parts'),
    pytest.param(b'GET /heal\x00thz HTTP/1.1\r\n\r\n', id='control-character'),
    pytest.param(b'GET healthz HTTP/1.1\r\n\r\n', id='relative-path'),
    pytest.param(b'GET ftp://host/healthz HTTP/1.1\r\n\r\n', id='other-scheme'),
    pytest.param(b'GET /healthz SPDY/3\r\n\r\n', id='other-protocol'),
    pytest.param(b'G(T /healthz HTTP/1.1\r\n\r\n', id='bad-method'),
    pytest.param(b'\xff\xfe /healthz HTTP/1.1\r\n\r\n', id='binary-method'),
    pytest.param(b'GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n', id='header-without-colon'),
])
async def test_a_malformed_request_is_a_bad_request_without_a_traceback(
        port: int, raw: bytes, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert await exchange(port, raw) == 400
    assert await exchange(port, b'GET /healthz HTTP/1.1\r\n\r\n') == 200  # the server lives on
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize('raw', [
    pytest.param(b'GET /healthz HTTP/1.1\r\nX-Filler: ' + b'x' * 60_000, id='one-long-line-without-end'),
    pytest.param(b'GET /healthz HTTP/1.1\r\nX-Filler: ' + b'x' * HEAD_LIMIT + b'\r\n\r\n', id='one-long-line'),
    pytest.param(b'GET /healthz HTTP/1.1\r\n' + b'X-Filler: 1234567890\r\n' * 400 + b'\r\n', id='many-lines'),
    pytest.param(b'GET /' + b'x' * HEAD_LIMIT + b' HTTP/1.1\r\n\r\n', id='long-path'),
])
async def test_a_head_over_8_kib_is_refused_at_once(port: int, raw: bytes) -> None:
    assert await exchange(port, raw, timeout=1) == 431


async def test_a_head_just_under_8_kib_is_answered(port: int) -> None:
    head = b'GET /healthz HTTP/1.1\r\nX-Filler: \r\n\r\n'
    raw = head.replace(b': ', b': ' + b'x' * (HEAD_LIMIT - len(head)))
    assert len(raw) == HEAD_LIMIT
    assert await exchange(port, raw) == 200


async def test_a_head_sent_slowly_is_cut_off_after_two_seconds(port: int) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    writer.write(b'GET /healthz HTTP/1.1\r\n')
    for _ in range(10):  # a header line every half second: each is in time, the whole head is not
        await asyncio.sleep(0.5)
        if writer.is_closing() or reader.at_eof():
            break
        writer.write(b'X-Slow: 1\r\n')
    assert await closed_by_server(reader, timeout=HEAD_TIMEOUT + 1)
    writer.close()
    assert HEAD_TIMEOUT - 0.1 < loop.time() - started < HEAD_TIMEOUT + 1


async def test_a_silent_connection_is_cut_off_after_two_seconds(port: int) -> None:
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    assert not await closed_by_server(reader, timeout=HEAD_TIMEOUT - 0.5)
    assert await closed_by_server(reader, timeout=1.5)
    writer.close()


@pytest.fixture()
async def patient_port() -> AsyncIterator[int]:
    """The production limits, but a head timeout longer than the test: only the connection limit closes."""
    async with serving(probeserver.Limits(head_timeout=60)) as bound_port:
        yield bound_port


async def test_connections_over_the_limit_push_out_the_oldest_incomplete_ones(patient_port: int) -> None:
    # Opening 300 connections can take longer than the 2 s head timeout on a loaded machine: with it,
    # the newest would be closed by their timeout, not by the limit that this test is about.
    port = patient_port
    connections: List[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for _ in range(CONNECTION_LIMIT + 44):
        reader, writer = await asyncio.open_connection('127.0.0.1', port)
        writer.write(b'GET /healthz HTTP/1.1\r\n')  # never ends
        connections.append((reader, writer))
    try:
        assert await exchange(port, b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', timeout=10) == 200
        newest = [await closed_by_server(reader, timeout=0.01) for reader, _ in connections[-100:]]
        oldest = [await closed_by_server(reader, timeout=1) for reader, _ in connections[:44]]
        assert oldest == [True] * 44
        assert newest == [False] * 100
    finally:
        for _, writer in connections:
            writer.close()


async def test_a_probe_is_answered_amid_a_flood_of_idle_connections(port: int) -> None:
    async def idle() -> None:
        reader, writer = await asyncio.open_connection('127.0.0.1', port)
        await closed_by_server(reader, timeout=HEAD_TIMEOUT + 1)
        writer.close()

    flood = [asyncio.create_task(idle()) for _ in range(400)]
    statuses = await asyncio.gather(*[exchange(port, b'GET /healthz HTTP/1.1\r\n\r\n') for _ in range(20)])
    await asyncio.gather(*flood)
    assert statuses == [200] * 20
