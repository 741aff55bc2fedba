"""The health-check server: liveness with the probe handlers' results, readiness after the listing."""
import asyncio
import datetime
import json
import socket
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Tuple

import pytest

import kopf
from kopf._core.engines.endpoints import probing


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port: int = sock.getsockname()[1]
        return port


async def request(port: int, raw: bytes) -> Tuple[int, Dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    writer.write(raw)
    await writer.drain()
    response = await reader.read()  # the server closes the connection after one response
    writer.close()
    await writer.wait_closed()
    head, _, body = response.partition(b'\r\n\r\n')
    status_line, *header_lines = head.decode().split('\r\n')
    headers = dict(line.split(': ', 1) for line in header_lines)
    return int(status_line.split()[1]), headers, body


async def get(port: int, path: str, method: str = 'GET') -> Tuple[int, Dict[str, str], bytes]:
    return await request(port, f'{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n'.encode())


class Operator:
    """What the health reporter gets from a running operator, to be changed by the tests."""

    def __init__(self) -> None:
        self.registry = kopf.OperatorRegistry()
        self.settings = kopf.OperatorSettings()
        self.memo = kopf.Memo()
        self.listing = probing.ListingReadiness()
        self.stopping = asyncio.Event()
        self.port = 0

    async def serve(self, url: str) -> 'asyncio.Task[None]':
        bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(probing.health_reporter(
            probing.parse_endpoint(url), registry=self.registry, settings=self.settings, memo=self.memo,
            extra_kwargs=lambda: {'my_index': {'key': ['value']}}, listing=self.listing,
            stopping=self.stopping, bound=bound))
        done, _ = await asyncio.wait([task, bound], return_when=asyncio.FIRST_COMPLETED)  # type: ignore[type-var]
        if task in done:
            task.result()  # re-raise the failure to start
        self.port = bound.result()
        return task


@pytest.fixture()
async def operator() -> AsyncIterator[Operator]:
    op = Operator()
    task = await op.serve('http://127.0.0.1:0/healthz')
    yield op
    task.cancel()
    await asyncio.wait([task])


# The URL.

@pytest.mark.parametrize('url, host, port, path', [
    ('http://0.0.0.0:8080/healthz', '0.0.0.0', 8080, '/healthz'),
    ('http://localhost/healthz', 'localhost', 8080, '/healthz'),
    ('http://127.0.0.1:9090', '127.0.0.1', 9090, '/'),
    ('http://[::1]:9090/x/y', '::1', 9090, '/x/y'),
])
def test_the_endpoint_is_parsed(url: str, host: str, port: int, path: str) -> None:
    assert probing.parse_endpoint(url) == probing.Endpoint(host=host, port=port, path=path)


@pytest.mark.parametrize('url, message', [
    ('https://0.0.0.0:8080/healthz', r"must be an http:// URL"),
    ('tcp://0.0.0.0:8080', r"must be an http:// URL"),
    ('0.0.0.0:8080/healthz', r"must be an http:// URL"),
    ('http:///healthz', r"has no host to listen on"),
    ('http://0.0.0.0:port/healthz', r"is not a valid URL"),
])
def test_a_bad_endpoint_is_refused_with_an_example(url: str, message: str) -> None:
    with pytest.raises(probing.LivenessEndpointError, match=message) as e:
        probing.parse_endpoint(url)
    assert 'e.g. http://0.0.0.0:8080/healthz' in str(e.value)


async def test_a_busy_port_fails_with_a_clear_message(operator: Operator) -> None:
    with pytest.raises(probing.LivenessEndpointError, match=rf"Cannot serve the liveness endpoint http://127.0.0.1:{operator.port}/"):
        await Operator().serve(f'http://127.0.0.1:{operator.port}/healthz')


# Liveness.

async def test_no_probe_handlers_give_an_empty_object(operator: Operator) -> None:
    status, headers, body = await get(operator.port, '/healthz')
    assert status == 200
    assert headers['Content-Type'] == 'application/json; charset=utf-8'
    assert json.loads(body) == {}


async def test_the_probes_results_are_keyed_by_their_ids(operator: Operator) -> None:
    kopf.on.probe(id='now', registry=operator.registry)(lambda **_: '2026-11-24T00:00:00+00:00')

    @kopf.on.probe(id='random', registry=operator.registry)
    async def random_value(**_: Any) -> int:
        return 765846

    status, _, body = await get(operator.port, '/healthz?verbose=1')
    assert status == 200
    assert json.loads(body) == {'now': '2026-11-24T00:00:00+00:00', 'random': 765846}


async def test_the_results_are_reported_byte_for_byte_as_kopf_does(operator: Operator) -> None:
    # Kopf 1.45.2: aiohttp.web.json_response(results), i.e. json.dumps() with its defaults, as utf-8.
    kopf.on.probe(id='now', registry=operator.registry)(lambda **_: '2019-11-07T18:03:52.513803+00:00')
    kopf.on.probe(id='random', registry=operator.registry)(lambda **_: 765846)
    kopf.on.probe(id='text', registry=operator.registry)(lambda **_: {'ünï': [1.5, None, True]})
    status, headers, body = await get(operator.port, '/healthz')
    assert (status, headers['Content-Type']) == (200, 'application/json; charset=utf-8')
    assert body == (b'{"now": "2019-11-07T18:03:52.513803+00:00", "random": 765846, '
                    b'"text": {"\\u00fcn\\u00ef": [1.5, null, true]}}')


async def test_the_probes_get_the_activity_kwargs(operator: Operator) -> None:
    seen: List[Mapping[str, Any]] = []
    kopf.on.probe(id='kw', param='p', registry=operator.registry)(lambda **kw: seen.append(kw))
    status, _, body = await get(operator.port, '/healthz')
    assert status == 200
    assert json.loads(body) == {'kw': None}
    kwargs = seen[0]
    assert kwargs['memo'] is operator.memo
    assert kwargs['settings'] is operator.settings
    assert kwargs['param'] == 'p'
    assert kwargs['retry'] == 0
    assert kwargs['activity'] == 'probe'
    assert kwargs['my_index'] == {'key': ['value']}
    assert {'logger', 'started', 'runtime'} <= set(kwargs)


async def test_the_results_are_cached(operator: Operator) -> None:
    calls: List[int] = []

    def counter(**_: Any) -> int:
        calls.append(1)
        return len(calls)

    kopf.on.probe(id='counter', registry=operator.registry)(counter)
    bodies = [json.loads((await get(operator.port, '/healthz'))[2]) for _ in range(3)]
    assert bodies == [{'counter': 1}] * 3
    assert len(calls) == 1


async def test_concurrent_requests_share_one_collection(operator: Operator) -> None:
    calls: List[int] = []

    @kopf.on.probe(id='slow', registry=operator.registry)
    async def slow(**_: Any) -> int:
        calls.append(1)
        await asyncio.sleep(0.1)
        return len(calls)

    responses = await asyncio.gather(*[get(operator.port, '/healthz') for _ in range(5)])
    assert [(status, json.loads(body)) for status, _, body in responses] == [(200, {'slow': 1})] * 5
    assert len(calls) == 1


async def test_the_cache_expires() -> None:
    results = iter([{'a': 1}, {'a': 2}])

    async def collect() -> Mapping[str, Any]:
        return next(results)

    cache = probing.ProbeCache(collect, max_age=0)
    assert await cache.get() == {'a': 1}
    assert await cache.get() == {'a': 2}
    assert probing.PROBE_CACHE_SECONDS == 10.0


async def test_a_failing_probe_is_reported_by_its_id_only_and_is_not_cached(
        operator: Operator, caplog: pytest.LogCaptureFixture) -> None:
    secret = "cannot connect to postgresql://admin:s3cr3t@db:5432/app"
    outcomes: List[Optional[Exception]] = [RuntimeError(secret), None]

    def flaky(**_: Any) -> str:
        exc = outcomes.pop(0)
        if exc is not None:
            raise exc
        return 'fine'

    kopf.on.probe(id='db', registry=operator.registry)(flaky)
    kopf.on.probe(id='ok', registry=operator.registry)(lambda **_: 'ok')
    status, headers, body = await get(operator.port, '/healthz')
    assert status == 500
    assert headers['Content-Type'] == 'text/plain; charset=utf-8'
    assert body == b"Probe 'db' has failed.\n"
    assert secret in caplog.text  # the details are in the log (by the handler's execution), not in the response
    status, _, body = await get(operator.port, '/healthz')
    assert (status, json.loads(body)) == (200, {'db': 'fine', 'ok': 'ok'})


async def test_several_failing_probes_are_listed_by_their_ids(operator: Operator) -> None:
    def failing(**_: Any) -> None:
        raise kopf.PermanentError("token=abc123")

    for probe_id in ['b', 'a', 'c']:
        kopf.on.probe(id=probe_id, registry=operator.registry)(failing if probe_id != 'c' else lambda **_: 1)
    status, _, body = await get(operator.port, '/healthz')
    assert (status, body) == (500, b"Probe 'a' has failed.\nProbe 'b' has failed.\n")


async def test_a_probe_with_its_own_retries_is_retried_within_the_request(operator: Operator) -> None:
    attempts: List[int] = []

    def eventually(**_: Any) -> int:
        attempts.append(1)
        if len(attempts) < 3:
            raise kopf.TemporaryError("not yet", delay=0)
        return len(attempts)

    kopf.on.probe(id='eventually', retries=5, registry=operator.registry)(eventually)
    status, _, body = await get(operator.port, '/healthz')
    assert (status, json.loads(body)) == (200, {'eventually': 3})


async def test_unserializable_results_are_reported_as_strings(operator: Operator) -> None:
    kopf.on.probe(id='obj', registry=operator.registry)(lambda **_: {'day': datetime.date(2026, 11, 24)})
    status, _, body = await get(operator.port, '/healthz')
    assert status == 200
    assert json.loads(body) == {'obj': {'day': '2026-11-24'}}


async def test_results_that_json_cannot_encode_give_an_error_in_the_log_only(
        operator: Operator, caplog: pytest.LogCaptureFixture) -> None:
    kopf.on.probe(id='obj', registry=operator.registry)(lambda **_: {('a', 'b'): 1})
    responses = [await get(operator.port, '/healthz') for _ in range(3)]
    assert [(status, body) for status, _, body in responses] == [
        (500, b"The probes' results cannot be reported as JSON.\n")] * 3
    errors = [r.getMessage() for r in caplog.records if r.name == 'kopf.engines.probing']
    assert len(errors) == 1  # once per collection of the results, not per request
    assert errors[0].startswith("The probes' results cannot be reported as JSON: keys must be ")


async def test_a_stopping_operator_is_not_alive_nor_ready(operator: Operator) -> None:
    operator.listing.expect([])
    operator.stopping.set()
    assert (await get(operator.port, '/healthz'))[:3:2] == (503, b"The operator is stopping.\n")
    assert (await get(operator.port, '/readyz'))[:3:2] == (503, b"The operator is stopping.\n")


# Readiness.

async def test_readiness_waits_for_every_expected_stream(operator: Operator) -> None:
    not_yet = (503, b"The operator has not listed all its resources yet.\n")
    assert (await get(operator.port, '/readyz'))[:3:2] == not_yet  # not serving yet
    operator.listing.expect({'pods', 'kopfexamples'})
    operator.listing.mark_listed('pods')
    assert (await get(operator.port, '/readyz'))[:3:2] == not_yet
    operator.listing.mark_listed('kopfexamples')
    assert (await get(operator.port, '/readyz'))[:3:2] == (200, b"OK\n")


def test_readiness_counts_only_the_streams_of_the_start() -> None:
    listing = probing.ListingReadiness()
    listing.expect({'a'})
    listing.expect({'a', 'b'})  # e.g. a namespace that appears later: not a warm-up
    listing.mark_listed('a')
    assert listing.ready


def test_nothing_to_watch_is_ready_at_once() -> None:
    listing = probing.ListingReadiness()
    assert not listing.ready
    listing.expect(set())
    assert listing.ready


async def test_the_liveness_path_wins_over_the_readiness_path() -> None:
    op = Operator()
    task = await op.serve('http://127.0.0.1:0/readyz')
    try:
        status, _, body = await get(op.port, '/readyz')
        assert (status, json.loads(body)) == (200, {})
    finally:
        task.cancel()
        await asyncio.wait([task])


# HTTP.

async def test_unknown_paths_are_not_found(operator: Operator) -> None:
    status, _, body = await get(operator.port, '/metrics')
    assert status == 404
    assert body == b"Not found: try /healthz\n"  # the requested path is not echoed


async def test_other_methods_are_not_allowed(operator: Operator) -> None:
    status, headers, _ = await get(operator.port, '/healthz', method='POST')
    assert status == 405
    assert headers['Allow'] == 'GET, HEAD'


async def test_head_has_the_headers_but_no_body(operator: Operator) -> None:
    status, headers, body = await get(operator.port, '/healthz', method='HEAD')
    assert (status, headers['Content-Length'], body) == (200, '2', b'')


async def test_garbage_is_a_bad_request(operator: Operator) -> None:
    status, _, _ = await request(operator.port, b'HELLO\r\n\r\n')
    assert status == 400


async def test_the_server_stops_listening_when_cancelled() -> None:
    op = Operator()
    task = await op.serve(f'http://127.0.0.1:{free_port()}/healthz')
    task.cancel()
    await asyncio.wait([task])
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection('127.0.0.1', op.port)
