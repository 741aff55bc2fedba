"""
The k8s-events of a handled object, as ``kubectl get events`` shows them.

Inputs: an operator whose create handler logs a message and posts an explicit
event (``kopf.info``), with ``settings.posting.loggers`` off (the default, as in
Kopf 1.45) and on. Outputs: the core v1 events attached to the object in the API server.
"""
import json
import pathlib
from typing import Any, Optional

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess
from kopf_testing import poll

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'posting_events.py')


pytestmark = pytest.mark.usefixtures('example_crd')


def events_of(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    output = cluster.kubectl('get', 'events', '-n', namespace, '-o', 'json').stdout
    return [item for item in json.loads(output)['items'] if item['involvedObject'].get('name') == name]


def summaries(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted((item['type'], item['reason'], item['message']) for item in events
                  if item['source'].get('component') == 'kopf')


def wait_for_events(cluster: Cluster, namespace: str, name: str, *, expected: int,
                    timeout: float = 20) -> list[dict[str, Any]]:
    def enough() -> list[dict[str, Any]] | None:
        events = events_of(cluster, namespace, name)
        return events if len(events) >= expected else None
    try:
        return poll(enough, timeout=timeout)
    except AssertionError:  # the test compares the events seen then, whether or not all expected have come
        return events_of(cluster, namespace, name)


def run_create_and_collect(cluster: Cluster, namespace: str, tmp_path: pathlib.Path, *,
                           loggers: Optional[str], expected: int, timeout: float = 20,
                           env: Optional[dict[str, str]] = None) -> list[dict[str, Any]]:
    env = dict(env or {}, **({} if loggers is None else {'TEST_POSTING_LOGGERS': loggers}))
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log', env=env) as op:
        op.wait_for(r"Starting the watch-stream for")
        cluster.kubectl('apply', '-n', namespace, '-f', str(EXAMPLES / 'obj.yaml'))
        op.wait_for(r"All handlers succeeded for creation\.")
        op.wait_for(r"Handling cycle is finished, waiting for new changes\.")
        # The events are posted in the background: they are collected while the operator still runs.
        return wait_for_events(cluster, namespace, 'kopf-example-1', expected=expected, timeout=timeout)


def test_log_messages_and_explicit_events_are_posted_with_loggers(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    events = run_create_and_collect(cluster, namespace, tmp_path, loggers='true', expected=5)
    assert summaries(events) == sorted([
        ('Normal', 'Explicit', 'An explicit event.'),
        ('Normal', 'Logging', 'A message from the handler.'),
        ('Normal', 'Logging', "Handler 'create_fn' succeeded."),
        ('Normal', 'Logging', 'Creation is processed: 1 succeeded; 0 failed.'),
        ('Normal', 'Logging', 'All handlers succeeded for creation.'),
    ])


@pytest.mark.parametrize('loggers', [pytest.param(None, id='default'), pytest.param('false', id='explicit')])
def test_only_explicit_events_are_posted_without_loggers(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, loggers: Optional[str]) -> None:
    # Nothing more may come: wait a few seconds for any late event before judging.
    events = run_create_and_collect(cluster, namespace, tmp_path, loggers=loggers, expected=2, timeout=3)
    assert summaries(events) == [('Normal', 'Explicit', 'An explicit event.')]


def test_events_are_named_and_attributed_as_the_settings_say(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    env = {'TEST_POSTING_COMPONENT': 'my-operator', 'TEST_POSTING_INSTANCE': 'pod-123',
           'TEST_POSTING_PREFIX': 'my-event-'}
    events = run_create_and_collect(cluster, namespace, tmp_path, loggers=None, expected=1, env=env)
    [event] = [item for item in events if item['reason'] == 'Explicit']
    assert event['metadata']['name'].startswith('my-event-')
    assert event['source'] == {'component': 'my-operator'}
    assert (event['reportingComponent'], event['reportingInstance']) == ('my-operator', 'pod-123')
