"""
The metrics endpoint of a real operator under the attacks of the security issue's §2: ``kopf run --metrics=URL``.

Inputs: the operator ``operators_src/metrics_subhandlers.py`` (a sub-handler per item of the
spec, ``id=f'item-{item}'``, as the docs show it) with ``--liveness`` and ``--metrics`` on
127.0.0.1; objects with many items, named like secrets; an asyncio client in the test process
that floods ``/metrics``: bursts of 200 requests opened and closed at once, and 8 scrapers
without a pause. Meanwhile, a thread requests ``/healthz`` as a kubelet does and samples the
operator's RSS (psutil, on its PID). Outputs: the exposition, parsed by ``prometheus_client``'s
own parser; the probes' statuses and times; the RSS growth; the operator's log. Nothing is mocked.

Before the fix, each sub-handler's id was a label value: 10 objects of 50 items made 500
series of each handler metric, with the items' names in them, kept after the objects were
deleted; and each scrape was rendered in the event loop, so that a burst of 200 scrapes of
that exposition held the loop (and the health probes) for seconds.
"""
import asyncio
import pathlib
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Optional

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest, create_object, poll
from integration.operating import OperatorProcess
from integration.probes import exchange, free_port
from kopf_testing import Kube

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'metrics_subhandlers.py')
GROUP = 'metrics.kopf.dev'
RESOURCE = f'subitemsobjs.{GROUP}'
OBJECTS = 10
ITEMS = 50
BURST = 200  # requests opened and closed at once
SCRAPERS = 8
FLOOD_SECONDS = 10.0
PROBE_LIMIT = 1.0  # a kubelet's default timeout of a probe
RSS_GROWTH_LIMIT = 50 * 1024 * 1024


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'subitemsobjs', 'SubItemsObj'))


def get(port: int, path: str, timeout: float = 30) -> Optional[tuple[int, str]]:
    """The status and the body, or ``None`` if nothing answers."""
    response = exchange(port, f'GET {path} HTTP/1.1\r\nHost: x\r\n\r\n'.encode(), timeout=timeout)
    return (response[0], response[1].decode()) if response is not None else None


def handler_runs(text: str) -> dict[str, float]:
    """The runs of each handler label of create_fn (not the logins'), all outcomes together."""
    runs: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples if family.name == 'kopf_handler_runs' else ():
            if (handler := sample.labels['handler']).startswith('create_fn'):
                runs[handler] = runs.get(handler, 0) + sample.value
    return runs


def series(text: str) -> set[tuple[str, frozenset[tuple[str, str]]]]:
    return {(sample.name, frozenset(sample.labels.items()))
            for family in text_string_to_metric_families(text) for sample in family.samples}


class Operator:
    def __init__(self, process: OperatorProcess, health_port: int, metrics_port: int) -> None:
        self.process, self.health_port, self.metrics_port = process, health_port, metrics_port

    @property
    def pid(self) -> int:
        assert self.process.process is not None
        return self.process.process.pid

    def scrape(self) -> str:
        response = get(self.metrics_port, '/metrics')
        assert response is not None and response[0] == 200, response
        return response[1]


@pytest.fixture
def operator(namespace: str, tmp_path: pathlib.Path) -> Iterator[Operator]:
    health_port, metrics_port = free_port(), free_port()
    process = OperatorProcess([OPERATOR, '--standalone', '-n', namespace,
                               f'--liveness=http://127.0.0.1:{health_port}/healthz',
                               f'--metrics=http://127.0.0.1:{metrics_port}/metrics'],
                              log_path=tmp_path / 'operator.log')
    process.start()
    poll(lambda: get(health_port, '/healthz', timeout=5), timeout=60)
    yield Operator(process, health_port, metrics_port)
    assert process.stop() == 0


def create_objects(cluster: Cluster, namespace: str, op: Operator) -> dict[str, float]:
    """Objects of many items, handled: the runs by handler label once all their items' runs are counted."""
    for index in range(OBJECTS):
        create_object(cluster, namespace, {
            'apiVersion': f'{GROUP}/v1', 'kind': 'SubItemsObj', 'metadata': {'name': f'obj{index}'},
            'spec': {'items': [f'secret-{index}-{item}' for item in range(ITEMS)]}})

    def handled() -> Optional[dict[str, float]]:
        runs = handler_runs(op.scrape())
        items = sum(value for handler, value in runs.items() if handler.startswith('create_fn/'))
        return runs if items >= OBJECTS * ITEMS else None

    result: dict[str, float] = poll(handled, timeout=120)
    return result


def test_the_items_make_no_series_of_their_own_and_are_not_shown(cluster: Cluster, namespace: str,
                                                                 operator: Operator) -> None:
    runs = create_objects(cluster, namespace, operator)
    assert runs == {'create_fn': OBJECTS, 'create_fn/*': OBJECTS * ITEMS}
    text = operator.scrape()
    assert 'secret' not in text
    before = series(text)
    Kube(cluster, namespace).kubectl('delete', RESOURCE, '--all')
    text = poll(lambda: t if watched_none(t := operator.scrape()) else None, timeout=60)
    after = {key for key in series(text) if key[0].startswith('kopf_handler')}
    assert after == {key for key in before if key[0].startswith('kopf_handler')}  # nothing per object


def watched_none(text: str) -> bool:
    """No objects of the resource are known anymore (the deleted ones are forgotten)."""
    return all(sample.value == 0 for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == 'kopf_objects_watched' and sample.labels['resource'] == RESOURCE)


async def flood(port: int, seconds: float) -> tuple[int, int]:
    """Bursts of requests opened and closed at once (each second), and scrapers without a pause."""
    deadline = time.monotonic() + seconds
    scraped, failed = 0, 0

    async def open_and_close() -> None:
        try:
            _, writer = await asyncio.open_connection('127.0.0.1', port)
        except OSError:
            return
        writer.write(b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
        writer.close()

    async def bursts() -> None:
        while time.monotonic() < deadline:
            await asyncio.gather(*[open_and_close() for _ in range(BURST)])
            await asyncio.sleep(1.0)

    async def scraper() -> None:
        nonlocal scraped, failed
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection('127.0.0.1', port)
                writer.write(b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
                response = await asyncio.wait_for(reader.read(), timeout=30)
                writer.close()
            except (OSError, asyncio.TimeoutError):
                response = b''
            scraped += 1
            failed += not response.startswith(b'HTTP/1.1 200 ')

    await asyncio.gather(bursts(), *[scraper() for _ in range(SCRAPERS)])
    return scraped, failed


def test_a_flood_of_scrapes_holds_neither_the_health_probes_nor_the_memory(
        cluster: Cluster, namespace: str, operator: Operator) -> None:
    create_objects(cluster, namespace, operator)
    memory = psutil.Process(operator.pid)
    for _ in range(20):  # the server's code and buffers in use before the baseline, as in a running pod
        operator.scrape()
    rss_before = memory.memory_info().rss
    stop, probes, rss = threading.Event(), [], []

    def probe() -> None:
        while not stop.is_set():
            started = time.monotonic()
            response = get(operator.health_port, '/healthz', timeout=10)
            probes.append((response[0] if response else None, time.monotonic() - started))
            rss.append(memory.memory_info().rss)
            stop.wait(0.2)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        scraped, failed = asyncio.run(flood(operator.metrics_port, FLOOD_SECONDS))
    finally:
        stop.set()
        prober.join()
    statuses, times = zip(*probes, strict=True)
    growth = max(rss) - rss_before
    print(f"\n{len(probes)} probes: median {statistics.median(times):.3f} s, max {max(times):.3f} s; "
          f"RSS {rss_before / 2**20:.1f} MiB, peak +{growth / 2**20:.1f} MiB; {scraped} scrapes, {failed} failed.")
    assert set(statuses) == {200}, probes
    assert max(times) < PROBE_LIMIT, probes
    assert growth < RSS_GROWTH_LIMIT
    assert scraped > SCRAPERS * FLOOD_SECONDS  # the scrapers were answered all along
    assert "Traceback" not in operator.process.log
