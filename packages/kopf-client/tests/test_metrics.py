"""
The Prometheus exposition of the core's metrics (``kopf-client[metrics]``).

Inputs: a fresh core registry with known figures; a private ``prometheus_client``
registry (the process's default one is left alone, except where the entry point is
what is tested). Outputs: the exposition as ``prometheus_client``'s own parser reads it.
"""
import importlib.metadata

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families

import kopf.metrics
from kopf_client import _metrics


@pytest.fixture
def core() -> kopf.metrics.Registry:
    registry = kopf.metrics.Registry()
    runs = registry.counter('kopf_handler_runs_total', "Runs.", ('handler', 'outcome'))
    runs.inc(('create_fn', 'success'), 2)
    runs.inc(('create_fn', 'permanent_error'))
    registry.gauge('kopf_objects_watched', "Watched.", ('resource',)).set(('pods',), 3)
    durations = registry.histogram('kopf_handler_duration_seconds', "Durations.", ('handler',), buckets=(0.1, 1))
    durations.observe(('create_fn',), 0.05)
    durations.observe(('create_fn',), 0.5)
    registry.gauge('kopf_empty', "Nothing yet.", ('lease',))
    return registry


def exposed(core: kopf.metrics.Registry) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    registry = prometheus_client.CollectorRegistry()
    registry.register(_metrics.KopfCollector(core))
    text = prometheus_client.generate_latest(registry).decode()
    return {family.name: [(s.name, s.labels, s.value) for s in family.samples]
            for family in text_string_to_metric_families(text)}


def test_counters_gauges_and_histograms_as_prometheus_reads_them(core: kopf.metrics.Registry) -> None:
    families = exposed(core)
    assert families['kopf_handler_runs'] == [
        ('kopf_handler_runs_total', {'handler': 'create_fn', 'outcome': 'success'}, 2.0),
        ('kopf_handler_runs_total', {'handler': 'create_fn', 'outcome': 'permanent_error'}, 1.0),
    ]
    assert families['kopf_objects_watched'] == [('kopf_objects_watched', {'resource': 'pods'}, 3.0)]
    assert families['kopf_handler_duration_seconds'] == [
        ('kopf_handler_duration_seconds_bucket', {'handler': 'create_fn', 'le': '0.1'}, 1.0),
        ('kopf_handler_duration_seconds_bucket', {'handler': 'create_fn', 'le': '1.0'}, 2.0),
        ('kopf_handler_duration_seconds_bucket', {'handler': 'create_fn', 'le': '+Inf'}, 2.0),
        ('kopf_handler_duration_seconds_count', {'handler': 'create_fn'}, 2.0),
        ('kopf_handler_duration_seconds_sum', {'handler': 'create_fn'}, 0.55),
    ]
    assert families['kopf_empty'] == []


def test_the_figures_are_read_at_each_scrape(core: kopf.metrics.Registry) -> None:
    assert exposed(core)['kopf_objects_watched'][0][2] == 3.0
    gauge = core.get('kopf_objects_watched')
    assert isinstance(gauge, kopf.metrics.Gauge)
    gauge.set(('pods',), 5)
    assert exposed(core)['kopf_objects_watched'][0][2] == 5.0


def test_the_collector_is_installed_once_and_refuses_duplicates(core: kopf.metrics.Registry) -> None:
    registry = prometheus_client.CollectorRegistry()
    exporter = _metrics.PrometheusExporter(registry)
    exporter.install()
    exporter.install()  # idempotent: no "Duplicated timeseries"
    assert b'kopf_handler_runs_total' in exporter.render()[1]
    with pytest.raises(ValueError, match=r"Duplicated timeseries"):
        registry.register(_metrics.KopfCollector())


def test_the_entry_point_installs_into_the_default_registry() -> None:
    [entry_point] = importlib.metadata.entry_points(group=kopf.metrics.ENTRY_POINT_GROUP, name='prometheus')
    exporter = entry_point.load()
    exporter.install()
    content_type, body = exporter.render()
    assert content_type == prometheus_client.CONTENT_TYPE_LATEST
    names = {family.name for family in text_string_to_metric_families(body.decode())}
    assert {'kopf_handler_runs', 'kopf_rest_client_requests', 'kopf_objects_watched'} <= names
    assert 'kopf_handler_runs' in {f.name for f in prometheus_client.REGISTRY.collect()}  # the embedding case
