"""
Callable resource selectors (Kopf 1.45) against the real API server's discovery.

Inputs: two CRDs of one API group, ``wanteds`` and ``unwanteds``; the operator
``operators_src/callable_selectors.py`` whose creation and event handlers are
declared with a callable that accepts only the kinds starting with ``Wanted``.
Outputs: what the operator watches (its log), and which objects it handled
(the creation handler's result in the status, the diff-base, the event handler's log).
"""
import pathlib
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'callable_selectors.py')
GROUP = 'selectors.kopf.dev'


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'wanteds', 'Wanted'), crd_manifest(GROUP, 'unwanteds', 'Unwanted'))


def create(cluster: Cluster, namespace: str, kind: str, name: str) -> None:
    kubeobjects.create_object(cluster, namespace, {
        'apiVersion': f'{GROUP}/v1', 'kind': kind, 'metadata': {'name': name}, 'spec': {}})


def test_callable_selector_serves_the_matching_resource_and_not_others(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose', '--standalone'],
                         log_path=tmp_path / 'op.log') as op:
        op.wait_for(rf"Starting the watch-stream for wanteds\.v1\.{GROUP}", timeout=60)
        create(cluster, namespace, 'Unwanted', 'other')
        create(cluster, namespace, 'Wanted', 'mine')
        wanted = kubeobjects.wait_for_object(
            cluster, namespace, f'wanteds.{GROUP}', 'mine',
            lambda obj: (obj.get('status') or {}).get('create_fn') is not None, timeout=30)
        op.wait_for(r"\[.*/mine\] event_fn sees (ADDED|None) of mine")  # listed or watched
        op.wait_for(r"\[.*/mine\] Handling cycle is finished")
        log = op.log
    unwanted: dict[str, Any] = kubeobjects.get_object(cluster, namespace, f'unwanteds.{GROUP}', 'other')

    assert wanted['status']['create_fn'] == 'created as wanteds'
    assert kubeobjects.DIFFBASE in wanted['metadata'].get('annotations', {})

    assert 'status' not in unwanted
    assert kubeobjects.FINALIZER not in unwanted['metadata'].get('finalizers', [])
    assert kubeobjects.DIFFBASE not in unwanted['metadata'].get('annotations', {})
    assert '/other]' not in log
    assert 'unwanteds' not in log
    assert 'Traceback' not in log
    # Not even the k8s-events are watched: callables never serve them.
    assert 'Starting the watch-stream for events' not in log
