"""
Health checks: a minimal HTTP server for Kubernetes' liveness and readiness probes.

``kopf run --liveness=http://0.0.0.0:8080/healthz`` (or ``liveness_endpoint=``
of the embedding API) serves, on the given host and port:

- the given path (liveness): ``200`` with the results of the ``@kopf.on.probe``
  handlers as a JSON object keyed by the handlers' ids (``{}`` without them).
  The results are cached for :data:`PROBE_CACHE_SECONDS`, so that frequent
  probes do not overload the operator. The body is what Kopf's ``json_response``
  gives (``json.dumps`` with its default separators). A probe handler that fails
  gives ``500`` with the failed probes' ids only (``Probe 'db' has failed.``):
  the errors go to the log, as they may hold secrets (Kopf's aiohttp said only
  "Internal Server Error"). Once the operator is stopping, it answers ``503``;
  once it has exited, nothing listens at all.
- ``/readyz`` (readiness): ``200`` only once the operator is serving and every
  watched resource has been listed in every served namespace (at the start),
  ``503`` before that and while stopping. A readiness probe on it makes
  a rollout wait for a warm operator. If the liveness path is ``/readyz``
  itself, the liveness wins and there is no readiness path.

Only plain HTTP is served. A URL without a port means port 8080, as in Kopf;
port ``0`` takes any free port (logged at start). Only ``GET`` and ``HEAD``
are answered. The HTTP side is :mod:`probeserver`: stdlib-only, bounded in
the size of a request's head, its time, and the number of connections (the
endpoint is often reachable by anyone in the cluster), and every connection
is closed after one response, as probes need nothing more.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
import urllib.parse
from typing import Any, Callable, Collection, Hashable, Mapping, Optional, Set, Tuple, Type

from kopf._cogs.configs import configuration
from kopf._core.engines import activities
from kopf._core.engines.endpoints import probeserver
from kopf._core.intents import handlers, registries

logger = logging.getLogger('kopf.engines.probing')

PROBE_CACHE_SECONDS = 10.0  # how long the probe handlers' results are reused (as in Kopf)
READINESS_PATH = '/readyz'
DEFAULT_PORT = 8080  # what Kopf serves on when the URL has no port


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


def split_http_url(
        url: str,
        *,
        what: str,
        example: str,
        error: Type[Exception],
) -> Tuple[urllib.parse.SplitResult, Optional[int]]:
    """The parts and the port of an endpoint's ``http://`` URL, or the error saying what is expected."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise error(f"The {what} endpoint {url!r} is not a valid URL ({e}); {example}.") from None
    if parts.scheme != 'http':
        raise error(f"The {what} endpoint {url!r} must be an http:// URL "
                    f"(no other protocol is supported); {example}.")
    return parts, port


def parse_endpoint(url: str) -> Endpoint:
    """Parse the liveness URL, or fail with a message that says what is expected."""
    example = "e.g. http://0.0.0.0:8080/healthz"
    parts, port = split_http_url(url, what='liveness', example=example, error=LivenessEndpointError)
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


Response = probeserver.Response


class HealthServer:
    """Answers the liveness and readiness requests; see the module's description."""

    def __init__(self, *, endpoint: Endpoint, probes: ProbeCache, listing: ListingReadiness,
                 stopping: asyncio.Event) -> None:
        self.endpoint = endpoint
        self.probes = probes
        self.listing = listing
        self.stopping = stopping
        self._encoded: Optional[Tuple[Mapping[str, Any], Response]] = None  # the last results and their response

    async def respond(self, method: str, path: str) -> Response:
        routes = {READINESS_PATH: self._readiness, self.endpoint.path: self._liveness}
        route = routes.get(path)
        if route is None:
            return 404, 'text/plain', f"Not found: try {self.endpoint.path}\n".encode()
        if method not in ('GET', 'HEAD'):
            return 405, 'text/plain', b"Only GET and HEAD are allowed.\n"
        return await route()

    async def _liveness(self) -> Response:
        if self.stopping.is_set():
            return 503, 'text/plain', b"The operator is stopping.\n"
        try:
            results = await self.probes.get()
        except activities.ActivityError as e:
            # The errors are in the log already (by the handlers' execution); they may hold secrets
            # (e.g. a database URL with its password), so the response names only the failed probes.
            failed = sorted(str(hid) for hid, outcome in e.outcomes.items() if outcome.exception is not None)
            return 500, 'text/plain', ''.join(f"Probe {hid!r} has failed.\n" for hid in failed).encode()
        if self._encoded is None or self._encoded[0] is not results:  # once per collection, not per request
            self._encoded = (results, _encode_results(results))
        return self._encoded[1]

    async def _readiness(self) -> Response:
        if self.stopping.is_set():
            return 503, 'text/plain', b"The operator is stopping.\n"
        if not self.listing.ready:
            return 503, 'text/plain', b"The operator has not listed all its resources yet.\n"
        return 200, 'text/plain', b"OK\n"


def _encode_results(results: Mapping[str, Any]) -> Response:
    """The results as JSON, as Kopf's ``json_response`` gives them; an error in the log, not in the response."""
    try:
        body = json.dumps(results, default=str)  # e.g. datetimes as their str(), not a failure
    except (TypeError, ValueError) as e:  # e.g. non-string keys of a dict, circular references
        logger.error(f"The probes' results cannot be reported as JSON: {e}")
        return 500, 'text/plain', b"The probes' results cannot be reported as JSON.\n"
    return 200, 'application/json', body.encode()


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
        limits: probeserver.Limits = probeserver.Limits(),
) -> None:
    """Serve the health checks until cancelled (when the operator exits)."""
    async def collect() -> Mapping[str, Any]:
        return await run_probes(registry=registry, settings=settings, memo=memo, extra_kwargs=extra_kwargs())

    server = HealthServer(endpoint=endpoint, probes=ProbeCache(collect), listing=listing, stopping=stopping)
    try:
        listener = await probeserver.start_server(server.respond, endpoint.host, endpoint.port, limits=limits)
    except OSError as e:
        raise LivenessEndpointError(f"Cannot serve the liveness endpoint {endpoint.url()}: {e.strerror or e}. "
                                    f"Choose another port or host in --liveness.") from None
    port = listener.port(endpoint.port)
    logger.debug(f"Serving health status at {endpoint.url(port)}")
    if endpoint.path == READINESS_PATH:
        logger.warning(f"The liveness path is {READINESS_PATH}: the readiness is not served.")
    if bound is not None:
        bound.set_result(port)  # the actual port: e.g. for port 0
    try:
        await asyncio.Event().wait()  # serve until cancelled
    finally:
        await listener.close()
