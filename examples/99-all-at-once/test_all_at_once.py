"""The everything example: all of its handlers, activities, daemons and timers on one object's life."""
from typing import TYPE_CHECKING

from kopf_testing import poll

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_everything_runs_once_for_the_life_of_an_object(example: 'ExampleRun') -> None:
    example.create('everything', field='one', items=['a', 'b'])  # before the operator: resumed too
    example.run(expected_errors=[r"Handler 'create_fn' failed temporarily: Not yet"])
    obj = example.wait_object('everything', lambda obj: 'create_fn' in obj.get('status', {}))
    child = example.kube.get('configmaps', obj['status']['create_fn']['child'])
    assert child['metadata']['ownerReferences'][0]['uid'] == obj['metadata']['uid']
    assert child['data'] == {'field': 'one'}
    example.wait_for(r'The heartbeat daemon has started\.')
    example.wait_for(r'The timer has ticked twice\.')

    def event_posted() -> bool:
        """the ChildCreated event is posted"""
        events = example.kube.list('events', field_selector='involvedObject.name=everything')
        return any(event['reason'] == 'ChildCreated' for event in events)
    poll(event_posted, timeout=30)

    example.patch('everything', {'spec': {'field': 'two'}})
    log = example.wait_handled('update_field/spec.field')
    assert "The objects with the field 'two': ['everything']." in log
    assert example.kube.get('configmaps', child['metadata']['name'])['data'] == {'field': 'two'}

    example.delete('everything')  # the daemon and the timer stop, then the finalizer is released
    assert 'The heartbeat daemon has stopped.' in example.log
    example.stop()
    assert "Bye; the watch events seen: " in example.log
    example.assert_handled_once('configure', 'create_fn', 'create_fn/item-a', 'create_fn/item-b', 'resume_fn',
                                'update_field/spec.field', 'delete_fn', 'heartbeat', 'cleanup_fn')
