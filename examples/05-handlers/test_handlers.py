"""The handlers example: each kind of handler runs once for its change of an object."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_each_handler_runs_once_for_its_change(example: 'ExampleRun') -> None:
    example.create('older', duration='1m')  # before the operator starts: it is resumed
    example.run()
    obj = example.wait_object('older', lambda obj: 'create_fn' in obj.get('status', {}))
    assert obj['metadata']['finalizers'] == ['kopf.zalando.org/KopfFinalizerMarker']  # for delete_fn
    example.wait_handled('resume_fn')

    example.patch('older', {'spec': {'field': 'new'}})
    log = example.wait_handled('update_fn', 'field_fn/spec.field')
    assert "add spec.field: None -> 'new'" in log
    assert "spec.field: None -> 'new'" in log

    example.delete('older')
    log = example.wait_for(r'Watch event: DELETED')
    assert 'Watch event: None' in log  # the initial listing
    assert 'Watch event: MODIFIED' in log
    example.assert_handled_once('create_fn', 'resume_fn', 'update_fn', 'field_fn/spec.field', 'delete_fn')
