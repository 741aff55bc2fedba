"""
Health checks: a minimal HTTP server for Kubernetes' liveness and readiness probes.

``kopf run --liveness=http://0.0.0.0:8080/healthz`` (or ``liveness_endpoint=``
of the embedding API) serves, on the given host and port:

- the given path (liveness): ``200`` with the results of the ``@kopf.on.probe``
  handlers as a JSON object keyed by the handlers' ids (``{}`` without them).
  The results are cached for :data:`PROBE_CACHE_SECONDS`, so that frequent
  probes do not overload the operator. A probe handler that fails gives
  ``500`` with the error. Once the operator is stopping, it answers ``503``;
  once it has exited, nothing listens at all.
- ``/readyz`` (readiness): ``200`` only once the operator is serving and every
  watched resource has been listed in every served namespace (at the start),
  ``503`` before that and while stopping. A readiness probe on it makes
  a rollout wait for a warm operator. If the liveness path is ``/readyz``
  itself, the liveness wins and there is no readiness path.

Only plain HTTP is served. A URL without a port means port 8080, as in Kopf;
port ``0`` takes any free port (logged at start). Only ``GET`` and ``HEAD``
are answered. The server is stdlib-only (asyncio streams), and every
connection is closed after one response, as probes need nothing more.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
import urllib.parse
from typing import Any, Callable, Collection, Hashable, Mapping, Optional, Set, Tuple

from kopf._cogs.configs import configuration
from kopf._core.engines import activities
from kopf._core.intents import handlers, registries

logger = logging.getLogger('kopf.engines.probing')

PROBE_CACHE_SECONDS = 10.0  # how long the probe handlers' results are reused (as in Kopf)
READINESS_PATH = '/readyz'
DEFAULT_PORT = 8080  # what Kopf serves on when the URL has no port
REQUEST_TIMEOUT = 10.0  # for a client to send its request headers
MAX_HEADER_LINES = 100


class LivenessEndpointError(Exception):
    """The liveness endpoint is malformed or cannot be served: a setup error (one line in the CLI)."""


@dataclasses.dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    path: str

    def url(self, port: Optional[int] = None) -> str:
        host = f'[{self.host}]' if ':' in self.host else self.host
        return f'http://{host}:{self.port if port is None else port}{self.path}'


def parse_endpoint(url: str) -> Endpoint:
    """Parse the liveness URL, or fail with a message that says what is expected."""
    example = "e.g. http://0.0.0.0:8080/healthz"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise LivenessEndpointError(f"The liveness endpoint {url!r} is not a valid URL ({e}); {example}.") from None
    if parts.scheme != 'http':
        raise LivenessEndpointError(f"The liveness endpoint {url!r} must be an http:// URL "
                                    f"(no other protocol is supported); {example}.")
    if not parts.hostname:
        raise LivenessEndpointError(f"The liveness endpoint {url!r} has no host to listen on; {example}.")
    return Endpoint(host=parts.hostname, port=DEFAULT_PORT if port is None else port, path=parts.path or '/')


class ListingReadiness:
    """Whether every watch-stream the operator serves at the start has listed its objects once."""

    def __init__(self) -> None:
        self._expected: Optional[Set[Hashable]] = None
        self._listed: Set[Hashable] = set()

    def expect(self, keys: Collection[Hashable]) -> None:
        """The streams to be listed (only the first call counts: later changes are not "warming up")."""
        if self._expected is None:
            self._expected = set(keys)

    def mark_listed(self, key: Hashable) -> None:
        self._listed.add(key)

    @property
    def ready(self) -> bool:
        return self._expected is not None and self._expected <= self._listed


class ProbeCache:
    """The probe handlers' results, re-collected when older than the caching period (one run at a time)."""

    def __init__(self, collect: Callable[[], Any], max_age: float = PROBE_CACHE_SECONDS) -> None:
        self._collect = collect
        self._max_age = max_age
        self._results: Mapping[str, Any] = {}
        self._timestamp: Optional[float] = None
        self._lock = asyncio.Lock()

    def _fresh(self) -> bool:
        return self._timestamp is not None and time.monotonic() - self._timestamp < self._max_age

    async def get(self) -> Mapping[str, Any]:
        """The cached or new results; a failed collection raises and caches nothing."""
        if not self._fresh():
            async with self._lock:  # concurrent requests wait for one collection, not run their own
                if not self._fresh():
                    self._results = await self._collect()
                    self._timestamp = time.monotonic()
        return self._results


async def run_probes(
        *,
        registry: registries.OperatorRegistry,
        settings: configuration.OperatorSettings,
        memo: Any,
        extra_kwargs: Mapping[str, Any],
) -> Mapping[str, Any]:
    """
    Run the probe handlers (with the activity kwargs) and return their results by id.

    A failing probe is reported at once (the error mode is permanent unless the
    handler sets its own): a liveness request cannot wait for backoffs.
    """
    outcomes = await activities.run_activity(
        activity=handlers.Activity.PROBE, registry=registry, settings=settings, memo=memo,
        extra_kwargs=extra_kwargs, default_errors=handlers.ErrorsMode.PERMANENT)
    return {str(handler_id): outcome.result for handler_id, outcome in outcomes.items()}


Response = Tuple[int, str, bytes]  # status, content type, body


class HealthServer:
    """Answers the liveness and readiness requests; see the module's description."""

    def __init__(self, *, endpoint: Endpoint, probes: ProbeCache, listing: ListingReadiness,
                 stopping: asyncio.Event) -> None:
        self.endpoint = endpoint
        self.probes = probes
        self.listing = listing
        self.stopping = stopping

    async def respond(self, method: str, path: str) -> Response:
        routes = {READINESS_PATH: self._readiness, self.endpoint.path: self._liveness}
        route = routes.get(path)
        if route is None:
            return 404, 'text/plain', f"Not found: {path} (try {self.endpoint.path})\n".encode()
        if method not in ('GET', 'HEAD'):
            return 405, 'text/plain', f"Method {method} is not allowed: use GET.\n".encode()
        return await route()

    async def _liveness(self) -> Response:
        if self.stopping.is_set():
            return 503, 'text/plain', b"The operator is stopping.\n"
        try:
            results = await self.probes.get()
        except activities.ActivityError as e:
            failures = {str(hid): str(o.exception) for hid, o in e.outcomes.items() if o.exception is not None}
            text = ''.join(f"Probe {hid!r} has failed: {msg}\n" for hid, msg in sorted(failures.items()))
            return 500, 'text/plain', text.encode()
        try:
            body = json.dumps(results, default=str)  # e.g. datetimes as their str(), not a failure
        except (TypeError, ValueError) as e:  # e.g. non-string keys of a dict, circular references
            return 500, 'text/plain', f"The probes' results cannot be reported as JSON: {e}\n".encode()
        return 200, 'application/json', body.encode()

    async def _readiness(self) -> Response:
        if self.stopping.is_set():
            return 503, 'text/plain', b"The operator is stopping.\n"
        if not self.listing.ready:
            return 503, 'text/plain', b"The operator has not listed all its resources yet.\n"
        return 200, 'text/plain', b"OK\n"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(_read_request(reader), timeout=REQUEST_TIMEOUT)
            if request is None:
                status, ctype, body = 400, 'text/plain', b"Bad request.\n"
                method = 'GET'
            else:
                method, path = request
                status, ctype, body = await self.respond(method, path)
            writer.write(_format_response(status, ctype, body, head=method == 'HEAD'))
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError):
            pass  # the client has gone or is too slow: nobody to answer to
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass


async def _read_request(reader: asyncio.StreamReader) -> Optional[Tuple[str, str]]:
    """The method and the path of an HTTP/1.x request (its headers are read and ignored)."""
    try:
        request_line = (await reader.readline()).decode('latin-1').strip()
        for _ in range(MAX_HEADER_LINES):
            line = await reader.readline()
            if line in (b'\r\n', b'\n', b''):
                break
        else:
            return None
    except (ValueError, asyncio.LimitOverrunError):  # a line beyond the stream's limit
        return None
    parts = request_line.split()
    if len(parts) != 3 or not parts[2].startswith('HTTP/'):
        return None
    return parts[0].upper(), urllib.parse.urlsplit(parts[1]).path


_REASONS = {200: 'OK', 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed',
            500: 'Internal Server Error', 503: 'Service Unavailable'}


def _format_response(status: int, ctype: str, body: bytes, *, head: bool) -> bytes:
    headers = [
        f'HTTP/1.1 {status} {_REASONS[status]}',
        f'Content-Type: {ctype}; charset=utf-8',
        f'Content-Length: {len(body)}',
        'Cache-Control: no-store',
        'Connection: close',
    ]
    if status == 405:
        headers.append('Allow: GET, HEAD')
    return '\r\n'.join(headers).encode() + b'\r\n\r\n' + (b'' if head else body)


async def health_reporter(
        endpoint: Endpoint,
        *,
        registry: registries.OperatorRegistry,
        settings: configuration.OperatorSettings,
        memo: Any,
        extra_kwargs: Callable[[], Mapping[str, Any]],
        listing: ListingReadiness,
        stopping: asyncio.Event,
        bound: Optional[asyncio.Future[int]] = None,
) -> None:
    """Serve the health checks until cancelled (when the operator exits)."""
    async def collect() -> Mapping[str, Any]:
        return await run_probes(registry=registry, settings=settings, memo=memo, extra_kwargs=extra_kwargs())

    server = HealthServer(endpoint=endpoint, probes=ProbeCache(collect), listing=listing, stopping=stopping)
    try:
        listener = await asyncio.start_server(server.handle, endpoint.host, endpoint.port)
    except OSError as e:
        raise LivenessEndpointError(f"Cannot serve the liveness endpoint {endpoint.url()}: {e.strerror or e}. "
                                    f"Choose another port or host in --liveness.") from None
    port = listener.sockets[0].getsockname()[1] if listener.sockets else endpoint.port
    logger.debug(f"Serving health status at {endpoint.url(port)}")
    if endpoint.path == READINESS_PATH:
        logger.warning(f"The liveness path is {READINESS_PATH}: the readiness is not served.")
    if bound is not None:
        bound.set_result(port)  # the actual port: e.g. for port 0
    async with listener:
        await asyncio.Event().wait()  # serve until cancelled; the listener closes on the way out
