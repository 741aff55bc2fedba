"""
Filters against a real API server: which handlers run for which objects.

Inputs: objects of ``filters.kopf.dev`` with various labels, annotations and
specs, created and changed with kubectl; the operators ``filters_values.py``
(creation handlers, one per kind of filter), ``filters_stealth.py`` (handlers
matching only some objects) and ``filters_changes.py`` (update handlers with
``old=``/``new=``/``value=`` filters). Outputs: the handlers' results in the
objects' status, the diff-base annotation, and the operator's log lines.
"""
import json
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import DIFFBASE, FINISHED, apply_crds, crd_manifest, get_object, object_log_lines
from integration.operating import OperatorProcess

OPERATORS = pathlib.Path(__file__).parent / 'operators_src'
GROUP = 'filters.kopf.dev'
KINDS = {'filterobjs': 'FilterObj', 'stealthobjs': 'StealthObj', 'changeobjs': 'ChangeObj'}


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, *(crd_manifest(GROUP, plural, kind) for plural, kind in KINDS.items()))


@pytest.fixture
def run_operator(namespace: str, tmp_path: pathlib.Path) -> Iterator[Any]:
    processes: list[OperatorProcess] = []

    def run(source: str, plural: str) -> OperatorProcess:
        process = OperatorProcess([str(OPERATORS / source), '--verbose', '-n', namespace],
                                  log_path=tmp_path / f'{plural}.log')
        processes.append(process)
        process.start()
        process.wait_for(rf"Starting the watch-stream for {plural}\.v1\.{re.escape(GROUP)}")
        return process

    yield run
    for process in processes:
        process.stop()


def create(cluster: Cluster, namespace: str, plural: str, name: str, *, spec: dict[str, Any],
           labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> None:
    metadata = {'name': name, 'labels': labels or {}, 'annotations': annotations or {}}
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': f'{GROUP}/v1', 'kind': KINDS[plural], 'metadata': metadata, 'spec': spec}))


def get(cluster: Cluster, namespace: str, plural: str, name: str) -> dict[str, Any]:
    return get_object(cluster, namespace, f'{plural}.{GROUP}', name)


def patch(cluster: Cluster, namespace: str, plural: str, name: str, body: dict[str, Any]) -> None:
    cluster.kubectl('patch', '-n', namespace, f'{plural}.{GROUP}', name, '--type=merge', '-p', json.dumps(body))


NOT_INTERESTED = "Something has changed, but we are not interested (the essence is the same)."


def object_lines(log: str, namespace: str, name: str) -> list[str]:
    """
    The log lines about the object's handling: not those of the event handlers (they see all events),
    nor the notes on events with nothing to handle (the framework's own patches: their number depends
    on how the events fall into the batch windows).
    """
    lines = object_log_lines(log, namespace, name)
    return [line for line in lines if not line.startswith("Handler 'seen_fn' ") and line != NOT_INTERESTED]


@pytest.mark.parametrize('name, labels, annotations, spec, expected', [
    pytest.param('full', {'color': 'red', 'size': 'big-one'}, {'note': 'yes'}, {'count': 10, 'mode': 'fast'},
                 {'label_value', 'label_present', 'label_callback', 'annotation_value', 'annotation_present',
                  'when_callback', 'when_all', 'field_value/spec.mode', 'field_present/spec.mode'}, id='all-matching'),
    pytest.param('other', {'color': 'blue', 'size': 'small'}, {'note': 'no'}, {'count': 1, 'mode': 'slow'},
                 {'label_present', 'annotation_present', 'field_present/spec.mode'}, id='other-values'),
    pytest.param('bare', {}, {}, {},
                 {'label_absent', 'annotation_absent', 'field_absent/spec.mode'}, id='nothing'),
    pytest.param('empty', {'color': ''}, {'note': ''}, {'mode': ''},
                 {'label_present', 'annotation_present', 'field_present/spec.mode'}, id='empty-strings-are-present'),
    pytest.param('small', {'color': 'red'}, {}, {'count': 1},
                 {'label_value', 'label_present', 'annotation_absent', 'when_not_and_label', 'field_absent/spec.mode'},
                 id='when-not-and-label'),
])
def test_creation_handlers_run_only_if_their_filters_match(
        cluster: Cluster, namespace: str, run_operator: Any,
        name: str, labels: dict[str, str], annotations: dict[str, str], spec: dict[str, Any],
        expected: set[str]) -> None:
    op = run_operator('filters_values.py', 'filterobjs')
    create(cluster, namespace, 'filterobjs', name, labels=labels, annotations=annotations, spec=spec)
    log = op.wait_for(rf"\[{namespace}/{name}\] {FINISHED}")
    status = get(cluster, namespace, 'filterobjs', name).get('status', {})
    assert {key for key, value in status.items() if value is True} == expected
    assert f"Creation is processed: {len(expected)} succeeded; 0 failed." in object_lines(log, namespace, name)


# Stealth mode: an object that matches no handler is not touched; once it starts matching,
# it looks as if it has just appeared (no diff-base), so it is a creation, not an update.
@pytest.mark.parametrize('initial, change, handler', [
    pytest.param({'labels': {}, 'spec': {}}, {'metadata': {'labels': {'watched': 'yes'}}},
                 'create_labelled', id='labels'),
    pytest.param({'labels': {}, 'spec': {'enabled': False}}, {'spec': {'enabled': True}},
                 'create_enabled', id='when'),
    pytest.param({'labels': {}, 'spec': {'phase': 'pending'}}, {'spec': {'phase': 'ready'}},
                 'create_ready/spec.phase', id='field-value'),
])
def test_object_that_starts_matching_is_created_not_updated(
        cluster: Cluster, namespace: str, run_operator: Any,
        initial: dict[str, Any], change: dict[str, Any], handler: str) -> None:
    op = run_operator('filters_stealth.py', 'stealthobjs')
    create(cluster, namespace, 'stealthobjs', 'obj', labels=initial['labels'], spec=initial['spec'])
    op.wait_for(re.escape(f"Seen obj with labels {initial['labels']} and spec {initial['spec']}."))

    patch(cluster, namespace, 'stealthobjs', 'obj', change)
    log = op.wait_for(rf"\[{namespace}/obj\] {FINISHED}")
    obj = get(cluster, namespace, 'stealthobjs', 'obj')
    assert obj['status'] == {handler: 'created'}
    assert DIFFBASE in obj['metadata']['annotations']

    # Nothing about the object was logged (or stored) while it matched nothing; then, a creation.
    lines = object_lines(log, namespace, 'obj')
    assert lines[0].startswith("Creation is in progress: ")
    assert f"Handler '{handler}' succeeded." in lines
    assert "Creation is processed: 1 succeeded; 0 failed." in lines
    assert not [line for line in lines if 'Updating' in line or 'update_labelled' in line]


def test_object_that_stops_matching_is_not_handled_anymore(
        cluster: Cluster, namespace: str, run_operator: Any) -> None:
    op = run_operator('filters_stealth.py', 'stealthobjs')
    create(cluster, namespace, 'stealthobjs', 'obj', labels={'watched': 'yes'}, spec={})
    op.wait_for(rf"\[{namespace}/obj\] {FINISHED}")
    assert get(cluster, namespace, 'stealthobjs', 'obj')['status'] == {'create_labelled': 'created'}
    handled_lines = len(object_lines(op.log, namespace, 'obj'))

    # Neither the label change that stops the matching, nor the changes after it are handled.
    patch(cluster, namespace, 'stealthobjs', 'obj', {'metadata': {'labels': {'watched': 'no'}}})
    patch(cluster, namespace, 'stealthobjs', 'obj', {'spec': {'size': 1}})
    op.wait_for(re.escape("Seen obj with labels {'watched': 'no'} and spec {'size': 1}."))
    # The object's events are processed one after another: once this one is seen, the previous are done.
    patch(cluster, namespace, 'stealthobjs', 'obj', {'spec': {'size': 2}})
    log = op.wait_for(re.escape("Seen obj with labels {'watched': 'no'} and spec {'size': 2}."))

    assert len(object_lines(log, namespace, 'obj')) == handled_lines
    assert "update_labelled" not in log
    obj = get(cluster, namespace, 'stealthobjs', 'obj')
    assert obj['status'] == {'create_labelled': 'created'}
    assert json.loads(obj['metadata']['annotations'][DIFFBASE])['metadata']['labels'] == {'watched': 'yes'}


def test_update_handlers_get_the_field_values_and_diff_filtered_by_old_and_new(
        cluster: Cluster, namespace: str, run_operator: Any) -> None:
    op = run_operator('filters_changes.py', 'changeobjs')
    create(cluster, namespace, 'changeobjs', 'obj', spec={'nested': {'a': 1, 'keep': 0}})
    op.wait_for(rf"\[{namespace}/obj\] {FINISHED}")
    changes: list[dict[str, Any]] = [
        {'field': 'x'},
        {'field': 'y'},
        {'field': 'world'},
        {'field': 'z'},
        {'field': None},
        {'other': 1},  # spec.field is not affected: no handler of it runs
        {'nested': {'a': 2, 'b': 3}},
    ]
    for count, change in enumerate(changes, start=2):
        patch(cluster, namespace, 'changeobjs', 'obj', {'spec': change})
        log = op.wait_for(rf"\[{namespace}/obj\] {FINISHED}", count=count)

    reports = [line for line in object_lines(log, namespace, 'obj') if ' got {' in line]
    got = [(line.split(' got ')[0], json.loads(line.split(' got ', 1)[1])) for line in reports]

    def report(old: Any, new: Any, diff: list[Any]) -> dict[str, Any]:
        return {'old': old, 'new': new, 'diff': diff}

    assert got == [
        # The creation: a field handler runs when its field is set (as in Kopf 1.45), update handlers do not.
        ('nested', report(None, {'a': 1, 'keep': 0}, [['add', [], None, {'a': 1, 'keep': 0}]])),
        # absent → 'x'
        ('added', report(None, 'x', [['add', [], None, 'x']])),
        ('anyhow', report(None, 'x', [['add', [], None, 'x']])),
        # 'x' → 'y'
        ('edited', report('x', 'y', [['change', [], 'x', 'y']])),
        ('anyhow', report('x', 'y', [['change', [], 'x', 'y']])),
        # 'y' → 'world'
        ('reached', report('y', 'world', [['change', [], 'y', 'world']])),
        ('either', report('y', 'world', [['change', [], 'y', 'world']])),
        ('long', report('y', 'world', [['change', [], 'y', 'world']])),
        ('anyhow', report('y', 'world', [['change', [], 'y', 'world']])),
        # 'world' → 'z'
        ('left', report('world', 'z', [['change', [], 'world', 'z']])),
        ('either', report('world', 'z', [['change', [], 'world', 'z']])),
        ('anyhow', report('world', 'z', [['change', [], 'world', 'z']])),
        # 'z' → absent
        ('removed', report('z', None, [['remove', [], 'z', None]])),
        ('anyhow', report('z', None, [['remove', [], 'z', None]])),
        # spec.other: nothing; spec.nested: the diff is relative to the field.
        ('nested', report({'a': 1, 'keep': 0}, {'a': 2, 'b': 3, 'keep': 0},
                          [['change', ['a'], 1, 2], ['add', ['b'], None, 3]])),
    ]
