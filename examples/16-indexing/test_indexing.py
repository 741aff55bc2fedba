"""The indexing example: the handlers see the other objects through the index, kept up to date."""
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def namesakes_in(handler: str, expected: list[str]) -> Any:
    return lambda obj: obj.get('status', {}).get(handler, {}).get('namesakes') == expected


def test_the_handlers_see_the_index_of_all_objects(example: 'ExampleRun') -> None:
    example.create('first', field='x')  # before the operator: indexed from the initial listing
    example.run()
    example.wait_object('first', namesakes_in('create_fn', []))
    example.create('second', field='x')
    example.wait_object('second', namesakes_in('create_fn', ['first']))

    example.create('third', field='y')
    example.wait_object('third', namesakes_in('create_fn', []))
    example.patch('first', {'spec': {'field': 'y'}})  # moves from 'x' to 'y' in the index
    example.wait_object('first', namesakes_in('update_fn/spec.field', ['third']))
    assert "The other objects with the field 'y': ['third']" in example.log

    for name in ['first', 'second', 'third']:
        example.delete(name)
    example.assert_succeeded({'create_fn': 3, 'update_fn/spec.field': 1})
