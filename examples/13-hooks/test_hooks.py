"""The activities example: login, startup and cleanup run once each, around the handling."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def test_the_activities_run_around_the_handling(example: 'ExampleRun') -> None:
    example.run()  # returns once the startup activities have finished
    assert 'Looking for the credentials' in example.log
    assert 'Configured.' in example.log
    assert "Activity 'login_via_client' is invoked" not in example.log  # replaced by ours

    obj = example.create('hooked', field='x')
    obj = example.wait_object('hooked', lambda obj: obj['metadata'].get('finalizers'))
    assert obj['metadata']['finalizers'] == ['example.kopf.dev/finalizer']  # as configured at the startup
    example.patch('hooked', {'spec': {'field': 'y'}})
    example.delete('hooked')

    example.stop()
    assert "Cleaning up; the objects seen: ['hooked']." in example.log
    example.assert_handled_once('login_fn', 'configure', 'create_fn', 'delete_fn', 'cleanup_fn')
