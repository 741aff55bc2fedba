"""
The core's counters, gauges and histograms, and their snapshots.

Inputs: recordings into a fresh registry of each test (never the process's own).
Outputs: the snapshot's families and samples, exactly. Nothing is mocked.
"""
import gc
import math
import threading
from typing import Callable

import pytest

from kopf._cogs.helpers import metrics


@pytest.fixture
def registry() -> metrics.Registry:
    return metrics.Registry()


def test_counters_add_up_per_label_values(registry: metrics.Registry) -> None:
    counter = registry.counter('runs_total', "Runs.", ('handler', 'outcome'))
    counter.inc(('fn', 'success'))
    counter.inc(('fn', 'success'))
    counter.inc(('fn', 'permanent_error'), 3)
    [family] = registry.snapshot()
    assert (family.name, family.kind, family.help, family.label_names) == (
        'runs_total', 'counter', "Runs.", ('handler', 'outcome'))
    assert family.samples == (metrics.Sample(labels=('fn', 'success'), value=2.0),
                              metrics.Sample(labels=('fn', 'permanent_error'), value=3.0))


def test_gauges_go_up_and_down_and_are_set(registry: metrics.Registry) -> None:
    gauge = registry.gauge('running', "Running.", ('handler',))
    gauge.inc(('a',))
    gauge.inc(('a',))
    gauge.dec(('a',))
    gauge.set(('b',), 7)
    assert gauge.value(('a',)) == 1
    assert gauge.value(('b',)) == 7
    assert gauge.value(('c',)) == 0


def test_gauge_sources_are_read_at_the_snapshot_and_summed_per_labels(registry: metrics.Registry) -> None:
    gauge = registry.gauge('watched', "Watched.", ('resource',))
    sizes = {'one': 2, 'two': 3}
    gauge.add_source(('pods',), lambda: sizes['one'])
    remove = gauge.add_source(('pods',), lambda: sizes['two'])
    assert gauge.value(('pods',)) == 5
    sizes['one'] = 10
    assert gauge.value(('pods',)) == 13
    remove()
    assert gauge.value(('pods',)) == 10


def test_weak_gauge_sources_go_with_their_owners(registry: metrics.Registry) -> None:
    class Stream:
        known = {'uid1': 1, 'uid2': 2}

    gauge = registry.gauge('watched', "Watched.", ('resource',))
    stream = Stream()
    gauge.add_weak_source(('pods',), stream, lambda owner: len(owner.known))
    assert gauge.value(('pods',)) == 2
    del stream
    gc.collect()
    assert registry.snapshot()[0].samples == ()


def test_histograms_count_per_bucket_cumulatively(registry: metrics.Registry) -> None:
    histogram = registry.histogram('duration_seconds', "Durations.", ('handler',), buckets=(0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 2.0):
        histogram.observe(('fn',), value)
    [family] = registry.snapshot()
    [sample] = family.samples
    assert sample.buckets == ((0.1, 2.0), (1.0, 3.0), (math.inf, 4.0))  # "le": 0.1 counts 0.1 itself
    assert sample.value == 4.0  # the count
    assert sample.sum == pytest.approx(2.65)
    assert histogram.count(('fn',)) == 4


@pytest.mark.parametrize('buckets', [(), (1.0, 1.0), (math.inf,)], ids=['none', 'repeated', 'only-inf'])
def test_histograms_need_distinct_buckets(registry: metrics.Registry, buckets: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match=r"The buckets of x must be distinct numbers, at least one"):
        registry.histogram('x', "X.", buckets=buckets)


def test_a_name_is_declared_once(registry: metrics.Registry) -> None:
    registry.counter('x_total', "X.")
    with pytest.raises(ValueError, match=r"The metric 'x_total' is declared already\."):
        registry.gauge('x_total', "X.")


def test_the_snapshot_keeps_the_order_of_declaration(registry: metrics.Registry) -> None:
    registry.gauge('b', "B.")
    registry.counter('a_total', "A.")
    registry.histogram('c_seconds', "C.")
    assert [family.name for family in registry.snapshot()] == ['b', 'a_total', 'c_seconds']


def test_snapshots_from_another_thread_while_recording(registry: metrics.Registry) -> None:
    counter = registry.counter('runs_total', "Runs.", ('n',))
    gauge = registry.gauge('waiting', "Waiting.", ('n',))
    streams: dict[int, int] = {}
    gauge.add_source(('all',), lambda: float(len(streams.copy())))
    stop = threading.Event()
    failures: list[Exception] = []

    def scrape() -> None:
        while not stop.is_set():
            try:
                registry.snapshot()
            except Exception as e:  # pragma: no cover  (the failure that this test is about)
                failures.append(e)

    thread = threading.Thread(target=scrape)
    thread.start()
    try:
        for i in range(20000):
            counter.inc((str(i % 500),))
            streams[i] = i
            if i % 3:
                del streams[i]
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert sum(sample.value for sample in registry.snapshot()[0].samples) == 20000


def recorder(registry: metrics.Registry, kind: str) -> Callable[[tuple[str, ...]], None]:
    """One record of the kind's own sort, by label values: for a count of 1 per call in each kind."""
    if kind == 'counter':
        return registry.counter('many_total', "Many.", ('handler',)).inc
    if kind == 'gauge':
        return registry.gauge('many', "Many.", ('handler',)).inc
    histogram = registry.histogram('many_seconds', "Many.", ('handler',))
    return lambda labels: histogram.observe(labels, 0.1)


@pytest.mark.parametrize('kind', ['counter', 'gauge', 'histogram'])
def test_label_values_without_bound_make_at_most_1001_series(registry: metrics.Registry, kind: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    # The attack: label values made of objects' contents (e.g. sub-handler ids per item), 20 objects x 100 items x 3.
    record = recorder(registry, kind)
    for i in range(6000):
        record((f'create_fn/item-{i}',))
    [family] = registry.snapshot()
    assert len(family.samples) == 1001  # the first 1000 label values, and one series for all the others
    assert family.samples[-1].labels == ('(other)',)
    assert family.samples[-1].value == 5000  # counted, not lost
    assert sum(sample.value for sample in family.samples) == 6000
    record(('create_fn/item-0',))  # a known one is still its own
    assert registry.snapshot()[0].samples[0].value == 2
    assert [(r.name, r.levelname, r.message) for r in caplog.records] == [
        ('kopf.metrics', 'WARNING', f"The metric {family.name} has reached its limit of 1000 series: new label "
                                    f"values (the first one: ('create_fn/item-1000',)) are counted together as "
                                    f"'(other)'. If it is not expected, something makes label values without bound.")]


def test_a_gauges_decrements_go_where_its_increments_went(registry: metrics.Registry) -> None:
    gauge = registry.gauge('running', "Running.", ('handler', 'resource'), max_series=2)
    for name in ('a', 'b', 'c', 'd'):
        gauge.inc((name, 'pods'))
    assert gauge.value(('(other)', '(other)')) == 2
    for name in ('a', 'b', 'c', 'd'):
        gauge.dec((name, 'pods'))
    assert [sample.value for sample in registry.snapshot()[0].samples] == [0, 0, 0]
