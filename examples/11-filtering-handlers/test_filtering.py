"""The filtering example: each handler runs for the objects and changes that match its filters only."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_the_handlers_run_only_for_what_matches(example: 'ExampleRun') -> None:
    example.run()
    example.create('prod', labels={'env': 'prod', 'team': 'blue'}, size=20)
    example.create('stage', labels={'env': 'staging', 'team': 'red'}, annotations={'kopf.dev/skip': 'yes'}, size=1)
    example.wait_handled('production', 'owned', 'big', 'staging')
    stage = example.get('stage')
    assert 'finalizers' not in stage['metadata']  # no deletion handler matches it

    example.patch('stage', {'spec': {'state': 'pending'}})  # not the awaited value
    example.patch('prod', {'spec': {'state': 'ready'}})
    example.wait_handled('became_ready/spec.state')

    example.delete('stage')
    example.delete('prod')
    log = example.wait_handled('production_deleted')
    assert 'prod is in production.' in log and 'stage is in staging.' in log
    assert 'Owned by the team blue.' in log and 'A big one: 20.' in log
    assert "Ready now (was None)." in log
    example.assert_handled_once('production', 'owned', 'staging', 'big', 'became_ready/spec.state',
                                'production_deleted')
