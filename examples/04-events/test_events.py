"""The events example: the events posted about the object, as kubectl shows them."""
from typing import TYPE_CHECKING, Any

from kopf_testing import poll

if TYPE_CHECKING:
    from examples.conftest import ExampleRun


def events_about(example: 'ExampleRun', name: str, count: int) -> list[dict[str, Any]]:
    def posted() -> list[dict[str, Any]]:
        """the operator's events about the object are posted"""
        events = example.kube.list('events', field_selector=f'involvedObject.name={name}')
        return events if len(events) >= count else []
    return poll(posted, timeout=30)


def test_events_are_posted_about_the_object(example: 'ExampleRun') -> None:
    example.run()
    example.create('noisy', field='value')  # no duration, and not a number
    example.wait_handled('create_fn')
    events = events_about(example, 'noisy', 3)
    seen = {(event['type'], event['reason']): event['message'] for event in events}
    assert seen[('Normal', 'Greeting')] == 'Hello from the operator.'
    assert seen[('Warning', 'NoDuration')] == 'No spec.duration: it runs forever.'
    assert seen[('Error', 'NotANumber')].startswith('spec.field is not a number: invalid literal for int()')
    assert all(event['involvedObject']['kind'] == 'KopfExample' for event in events)

    example.patch('noisy', {'spec': {'field': '42'}})
    example.wait_handled('update_fn')
    events = events_about(example, 'noisy', 4)
    assert ('Normal', 'Changed', 'Changed: spec.field.') in {(e['type'], e['reason'], e['message']) for e in events}

    example.delete('noisy')
    example.assert_handled_once('create_fn', 'update_fn')
