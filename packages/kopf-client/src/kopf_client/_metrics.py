"""
The Prometheus exposition of the operator's metrics, by ``prometheus_client`` (``kopf-client[metrics]``).

The core counts and times with the standard library (``kopf.metrics``); here,
a collector converts the core's snapshot into ``prometheus_client``'s metric
families when (and only when) a registry is scraped: nothing is paid per event
in ``prometheus_client``. The collector goes into ``prometheus_client``'s
default ``REGISTRY`` once per process, when the first operator starts (the
core calls :meth:`PrometheusExporter.install`), so that an application that
embeds the operator and serves that registry itself shows the figures too.

``kopf run --metrics=URL`` serves the same default registry (with the
process's own figures and any metrics that the operator's code adds there),
rendered by ``prometheus_client``'s :func:`generate_latest`: no exposition
format is written by hand here.
"""
from __future__ import annotations

from typing import Callable, Iterator, List, Tuple, Union

try:
    import prometheus_client
    import prometheus_client.registry
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
    from prometheus_client.utils import floatToGoString
except ImportError as e:  # the core says it once, with what to install, only if the metrics are asked for
    raise ImportError(f"prometheus_client is not installed ({e})") from None

import kopf.metrics

PrometheusFamily = Union[CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily]

# prometheus_client's own spelling of the bounds ("+Inf", "1.0"): a float in, a string out
# (the function is not annotated in prometheus_client).
format_bound: Callable[[float], str] = floatToGoString


class KopfCollector(prometheus_client.registry.Collector):
    """The core's figures as ``prometheus_client``'s metric families, converted at each scrape."""

    def __init__(self, registry: kopf.metrics.Registry = kopf.metrics.REGISTRY) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        for family in self._registry.snapshot():
            yield convert(family)

    def describe(self) -> Iterator[Metric]:
        """The names only (no values): for the registry's check of duplicates at registration."""
        for family in self._registry.snapshot():
            yield convert(family, with_samples=False)


def convert(family: kopf.metrics.Family, *, with_samples: bool = True) -> PrometheusFamily:
    """One family of the core as ``prometheus_client``'s."""
    labels: List[str] = list(family.label_names)
    converted: PrometheusFamily
    if family.kind == 'counter':
        converted = CounterMetricFamily(family.name, family.help, labels=labels)
    elif family.kind == 'gauge':
        converted = GaugeMetricFamily(family.name, family.help, labels=labels)
    else:
        converted = HistogramMetricFamily(family.name, family.help, labels=labels)
    for sample in family.samples if with_samples else ():
        if isinstance(converted, HistogramMetricFamily):
            buckets = [(format_bound(bound), count) for bound, count in sample.buckets]
            converted.add_metric(list(sample.labels), buckets=buckets, sum_value=sample.sum)
        else:
            converted.add_metric(list(sample.labels), sample.value)
    return converted


class PrometheusExporter:
    """The ``kopf.metrics`` entry point of kopf-client: see the module's description."""

    def __init__(self, registry: prometheus_client.CollectorRegistry = prometheus_client.REGISTRY) -> None:
        self.registry = registry
        self.collector = KopfCollector()
        self._installed = False

    def install(self) -> None:
        if not self._installed:
            self.registry.register(self.collector)
            self._installed = True

    def render(self) -> Tuple[str, bytes]:
        return prometheus_client.CONTENT_TYPE_LATEST, prometheus_client.generate_latest(self.registry)


exporter = PrometheusExporter()
