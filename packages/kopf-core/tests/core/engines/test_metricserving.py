"""
Serving the metrics: the endpoint's URL, finding an exposition, and the answers over real TCP.

Inputs: URLs; a trivial exporter (the real one, prometheus_client's, is kopf-client's and is
tested there), which counts its renderings and may be slow; requests over 127.0.0.1, some
of them all at once, as a flood of scrapes. Outputs: the parsed endpoints, the error messages,
the HTTP responses, the renderings counted, the log. A missing ``kopf-client[metrics]`` is
simulated (no entry points of the exposition), whatever is installed where the tests run.
"""
import asyncio
import importlib.metadata
import logging
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, Optional, Tuple

import pytest

from kopf._core.engines.endpoints import metricserving, probeserver, probing


class Exporter:
    def __init__(self, *, seconds: float = 0) -> None:
        self.installed = 0
        self.rendered = 0
        self.seconds = seconds  # the rendering's CPU time, as of a big exposition
        self.finished: Optional[float] = None  # the monotonic time when the last rendering ended
        self.started = threading.Event()  # set when a rendering begins

    def install(self) -> None:
        self.installed += 1

    def render(self) -> Tuple[str, bytes]:
        self.rendered += 1
        self.started.set()
        time.sleep(self.seconds)
        self.finished = time.monotonic()
        return 'text/plain; version=0.0.4; charset=utf-8', b'kopf_up 1.0\n'


@pytest.mark.parametrize('url, expected', [
    ('http://0.0.0.0:9090/metrics', probing.Endpoint('0.0.0.0', 9090, '/metrics')),
    ('http://127.0.0.1:9090', probing.Endpoint('127.0.0.1', 9090, '/metrics')),
    ('http://[::1]:0/x', probing.Endpoint('::1', 0, '/x')),
])
def test_endpoints(url: str, expected: probing.Endpoint) -> None:
    assert metricserving.parse_endpoint(url) == expected


@pytest.mark.parametrize('url, message', [
    ('https://0.0.0.0:9090/metrics', r"must be an http:// URL"),
    ('http://0.0.0.0/metrics', r"needs a host and a port to listen on; e\.g\. http://0\.0\.0\.0:9090/metrics\."),
    ('http://:9090/metrics', r"needs a host and a port"),
    ('http://0.0.0.0:99999/metrics', r"is not a valid URL"),
])
def test_bad_endpoints_are_one_message(url: str, message: str) -> None:
    with pytest.raises(metricserving.MetricsEndpointError, match=message):
        metricserving.parse_endpoint(url)


def test_the_liveness_port_is_not_shared() -> None:
    liveness = probing.parse_endpoint('http://0.0.0.0:8080/healthz')
    with pytest.raises(metricserving.MetricsEndpointError, match=r"are on the same host and port: give them "):
        metricserving.parse_endpoint('http://0.0.0.0:8080/metrics', liveness=liveness)
    assert metricserving.parse_endpoint('http://0.0.0.0:8081/metrics', liveness=liveness).port == 8081


def test_without_an_exposition_the_endpoint_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # No installed package registers an exposition (whether kopf-client[metrics] is installed here or not).
    entry_points = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, 'entry_points', lambda group: (
        [] if group == metricserving.ENTRY_POINT_GROUP else entry_points(group=group)))
    with pytest.raises(metricserving.MetricsEndpointError,
                       match=r"none is installed\. Install one: pip install 'kopf-client\[metrics\]'\."):
        metricserving.prepare('http://127.0.0.1:9090/metrics')


class _Unloadable:
    name = 'prometheus'

    def __init__(self, message: str) -> None:
        self.message = message

    def load(self) -> Any:
        raise ImportError(self.message)


@pytest.mark.parametrize('message', [
    "prometheus_client is not installed (No module named 'prometheus_client')",
    "prometheus_client is not installed: pip install 'kopf-client[metrics]'",  # an older exporter's own hint
])
def test_the_install_hint_is_said_once(monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    monkeypatch.setattr(importlib.metadata, 'entry_points', lambda group: [_Unloadable(message)])
    with pytest.raises(metricserving.MetricsEndpointError) as err:
        metricserving.prepare('http://127.0.0.1:9090/metrics')
    assert str(err.value).count('pip install') == 1
    assert message in str(err.value)


def test_without_the_endpoint_nothing_is_required_or_served() -> None:
    assert metricserving.prepare(None) is None


async def get(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    writer.write(request)
    response = await reader.read()
    writer.close()
    return response


async def test_the_metrics_are_served_at_their_path_only() -> None:
    exporter = Exporter()
    serving = metricserving.MetricsServing(metricserving.parse_endpoint('http://127.0.0.1:0/metrics'), exporter)
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serving.serve(bound=bound))
    try:
        port = await bound
        ok = await get(port, b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
        other = await get(port, b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
        posted = await get(port, b'POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
    finally:
        task.cancel()
        await asyncio.wait([task])
    assert ok.startswith(b'HTTP/1.1 200 OK\r\n')
    assert b'\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n' in ok
    assert ok.endswith(b'\r\n\r\nkopf_up 1.0\n')
    assert other.startswith(b'HTTP/1.1 404 Not Found\r\n') and other.endswith(b'Not found: try /metrics\n')
    assert posted.startswith(b'HTTP/1.1 405 ')


async def test_a_port_in_use_is_one_message() -> None:
    server = await asyncio.start_server(lambda r, w: None, '127.0.0.1', 0)
    port = server.sockets[0].getsockname()[1]
    serving = metricserving.MetricsServing(metricserving.parse_endpoint(f'http://127.0.0.1:{port}/m'), Exporter())
    try:
        with pytest.raises(metricserving.MetricsEndpointError, match=r"Cannot serve the metrics endpoint .* "
                                                                     r"Choose another port or host in --metrics\."):
            await serving.serve()
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[int, Exporter]]:
    """The metrics served on a free port; the exporter's slowness and the limits by ``indirect`` params."""
    seconds, limits = getattr(request, 'param', (0, probeserver.Limits()))
    exporter = Exporter(seconds=seconds)
    serving = metricserving.MetricsServing(metricserving.parse_endpoint('http://127.0.0.1:0/metrics'), exporter)
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serving.serve(bound=bound, limits=limits))
    try:
        yield await bound, exporter
    finally:
        task.cancel()
        await asyncio.wait([task])


async def test_a_flood_of_scrapes_is_one_rendering(served: tuple[int, Exporter]) -> None:
    port, exporter = served
    started = time.monotonic()
    responses = await asyncio.gather(*[get(port, b'GET /metrics HTTP/1.1\r\n\r\n') for _ in range(200)])
    seconds = time.monotonic() - started
    assert all(response.endswith(b'\r\n\r\nkopf_up 1.0\n') for response in responses)
    # Each of the 200 rendered its own before; now one per second at most (usually one for all of them).
    assert exporter.rendered <= 1 + int(seconds)


async def health(method: str, path: str) -> probeserver.Response:
    return 200, 'application/json', b'{}'


@pytest.mark.parametrize('served', [(3.0, probeserver.Limits())], indirect=True)
async def test_the_health_endpoint_answers_during_a_flood_of_scrapes(served: tuple[int, Exporter]) -> None:
    port, exporter = served
    server = await probeserver.start_server(health, '127.0.0.1', 0)
    try:
        scrapes = [asyncio.create_task(get(port, b'GET /metrics HTTP/1.1\r\n\r\n')) for _ in range(200)]
        assert await asyncio.to_thread(exporter.started.wait, 60)  # the scrapes are in, their rendering has begun
        probe = await get(server.port(0), b'GET /healthz HTTP/1.1\r\n\r\n')
        answered = time.monotonic()
        await asyncio.gather(*scrapes)
    finally:
        await server.close()
    assert probe.endswith(b'\r\n\r\n{}')
    # The rendering (3 s) is in a thread, so the probe is answered before it ends, however slow the machine.
    # Before, each of the 200 scrapes rendered on the event loop, and the probe waited for them.
    assert exporter.finished is not None and answered < exporter.finished
    assert exporter.rendered == 1


@pytest.mark.parametrize('served', [(0, probeserver.Limits(connections=2, head_timeout=1))], indirect=True)
async def test_the_flood_warning_names_the_metrics_endpoint(served: tuple[int, Exporter],
                                                            caplog: pytest.LogCaptureFixture) -> None:
    port, _ = served
    connections = [await asyncio.open_connection('127.0.0.1', port) for _ in range(4)]  # heads that never come
    await asyncio.sleep(0.1)
    for _, writer in connections:
        writer.close()
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "The metrics endpoint has reached its limit of 2 connections: the oldest incomplete "
                          "requests are closed, new ones may be refused. If it is not expected, something "
                          "floods the endpoint.")]
