"""The scaling example: two replicas as kopf run processes, each object handled by one of them, once."""
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun

SOME_SLOTS = r'(?!none)[\d,-]+'


def test_a_standby_replica_takes_over_from_the_leader(example: 'ExampleRun') -> None:
    leader = example.run_process('--leader-election', ready=r'Became the leader', log_name='leader.log')
    standby = example.run_process('--leader-election', ready=r"Activity 'configure' succeeded",
                                  log_name='standby.log')
    example.create('led', field='one')
    leader.wait_for(r"Handler 'create_fn' succeeded\.")
    example.patch('led', {'spec': {'field': 'two'}})
    leader.wait_for(r"Handler 'update_fn' succeeded\.")

    leader.stop()  # it releases the Lease: the standby replica takes over at once
    assert 'Released the Lease' in leader.log
    standby.wait_for(r'Became the leader')
    example.delete('led')
    assert "Handler 'create_fn'" not in standby.log and "Handler 'update_fn'" not in standby.log
    assert "Handler 'delete_fn'" not in leader.log
    example.assert_handled_once('create_fn', 'update_fn', 'delete_fn')


def test_sharded_replicas_split_the_objects(example: 'ExampleRun') -> None:
    first = example.run_process('--shards=auto', ready=r'Serving the slots 0-63', log_name='first.log')
    example.run_process('--shards=auto', ready=rf'Serving the slots .* \(started: {SOME_SLOTS};',
                        log_name='second.log')  # returns once it serves some slots
    first.wait_for(rf'Serving the slots .* \(started: none; stopped: {SOME_SLOTS}\)')  # it gave some away
    leases = example.kube.list('leases', selector='kopf.zalando.org/shard-group=kopf-shard-default')
    served = [lease['metadata']['annotations']['kopf.zalando.org/shard-serving'] for lease in leases]
    assert len(served) == 2 and served[0] != served[1], served  # one Lease per replica, each its own slots

    names = [f'shard-{index}' for index in range(6)]
    for name in names:
        example.create(name)
    for name in names:
        example.delete(name)
    log = example.log
    for name in names:  # the log lines of kopf run start with the object's [namespace/name]
        handled = re.findall(rf"/{name}\] Handler '(\w+)' succeeded\.", log)
        assert sorted(handled) == ['create_fn', 'delete_fn'], f'{name}: {handled}\n{log}'
