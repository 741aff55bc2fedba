"""
Each kind of handler against a real API server: resume, create, update, delete, field, event.

Inputs: objects of ``handlerobjs`` and ``optionalobjs`` (``handlers.kopf.dev``),
created, patched and deleted with kubectl, sometimes while the operator
(``operators_src/handlers_lifecycle.py``) is stopped. Outputs: the objects as the
API server stores them (results in the status, finalizers) and the operator's
log lines, as the manual shows them.
"""
import json
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import DIFFBASE, FINALIZER, FINISHED, apply_crds, crd_manifest, get_object
from integration.kubeobjects import object_log_lines as lines_of
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'handlers_lifecycle.py')
GROUP = 'handlers.kopf.dev'


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'handlerobjs', 'HandlerObj'),
               crd_manifest(GROUP, 'optionalobjs', 'OptionalObj'))


@pytest.fixture
def operator(operator_process: Callable[..., OperatorProcess]) -> OperatorProcess:
    return operator_process(OPERATOR, '--verbose', start=False)


def start(operator: OperatorProcess) -> None:
    operator.start()
    operator.wait_for(r"Starting the watch-stream for handlerobjs\.v1\.handlers\.kopf\.dev")
    operator.wait_for(r"Starting the watch-stream for optionalobjs\.v1\.handlers\.kopf\.dev")


def create(cluster: Cluster, namespace: str, name: str, spec: dict[str, Any], *,
           kind: str = 'HandlerObj') -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': f'{GROUP}/v1', 'kind': kind, 'metadata': {'name': name}, 'spec': spec}))


def get(cluster: Cluster, namespace: str, name: str, plural: str = 'handlerobjs') -> dict[str, Any]:
    return get_object(cluster, namespace, f'{plural}.{GROUP}', name)


def patch_spec(cluster: Cluster, namespace: str, name: str, spec: dict[str, Any]) -> None:
    cluster.kubectl('patch', '-n', namespace, f'handlerobjs.{GROUP}', name, '--type=merge',
                    '-p', json.dumps({'spec': spec}))


def finished(operator: OperatorProcess, namespace: str, name: str, *, count: int = 1) -> str:
    """Wait until the object's handling cycles have finished ``count`` times in this run."""
    return operator.wait_for(rf"\[{namespace}/{name}\] {FINISHED}", count=count)


def test_create_handler_runs_once_and_its_result_goes_to_the_status(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    start(operator)
    create(cluster, namespace, 'obj', {'watched': 'a'})
    finished(operator, namespace, 'obj')
    obj = get(cluster, namespace, 'obj')
    assert obj['status']['create_fn'] == {'message': 'created', 'spec': {'watched': 'a'}}
    assert FINALIZER in obj['metadata']['finalizers']  # for the deletion handler
    assert json.loads(obj['metadata']['annotations'][DIFFBASE])['spec'] == {'watched': 'a'}

    # A real change later is an update, never a creation again.
    cluster.kubectl('label', '-n', namespace, f'handlerobjs.{GROUP}', 'obj', 'touched=yes')
    log = finished(operator, namespace, 'obj', count=2)
    assert lines_of(log, namespace, 'obj').count("Handler 'create_fn' is invoked.") == 1
    assert lines_of(log, namespace, 'obj').count("Handler 'update_fn' is invoked.") == 1


def test_update_handler_gets_the_diff_and_field_handler_only_its_field(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    start(operator)
    create(cluster, namespace, 'obj', {'watched': 'a'})
    finished(operator, namespace, 'obj')

    patch_spec(cluster, namespace, 'obj', {'other': 1})
    log = finished(operator, namespace, 'obj', count=2)
    assert get(cluster, namespace, 'obj')['status']['update_fn'] == {'diff': [['add', ['spec', 'other'], None, 1]]}
    # Only at the creation, not now: another field has changed.
    assert lines_of(log, namespace, 'obj').count("Handler 'watched_fn/spec.watched' succeeded.") == 1

    patch_spec(cluster, namespace, 'obj', {'watched': 'b'})
    log = finished(operator, namespace, 'obj', count=3)
    status = get(cluster, namespace, 'obj')['status']
    assert status['update_fn'] == {'diff': [['change', ['spec', 'watched'], 'a', 'b']]}
    assert status['watched_fn/spec.watched'] == {'change': ['a', 'b'], 'reason': 'update'}
    assert lines_of(log, namespace, 'obj').count("Handler 'watched_fn/spec.watched' succeeded.") == 2
    assert re.search(rf"\[{namespace}/obj\] Updating is processed: 2 succeeded; 0 failed\.", log)


def test_field_handler_runs_at_creation_when_the_field_is_set(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    # As in Kopf 1.45 (the manual's handlers.rst says "only when updated"): the field's first appearance.
    start(operator)
    create(cluster, namespace, 'with', {'watched': 'a'})
    create(cluster, namespace, 'without', {'other': 1})
    log = finished(operator, namespace, 'with')
    log = finished(operator, namespace, 'without')
    status = get(cluster, namespace, 'with')['status']
    assert status['watched_fn/spec.watched'] == {'change': [None, 'a'], 'reason': 'create'}
    assert re.search(rf"\[{namespace}/with\] Creation is processed: 2 succeeded; 0 failed\.", log)
    assert 'watched_fn/spec.watched' not in get(cluster, namespace, 'without')['status']
    assert "Handler 'watched_fn/spec.watched' is invoked." not in lines_of(log, namespace, 'without')


def test_delete_handler_runs_behind_the_finalizer_and_releases_the_object(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    start(operator)
    create(cluster, namespace, 'obj', {})
    finished(operator, namespace, 'obj')
    operator.stop()

    # Without the operator, the finalizer keeps the object in the cluster.
    cluster.kubectl('delete', '-n', namespace, f'handlerobjs.{GROUP}', 'obj', '--wait=false')
    obj = get(cluster, namespace, 'obj')
    assert obj['metadata']['deletionTimestamp'] and FINALIZER in obj['metadata']['finalizers']

    start(operator)
    log = operator.wait_for(rf"\[{namespace}/obj\] Deleted, really deleted, and we are notified\.")
    lines = lines_of(log, namespace, 'obj')
    assert lines.index("Cleaning up after the object.") < lines.index("Handler 'delete_fn' succeeded.")
    assert lines.index("Handler 'delete_fn' succeeded.") < \
        lines.index("Removing the finalizer, thus allowing the actual deletion.")
    result = cluster.kubectl('get', '-n', namespace, f'handlerobjs.{GROUP}', 'obj', check=False)
    assert result.returncode != 0 and 'NotFound' in result.stderr


def test_optional_delete_handler_adds_no_finalizer(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    start(operator)
    create(cluster, namespace, 'obj', {}, kind='OptionalObj')
    finished(operator, namespace, 'obj')
    obj = get(cluster, namespace, 'obj', plural='optionalobjs')
    assert obj['status']['optional_create_fn'] == 'created'
    assert not obj['metadata'].get('finalizers')
    operator.stop()

    # Nothing blocks the deletion, even with no operator running.
    cluster.kubectl('delete', '-n', namespace, f'optionalobjs.{GROUP}', 'obj', '--timeout=20s')
    result = cluster.kubectl('get', '-n', namespace, f'optionalobjs.{GROUP}', 'obj', check=False)
    assert result.returncode != 0 and 'NotFound' in result.stderr
    assert "Adding the finalizer" not in operator.log


def test_resume_handler_runs_once_per_operator_lifetime_and_create_never_again(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    start(operator)
    create(cluster, namespace, 'obj', {'watched': 'a'})
    finished(operator, namespace, 'obj')
    assert operator.stop() == 0

    start(operator)
    log = finished(operator, namespace, 'obj')
    lines = lines_of(log, namespace, 'obj')
    assert "Handler 'resume_fn' succeeded." in lines
    assert "Resuming is processed: 2 succeeded; 0 failed." in lines
    assert not [line for line in lines if line.startswith("Handler 'create_fn'")]
    assert get(cluster, namespace, 'obj')['status']['resume_fn'] == {'reason': 'resume'}

    # Later changes in the same operator process are updates: no more resuming.
    patch_spec(cluster, namespace, 'obj', {'watched': 'b'})
    log = finished(operator, namespace, 'obj', count=2)
    lines = lines_of(log, namespace, 'obj')
    assert lines.count("Handler 'resume_fn' is invoked.") == 1
    assert lines.count("Handler 'update_fn' succeeded.") == 1
    assert not [line for line in lines if line.startswith("Handler 'create_fn'")]


def test_object_created_while_the_operator_is_down_gets_creation_and_resuming(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'obj', {'watched': 'a'})
    start(operator)
    log = finished(operator, namespace, 'obj')
    lines = lines_of(log, namespace, 'obj')
    # The resume handlers are mixed into the creation cycle, in the order of declaration.
    invoked = [line for line in lines if line.endswith(" is invoked.") and 'event_fn' not in line]
    # The field handler too: spec.watched is set at the creation.
    assert invoked == ["Handler 'resume_fn' is invoked.", "Handler 'resume_deleted_fn' is invoked.",
                       "Handler 'create_fn' is invoked.", "Handler 'watched_fn/spec.watched' is invoked."]
    assert "Creation is processed: 4 succeeded; 0 failed." in lines
    status = get(cluster, namespace, 'obj')['status']
    assert status['resume_fn'] == {'reason': 'create'}
    assert status['create_fn'] == {'message': 'created', 'spec': {'watched': 'a'}}


def test_resume_handler_with_deleted_true_runs_for_an_object_being_deleted(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    start(operator)
    create(cluster, namespace, 'obj', {})
    finished(operator, namespace, 'obj')
    operator.stop()
    cluster.kubectl('delete', '-n', namespace, f'handlerobjs.{GROUP}', 'obj', '--wait=false')

    start(operator)
    log = operator.wait_for(rf"\[{namespace}/obj\] Deleted, really deleted, and we are notified\.")
    lines = lines_of(log, namespace, 'obj')
    assert "Resumed with the reason 'delete'." in lines
    assert "Handler 'resume_deleted_fn' succeeded." in lines
    assert "Handler 'delete_fn' succeeded." in lines
    assert not [line for line in lines if line.startswith("Handler 'resume_fn'")]  # not for deleted objects
    assert "Deletion is processed: 2 succeeded; 0 failed." in lines


def test_event_handler_sees_raw_events_with_none_for_the_initial_listing(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'listed', {})
    start(operator)
    operator.wait_for(rf"\[{namespace}/listed\] Raw event None of listed\.")

    create(cluster, namespace, 'watched', {})
    operator.wait_for(rf"\[{namespace}/watched\] Raw event 'ADDED' of watched\.")
    # The framework's own patches (the finalizer, the progress) are events too, and the event handlers
    # see them: at least the latest one (the events within one batch window are seen as the latest only).
    modified = rf"\[{namespace}/watched\] Raw event 'MODIFIED' of watched\."
    operator.wait_for(modified)
    finished(operator, namespace, 'watched')
    seen = len(re.findall(modified, operator.log))
    cluster.kubectl('label', '-n', namespace, f'handlerobjs.{GROUP}', 'watched', 'touched=yes')
    operator.wait_for(modified, count=seen + 1)
    cluster.kubectl('delete', '-n', namespace, f'handlerobjs.{GROUP}', 'watched', '--wait=false')
    log = operator.wait_for(rf"\[{namespace}/watched\] Raw event 'DELETED' of watched\.")

    assert lines_of(log, namespace, 'watched').count("Raw event 'ADDED' of watched.") == 1
    assert lines_of(log, namespace, 'listed').count("Raw event None of listed.") == 1
    assert "Raw event 'ADDED' of listed." not in log
