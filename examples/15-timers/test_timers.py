"""The timers example: periodic calls with the object's latest spec, and one when it is idle."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_the_timers_tick_while_the_object_exists(example: 'ExampleRun') -> None:
    example.run()
    example.create('ticking', field='one')
    example.wait_for(r"Tick 2: the field is 'one'\.")  # the memo keeps the count
    example.wait_for(r"Unchanged for a second: the field is 'one'\.")

    example.patch('ticking', {'spec': {'field': 'two'}})
    example.wait_for(r"Tick \d+: the field is 'two'\.")
    example.wait_for(r"Unchanged for a second: the field is 'two'\.")

    example.delete('ticking')  # the timers stop first, then the finalizer is released
    log = example.log
    assert log.index('Removing the finalizer') > log.rindex('Tick ')
