"""
Migration between upstream Kopf and ours, in both directions, on the same objects.

Inputs: one operator source (``operators_src/migration_operator.py``), run first
by one framework and then by the other, each in its own process: upstream Kopf
from its own virtual environment (``integration.upstream``), ours as usual. Two
objects: ``done`` (fully handled by the first framework) and ``held`` (one
creation handler finished, the other still retrying with a TemporaryError when
the first framework stops). Outputs: the state the first framework stores on the
objects (progress records, the diff-base, the finalizer: read back from the API
server and compared with the formats of the compatibility contract), the second
framework's handler invocations (from its log) and the results in the status.

The promise checked: no finished handler is re-run, the pending one continues
with the stored retry counter, an update is detected from the other framework's
diff-base, and the deletion runs and releases the other framework's finalizer.
"""
import datetime
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
from integration.upstream import UpstreamOperatorProcess, ensure_upstream

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'migration_operator.py')
GROUP = 'migration.kopf.dev'
PLURAL = 'migrationobjs'
PREFIX = 'kopf.zalando.org'
DIFFBASE = f'{PREFIX}/last-handled-configuration'
FINALIZER = f'{PREFIX}/KopfFinalizerMarker'
TOUCH_DUMMY = f'{PREFIX}/touch-dummy'
TIMESTAMP = r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00'
DONE_DIFFBASE = '{"spec":{"field":"a"},"metadata":{"labels":{"app":"migration"}}}\n'

Object = dict[str, Any]


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    apply_crds(cluster, {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{PLURAL}.{GROUP}'},
        'spec': {'group': GROUP, 'scope': 'Namespaced',
                 'names': {'plural': PLURAL, 'singular': 'migrationobj', 'kind': 'MigrationObj'},
                 'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                               'schema': {'openAPIV3Schema': {
                                   'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}]}})


@pytest.fixture(scope='module', autouse=True)
def upstream() -> None:
    ensure_upstream()  # once per session, and outside of the operators' start-up timeouts


def start_operator(framework: str, namespace: str, log_path: pathlib.Path, *, release: bool) -> OperatorProcess:
    args = [OPERATOR, '-n', namespace, '--verbose', '--standalone']
    env = {'MIGRATION_RELEASE': '1' if release else '0'}
    cls = UpstreamOperatorProcess if framework == 'upstream' else OperatorProcess
    process = cls(args, log_path=log_path, env=env)
    process.start()
    try:
        process.wait_for(rf"Starting the watch-stream for {PLURAL}\.v1\.{re.escape(GROUP)}")
    except BaseException:
        process.stop()  # not left running for the rest of the session
        raise
    return process


def create(cluster: Cluster, namespace: str, name: str, labels: dict[str, str]) -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': f'{GROUP}/v1', 'kind': 'MigrationObj',
        'metadata': {'name': name, 'labels': labels}, 'spec': {'field': 'a'}}))


def get_object(cluster: Cluster, namespace: str, name: str) -> Object:
    return kubeobjects.get_object(cluster, namespace, PLURAL, name)


def wait_for_object(cluster: Cluster, namespace: str, name: str, predicate: Callable[[Object], bool],
                    *, timeout: float = 20) -> Object:
    return kubeobjects.wait_for_object(cluster, namespace, PLURAL, name, predicate, timeout=timeout)


def record_of(obj: Object, handler_id: str) -> Any:
    raw = obj['metadata'].get('annotations', {}).get(f'{PREFIX}/{handler_id}')
    return json.loads(raw) if raw is not None else None


def calls(log: str, name: str, handler: str) -> list[str]:
    """The handler's invocations for that object, as it logged them itself."""
    return re.findall(rf"/{name}\] {handler} is called(.*)$", log, re.MULTILINE)


@pytest.mark.parametrize('first, second', [('upstream', 'ours'), ('ours', 'upstream')],
                         ids=['upstream-to-ours', 'ours-to-upstream'])
def test_objects_handled_by_one_framework_are_continued_by_the_other(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, first: str, second: str) -> None:
    create(cluster, namespace, 'done', {'app': 'migration'})
    create(cluster, namespace, 'held', {'app': 'migration', 'hold': 'yes'})

    # The first framework: `done` is handled fully, `held` is left half-done and retrying.
    operator = start_operator(first, namespace, tmp_path / f'{first}-first.log', release=False)
    try:
        operator.wait_for(r"/done\] Handling cycle is finished, waiting for new changes\.")
        operator.wait_for(r"/held\] Handler 'create_pending' failed temporarily: on hold", count=2)
        wait_for_object(cluster, namespace, 'held',
                        lambda o: (record_of(o, 'create_pending') or {}).get('retries', 0) >= 2)
    finally:
        assert operator.stop() == 0
    first_log = operator.log
    assert calls(first_log, 'done', 'create_done') == calls(first_log, 'held', 'create_done') == ['']
    assert calls(first_log, 'done', 'create_pending') == [' with retry=0']

    # What the first framework leaves on the objects, in the formats of the compatibility contract.
    done, held = get_object(cluster, namespace, 'done'), get_object(cluster, namespace, 'held')
    assert done['metadata']['annotations'] == {DIFFBASE: DONE_DIFFBASE}  # no progress left: all purged
    assert done['metadata']['finalizers'] == [FINALIZER]
    assert done['status'] == {'create_done': {'calls': 1}, 'create_pending': {'retry': 0}}
    assert held['metadata']['finalizers'] == [FINALIZER]
    assert DIFFBASE not in held['metadata']['annotations']  # not yet: the creation is not finished
    finished, pending = record_of(held, 'create_done'), record_of(held, 'create_pending')
    assert list(finished) == ['started', 'stopped', 'purpose', 'retries', 'success', 'failure']
    assert list(pending) == ['started', 'delayed', 'purpose', 'retries', 'success', 'failure', 'message']
    assert finished['purpose'] == pending['purpose'] == 'create'
    assert finished['retries'] == 1 and finished['success'] is True and finished['failure'] is False
    assert pending['success'] is False and pending['failure'] is False and pending['message'] == 'on hold'
    assert all(re.fullmatch(TIMESTAMP, value) for value in
               [finished['started'], finished['stopped'], pending['started'], pending['delayed']])
    for key in ['create_done', 'create_pending']:  # compact JSON, as a string
        raw = held['metadata']['annotations'][f'{PREFIX}/{key}']
        assert raw == json.dumps(json.loads(raw), separators=(',', ':'))
    stored_retries = pending['retries']
    assert stored_retries >= 2

    # Upstream Kopf touches a dummy annotation after sleeping for the delayed handlers, and removes
    # it with its next patch; stopped in between, it leaves the dummy behind. Whether it does so
    # depends on the timing, so the dummy is ensured here, as upstream would have touched it.
    touched = get_object(cluster, namespace, 'held')['metadata']['annotations'].get(TOUCH_DUMMY)
    if touched is None:
        cluster.kubectl('annotate', '-n', namespace, PLURAL, 'held',
                        f'{TOUCH_DUMMY}={datetime.datetime.now(datetime.timezone.utc).isoformat()}')

    # The second framework: continues `held` from the stored counter, re-runs nothing finished.
    operator = start_operator(second, namespace, tmp_path / f'{second}-second.log', release=True)
    try:
        operator.wait_for(r"/held\] Handler 'create_pending' succeeded\.")
        operator.wait_for(r"/held\] Handling cycle is finished, waiting for new changes\.")
        operator.wait_for(r"/done\] Handling cycle is finished, waiting for new changes\.")

        # An update of `done`: detected from the first framework's diff-base.
        cluster.kubectl('patch', '-n', namespace, PLURAL, 'done', '--type=merge', '-p', '{"spec": {"field": "b"}}')
        operator.wait_for(r"/done\] Handler 'update_fn/spec\.field' succeeded\.")

        # A deletion of `done`: the handler runs, the first framework's finalizer is released.
        cluster.kubectl('delete', '-n', namespace, PLURAL, 'done', '--wait=false')
        operator.wait_for(r"/done\] Handler 'delete_fn' succeeded\.")
        cluster.kubectl('wait', '-n', namespace, '--for=delete', f'{PLURAL}/done', '--timeout=20s')
        held = wait_for_object(cluster, namespace, 'held', lambda o: DIFFBASE in o['metadata']['annotations'])
    finally:
        assert operator.stop() == 0
    second_log = operator.log
    assert calls(second_log, 'held', 'create_done') == calls(second_log, 'done', 'create_done') == []
    assert calls(second_log, 'done', 'create_pending') == []
    assert calls(second_log, 'held', 'create_pending') == [f' with retry={stored_retries}']
    assert calls(second_log, 'done', 'update_fn') == [" with old='a', new='b'"]
    assert calls(second_log, 'done', 'delete_fn') == ['']
    assert calls(second_log, 'held', 'update_fn') == calls(second_log, 'held', 'delete_fn') == []
    assert re.search(r"/held\] Creation is processed: 2 succeeded; 0 failed\.", second_log)

    # The state the second framework leaves is complete and clean (the touched dummy is removed too).
    assert held['status'] == {'create_done': {'calls': 1}, 'create_pending': {'retry': stored_retries}}
    assert held['metadata']['annotations'] == {
        DIFFBASE: '{"spec":{"field":"a"},"metadata":{"labels":{"app":"migration","hold":"yes"}}}\n'}
    assert held['metadata']['finalizers'] == [FINALIZER]
