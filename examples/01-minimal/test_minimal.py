"""The minimal example: the creation's result in the status, and the goodbye before the object goes."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_the_object_is_greeted_and_released(example: 'ExampleRun') -> None:
    example.run()
    obj = example.create('minimal', field='value')
    obj = example.wait_object('minimal', lambda obj: 'create_fn' in obj.get('status', {}))
    assert obj['status']['create_fn'] == {'message': 'hello world'}
    assert obj['metadata']['finalizers'] == ['kopf.zalando.org/KopfFinalizerMarker']  # for delete_fn

    example.patch('minimal', {'spec': {'field': 'changed'}})  # no update handler: nothing runs
    example.delete('minimal')
    assert 'Goodbye, minimal! Releasing the object.' in example.log
    example.assert_handled_once('create_fn', 'delete_fn')
