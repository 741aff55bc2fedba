"""The exceptions example: temporary errors retried until success, permanent ones given up at once."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun

EXPECTED_ERRORS = [
    r"Handler 'create_fn' failed temporarily: The backend is not ready yet",
    r"Handler 'update_fn' failed temporarily: The change cannot be applied yet",
    r"Handler 'check_fn' failed permanently: Cannot parse the duration 'forever'",
]


def test_temporary_errors_are_retried_and_permanent_ones_are_not(example: 'ExampleRun') -> None:
    example.run(expected_errors=EXPECTED_ERRORS)
    example.create('valid', duration='2m')
    example.create('invalid', duration='forever')
    example.wait_for(r"Handler 'create_fn' succeeded\.", count=2)
    valid = example.wait_object('valid', lambda obj: 'check_fn' in obj.get('status', {}))
    assert valid['status']['create_fn'] == {'attempts': 3}
    assert valid['status']['check_fn'] == {'seconds': 120}
    log = example.wait_for(r"Handler 'check_fn' failed permanently")
    assert log.count("Handler 'create_fn' failed temporarily") == 4  # two per object
    assert log.count("Handler 'check_fn' failed permanently") == 1  # never retried

    example.patch('valid', {'spec': {'duration': '3m'}})
    log = example.wait_for(r"Handler 'update_fn' succeeded\.")
    assert log.count("Handler 'update_fn' failed temporarily") == 1

    example.delete('valid')
    example.delete('invalid')  # a permanent failure does not keep the object
    example.assert_succeeded({'create_fn': 2, 'check_fn': 1, 'update_fn': 1, 'delete_fn': 2})
