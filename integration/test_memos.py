"""
Each object's memo is its own shallow copy of the operator's memo (as in Kopf 1.45.2).

Inputs: ``kopf run operators_src/memos.py``: the startup handler puts a counter and a list into the
operator's memo; the create and update handlers increment the counter and append to the list in the
object's memo, and return both. Two objects: the first created and then changed, the second created
after that. Outputs: the handlers' results in the objects' status. Nothing is mocked.
"""
import pathlib
from typing import Any

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest, create_object, merge_patch, wait_for_object
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'memos.py')
GROUP = 'memos.kopf.dev'
RESOURCE = f'memothings.{GROUP}'


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'memothings', 'MemoThing'))


def result_of(cluster: Cluster, namespace: str, name: str, handler: str) -> Any:
    obj = wait_for_object(cluster, namespace, RESOURCE, name, lambda o: handler in o.get('status', {}), timeout=60)
    return obj['status'][handler]


def test_each_object_has_a_shallow_copy_of_the_operators_memo_for_its_whole_life(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log') as op:
        op.wait_for(rf"Starting the watch-stream for memothings\.v1\.{GROUP}")
        create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': 'MemoThing',
                                           'metadata': {'name': 'first'}, 'spec': {'field': 1}})
        assert result_of(cluster, namespace, 'first', 'create_fn') == {'counter': 1, 'seen': ['first']}

        # The same object's memo, changed in its creation, is the one its later handlers get.
        merge_patch(cluster, namespace, RESOURCE, 'first', {'spec': {'field': 2}})
        assert result_of(cluster, namespace, 'first', 'update_fn') == {'counter': 2, 'seen': ['first', 'first']}

        # Another object: a fresh copy of the operator's memo (whose counter nobody changed), but the same list.
        create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': 'MemoThing',
                                           'metadata': {'name': 'second'}, 'spec': {'field': 1}})
        assert result_of(cluster, namespace, 'second', 'create_fn') == {'counter': 1,
                                                                         'seen': ['first', 'first', 'second']}
    assert "Traceback" not in op.log
