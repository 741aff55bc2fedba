"""The sub-handlers example: one sub-handler per item, each retried and counted on its own."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_each_item_is_handled_once_by_its_own_subhandler(example: 'ExampleRun') -> None:
    example.run(expected_errors=[r"Handler 'create_fn/item-slow' failed temporarily: The item 'slow' is not ready"])
    example.create('listed', items=['a', 'slow', 'b'])
    log = example.wait_handled('create_fn')
    assert log.count("Handler 'create_fn/item-slow' failed temporarily") == 1

    example.patch('listed', {'spec': {'items': ['a', 'slow', 'b', 'c']}})
    log = example.wait_handled('update_fn/spec.items')
    assert "Handled the item 'c'." in log

    example.delete('listed')
    example.assert_handled_once('create_fn', 'create_fn/item-a', 'create_fn/item-slow', 'create_fn/item-b',
                                'update_fn/spec.items', 'update_fn/spec.items/item-c')
    assert example.log.count("Handled the item 'a'.") == 1  # not again after the retry of 'slow'
