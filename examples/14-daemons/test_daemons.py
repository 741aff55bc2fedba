"""The daemons example: a sync and an async daemon live and die with their object."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_the_daemons_follow_the_object_and_stop_with_it(example: 'ExampleRun') -> None:
    example.run()
    example.create('watched', field='one')
    example.wait_for(r"Monitoring the field: 'one'\.")
    example.wait_for(r"Ping\.", count=2)

    example.patch('watched', {'spec': {'field': 'two'}})
    example.wait_for(r"Monitoring the field: 'two'\.")  # the spec is live, no restart

    example.delete('watched')  # the finalizer holds the object until the daemons have stopped
    log = example.log
    released = log.index('Removing the finalizer')
    assert 0 < log.index('The monitor has stopped: DaemonStoppingReason.RESOURCE_DELETED') < released
    assert 0 < log.index('The pinger is cancelled.') < released
    assert log.count("Daemon 'monitor' is invoked") == 1  # started once, not restarted by the change
    assert log.count("Daemon 'pinger' is invoked") == 1
    assert log.count("Daemon 'monitor' succeeded.") == 1  # it returned by itself when asked to stop
