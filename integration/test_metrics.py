"""
Prometheus metrics of a real operator: ``kopf run --metrics=URL``, scraped as Prometheus scrapes it.

Inputs: the operator ``operators_src/metrics_handlers.py`` (one create handler that
succeeds, fails temporarily once, or fails permanently, by the object's ``spec.mode``),
three objects, and plain HTTP requests to the metrics URL. Outputs: the exposition, parsed
by ``prometheus_client``'s own text parser (nothing here reads the format by hand), and
the operator's listening sockets as the kernel lists them (``/proc``).
"""
import os
import pathlib
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Optional

import pytest
from prometheus_client.parser import text_string_to_metric_families

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest, create_object, poll
from integration.operating import OperatorProcess, kopf_executable
from integration.probes import free_port

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'metrics_handlers.py')
GROUP = 'metrics.kopf.dev'
RESOURCE = f'metricsobjs.{GROUP}'

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'metricsobjs', 'MetricsObj'))


def scrape(url: str) -> Optional[tuple[str, str]]:
    """The content type and the text of the exposition, or None if nothing answers there (yet)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.headers['Content-Type'], response.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None


def parse(text: str) -> Samples:
    """Every sample by its name and labels, as prometheus_client's parser reads them."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def runs(samples: Samples, handler: str) -> dict[str, float]:
    """The handler's runs by outcome."""
    return {dict(labels)['outcome']: value for (name, labels), value in samples.items()
            if name == 'kopf_handler_runs_total' and dict(labels).get('handler') == handler}


def listening_ports(pid: int) -> set[int]:
    """The TCP ports that the process listens on, from the kernel's tables (no tool needed)."""
    fds = pathlib.Path(f'/proc/{pid}/fd')
    inodes = set()
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith('socket:['):
            inodes.add(target[len('socket:['):-1])
    ports = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        for line in pathlib.Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == '0A' and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(':', 1)[1], 16))
    return ports


def create_objects(cluster: Cluster, namespace: str) -> None:
    for mode in ('good', 'flaky', 'broken'):
        create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': 'MetricsObj',
                                           'metadata': {'name': mode}, 'spec': {'mode': mode}})


@pytest.fixture
def operator(namespace: str, tmp_path: pathlib.Path) -> Iterator[tuple[OperatorProcess, str]]:
    url = f'http://127.0.0.1:{free_port()}/metrics'
    process = OperatorProcess([OPERATOR, '--verbose', '--standalone', '-n', namespace, f'--metrics={url}'],
                              log_path=tmp_path / 'operator.log')
    process.start()
    yield process, url
    process.stop()


def test_the_handlers_runs_by_outcome_and_their_durations(cluster: Cluster, namespace: str,
                                                          operator: tuple[OperatorProcess, str]) -> None:
    process, url = operator
    create_objects(cluster, namespace)
    process.wait_for(r"\[.*/broken\] Handler 'create_fn' failed permanently: never", timeout=60)
    process.wait_for(r"\[.*/flaky\] Handler 'create_fn' succeeded\.", timeout=60)
    process.wait_for(r"\[.*/good\] Handler 'create_fn' succeeded\.", timeout=60)

    content_type, _ = poll(lambda: scrape(url), timeout=30)
    assert content_type.startswith('text/plain; version=')
    # The results' own patches come back as events: scraped again once none of them waits.
    waiting = ('kopf_objects_waiting', frozenset({('resource', RESOURCE)}))
    samples = poll(lambda: s if (s := parse(scrape(url)[1]))[waiting] == 0 else None, timeout=30)  # type: ignore[index]
    assert runs(samples, 'create_fn') == {'success': 2, 'temporary_error': 1, 'permanent_error': 1}
    labels = frozenset({('handler', 'create_fn'), ('resource', RESOURCE)})
    assert samples[('kopf_handler_duration_seconds_count', labels)] == 4
    assert samples[('kopf_handler_duration_seconds_bucket', labels | {('le', '+Inf')})] == 4
    assert 0 < samples[('kopf_handler_duration_seconds_sum', labels)] < 10
    assert samples[('kopf_objects_watched', frozenset({('resource', RESOURCE)}))] == 3
    assert samples[('kopf_queue_duration_seconds_count', frozenset({('resource', RESOURCE)}))] >= 3
    assert samples[('kopf_watch_restarts_total', frozenset({('resource', RESOURCE)}))] == 0
    patches = samples[('kopf_rest_client_requests_total', frozenset({('verb', 'PATCH'), ('code', '200')}))]
    assert patches >= 4  # each object's result, and the flaky one's retry
    assert samples[('kopf_rest_client_request_duration_seconds_count', frozenset({('verb', 'PATCH')}))] >= patches
    assert listening_ports(process.process.pid) == {int(url.split(':')[2].split('/')[0])}  # type: ignore[union-attr]


def test_an_operator_without_the_option_opens_no_port(cluster: Cluster, namespace: str,
                                                      tmp_path: pathlib.Path) -> None:
    with OperatorProcess([OPERATOR, '--verbose', '--standalone', '-n', namespace],
                         log_path=tmp_path / 'operator.log') as process:
        create_objects(cluster, namespace)
        process.wait_for(r"\[.*/good\] Handler 'create_fn' succeeded\.", timeout=60)
        assert process.process is not None
        assert listening_ports(process.process.pid) == set()


def test_a_metrics_url_without_a_port_is_one_message(namespace: str) -> None:
    result = subprocess.run([kopf_executable(), 'run', OPERATOR, '--standalone', '-n', namespace,
                             '--metrics=http://0.0.0.0/metrics'], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: The metrics endpoint 'http://0.0.0.0/metrics' needs a host and a port to listen on; "
        "e.g. http://0.0.0.0:9090/metrics.")
    assert 'Traceback' not in result.stderr
