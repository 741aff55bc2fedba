"""
Sub-handlers in both styles, and transformation functions racing with another writer.

Inputs: objects of ``subobjs`` and ``patchobjs`` (``subhandlers.kopf.dev``);
the operators ``subhandlers_styles.py`` (parents with ``@kopf.subhandler`` and
with ``kopf.execute(fns=...)``) and ``patches_fns.py`` (handlers that append to
``patch.fns`` only after the test has changed the object behind their back).
Outputs: the objects as stored by the API server (results, finalizers, lists)
and the operator's log lines.
"""
import json
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import FINISHED, apply_crds, crd_manifest, get_object, poll
from integration.kubeobjects import object_log_lines as object_lines
from integration.operating import OperatorProcess

OPERATORS = pathlib.Path(__file__).parent / 'operators_src'
GROUP = 'subhandlers.kopf.dev'
KINDS = {'subobjs': 'SubObj', 'patchobjs': 'PatchObj'}
MINE = 'patches.kopf.dev/mine'
THEIRS = 'test.kopf.dev/theirs'


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, *(crd_manifest(GROUP, plural, kind) for plural, kind in KINDS.items()))


@pytest.fixture
def gates(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / 'gates'
    path.mkdir()
    return path


@pytest.fixture
def run_operator(namespace: str, tmp_path: pathlib.Path, gates: pathlib.Path) -> Iterator[Any]:
    processes: list[OperatorProcess] = []

    def run(source: str, plural: str) -> OperatorProcess:
        process = OperatorProcess([str(OPERATORS / source), '--verbose', '-n', namespace],
                                  log_path=tmp_path / f'{plural}.log', env={'TEST_GATE_DIR': str(gates)})
        processes.append(process)
        process.start()
        process.wait_for(rf"Starting the watch-stream for {plural}\.v1\.{re.escape(GROUP)}")
        return process

    yield run
    for process in processes:
        process.stop()


def create(cluster: Cluster, namespace: str, plural: str, name: str, *, spec: dict[str, Any],
           labels: dict[str, str] | None = None) -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': f'{GROUP}/v1', 'kind': KINDS[plural],
        'metadata': {'name': name, 'labels': labels or {}}, 'spec': spec}))


def get(cluster: Cluster, namespace: str, plural: str, name: str) -> dict[str, Any]:
    return get_object(cluster, namespace, f'{plural}.{GROUP}', name)


def test_subhandlers_of_both_styles_all_run_and_their_parents_complete(
        cluster: Cluster, namespace: str, run_operator: Any) -> None:
    op = run_operator('subhandlers_styles.py', 'subobjs')
    create(cluster, namespace, 'subobjs', 'obj', spec={'items': ['fast', 'slow']})
    log = op.wait_for(rf"\[{namespace}/obj\] {FINISHED}", timeout=30)

    obj = get(cluster, namespace, 'subobjs', 'obj')
    results = {key: value for key, value in obj['status'].items() if key != 'kopf'}
    assert results == {
        'decorated/fast': {'item': 'fast', 'style': 'decorated'},
        'decorated/slow': {'item': 'slow', 'style': 'decorated'},
        'executed/fast': {'item': 'fast', 'style': 'executed'},
        'executed/slow': {'item': 'slow', 'style': 'executed'},
        'executed': 'all items are handled',  # returned after all of its children have finished
        'listed/first_step': 'first',
        'listed/second_step': 'second',
    }

    # The parents are invoked again until their children are finished; the finished children are not.
    # With the default lifecycle (asap, as in Kopf), one child runs per invocation of its parent:
    # fast, then slow (fails), then slow again.
    lines = object_lines(log, namespace, 'obj')
    for parent in ['decorated', 'executed']:
        assert lines.count(f"Handler '{parent}' is invoked.") == 3
        assert lines.count(f"Handler '{parent}' succeeded.") == 1
        assert lines.count(f"Handler '{parent}/fast' is invoked.") == 1
        assert lines.count(f"Handler '{parent}/slow' is invoked.") == 2
        assert lines.count(f"Handler '{parent}/slow' succeeded.") == 1
        assert f"Handler '{parent}/slow' failed temporarily: Not yet." in lines
    assert lines.count("Handler 'listed' is invoked.") == 2  # first_step, then second_step
    assert "Creation is processed: 3 succeeded; 0 failed." in lines

    # No progress records are left behind, neither of the parents nor of the children.
    annotations = obj['metadata'].get('annotations', {})
    assert [key for key in annotations if key.startswith('kopf.zalando.org/')] == \
        ['kopf.zalando.org/last-handled-configuration']
    assert not obj['status'].get('kopf', {}).get('progress')


@pytest.fixture
def release(cluster: Cluster, namespace: str) -> Iterator[list[str]]:
    """The objects to free from their finalizers at the end, so that their namespace can go."""
    names: list[str] = []
    yield names
    for name in names:
        cluster.kubectl('patch', '-n', namespace, f'patchobjs.{GROUP}', name, '--type=merge',
                        '-p', '{"metadata": {"finalizers": null}}', check=False)


def compete(cluster: Cluster, namespace: str, name: str) -> None:
    """Another writer adds its own finalizer and list item, as the handler would do for its own."""
    cluster.kubectl('patch', '-n', namespace, f'patchobjs.{GROUP}', name, '--type=json', '-p', json.dumps([
        {'op': 'add', 'path': '/metadata/finalizers', 'value': [THEIRS]},
        {'op': 'add', 'path': '/spec/items/-', 'value': 'theirs'},
    ]))


def test_transformation_functions_are_retried_after_a_conflict_and_nothing_is_lost(
        cluster: Cluster, namespace: str, run_operator: Any, gates: pathlib.Path, release: list[str]) -> None:
    op = run_operator('patches_fns.py', 'patchobjs')
    release.append('obj')
    create(cluster, namespace, 'patchobjs', 'obj', labels={'race': 'event'}, spec={'items': ['initial']})
    log = op.wait_for(r"Racing for obj at resourceVersion (\d+)\.")
    seen_version = re.findall(r"Racing for obj at resourceVersion (\d+)\.", log)[0]

    compete(cluster, namespace, 'obj')  # while the handler is still running
    (gates / 'obj').touch()

    def both_writes_landed() -> Any:
        """Both finalizers and both items are on the object."""
        obj = get(cluster, namespace, 'patchobjs', 'obj')
        return obj if MINE in obj['metadata'].get('finalizers', []) else None

    obj = poll(both_writes_landed)
    assert obj['metadata']['finalizers'] == [THEIRS, MINE]
    assert obj['spec']['items'] == ['initial', 'theirs', 'mine']

    # The first attempt was made for the body the handler had seen, the retry for the newer one.
    attempts = [line for line in object_lines(op.log, namespace, 'obj') if line.startswith("JSON-patching")]
    assert len(attempts) == 2
    versions = [re.search(r"'path': '/metadata/resourceVersion', 'value': '(\d+)'", line) for line in attempts]
    assert versions[0] and versions[0].group(1) == seen_version
    assert versions[1] and int(versions[1].group(1)) > int(seen_version)


def test_transformation_functions_apply_to_the_freshest_body_after_the_handler(
        cluster: Cluster, namespace: str, run_operator: Any, gates: pathlib.Path, release: list[str]) -> None:
    op = run_operator('patches_fns.py', 'patchobjs')
    release.append('obj')
    create(cluster, namespace, 'patchobjs', 'obj', labels={'race': 'create'}, spec={'items': ['initial']})
    op.wait_for(r"Racing for obj at resourceVersion \d+\.")

    compete(cluster, namespace, 'obj')  # while the creation handler is still running
    (gates / 'obj').touch()
    log = op.wait_for(rf"\[{namespace}/obj\] {FINISHED}")

    obj = get(cluster, namespace, 'patchobjs', 'obj')
    assert obj['metadata']['finalizers'] == [THEIRS, MINE]
    assert obj['spec']['items'] == ['initial', 'theirs', 'mine']
    assert obj['status']['race_in_create'] == 'created'
    assert "Handler 'race_in_create' succeeded." in object_lines(log, namespace, 'obj')
