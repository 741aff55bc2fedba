"""
Error handling against a real API server: temporary, permanent and arbitrary errors, limits, restarts.

Inputs: objects of a CRD of this module, labelled to select which failing
handler of ``operators_src/errors_handlers.py`` handles them; the operator is
stopped and started again by the tests. Outputs: the handlers' own log lines
(the ``retry`` kwarg and the wall-clock time of every attempt), the framework's
log lines as the manual words them ("Error handling"), and the progress records,
results and diff-base stored on the objects, as read back from the API server.
"""
import itertools
import json
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds
from integration.operating import OperatorProcess
from kopf_testing import Kube, poll

ERRORS = str(pathlib.Path(__file__).parent / 'operators_src' / 'errors_handlers.py')
GROUP = 'errors.kopf.dev'
PLURAL = 'errorobjs'
PREFIX = 'kopf.zalando.org'
DIFFBASE = f'{PREFIX}/last-handled-configuration'
FINISHED = r"Handling cycle is finished, waiting for new changes\."
TIMESTAMP = r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00'

Object = dict[str, Any]


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    apply_crds(cluster, {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{PLURAL}.{GROUP}'},
        'spec': {'group': GROUP, 'scope': 'Namespaced',
                 'names': {'plural': PLURAL, 'singular': 'errorobj', 'kind': 'ErrorObj'},
                 'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                               'schema': {'openAPIV3Schema': {
                                   'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}]}})


def start_operator(namespace: str, log_path: pathlib.Path, env: dict[str, str] | None = None) -> OperatorProcess:
    process = OperatorProcess([ERRORS, '-n', namespace, '--verbose'], log_path=log_path, env=env)
    process.start()
    process.wait_for(rf"Starting the watch-stream for {PLURAL}\.v1\.{re.escape(GROUP)}")
    return process


@pytest.fixture
def operator(operator_process: Callable[..., OperatorProcess]) -> OperatorProcess:
    process = operator_process(ERRORS, '--verbose', expected_errors=['.'])  # errors are what is tested here
    process.wait_for(rf"Starting the watch-stream for {PLURAL}\.v1\.{re.escape(GROUP)}")
    return process


def create(cluster: Cluster, namespace: str, name: str, mode: str) -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': f'{GROUP}/v1', 'kind': 'ErrorObj',
        'metadata': {'name': name, 'labels': {'mode': mode}}, 'spec': {'field': 'value'}}))


def get_object(cluster: Cluster, namespace: str, name: str) -> Object:
    return kubeobjects.get_object(cluster, namespace, PLURAL, name)


def wait_for_object(cluster: Cluster, namespace: str, name: str, predicate: Callable[[Object], bool],
                    *, timeout: float = 20) -> Object:
    return kubeobjects.wait_for_object(cluster, namespace, PLURAL, name, predicate, timeout=timeout)


def wait_for_event(cluster: Cluster, namespace: str, name: str, message: str, *, timeout: float = 20) -> Object:
    """Poll the k8s-events of the object until one has the message (they are posted asynchronously)."""
    def event_with_the_message() -> Object | None:
        events = Kube(cluster, namespace).list('events', field_selector=f'involvedObject.name={name}')
        return next((event for event in events if event.get('message') == message), None)
    event_with_the_message.__doc__ = f'a k8s-event {message!r} of {name!r}'
    return poll(event_with_the_message, timeout=timeout)


def record_of(obj: Object, handler_id: str) -> Any:
    """The handler's progress record as stored in its annotation (``None`` if absent)."""
    raw = obj['metadata'].get('annotations', {}).get(f'{PREFIX}/{handler_id}')
    return json.loads(raw) if raw is not None else None


def attempts(log: str, name: str, obj: str = 'obj') -> list[tuple[int, float]]:
    """The (retry, time) of every invocation of the handler, as the handler itself logged them."""
    found = re.findall(rf"/{obj}\] {name} is called with retry=(\d+) at (\d+\.\d+)", log)
    return [(int(retry), float(when)) for retry, when in found]


def lines(log: str, obj: str, text: str) -> int:
    """How many times the object's log line is there (exactly this text after the object's prefix)."""
    return len(re.findall(rf"/{obj}\] {re.escape(text)}$", log, re.MULTILINE))


def test_temporary_error_is_retried_after_its_delay_and_then_succeeds(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'obj', 'temporary')
    operator.wait_for(r"Handler 'temporary_fn' succeeded\.", timeout=20)
    log = operator.wait_for(FINISHED)
    calls = attempts(log, 'temporary_fn')
    assert [retry for retry, _ in calls] == [0, 1, 2]
    assert all(later - earlier >= 1.0 for (_, earlier), (_, later) in itertools.pairwise(calls))  # delay=1
    assert lines(log, 'obj', "Handler 'temporary_fn' failed temporarily: not yet") == 2
    assert lines(log, 'obj', "Creation is processed: 1 succeeded; 0 failed.") == 1
    assert 'Traceback' not in log  # the expected errors are logged without a stack trace

    obj = get_object(cluster, namespace, 'obj')
    assert obj['status']['temporary_fn'] == {'retry': 2}
    assert record_of(obj, 'temporary_fn') is None  # purged once all is done
    assert json.loads(obj['metadata']['annotations'][DIFFBASE])['spec'] == {'field': 'value'}


def test_permanent_error_fails_the_handler_at_once_without_retries(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'obj', 'permanent')
    log = operator.wait_for(FINISHED)
    assert [retry for retry, _ in attempts(log, 'permanent_fn')] == [0]
    assert lines(log, 'obj', "Handler 'permanent_fn' failed permanently: never ever") == 1
    assert lines(log, 'obj', "Creation is processed: 0 succeeded; 1 failed.") == 1
    assert "All handlers succeeded" not in log
    assert 'Traceback' not in log

    # Nothing is left to retry: no progress is kept, and the creation counts as handled.
    obj = get_object(cluster, namespace, 'obj')
    assert record_of(obj, 'permanent_fn') is None
    assert 'permanent_fn' not in obj.get('status', {})
    assert DIFFBASE in obj['metadata']['annotations']

    # The error is reported via the object's k8s-events too.
    event = wait_for_event(cluster, namespace, 'obj', "Handler 'permanent_fn' failed permanently: never ever")
    assert event['type'] == 'Warning'
    assert event['involvedObject']['uid'] == obj['metadata']['uid']


def test_arbitrary_exception_is_retried_with_the_backoff_and_then_succeeds(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'obj', 'arbitrary')
    operator.wait_for(r"Handler 'arbitrary_fn' succeeded\.", timeout=20)
    log = operator.wait_for(FINISHED)
    calls = attempts(log, 'arbitrary_fn')
    assert [retry for retry, _ in calls] == [0, 1, 2]
    assert all(later - earlier >= 1.0 for (_, earlier), (_, later) in itertools.pairwise(calls))  # backoff=1
    assert lines(log, 'obj', "Handler 'arbitrary_fn' failed with an exception and will try again "
                             "in 1 seconds: boom") == 2
    assert log.count('Traceback (most recent call last)') == 2  # unexpected errors: with stack traces
    assert log.count('ValueError: boom') == 2
    assert get_object(cluster, namespace, 'obj')['status']['arbitrary_fn'] == {'retry': 2}


def test_retries_and_timeout_limits_fail_the_handlers(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    for mode in ['retries', 'retries-temporary', 'timeout']:
        create(cluster, namespace, mode, mode)
    log = operator.wait_for(r"Creation is processed: 0 succeeded; 1 failed\.", count=3, timeout=20)

    # retries=3, arbitrary errors: the 3rd failure is the last (a 4th attempt would exceed the limit).
    assert [retry for retry, _ in attempts(log, 'retries_fn', 'retries')] == [0, 1, 2]
    assert lines(log, 'retries', "Handler 'retries_fn' failed with an exception and will try again "
                                 "in 1 seconds: boom") == 2
    assert lines(log, 'retries', "Handler 'retries_fn' failed with an exception and will stop now "
                                 "(it would exceed 3 retries on the next attempt): boom") == 1

    # retries=2, temporary errors: the same, in the temporary errors' wording.
    assert [retry for retry, _ in attempts(log, 'temporary_retries_fn', 'retries-temporary')] == [0, 1]
    assert lines(log, 'retries-temporary', "Handler 'temporary_retries_fn' failed temporarily: not yet") == 1
    assert lines(log, 'retries-temporary', "Handler 'temporary_retries_fn' failed temporarily "
                                           "but will exceed 2 retries: not yet") == 1

    # timeout=2 with delay=1: the 2nd attempt is a second after the start; a 3rd would be too late.
    assert [retry for retry, _ in attempts(log, 'timeout_fn', 'timeout')] == [0, 1]
    assert lines(log, 'timeout', "Handler 'timeout_fn' failed temporarily: not yet") == 1
    assert lines(log, 'timeout', "Handler 'timeout_fn' failed temporarily "
                                 "but will time out after 2 seconds: not yet") == 1

    for name, handler_id in [('retries', 'retries_fn'), ('retries-temporary', 'temporary_retries_fn'),
                             ('timeout', 'timeout_fn')]:
        obj = wait_for_object(cluster, namespace, name, lambda o: DIFFBASE in o['metadata']['annotations'])
        assert record_of(obj, handler_id) is None


def test_retries_continue_after_a_restart_and_finished_handlers_are_not_rerun(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    create(cluster, namespace, 'obj', 'restart')

    # The first operator: one handler succeeds, the other keeps failing until the operator stops.
    first = start_operator(namespace, tmp_path / 'first.log', env={'ERRORS_SUCCEED_FROM': '1000'})
    try:
        first.wait_for(r"restarting_fn is called with retry=1 ")
        wait_for_object(cluster, namespace, 'obj',
                        lambda o: (record_of(o, 'restarting_fn') or {}).get('retries', 0) >= 2)
    finally:
        assert first.stop() == 0
    assert [retry for retry, _ in attempts(first.log, 'finished_fn')] == [0]

    # What is stored when the operator is away is all that the next one knows.
    obj = get_object(cluster, namespace, 'obj')
    pending, finished = record_of(obj, 'restarting_fn'), record_of(obj, 'finished_fn')
    stored_retries = pending['retries']
    assert stored_retries >= 2
    assert list(pending) == ['started', 'delayed', 'purpose', 'retries', 'success', 'failure', 'message']
    assert pending['purpose'] == 'create' and pending['message'] == 'not yet'
    assert pending['success'] is False and pending['failure'] is False
    assert re.fullmatch(TIMESTAMP, pending['started']) and re.fullmatch(TIMESTAMP, pending['delayed'])
    assert list(finished) == ['started', 'stopped', 'purpose', 'retries', 'success', 'failure']
    assert finished['success'] is True and finished['retries'] == 1
    assert obj['status']['finished_fn'] == {'message': 'done'}

    # The second operator continues the retries from the stored counter, not from zero:
    # one more failure (to see the counter grow on), then a success.
    succeed_from = stored_retries + 1
    second = start_operator(namespace, tmp_path / 'second.log', env={'ERRORS_SUCCEED_FROM': str(succeed_from)})
    try:
        second.wait_for(r"Handler 'restarting_fn' succeeded\.", timeout=20)
        log = second.wait_for(FINISHED)
    finally:
        assert second.stop() == 0
    calls = attempts(log, 'restarting_fn')
    assert [retry for retry, _ in calls] == [stored_retries, succeed_from]
    assert attempts(log, 'finished_fn') == []
    assert "Handler 'finished_fn'" not in log
    assert lines(log, 'obj', "Creation is processed: 2 succeeded; 0 failed.") == 1

    obj = get_object(cluster, namespace, 'obj')
    assert obj['status']['restarting_fn'] == {'retry': succeed_from}
    assert record_of(obj, 'restarting_fn') is None and record_of(obj, 'finished_fn') is None
    assert DIFFBASE in obj['metadata']['annotations']

    # The third operator finds nothing to do: the finished creation is not handled again.
    third = start_operator(namespace, tmp_path / 'third.log')
    try:
        log = third.wait_for(FINISHED)
    finally:
        assert third.stop() == 0
    assert ' is called with retry=' not in log
    assert "Handler '" not in log
