"""
The bounded HTTP/1.x server of the health endpoint, with small limits and a trivial responder.

Inputs: heads as bytes (for the parser), raw bytes over real TCP connections on 127.0.0.1.
Outputs: the parsed method and path or the error response; the responses, the connections
closed by the server, and the log. Nothing is mocked; the attacks with the production limits
are in ``test_probing_limits.py``.
"""
import asyncio
import logging
from typing import AsyncIterator, Awaitable, Callable, List, Optional

import pytest

from kopf._core.engines.endpoints import probeserver

Responder = Callable[[str, str], Awaitable[probeserver.Response]]


async def ok(method: str, path: str) -> probeserver.Response:
    return 200, 'text/plain', f"{method} {path}\n".encode()


class Server:
    def __init__(self, respond: Responder = ok, limits: probeserver.Limits = probeserver.Limits()) -> None:
        self.respond = respond
        self.limits = limits
        self.port = 0
        self.server: Optional[probeserver.ProbeServer] = None

    async def __aenter__(self) -> 'Server':
        self.server = await probeserver.start_server(self.respond, '127.0.0.1', 0, limits=self.limits)
        self.port = self.server.port(0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        await self.server.close()


@pytest.fixture()
async def server() -> AsyncIterator[Server]:
    async with Server() as server:
        yield server


async def exchange(port: int, raw: bytes, *, timeout: float = 5) -> bytes:
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    writer.write(raw)
    try:
        return await asyncio.wait_for(reader.read(), timeout=timeout)
    finally:
        writer.close()


async def is_closed(reader: asyncio.StreamReader, timeout: float = 1) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), timeout=timeout) == b''
    except asyncio.TimeoutError:
        return False
    except ConnectionResetError:
        return True


# The head.

@pytest.mark.parametrize('head, request_', [
    (b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', ('GET', '/healthz')),
    (b'GET /healthz?verbose=1 HTTP/1.0\r\n\r\n', ('GET', '/healthz')),
    (b'get /healthz HTTP/1.1\n\n', ('GET', '/healthz')),
    (b'HEAD http://10.0.0.1:8080/healthz?x HTTP/1.1\r\n\r\n', ('HEAD', '/healthz')),
    (b'GET http://localhost HTTP/1.1\r\n\r\n', ('GET', '/')),
    (b'GET / HTTP/1.1\r\nX-Folded: a\r\n  b\r\n\r\n', ('GET', '/')),
])
def test_a_request_head_gives_its_method_and_path(head: bytes, request_: tuple) -> None:  # type: ignore[type-arg]
    assert probeserver.parse_head(head) == request_


@pytest.mark.parametrize('head, status', [
    (b'GET http://[::1/ HTTP/1.1\r\n\r\n', 400),
    (b'GET / HTTP/2.0\r\n\r\n', 400),
    (b'GET  / HTTP/1.1\r\n\r\n', 400),
    (b'\r\n\r\n', 400),
    (b'GET / HTTP/1.1\r\n' + b'A: b\r\n' * 4 + b'\r\n', 431),
])
def test_an_unacceptable_head_gives_an_error_response(head: bytes, status: int) -> None:
    with pytest.raises(probeserver.HeadError) as e:
        probeserver.parse_head(head, max_lines=3)
    assert e.value.response[0] == status


@pytest.mark.parametrize('buffer, start, end', [
    (b'GET / HTTP/1.1\r\n\r\nbody', 0, 18),
    (b'GET / HTTP/1.1\n\nbody', 0, 16),
    (b'GET / HTTP/1.1\r\nA: b\r\n\r\n', 14, 24),
    (b'GET / HTTP/1.1\r\nA: b\r\n', 0, None),
])
def test_the_end_of_a_head_is_found_from_where_the_new_data_may_complete_it(
        buffer: bytes, start: int, end: Optional[int]) -> None:
    assert probeserver.find_head_end(buffer, start) == end


async def test_a_head_sent_byte_by_byte_is_answered(server: Server) -> None:
    reader, writer = await asyncio.open_connection('127.0.0.1', server.port)
    for byte in b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n':
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0)
    response = await reader.read()
    writer.close()
    assert response.startswith(b'HTTP/1.1 200 OK\r\n') and response.endswith(b'\r\n\r\nGET /healthz\n')


async def test_a_request_body_is_not_read(server: Server) -> None:
    response = await exchange(server.port, b'POST /x HTTP/1.1\r\nContent-Length: 100000\r\n\r\n' + b'x' * 100000)
    assert response.endswith(b'\r\n\r\nPOST /x\n')


async def test_head_requests_get_no_body(server: Server) -> None:
    response = await exchange(server.port, b'HEAD /x HTTP/1.1\r\n\r\n')
    assert response.endswith(b'Content-Length: 8\r\nCache-Control: no-store\r\n'
                             b'X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n')


# The connections.

async def test_the_oldest_incomplete_connections_make_room_for_new_ones() -> None:
    async with Server(limits=probeserver.Limits(connections=3)) as server:
        opened = [await asyncio.open_connection('127.0.0.1', server.port) for _ in range(5)]
        await asyncio.sleep(0.1)  # the excess is closed one loop turn after the admission
        assert [await is_closed(reader, timeout=0.1) for reader, _ in opened] == [True, True, False, False, False]
        assert (await exchange(server.port, b'GET /x HTTP/1.1\r\n\r\n')).endswith(b'GET /x\n')
        for _, writer in opened:
            writer.close()


async def test_a_new_connection_gets_503_when_all_places_are_being_answered(
        caplog: pytest.LogCaptureFixture) -> None:
    release = asyncio.Event()

    async def slow(method: str, path: str) -> probeserver.Response:
        await release.wait()
        return await ok(method, path)

    async with Server(slow, limits=probeserver.Limits(connections=2)) as server:
        waiting = [asyncio.create_task(exchange(server.port, b'GET /a HTTP/1.1\r\n\r\n')) for _ in range(2)]
        await asyncio.sleep(0.1)
        refused = await exchange(server.port, b'GET /b HTTP/1.1\r\n\r\n', timeout=1)
        release.set()
        answered = await asyncio.gather(*waiting)
    assert refused.startswith(b'HTTP/1.1 503 Service Unavailable\r\n')
    assert [response.endswith(b'GET /a\n') for response in answered] == [True, True]
    assert [r.levelname for r in caplog.records] == ['WARNING']  # once, not per connection
    assert "limit of 2 connections" in caplog.records[0].getMessage()


async def test_a_client_that_does_not_take_its_response_is_cut_off() -> None:
    big = b'x' * 32_000_000

    async def huge(method: str, path: str) -> probeserver.Response:
        return 200, 'text/plain', big

    async with Server(huge, limits=probeserver.Limits(write_timeout=0.2)) as server:
        reader, writer = await asyncio.open_connection('127.0.0.1', server.port)
        writer.write(b'GET / HTTP/1.1\r\n\r\n')
        await asyncio.sleep(1)  # not reading: the response does not fit into the sockets' buffers
        received: List[bytes] = []
        try:
            while chunk := await asyncio.wait_for(reader.read(1 << 20), timeout=5):
                received.append(chunk)
        except ConnectionResetError:
            pass
        writer.close()
    assert 0 < sum(map(len, received)) < len(big)


async def test_closing_the_server_aborts_every_connection_and_answer() -> None:
    cancelled = asyncio.Event()

    async def forever(method: str, path: str) -> probeserver.Response:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with Server(forever) as server:
        answering = await asyncio.open_connection('127.0.0.1', server.port)
        answering[1].write(b'GET / HTTP/1.1\r\n\r\n')
        reading = await asyncio.open_connection('127.0.0.1', server.port)
        await asyncio.sleep(0.1)
    assert cancelled.is_set()
    assert await is_closed(answering[0]) and await is_closed(reading[0])
    answering[1].close()
    reading[1].close()


async def test_a_failure_of_the_responder_is_a_500_and_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    async def buggy(method: str, path: str) -> probeserver.Response:
        raise ZeroDivisionError("a bug")

    async with Server(buggy) as server:
        response = await exchange(server.port, b'GET / HTTP/1.1\r\n\r\n')
    assert response.startswith(b'HTTP/1.1 500 ') and b'a bug' not in response
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, "The health server has failed to answer a request.")]
