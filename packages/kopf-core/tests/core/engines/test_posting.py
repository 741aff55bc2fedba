"""
Posting of k8s-events: queueing (explicit events and per-object log records) and the poster task.

The queue is a real asyncio queue bound to the test's context and loop, as the
operator binds it. The API client is a small recording fake of the client
protocol's writer: it records the created objects and can fail on demand. The
logging goes through the real ``kopf.objects`` logger and its posting handler.
"""
import asyncio
import contextvars
import logging
from typing import Any, AsyncIterator, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pytest

from kopf._cogs.clients.errors import APIForbiddenError
from kopf._cogs.clients.protocols import PatchType
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers.typedefs import RawBody
from kopf._cogs.structs.references import Namespace, Resource
from kopf._core.actions import loggers
from kopf._core.engines.events import posters, posting

POD: Dict[str, Any] = {
    'apiVersion': 'v1', 'kind': 'Pod',
    'metadata': {'name': 'pod1', 'namespace': 'ns1', 'uid': 'uid1'},
}
NODE: Dict[str, Any] = {
    'apiVersion': 'v1', 'kind': 'Node',
    'metadata': {'name': 'node1', 'uid': 'uid2'},
}
POD_REF = {'apiVersion': 'v1', 'kind': 'Pod', 'name': 'pod1', 'uid': 'uid1', 'namespace': 'ns1'}
NODE_REF = {'apiVersion': 'v1', 'kind': 'Node', 'name': 'node1', 'uid': 'uid2'}


class RecordingClient:
    """Records the created objects; fails with the given errors first, if any."""

    def __init__(self, failures: Sequence[Exception] = ()) -> None:
        self.created: List[Tuple[Resource, Namespace, Mapping[str, Any]]] = []
        self.failures = list(failures)

    async def create_object(self, resource: Resource, *, namespace: Namespace, body: Mapping[str, Any],
                            backoffs: Optional[Iterable[float]] = None) -> RawBody:
        if self.failures:
            raise self.failures.pop(0)
        self.created.append((resource, namespace, body))
        return dict(body)

    async def patch_object(
            self, resource: Resource, *, namespace: Namespace, name: str,
            patch: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
            patch_type: PatchType = PatchType.MERGE, subresource: Optional[str] = None,
    ) -> RawBody:
        raise NotImplementedError("Posting must never patch.")

    async def delete_object(
            self, resource: Resource, *, namespace: Namespace, name: str,
            propagation_policy: Optional[str] = None,
    ) -> None:
        raise NotImplementedError("Posting must never delete.")


@pytest.fixture()
def settings() -> OperatorSettings:
    return OperatorSettings()


@pytest.fixture()
async def event_queue(settings: OperatorSettings) -> AsyncIterator[asyncio.Queue[posting.K8sEvent]]:
    queue: asyncio.Queue[posting.K8sEvent] = asyncio.Queue(maxsize=10)
    posting.bind(event_queue=queue, settings=settings)
    yield queue


@pytest.fixture()
def objects_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=loggers.OBJECTS_LOGGER_NAME)


@pytest.fixture()
def loggers_posted(settings: OperatorSettings) -> None:
    settings.posting.loggers = True


def drain(queue: asyncio.Queue[posting.K8sEvent]) -> List[posting.K8sEvent]:
    events = []
    while not queue.empty():
        events.append(queue.get_nowait())
    return events


#
# Explicit events.
#

async def test_event_is_queued_with_the_object_reference(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    posting.event(POD, type='SomeType', reason='SomeReason', message='Some message')
    [event] = drain(event_queue)
    assert event.ref == POD_REF
    assert event.type == 'SomeType'
    assert event.reason == 'SomeReason'
    assert event.message == 'Some message'


async def test_event_message_is_empty_by_default(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    posting.event(POD, type='SomeType', reason='SomeReason')
    [event] = drain(event_queue)
    assert event.message == ''


async def test_events_are_queued_for_every_object_of_a_list(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    posting.event([POD, NODE], type='SomeType', reason='SomeReason')
    assert [event.ref for event in drain(event_queue)] == [POD_REF, NODE_REF]


@pytest.mark.parametrize('fn, expected_type', [
    pytest.param(posting.info, 'Normal', id='info'),
    pytest.param(posting.warn, 'Warning', id='warn'),
])
async def test_shortcuts_post_their_types(
        event_queue: asyncio.Queue[posting.K8sEvent], fn: Any, expected_type: str,
) -> None:
    fn(POD, reason='SomeReason', message='Some message')
    [event] = drain(event_queue)
    assert (event.type, event.reason, event.message) == (expected_type, 'SomeReason', 'Some message')


async def test_exception_appends_the_current_exception(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    try:
        raise RuntimeError("Exception text.")
    except RuntimeError:
        posting.exception(POD, reason='SomeReason', message='Some exception:')
    [event] = drain(event_queue)
    assert (event.type, event.reason, event.message) == ('Error', 'SomeReason', 'Some exception: Exception text.')


async def test_exception_is_named_by_its_class_without_a_reason(
        event_queue: asyncio.Queue[posting.K8sEvent],
) -> None:
    posting.exception(POD, exc=ValueError("bad value"))
    [event] = drain(event_queue)
    assert (event.reason, event.message) == ('ValueError', 'bad value')


@pytest.mark.parametrize('obj', [
    pytest.param({'apiVersion': 'v1', 'kind': 'Event', 'metadata': {'name': 'e1', 'namespace': 'ns'}}, id='core-v1'),
    pytest.param({'apiVersion': 'events.k8s.io/v1', 'kind': 'Event', 'metadata': {'name': 'e1'}}, id='events-api'),
])
async def test_events_for_events_are_silently_skipped(
        event_queue: asyncio.Queue[posting.K8sEvent], obj: Dict[str, Any],
) -> None:
    posting.event(obj, type='SomeType', reason='SomeReason')
    assert event_queue.empty()


async def test_short_messages_are_kept_intact(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    message = 'x' * posting.MAX_MESSAGE_LENGTH
    posting.event(POD, type='SomeType', reason='SomeReason', message=message)
    [event] = drain(event_queue)
    assert event.message == message


async def test_long_messages_are_cut_in_the_middle(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    message = 'a' * 1000 + 'b' * 1000
    posting.event(POD, type='SomeType', reason='SomeReason', message=message)
    [event] = drain(event_queue)
    assert len(event.message) == posting.MAX_MESSAGE_LENGTH
    assert event.message.startswith('a' * 500)
    assert event.message.endswith('b' * 500)
    assert posting.CUT_MESSAGE_INFIX in event.message


async def test_events_outside_of_an_operator_are_dropped_silently(caplog: pytest.LogCaptureFixture) -> None:
    # An operator's queue is bound in its own context, not in this test's (each test runs in its own context).
    operator_queue: asyncio.Queue[posting.K8sEvent] = asyncio.Queue()
    contextvars.copy_context().run(posting.bind, event_queue=operator_queue, settings=OperatorSettings())
    caplog.set_level(logging.DEBUG)
    posting.event(POD, type='SomeType', reason='SomeReason')
    posting.info(POD, reason='SomeReason')
    posting.warn(POD, reason='SomeReason')
    posting.exception(POD, reason='SomeReason', exc=ValueError())
    await asyncio.sleep(0)  # if anything were put from the loop's callbacks
    assert posting.event_queue_var.get(None) is None
    assert operator_queue.empty()
    assert caplog.records == []


async def test_disabled_posting_skips_explicit_events(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    settings.posting.enabled = False
    posting.event(POD, type='SomeType', reason='SomeReason')
    posting.info(POD, reason='SomeReason')
    posting.warn(POD, reason='SomeReason')
    posting.exception(POD, reason='SomeReason', exc=ValueError())
    assert event_queue.empty()


@pytest.mark.parametrize('level, expected_types', [
    pytest.param(logging.DEBUG, ['Normal', 'Warning', 'Error'], id='debug'),
    pytest.param(logging.INFO, ['Normal', 'Warning', 'Error'], id='info'),
    pytest.param(logging.WARNING, ['Warning', 'Error'], id='warning'),
    pytest.param(logging.ERROR, ['Error'], id='error'),
    pytest.param(logging.CRITICAL, [], id='critical'),
])
async def test_posting_level_filters_the_shortcuts(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        level: int, expected_types: List[str],
) -> None:
    settings.posting.level = level
    posting.info(POD, reason='SomeReason')
    posting.warn(POD, reason='SomeReason')
    posting.exception(POD, reason='SomeReason', exc=ValueError())
    assert [event.type for event in drain(event_queue)] == expected_types


async def test_events_from_threads_reach_the_queue(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    def sync_handler() -> None:
        posting.info(POD, reason='FromThread')

    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, contextvars.copy_context().run, sync_handler)
    event = await asyncio.wait_for(event_queue.get(), timeout=1)
    assert event.reason == 'FromThread'


async def test_events_beyond_the_queue_size_are_dropped(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    for i in range(event_queue.maxsize + 5):
        posting.info(POD, reason=f'R{i}')
    assert [event.reason for event in drain(event_queue)] == [f'R{i}' for i in range(event_queue.maxsize)]


#
# Events from the per-object logs.
#

@pytest.mark.usefixtures('objects_logging', 'loggers_posted')
@pytest.mark.parametrize('level, expected_type', [
    pytest.param(logging.INFO, 'Normal', id='info'),
    pytest.param(logging.WARNING, 'Warning', id='warning'),
    pytest.param(logging.ERROR, 'Warning', id='error'),
])
async def test_object_log_messages_become_events(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings, level: int, expected_type: str,
) -> None:
    loggers.ObjectLogger(body=POD, settings=settings).log(level, "Handler %r succeeded.", 'fn')
    [event] = drain(event_queue)
    assert event.ref == POD_REF
    assert (event.type, event.reason, event.message) == (expected_type, 'Logging', "Handler 'fn' succeeded.")


@pytest.mark.usefixtures('objects_logging', 'loggers_posted')
async def test_object_log_messages_below_the_posting_level_are_not_events(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    settings.posting.level = logging.WARNING
    loggers.ObjectLogger(body=POD, settings=settings).info("Hello.")
    assert event_queue.empty()


@pytest.mark.usefixtures('objects_logging', 'loggers_posted')
async def test_object_log_messages_are_not_events_when_posting_is_disabled(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    settings.posting.enabled = False
    loggers.ObjectLogger(body=POD, settings=settings).error("Hello.")
    assert event_queue.empty()


@pytest.mark.usefixtures('objects_logging')
@pytest.mark.parametrize('explicit', [pytest.param(False, id='default'), pytest.param(True, id='explicit')])
async def test_object_log_messages_are_not_events_when_loggers_are_not_posted(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings, explicit: bool,
) -> None:
    if explicit:
        settings.posting.loggers = False
    loggers.ObjectLogger(body=POD, settings=settings).error("Hello.")
    posting.warn(POD, reason='Explicit', message='Still posted.')
    assert [(event.reason, event.message) for event in drain(event_queue)] == [('Explicit', 'Still posted.')]


def test_object_log_messages_are_not_posted_by_default() -> None:
    assert OperatorSettings().posting.loggers is False  # as in Kopf 1.45


@pytest.mark.usefixtures('objects_logging', 'loggers_posted')
async def test_local_object_log_messages_are_never_events(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    loggers.LocalObjectLogger(body=POD, settings=settings).error("Hello.")
    assert event_queue.empty()


@pytest.mark.usefixtures('objects_logging', 'loggers_posted')
async def test_other_log_messages_are_never_events(event_queue: asyncio.Queue[posting.K8sEvent]) -> None:
    logging.getLogger(loggers.OBJECTS_LOGGER_NAME).error("Hello.")
    assert event_queue.empty()


def test_posting_handler_is_installed_once() -> None:
    posting.install_poster_handler()
    handlers = logging.getLogger(loggers.OBJECTS_LOGGER_NAME).handlers
    assert len([handler for handler in handlers if isinstance(handler, posting.K8sPoster)]) == 1


#
# The event objects.
#

async def test_event_body_is_a_core_v1_event(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    posting.event(POD, type='SomeType', reason='SomeReason', message='Some message')
    [event] = drain(event_queue)
    body = posters.build_event_body(event, settings=settings)
    timestamp = event.timestamp.strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    assert body == {
        'apiVersion': 'v1',
        'kind': 'Event',
        'metadata': {'namespace': 'ns1', 'generateName': 'kopf-event-'},
        'involvedObject': POD_REF,
        'type': 'SomeType',
        'reason': 'SomeReason',
        'message': 'Some message',
        'source': {'component': 'kopf'},
        'reportingComponent': 'kopf',
        'reportingInstance': 'dev',
        'firstTimestamp': timestamp,
        'lastTimestamp': timestamp,
        'count': 1,
    }


async def test_event_body_is_named_and_attributed_as_the_settings_say(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    settings.posting.reporting_component = 'my-operator'
    settings.posting.reporting_instance = 'pod-123'
    settings.posting.event_name_prefix = 'my-event-'
    posting.event(POD, type='SomeType', reason='SomeReason')
    [event] = drain(event_queue)
    body = posters.build_event_body(event, settings=settings)
    assert body['metadata']['generateName'] == 'my-event-'
    assert body['source'] == {'component': 'my-operator'}
    assert (body['reportingComponent'], body['reportingInstance']) == ('my-operator', 'pod-123')


async def test_events_of_cluster_scoped_objects_go_to_the_default_namespace(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    posting.event(NODE, type='SomeType', reason='SomeReason')
    [event] = drain(event_queue)
    assert posters.build_event_body(event, settings=settings)['metadata']['namespace'] == 'default'


#
# The poster task.
#

async def run_poster(
        queue: asyncio.Queue[posting.K8sEvent], client: RecordingClient, settings: OperatorSettings,
) -> None:
    """Run the poster until the queue is fully processed, then stop it."""
    task = asyncio.create_task(posters.poster(event_queue=queue, client=client, settings=settings))
    await queue.join()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_poster_creates_events_in_the_objects_namespaces(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    client = RecordingClient()
    posting.info([POD, NODE], reason='SomeReason')
    await run_poster(event_queue, client, settings)
    assert [(resource, namespace) for resource, namespace, _ in client.created] == [
        (posting.EVENTS, 'ns1'),
        (posting.EVENTS, 'default'),
    ]
    assert [body['involvedObject'] for _, _, body in client.created] == [POD_REF, NODE_REF]


def test_events_resource_is_the_core_v1_events() -> None:
    assert posting.EVENTS.get_url(namespace='ns1') == '/api/v1/namespaces/ns1/events'


@pytest.mark.parametrize('failure, expected_text', [
    pytest.param(APIForbiddenError({'message': 'forbidden', 'code': 403}, status=403),
                 'Code: 403. Message: forbidden.', id='api-error'),
    pytest.param(ConnectionError('refused'), "ConnectionError('refused')", id='other-error'),
])
async def test_poster_logs_failures_and_continues(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        caplog: pytest.LogCaptureFixture, failure: Exception, expected_text: str,
) -> None:
    client = RecordingClient(failures=[failure])
    settings.posting.default_backoffs = ()  # no retries: the first failure is final
    posting.info(POD, reason='First')
    posting.info(POD, reason='Second')
    with caplog.at_level(logging.WARNING):
        await run_poster(event_queue, client, settings)
    assert [body['reason'] for _, _, body in client.created] == ['Second']
    assert "Failed to post an event" in caplog.text
    assert expected_text in caplog.text


async def test_poster_skips_the_queued_events_when_posting_is_disabled_meanwhile(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
) -> None:
    client = RecordingClient()
    posting.info(POD, reason='SomeReason')
    settings.posting.enabled = False
    await run_poster(event_queue, client, settings)
    assert client.created == []
