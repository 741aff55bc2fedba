"""The peering example: of two operators, the one with the lower priority pauses until the other is gone."""
import pathlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun

PEERING_CRDS = pathlib.Path(__file__).parent.parent / 'peering.yaml'


def test_the_lower_priority_operator_pauses_while_the_higher_runs(example: 'ExampleRun') -> None:
    example.kube.apply_crd(PEERING_CRDS)
    example.kube.create({'apiVersion': 'kopf.dev/v1', 'kind': 'KopfPeering', 'metadata': {'name': 'example'}})
    high = example.run_process('--priority=100', log_name='high.log')
    example.create('shared')
    high.wait_for(r"Handler 'create_fn' succeeded\.")

    low = example.run_process('--priority=50', log_name='low.log')
    low.wait_for(r"Pausing operations in favour of")
    example.patch('shared', {'spec': {'field': 'changed'}})
    high.wait_for(r"Handler 'update_fn' succeeded\.")

    high.stop()
    low.wait_for(r"Resuming operations after the pause")
    example.delete('shared')
    low.wait_for(r"Handler 'delete_fn' succeeded\.")
    assert "Handler 'create_fn'" not in low.log and "Handler 'update_fn'" not in low.log
    assert "Handler 'delete_fn'" not in high.log
    example.assert_handled_once('create_fn', 'update_fn', 'delete_fn')  # by both together
