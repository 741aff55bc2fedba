"""
The operator's metrics: what the framework counts and times, for an exposition library to show.

The core records with the standard library only; the Prometheus exposition is
``prometheus_client``'s, installed with ``kopf-client[metrics]``. With it
installed, the figures appear in ``prometheus_client``'s default registry as
soon as an operator starts (so an application that embeds the operator and
serves that registry itself shows them), and ``kopf run --metrics=URL``
(``metrics_endpoint=`` of the embedding API) serves them::

    kopf run handlers.py --metrics=http://0.0.0.0:9090/metrics

Without an exposition library, the figures are still here::

    import kopf.metrics
    for family in kopf.metrics.snapshot():
        print(family.name, family.samples)

An exposition library (or anything else that turns the figures into a format)
implements :class:`Exporter` and registers it under the ``kopf.metrics``
entry-point group, e.g. in its ``pyproject.toml``::

    [project.entry-points."kopf.metrics"]
    prometheus = "kopf_client._metrics:exporter"

See ``docs/metrics.md`` for the names, the labels, and the cost.
"""
from __future__ import annotations

from typing import List

from kopf._cogs.helpers.instruments import REGISTRY, record_api_request
from kopf._cogs.helpers.metrics import Counter, Family, Gauge, Histogram, Registry, Sample
from kopf._core.engines.endpoints.metricserving import ENTRY_POINT_GROUP, Exporter, MetricsEndpointError


def snapshot() -> List[Family]:
    """The figures of this process now: every metric with its samples."""
    return REGISTRY.snapshot()


__all__ = [
    'ENTRY_POINT_GROUP',
    'REGISTRY',
    'Counter',
    'Exporter',
    'Family',
    'Gauge',
    'Histogram',
    'MetricsEndpointError',
    'Registry',
    'Sample',
    'record_api_request',
    'snapshot',
]
