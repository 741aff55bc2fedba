"""The children example: the Pods are owned by their KopfExample, follow its spec, and go with it."""
from typing import TYPE_CHECKING

from kopf_testing import poll

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_the_children_are_owned_rescaled_and_deleted_with_the_parent(example: 'ExampleRun') -> None:
    example.run()
    parent = example.create('family', children=2)
    example.wait_handled('create_fn')
    pods = example.kube.list('pods', selector='kopf.dev/parent=family')
    assert len(pods) == 2
    for pod in pods:
        [owner] = pod['metadata']['ownerReferences']
        assert (owner['kind'], owner['name'], owner['uid']) == ('KopfExample', 'family', parent['metadata']['uid'])
        assert owner['controller'] and owner['blockOwnerDeletion']
        assert pod['metadata']['generateName'] == 'family-'

    example.patch('family', {'spec': {'children': 1}})
    example.wait_handled('rescale/spec.children')  # a field's handler is named after it
    assert len(example.kube.list('pods', selector='kopf.dev/parent=family')) == 1

    example.delete('family')

    def orphans() -> bool:
        """the garbage collector deleted the children"""
        return not example.kube.list('pods', selector='kopf.dev/parent=family')
    # The collector learns of a new CRD's kind at its next re-sync (every 30 s): until then, it cannot
    # check the children's owner. Hence the budget; in a session that applied the CRD earlier, it is quick.
    poll(orphans, timeout=120, interval=0.5)
    example.assert_handled_once('create_fn', 'rescale/spec.children')
