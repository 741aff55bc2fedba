"""
The k8s-events of a handled object, as ``kubectl get events`` shows them.

Inputs: an operator whose create handler logs a message and posts an explicit
event (``kopf.info``), with ``settings.posting.loggers`` on (the default) and
off. Outputs: the core v1 events attached to the object in the API server.
"""
import json
import pathlib
import time

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'posting_events.py')


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    cluster.kubectl('apply', '-f', str(EXAMPLES / 'crd.yaml'))
    cluster.kubectl('wait', '--for=condition=established', '--timeout=60s', 'crd/kopfexamples.kopf.dev')


def events_of(cluster: Cluster, namespace: str, name: str) -> list[tuple[str, str, str]]:
    output = cluster.kubectl('get', 'events', '-n', namespace, '-o', 'json').stdout
    return sorted((item['type'], item['reason'], item['message']) for item in json.loads(output)['items']
                  if item['involvedObject'].get('name') == name and item['source'].get('component') == 'kopf')


def wait_for_events(cluster: Cluster, namespace: str, name: str, *, expected: int,
                    timeout: float = 20) -> list[tuple[str, str, str]]:
    deadline = time.monotonic() + timeout
    while True:
        events = events_of(cluster, namespace, name)
        if len(events) >= expected or time.monotonic() > deadline:
            return events
        time.sleep(0.2)


def run_and_create(cluster: Cluster, namespace: str, tmp_path: pathlib.Path, *, loggers: str) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log',
                         env={'TEST_POSTING_LOGGERS': loggers}) as op:
        op.wait_for(r"Starting the watch-stream for")
        cluster.kubectl('apply', '-n', namespace, '-f', str(EXAMPLES / 'obj.yaml'))
        op.wait_for(r"All handlers succeeded for creation\.")
        # The events are posted in the background: the last one of the cycle marks the end.
        op.wait_for(r"Handling cycle is finished, waiting for new changes\.")


def test_log_messages_and_explicit_events_are_posted_by_default(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    run_and_create(cluster, namespace, tmp_path, loggers='true')
    events = wait_for_events(cluster, namespace, 'kopf-example-1', expected=5)
    assert events == sorted([
        ('Normal', 'Explicit', 'An explicit event.'),
        ('Normal', 'Logging', 'A message from the handler.'),
        ('Normal', 'Logging', "Handler 'create_fn' succeeded."),
        ('Normal', 'Logging', 'Creation is processed: 1 succeeded; 0 failed.'),
        ('Normal', 'Logging', 'All handlers succeeded for creation.'),
    ])


def test_only_explicit_events_are_posted_without_loggers(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    run_and_create(cluster, namespace, tmp_path, loggers='false')
    # Nothing more may come: wait a few seconds for any late event before judging.
    events = wait_for_events(cluster, namespace, 'kopf-example-1', expected=2, timeout=3)
    assert events == [('Normal', 'Explicit', 'An explicit event.')]
