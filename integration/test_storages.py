"""
The persistence storages against a real API server: where the state is, in which format, and that it works.

Inputs: the operator ``operators_src/storages_operator.py`` with its progress
and diff-base storages chosen by environment variables (as users configure them
in ``@kopf.on.startup``), for CRDs with and without the status subresource, and
for a CRD whose status schema prunes unknown fields. Each object's creation is
held half-done by a handler until the test labels the object, so the progress
stored mid-way can be read; the operator is restarted, and the object updated.
Outputs: the object as read back from the API server (annotations, status) and
the handlers' and framework's log lines. The formats are those of the manual's
"Continuity" and "Configuration" parts: ``kopf.zalando.org/<handler-id>``,
``kopf.zalando.org/last-handled-configuration``, ``status.kopf.progress.<id>``.
"""
import json
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'storages_operator.py')
GROUP = 'storages.kopf.dev'
WITH_STATUS = 'substores'  # with the status subresource
WITHOUT_STATUS = 'plainstores'  # without it: the status is a part of the main object
PRUNED = 'prunedstores'  # the status subresource, but its schema prunes unknown fields
PREFIX = 'kopf.zalando.org'
DIFFBASE = f'{PREFIX}/last-handled-configuration'
FINISHED = r"Handling cycle is finished, waiting for new changes\."
TIMESTAMP = r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00'

# The essence of the test object once created and labelled, as stored in the diff-base.
ESSENCE = {'spec': {'field': 'a'}, 'metadata': {'labels': {'go': 'yes'}}}
ESSENCE_JSON = '{"spec":{"field":"a"},"metadata":{"labels":{"go":"yes"}}}'

Object = dict[str, Any]


def crd(plural: str, *, status_subresource: bool, preserve_status: bool = True) -> Object:
    status_schema: Object = {'type': 'object'}
    if preserve_status:
        status_schema['x-kubernetes-preserve-unknown-fields'] = True
    version: Object = {'name': 'v1', 'served': True, 'storage': True,
                       'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {
                           'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
                           'status': status_schema}}}}
    if status_subresource:
        version['subresources'] = {'status': {}}
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': f'{plural}.{GROUP}'},
            'spec': {'group': GROUP, 'scope': 'Namespaced', 'versions': [version],
                     'names': {'plural': plural, 'singular': plural[:-1], 'kind': plural[:-1].capitalize()}}}


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    for definition in [crd(WITH_STATUS, status_subresource=True),
                       crd(WITHOUT_STATUS, status_subresource=False),
                       crd(PRUNED, status_subresource=True, preserve_status=False)]:
        cluster.kubectl('apply', '-f', '-', input=json.dumps(definition))
    for plural in [WITH_STATUS, WITHOUT_STATUS, PRUNED]:
        cluster.kubectl('wait', '--for=condition=established', '--timeout=60s', f'crd/{plural}.{GROUP}')


def start_operator(namespace: str, log_path: pathlib.Path, plural: str,
                   progress: str = 'smart', diffbase: str = 'annotations') -> OperatorProcess:
    env = {'STORAGES_PLURAL': f'{plural}.{GROUP}', 'STORAGES_PROGRESS': progress, 'STORAGES_DIFFBASE': diffbase}
    process = OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=log_path, env=env)
    process.start()
    process.wait_for(rf"Starting the watch-stream for {plural}\.v1\.{re.escape(GROUP)}")
    return process


def create(cluster: Cluster, namespace: str, plural: str, *, labels: dict[str, str] | None = None,
           status: Object | None = None) -> None:
    body: Object = {'apiVersion': f'{GROUP}/v1', 'kind': plural[:-1].capitalize(),
                    'metadata': {'name': 'obj', 'labels': labels or {}}, 'spec': {'field': 'a'}}
    if status is not None:
        body['status'] = status
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps(body))


def get_object(cluster: Cluster, namespace: str, plural: str) -> Object:
    return kubeobjects.get_object(cluster, namespace, plural, 'obj')


def wait_for_object(cluster: Cluster, namespace: str, plural: str, predicate: Callable[[Object], bool],
                    *, timeout: float = 20) -> Object:
    return kubeobjects.wait_for_object(cluster, namespace, plural, 'obj', predicate, timeout=timeout)


def calls(log: str, name: str) -> list[str]:
    """The handler's invocations, as it logged them itself (with their kwargs)."""
    return re.findall(rf"\] {name} is called with (.*)$", log, re.MULTILINE)


def annotations_of(obj: Object) -> dict[str, str]:
    return obj['metadata'].get('annotations', {})  # type: ignore[no-any-return]


def progress_records(obj: Object, progress: str) -> dict[str, Object]:
    """
    The progress records of ``create_fn`` & ``gated_fn`` where the storage puts them, and only there.

    The annotations' records are JSON strings; their key order is a part of the format, so they
    are parsed preserving it. The status' records are objects: the API server sorts their keys.
    """
    annotations, status = annotations_of(obj), obj.get('status', {})
    ids = ['create_fn', 'gated_fn']
    if progress in ('annotations', 'smart'):
        assert not status.get('kopf', {}).get('progress')
        return {i: json.loads(annotations[f'{PREFIX}/{i}']) for i in ids if f'{PREFIX}/{i}' in annotations}
    if progress == 'status':
        assert not [key for key in annotations if key.startswith(f'{PREFIX}/') and key != DIFFBASE]
        return {i: record for i, record in status.get('kopf', {}).get('progress', {}).items() if record}
    if progress == 'multi':
        assert not [key for key in annotations if key.startswith(f'{PREFIX}/') and key != DIFFBASE]
        in_annotations = {i: json.loads(annotations[f'my-op.example.com/{i}'])
                          for i in ids if f'my-op.example.com/{i}' in annotations}
        in_status = {i: record for i, record in status.get('my-operator', {}).items() if record}
        assert in_annotations == in_status  # stored in sync
        return in_annotations
    if progress == 'custom':
        assert not [key for key in annotations if key.startswith(f'{PREFIX}/') and key != DIFFBASE]
        return json.loads(annotations.get('storages.kopf.dev/progress', '{}'))  # type: ignore[no-any-return]
    raise ValueError(progress)


def diffbase_of(obj: Object, diffbase: str) -> Object:
    """The stored essence where the storage puts it, and only there, with the exact serialisation checked."""
    annotations, status = annotations_of(obj), obj.get('status', {})
    if diffbase == 'annotations':
        assert 'last-handled-configuration' not in status.get('kopf', {})
        raw = annotations[DIFFBASE]
        assert raw.endswith('\n') and raw == json.dumps(json.loads(raw), separators=(',', ':')) + '\n'
    elif diffbase == 'status':
        assert DIFFBASE not in annotations
        raw = status['kopf']['last-handled-configuration']
        assert raw == json.dumps(json.loads(raw), separators=(',', ':'))
    elif diffbase == 'multi':
        raw = status['diff-base']
        assert annotations[DIFFBASE] == raw + '\n'  # the same essence in both
    elif diffbase == 'custom':
        assert DIFFBASE not in annotations
        raw = annotations['storages.kopf.dev/essence']
        assert raw == json.dumps(json.loads(raw), sort_keys=True)
    else:
        raise ValueError(diffbase)
    return json.loads(raw)  # type: ignore[no-any-return]


@pytest.mark.parametrize('progress, diffbase, plural', [
    ('annotations', 'annotations', WITH_STATUS),
    ('status', 'status', WITH_STATUS),
    ('status', 'status', WITHOUT_STATUS),
    ('multi', 'multi', WITH_STATUS),
    ('smart', 'annotations', WITHOUT_STATUS),
    ('custom', 'custom', WITH_STATUS),
])
def test_storage_keeps_the_state_where_the_manual_says_and_survives_a_restart(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, progress: str, diffbase: str, plural: str) -> None:
    create(cluster, namespace, plural)
    first = start_operator(namespace, tmp_path / 'first.log', plural, progress, diffbase)
    try:
        first.wait_for(r"Handler 'gated_fn' failed temporarily: waiting for the go label")

        # Half-way: one handler has succeeded, the other one waits; both are recorded.
        obj = wait_for_object(cluster, namespace, plural, lambda o: len(progress_records(o, progress)) == 2)
        records = progress_records(obj, progress)
        done, pending = records['create_fn'], records['gated_fn']
        assert done['success'] is True and done['failure'] is False and done['retries'] == 1
        assert pending['success'] is False and pending['failure'] is False and pending['retries'] == 1
        assert done['purpose'] == pending['purpose'] == 'create'
        assert pending['message'] == 'waiting for the go label'
        assert all(re.fullmatch(TIMESTAMP, value) for value in
                   [done['started'], done['stopped'], pending['started'], pending['delayed']])
        if progress in ('annotations', 'smart', 'multi'):  # JSON strings: the key order is the format's
            assert list(done) == ['started', 'stopped', 'purpose', 'retries', 'success', 'failure']
            assert list(pending) == ['started', 'delayed', 'purpose', 'retries', 'success', 'failure', 'message']
        else:
            assert set(done) == {'started', 'stopped', 'purpose', 'retries', 'success', 'failure'}
            assert set(pending) == {'started', 'delayed', 'purpose', 'retries', 'success', 'failure', 'message'}
        assert obj['status']['create_fn'] == {'message': 'created'}  # the results: in the status in all cases

        # The label is a change too, but the creation is not finished yet: it goes on as a creation
        # (the delayed handler runs when its delay is over: a new change does not hurry it).
        cluster.kubectl('label', '-n', namespace, plural, 'obj', 'go=yes')
        first.wait_for(r"Handler 'gated_fn' succeeded\.")
        first.wait_for(FINISHED)
        obj = wait_for_object(cluster, namespace, plural, lambda o: not progress_records(o, progress))
        assert diffbase_of(obj, diffbase) == ESSENCE
        assert obj['status']['gated_fn'] == {'retry': 1}
    finally:
        assert first.stop() == 0
    assert calls(first.log, 'create_fn') == ['retry=0']
    assert calls(first.log, 'gated_fn') == ['retry=0', 'retry=1']

    # A new operator: nothing finished is run again; an update is detected from the stored diff-base.
    second = start_operator(namespace, tmp_path / 'second.log', plural, progress, diffbase)
    try:
        second.wait_for(FINISHED)
        cluster.kubectl('patch', '-n', namespace, plural, 'obj', '--type=merge', '-p', '{"spec": {"field": "b"}}')
        second.wait_for(r"Handler 'update_fn/spec.field' succeeded\.")
        second.wait_for(FINISHED, count=2)
        obj = wait_for_object(cluster, namespace, plural, lambda o: diffbase_of(o, diffbase)['spec'] == {'field': 'b'})
    finally:
        assert second.stop() == 0
    assert calls(second.log, 'create_fn') == calls(second.log, 'gated_fn') == []
    assert calls(second.log, 'update_fn') == ["old='a', new='b'"]
    assert obj['status']['update_fn/spec.field'] == {'old': 'a', 'new': 'b'}
    assert not progress_records(obj, progress)


def test_smart_storage_continues_the_progress_found_in_the_status(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    # As an old operator would leave it: the status-based progress of a half-done creation.
    done = {'started': '2026-01-01T00:00:00.000000+00:00', 'stopped': '2026-01-01T00:00:01.000000+00:00',
            'purpose': 'create', 'retries': 1, 'success': True, 'failure': False}
    create(cluster, namespace, WITHOUT_STATUS, labels={'go': 'yes'},
           status={'kopf': {'progress': {'create_fn': done}}})
    operator = start_operator(namespace, tmp_path / 'op.log', WITHOUT_STATUS, 'smart')
    try:
        operator.wait_for(r"Handler 'gated_fn' succeeded\.")
        log = operator.wait_for(FINISHED)
        obj = wait_for_object(cluster, namespace, WITHOUT_STATUS, lambda o: DIFFBASE in annotations_of(o))
    finally:
        assert operator.stop() == 0
    assert calls(log, 'create_fn') == []
    assert calls(log, 'gated_fn') == ['retry=0']
    assert "Creation is processed: 2 succeeded; 0 failed." in log
    assert not obj['status'].get('kopf', {}).get('progress')  # read from the status, purged there too
    assert not [key for key in annotations_of(obj) if key != DIFFBASE]


def test_pruned_status_is_reported_once_with_the_fix_and_does_not_loop(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    create(cluster, namespace, PRUNED, labels={'go': 'yes'})
    operator = start_operator(namespace, tmp_path / 'op.log', PRUNED)
    try:
        operator.wait_for(FINISHED)
        cluster.kubectl('patch', '-n', namespace, PRUNED, 'obj', '--type=merge', '-p', '{"spec": {"field": "b"}}')
        operator.wait_for(r"Handler 'update_fn/spec.field' succeeded\.")
        log = operator.wait_for(FINISHED, count=2)
        obj = wait_for_object(cluster, namespace, PRUNED,
                              lambda o: json.loads(annotations_of(o)[DIFFBASE])['spec'] == {'field': 'b'})
    finally:
        assert operator.stop() == 0

    # The results are lost each time, but the operator says so only once, with the fix.
    assert not obj.get('status')
    warnings = re.findall(r"\[WARNING \] \[.*/obj\] The status of .* is pruned by the API server: (.*)$",
                          log, re.MULTILINE)
    assert warnings == ["the handlers' results (and the progress, if stored in the status) are lost. "
                        "To fix it, add `x-kubernetes-preserve-unknown-fields: true` to the status schema "
                        "in the CRD, or store the results elsewhere."]
    # One per patch of the results: the two creation handlers in their own cycles (asap, the default
    # lifecycle), and the update handler.
    assert log.count("Merge-patching finished with inconsistencies") == 3

    # The progress is in the annotations by default, so nothing is lost that would loop the handlers.
    assert calls(log, 'create_fn') == calls(log, 'gated_fn') == ['retry=0']
    assert calls(log, 'update_fn') == ["old='a', new='b'"]
    assert len(re.findall(FINISHED, log)) == 2


def test_pruned_status_with_the_state_in_it_is_reported_once_and_does_not_loop(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    # The manual warns that the status storages cannot store anything in a pruned status. If the
    # lost state were taken as no state, every cycle would start anew: the finished handlers would
    # run again and again, the retry counter would stay at 0, and every change would be a creation.
    # The operator remembers what the object cannot keep instead (until it is restarted).
    create(cluster, namespace, PRUNED)
    operator = start_operator(namespace, tmp_path / 'op.log', PRUNED, 'status', 'status')
    try:
        operator.wait_for(r"Handler 'gated_fn' failed temporarily: waiting for the go label")
        cluster.kubectl('label', '-n', namespace, PRUNED, 'obj', 'go=yes')
        operator.wait_for(r"Handler 'gated_fn' succeeded\.")
        operator.wait_for(FINISHED)
        cluster.kubectl('patch', '-n', namespace, PRUNED, 'obj', '--type=merge', '-p', '{"spec": {"field": "b"}}')
        operator.wait_for(r"Handler 'update_fn/spec.field' succeeded\.")
        log = operator.wait_for(FINISHED, count=2)
    finally:
        assert operator.stop() == 0
    assert len(re.findall(r"\] The status of .* is pruned by the API server", log)) == 1
    assert calls(log, 'create_fn') == ['retry=0']
    assert calls(log, 'gated_fn') == ['retry=0', 'retry=1']
    assert calls(log, 'update_fn') == ["old='a', new='b'"]
    assert "Creation is processed: 2 succeeded; 0 failed." in log
    obj = get_object(cluster, namespace, PRUNED)
    assert not obj.get('status')
    assert not annotations_of(obj)  # nothing is stored elsewhere instead
