"""
Serving the metrics: ``kopf run --metrics=http://0.0.0.0:9090/metrics`` (``metrics_endpoint=``).

The core counts (see :mod:`kopf._cogs.helpers.instruments`); the exposition is
an exporter's, found under the ``kopf.metrics`` entry-point group
(``kopf-client[metrics]`` registers ``prometheus_client``'s). At every
operator's start, an installed exporter puts the figures into its library's
default registry (idempotently), so that an application that embeds the
operator and serves that registry itself shows them too, with no endpoint
of ours. Only with the endpoint given does the operator listen on a port.

The endpoint is served by the same bounded stdlib server as the health probes
(:mod:`probeserver`: bounded heads, times, and connections), on a port of its
own, and its log lines name the metrics endpoint. The exporter's text is rendered
in a thread, once for all the scrapes that come together, and reused for a second
(:mod:`metricsrendering`): however many scrapes come, the event loop and the
health probes keep their turns.
"""
from __future__ import annotations

import asyncio
import importlib.metadata
import logging
from typing import List, Optional, Protocol, Tuple

from kopf._core.engines.endpoints import metricsrendering, probeserver, probing

logger = logging.getLogger('kopf.engines.metricserving')

ENTRY_POINT_GROUP = 'kopf.metrics'
INSTALL_HINT = "pip install 'kopf-client[metrics]'"
_EXAMPLE = "e.g. http://0.0.0.0:9090/metrics"


class MetricsEndpointError(Exception):
    """The metrics endpoint is malformed or cannot be served, or nothing can expose the metrics: a setup error."""


class Exporter(Protocol):
    """An exposition of the metrics: e.g. ``prometheus_client``'s, by ``kopf-client[metrics]``."""

    def install(self) -> None:
        """Make the figures visible in the library's own default registry (once per process; idempotent)."""

    def render(self) -> Tuple[str, bytes]:
        """
        The content type and the body of one scrape of the library's default registry.

        It is called in a thread of its own, not in the event loop (one call at a time).
        """


def parse_endpoint(url: str, *, liveness: Optional[probing.Endpoint] = None) -> probing.Endpoint:
    """Parse the metrics URL, or fail with a message that says what is expected."""
    parts, port = probing.split_http_url(url, what='metrics', example=_EXAMPLE, error=MetricsEndpointError)
    if not parts.hostname or port is None:
        raise MetricsEndpointError(f"The metrics endpoint {url!r} needs a host and a port to listen on; {_EXAMPLE}.")
    endpoint = probing.Endpoint(host=parts.hostname, port=port, path=parts.path or '/metrics')
    if liveness is not None and port != 0 and (liveness.host, liveness.port) == (endpoint.host, port):
        raise MetricsEndpointError(f"The metrics endpoint {url!r} and the liveness endpoint {liveness.url()} "
                                   f"are on the same host and port: give them different ports.")
    return endpoint


def find_exporter(*, required: bool) -> Optional[Exporter]:
    """
    Load and install the installed exporter, if any; fail if none can be loaded but one is required.

    Without the endpoint, an exporter that cannot be loaded (e.g. its library is
    not installed) is no error: nobody asked for the metrics to be shown.
    """
    entry_points = sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    problems: List[str] = []
    for entry_point in entry_points:
        try:
            exporter: Exporter = entry_point.load()
        except ImportError as e:
            problems.append(str(e))
            continue
        exporter.install()
        return exporter
    if required:
        details = f" ({'; '.join(problems)})" if problems else ""
        hint = "" if INSTALL_HINT in details else f" Install one: {INSTALL_HINT}."  # said once
        raise MetricsEndpointError(f"The metrics endpoint needs an exposition of the metrics, and none is "
                                   f"installed{details}.{hint}")
    return None


class MetricsServing:
    """The endpoint and the exporter of one operator: served until cancelled."""

    def __init__(self, endpoint: probing.Endpoint, exporter: Exporter) -> None:
        self.endpoint = endpoint
        self.exporter = exporter
        self.rendering = metricsrendering.SharedRendering(exporter.render)

    async def respond(self, method: str, path: str) -> probeserver.Response:
        if path != self.endpoint.path:
            return 404, 'text/plain', f"Not found: try {self.endpoint.path}\n".encode()
        if method not in ('GET', 'HEAD'):
            return 405, 'text/plain', b"Only GET and HEAD are allowed.\n"
        content_type, body = await self.rendering.get()
        # The server adds the charset itself (the exposition is UTF-8 anyway).
        content_type = ';'.join(part for part in content_type.split(';') if not part.strip().startswith('charset='))
        return 200, content_type.strip(), body

    async def serve(
            self,
            *,
            bound: Optional[asyncio.Future[int]] = None,
            limits: probeserver.Limits = probeserver.Limits(),
    ) -> None:
        """Serve the metrics until cancelled (when the operator exits)."""
        endpoint = self.endpoint
        try:
            listener = await probeserver.start_server(self.respond, endpoint.host, endpoint.port,
                                                      limits=limits, what='metrics')
        except OSError as e:
            raise MetricsEndpointError(f"Cannot serve the metrics endpoint {endpoint.url()}: {e.strerror or e}. "
                                       f"Choose another port or host in --metrics.") from None
        port = listener.port(endpoint.port)
        logger.debug(f"Serving the metrics at {endpoint.url(port)}")
        if bound is not None:
            bound.set_result(port)  # the actual port: e.g. for port 0
        try:
            await asyncio.Event().wait()  # serve until cancelled
        finally:
            await listener.close()
            self.rendering.close()


def prepare(url: Optional[str], *, liveness: Optional[probing.Endpoint] = None) -> Optional[MetricsServing]:
    """At the operator's start: install an exporter if there is one; the serving if the endpoint is given."""
    endpoint = None if url is None else parse_endpoint(url, liveness=liveness)
    exporter = find_exporter(required=endpoint is not None)
    return None if endpoint is None or exporter is None else MetricsServing(endpoint, exporter)
