"""
The limits of the clients: slow clients, deeply nested and large reviews (the attacks of issue 27 §3).

Every test runs a real server on 127.0.0.1 (with TLS, or plain HTTP where both
are checked) and plays the attacking client over real sockets: a TLS handshake
or a request's head or body sent a byte at a time, a review nested 100,000
levels deep, several reviews of 8 MiB at once. The time limits are shortened
per server (they are the servers' attributes), so that the tests take seconds.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import pathlib
import random
import ssl
import sys
import textwrap
import time
import urllib.parse
from typing import Any, List, Optional, Tuple

import pytest

from kopf_webhooks import WebhookServer, _parsing
from kopf_webhooks._requests import MAX_REVIEW_SIZE
from kopf_webhooks._servers import LINGERING_TIME

HEAD_TIMEOUT = 0.5
BODY_TIMEOUT = 1.0
IDLE_TIMEOUT = 2.0
MARGIN = 1.5  # for the scheduling of a busy machine; far below what the attacks would keep


def limited_server(**kwargs: Any) -> WebhookServer:
    server = WebhookServer(addr='127.0.0.1', **kwargs)
    server.head_timeout = HEAD_TIMEOUT
    server.body_timeout = BODY_TIMEOUT
    server.idle_timeout = IDLE_TIMEOUT
    return server


Streams = Tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def connect(client_config: Any, *, handshake: bool = True) -> Streams:
    """A connection to the server; for HTTPS, with a verified TLS handshake unless told otherwise."""
    url = urllib.parse.urlsplit(client_config['url'])
    context: Optional[ssl.SSLContext] = None
    if url.scheme == 'https' and handshake:
        cadata = base64.b64decode(client_config['caBundle']).decode('ascii')
        context = ssl.create_default_context(cadata=cadata)
    return await asyncio.open_connection(url.hostname, url.port, ssl=context,
                                         server_hostname=url.hostname if context else None)


async def trickle_until_closed(
        streams: Streams,
        data: bytes = b'',
        *,
        interval: float = 0.1,
        limit: float = 10.0,
) -> Tuple[Optional[float], bytes]:
    """
    Send the data a byte per interval (then nothing), until the server closes the connection.

    Returns the seconds it took the server to close it (``None`` if it did not
    within the limit), and what the server sent meanwhile.
    """
    reader, writer = streams
    loop = asyncio.get_running_loop()
    started = loop.time()
    received = b''
    sent = 0
    try:
        while loop.time() - started < limit:
            if sent < len(data):
                writer.write(data[sent:sent + 1])
                await writer.drain()
                sent += 1
            try:
                chunk = await asyncio.wait_for(reader.read(65536), timeout=interval)
            except asyncio.TimeoutError:
                continue
            if not chunk:
                return loop.time() - started, received
            received += chunk
    except (ConnectionError, ssl.SSLError):
        return loop.time() - started, received
    finally:
        writer.transport.abort()
    return None, received


def request(body: bytes = b'{}', *, path: str = '/validate1', length: Optional[int] = None) -> bytes:
    head = (f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\n\r\n")
    return head.encode('ascii') + body


async def read_response(reader: asyncio.StreamReader) -> Tuple[int, bytes]:
    head = await asyncio.wait_for(reader.readuntil(b'\r\n\r\n'), timeout=10)
    status = int(head.split(b' ', 2)[1])
    length = next(int(line.split(b':', 1)[1]) for line in head.split(b'\r\n')
                  if line.lower().startswith(b'content-length:'))
    return status, await asyncio.wait_for(reader.readexactly(length), timeout=10)


SLOW_HEAD = b'POST /validate1 HTTP/1.1\r\nHost: localhost\r\nX-Slow: ' + b'a' * 1000


def test_default_limits() -> None:
    assert WebhookServer.head_timeout == 5.0
    assert WebhookServer.body_timeout == 30.0
    assert WebhookServer.idle_timeout == 60.0


@pytest.mark.parametrize('insecure', [False, True], ids=['tls', 'plain'])
async def test_silent_connections_are_dropped_after_the_head_timeout(start: Any, insecure: bool) -> None:
    client_config = await start(limited_server(insecure=insecure))
    elapsed, _ = await trickle_until_closed(await connect(client_config, handshake=False))
    assert elapsed is not None and HEAD_TIMEOUT * 0.8 <= elapsed < HEAD_TIMEOUT + MARGIN


async def test_trickled_tls_handshakes_are_dropped_after_the_head_timeout(start: Any) -> None:
    client_config = await start(limited_server())
    hello = bytes.fromhex('16030100c8010000c40303') + bytes(random.getrandbits(8) for _ in range(500))
    elapsed, _ = await trickle_until_closed(await connect(client_config, handshake=False), hello)
    assert elapsed is not None and HEAD_TIMEOUT * 0.8 <= elapsed < HEAD_TIMEOUT + MARGIN


@pytest.mark.parametrize('insecure', [False, True], ids=['tls', 'plain'])
async def test_trickled_heads_are_dropped_after_the_head_timeout(start: Any, fn: Any, insecure: bool) -> None:
    client_config = await start(limited_server(insecure=insecure))
    elapsed, received = await trickle_until_closed(await connect(client_config), SLOW_HEAD)
    assert elapsed is not None and HEAD_TIMEOUT * 0.8 <= elapsed < HEAD_TIMEOUT + MARGIN
    assert received == b''
    assert fn.calls == []


async def test_heads_that_come_in_pieces_in_time_are_served(start: Any, fn: Any, review: Any) -> None:
    client_config = await start(limited_server())
    reader, writer = await connect(client_config)
    data = request(json.dumps(review).encode())
    for piece in (data[:10], data[10:40], data[40:]):
        writer.write(piece)
        await writer.drain()
        await asyncio.sleep(HEAD_TIMEOUT / 5)
    status, _ = await read_response(reader)
    writer.close()
    assert status == 200
    assert len(fn.calls) == 1


async def test_kept_alive_connections_serve_the_next_requests_after_a_pause(start: Any, fn: Any, review: Any) -> None:
    client_config = await start(limited_server())
    reader, writer = await connect(client_config)
    data = request(json.dumps(review).encode())
    statuses: List[int] = []
    for _ in range(2):
        writer.write(data)
        await writer.drain()
        statuses.append((await read_response(reader))[0])
        await asyncio.sleep(HEAD_TIMEOUT * 2)  # idle: longer than the head's limit, shorter than the idle one
    writer.close()
    assert statuses == [200, 200]


async def test_trickled_heads_of_the_next_requests_are_dropped(start: Any, fn: Any, review: Any) -> None:
    client_config = await start(limited_server())
    reader, writer = await connect(client_config)
    writer.write(request(json.dumps(review).encode()))
    await writer.drain()
    status, _ = await read_response(reader)
    await asyncio.sleep(HEAD_TIMEOUT * 2)  # idle, but not slow: the limit starts with the next request
    elapsed, _ = await trickle_until_closed((reader, writer), SLOW_HEAD)
    assert status == 200
    assert elapsed is not None and HEAD_TIMEOUT * 0.8 <= elapsed < HEAD_TIMEOUT + MARGIN


async def test_idle_connections_are_closed_after_the_idle_timeout(start: Any, fn: Any, review: Any) -> None:
    client_config = await start(limited_server())
    reader, writer = await connect(client_config)
    writer.write(request(json.dumps(review).encode()))
    await writer.drain()
    status, _ = await read_response(reader)
    elapsed, _ = await trickle_until_closed((reader, writer))
    assert status == 200
    assert elapsed is not None and IDLE_TIMEOUT * 0.8 <= elapsed < IDLE_TIMEOUT + MARGIN


@pytest.mark.parametrize('insecure', [False, True], ids=['tls', 'plain'])
async def test_trickled_bodies_are_answered_408_and_dropped(start: Any, fn: Any, insecure: bool) -> None:
    client_config = await start(limited_server(insecure=insecure))
    streams = await connect(client_config)
    streams[1].write(request(length=100_000))  # the head at once, then the body a byte at a time
    elapsed, received = await trickle_until_closed(streams, b'{"request": ' + b' ' * 1000)
    assert received.startswith(b'HTTP/1.1 408 Request Timeout\r\n')
    assert elapsed is not None and BODY_TIMEOUT * 0.8 <= elapsed < BODY_TIMEOUT + LINGERING_TIME + MARGIN
    assert fn.calls == []


@pytest.mark.parametrize('data', [
    pytest.param(b'[' * 100_000, id='100k-lists'),
    pytest.param(b'[' * 100_000 + b']' * 100_000, id='100k-lists-closed'),
    pytest.param(b'{"request": ' + b'{"a": ' * 100_000, id='100k-objects'),
    pytest.param(b'[' * 2_000, id='small-but-deep'),
])
async def test_deeply_nested_reviews_are_bad_requests_without_tracebacks(
        start: Any, post: Any, fn: Any, caplog: pytest.LogCaptureFixture, data: bytes,
) -> None:
    client_config = await start(limited_server())
    with caplog.at_level(logging.DEBUG):
        reply = await post(client_config, '/validate1', data=data)
    assert reply.status == 400
    assert reply.text == "The admission review is not a valid JSON: nested deeper than 1000 levels"
    assert fn.calls == []
    assert [record for record in caplog.records if record.exc_info or record.levelno >= logging.WARNING] == []


async def test_recursion_errors_of_the_function_are_bad_requests_without_tracebacks(
        start: Any, post: Any, fn: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    fn.error = RecursionError("maximum recursion depth exceeded")
    client_config = await start(limited_server())
    with caplog.at_level(logging.DEBUG, logger='kopf.webhooks'):
        reply = await post(client_config, '/validate1')
    assert reply.status == 400
    assert reply.text == "The admission review is nested too deeply."
    assert [(record.levelname, record.getMessage(), record.exc_info) for record in caplog.records] == [
        ('ERROR', "Admission request to '/validate1' is nested too deeply to be served.", None)]


def large_review(review: Any) -> bytes:
    """
    A review of almost 8 MiB, the largest accepted: a custom resource with a long series of numbers.

    ``json.loads`` takes 0.1-0.3 s of CPU to parse it (floats are slow to parse),
    but the result is small (~13 MiB) and has nothing for the garbage collector,
    so that the loop's lag here is the parsing's, not the memory's.
    """
    rnd = random.Random(0)
    head = json.dumps(review)[:-2] + ', "samples": ['  # into the review's request
    tail = ']}}'
    count = (MAX_REVIEW_SIZE - 1024 - len(head) - len(tail)) // 21
    body = ','.join(repr(rnd.random() + 0.1) for _ in range(count))
    return (head + body[:MAX_REVIEW_SIZE - 1024 - len(head) - len(tail)].rsplit(',', 1)[0] + tail).encode()


CLIENT = textwrap.dedent('''
    import asyncio, ssl, sys
    import aiohttp

    async def main(url: str, cafile: str, path: str, count: int) -> None:
        data = open(path, 'rb').read()
        context = ssl.create_default_context(cafile=cafile)
        async with aiohttp.ClientSession() as session:
            async def post() -> int:
                async with session.post(url, data=data, ssl=context) as response:
                    await response.read()
                    return response.status
            print(*await asyncio.gather(*[post() for _ in range(count)]))

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
''')


async def post_concurrently_and_measure_the_lag(
        client_config: Any, data: bytes, count: int, tmp_path: pathlib.Path,
) -> Tuple[List[str], float, float]:
    """
    Post the data from another process, ``count`` times at once; meanwhile, tick in this loop.

    The lag is measured in the loop's thread's CPU time between two ticks (1 ms
    apart): what the loop did instead of ticking. Unlike the wall-clock time,
    it does not grow when the machine is busy with other processes.
    The wall-clock lag is returned too, for the messages.
    """
    (tmp_path / 'client.py').write_text(CLIENT)
    (tmp_path / 'review.json').write_bytes(data)
    (tmp_path / 'ca.pem').write_bytes(base64.b64decode(client_config['caBundle']))
    loop = asyncio.get_running_loop()
    cpu_lags: List[float] = []
    wall_lags: List[float] = []

    async def tick() -> None:
        while True:
            cpu, wall = time.thread_time(), loop.time()
            await asyncio.sleep(0.001)
            cpu_lags.append(time.thread_time() - cpu)
            wall_lags.append(loop.time() - wall - 0.001)

    ticker = asyncio.create_task(tick())
    try:
        client = await asyncio.create_subprocess_exec(
            sys.executable, str(tmp_path / 'client.py'), client_config['url'] + '/validate1',
            str(tmp_path / 'ca.pem'), str(tmp_path / 'review.json'), str(count),
            stdout=asyncio.subprocess.PIPE)
        stdout, _ = await asyncio.wait_for(client.communicate(), timeout=120)
    finally:
        ticker.cancel()
    return stdout.decode().split(), max(cpu_lags), max(wall_lags)


def parsing_cpu_time(data: bytes) -> float:
    """
    The reference for the lag: the CPU time of parsing one review at once, here and now.

    Measured in the same test on the same machine, so that the bound follows the
    machine's speed and load instead of being an absolute figure (the best of 3).
    """
    times = []
    for _ in range(3):
        started = time.thread_time()
        json.loads(data)
        times.append(time.thread_time() - started)
    return min(times)


async def test_large_reviews_do_not_stall_the_event_loop(
        start: Any, fn: Any, review: Any, tmp_path: pathlib.Path,
) -> None:
    data = large_review(review)
    client_config = await start(WebhookServer(addr='127.0.0.1'))  # the default limits
    statuses, cpu_lag, wall_lag = await post_concurrently_and_measure_the_lag(client_config, data, 4, tmp_path)
    parsing_at_once = parsing_cpu_time(data)
    assert statuses == ['200'] * 4
    assert [call['request'] for call in fn.calls] == [json.loads(data)] * 4
    assert cpu_lag < parsing_at_once / 3, (
        f"The loop's lag was {cpu_lag:.3f}s of CPU ({wall_lag:.3f}s of wall-clock time); "
        f"one review parsed at once takes {parsing_at_once:.3f}s of CPU here.")


async def test_large_reviews_parsed_at_once_would_stall_the_event_loop(
        start: Any, fn: Any, review: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same as above, as it was before: json.loads for everything. This is what the test above detects.
    monkeypatch.setattr(_parsing, 'INLINE_SIZE', MAX_REVIEW_SIZE)
    data = large_review(review)
    client_config = await start(WebhookServer(addr='127.0.0.1'))  # the default limits
    statuses, cpu_lag, _ = await post_concurrently_and_measure_the_lag(client_config, data, 4, tmp_path)
    parsing_at_once = parsing_cpu_time(data)
    assert statuses == ['200'] * 4
    assert cpu_lag > parsing_at_once / 3
