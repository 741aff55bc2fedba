"""
Posting of k8s-events as in Kopf 1.45: failed posts retried with back-offs
(``settings.posting.default_backoffs`` / ``logging_backoffs``, or the call's ``backoffs=``),
then given up with a log line; per-object workers, limited and lingering as the settings say.

The poster runs on fake loop time (looptime): the loop time of the attempts shows the back-offs.
"""
import asyncio
import inspect
import logging
from typing import Any, AsyncIterator, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import pytest

import kopf
from kopf._cogs.clients.errors import (
    APIConflictError,
    APIForbiddenError,
    APINotFoundError,
    APIServerError,
    APITooManyRequestsError,
)
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers.typedefs import RawBody
from kopf._cogs.structs.references import Namespace, Resource
from kopf._core.actions import loggers
from kopf._core.engines.events import posters, posting

POD1: Dict[str, Any] = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'p1', 'namespace': 'ns', 'uid': 'u1'}}
POD2: Dict[str, Any] = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'p2', 'namespace': 'ns', 'uid': 'u2'}}


class ScriptedClient:
    """Creates the events, failing the first attempts of the reasons listed; remembers when."""

    def __init__(self, failures: Optional[Mapping[str, Sequence[Exception]]] = None,
                 delay: float = 0) -> None:
        self.failures = {reason: list(excs) for reason, excs in (failures or {}).items()}
        self.attempts: List[Tuple[float, str]] = []
        self.client_backoffs: List[Optional[Tuple[float, ...]]] = []  # the client's own retries asked for
        self.created: List[str] = []
        self.delay = delay
        self.concurrent = 0
        self.max_concurrent = 0

    async def create_object(self, resource: Resource, *, namespace: Namespace, body: Mapping[str, Any],
                            backoffs: Optional[Iterable[float]] = None) -> RawBody:
        reason = body['reason']
        self.attempts.append((asyncio.get_running_loop().time(), reason))
        self.client_backoffs.append(None if backoffs is None else tuple(backoffs))
        self.concurrent += 1
        self.max_concurrent = max(self.max_concurrent, self.concurrent)
        try:
            await asyncio.sleep(self.delay)
            if self.failures.get(reason):
                raise self.failures[reason].pop(0)
            self.created.append(reason)
            return dict(body)
        finally:
            self.concurrent -= 1

    async def patch_object(self, *args: Any, **kwargs: Any) -> RawBody:
        raise NotImplementedError("Posting must never patch.")

    async def delete_object(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("Posting must never delete.")


def forbidden() -> APIForbiddenError:
    return APIForbiddenError({'message': 'events is forbidden', 'code': 403, 'details': {'kind': 'events'}},
                             status=403)


@pytest.fixture()
def settings() -> OperatorSettings:
    return OperatorSettings()


@pytest.fixture()
async def event_queue(settings: OperatorSettings) -> AsyncIterator[asyncio.Queue[posting.K8sEvent]]:
    queue: asyncio.Queue[posting.K8sEvent] = asyncio.Queue(maxsize=100)
    posting.bind(event_queue=queue, settings=settings)
    yield queue


async def run_poster(queue: asyncio.Queue[posting.K8sEvent], client: ScriptedClient,
                     settings: OperatorSettings) -> float:
    """Run the poster until every queued event is posted or given up; return the loop time it took."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    task = asyncio.create_task(posters.poster(event_queue=queue, client=client, settings=settings))
    await queue.join()
    took = loop.time() - start
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return took


def attempt_times(client: ScriptedClient, reason: str) -> List[float]:
    return [when for when, why in client.attempts if why == reason]


# The signatures, as in Kopf 1.45.2.

@pytest.mark.parametrize('fn', [kopf.event, kopf.info, kopf.warn, kopf.exception])
def test_event_functions_accept_backoffs(fn: Any) -> None:
    parameter = inspect.signature(fn).parameters['backoffs']
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert parameter.default is None


# The back-offs of the queued events.

async def test_explicit_events_get_the_default_backoffs_at_the_call(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    settings.posting.default_backoffs = [7, 8]
    kopf.info(POD1, reason='R')
    kopf.warn(POD1, reason='R')
    kopf.event(POD1, type='T', reason='R')
    kopf.exception(POD1, reason='R', exc=ValueError('x'))
    settings.posting.default_backoffs = [9]  # too late for the queued events
    assert [event_queue.get_nowait().backoffs for _ in range(4)] == [[7, 8]] * 4


@pytest.mark.parametrize('backoffs', [pytest.param((), id='none'), pytest.param(3, id='scalar'),
                                      pytest.param([1, 2], id='list')])
async def test_explicit_events_keep_their_own_backoffs(
        event_queue: asyncio.Queue[posting.K8sEvent], backoffs: Any) -> None:
    kopf.info(POD1, reason='R', backoffs=backoffs)
    kopf.exception(POD1, reason='R', exc=ValueError('x'), backoffs=backoffs)
    assert event_queue.get_nowait().backoffs == backoffs
    assert event_queue.get_nowait().backoffs == backoffs


async def test_log_messages_get_the_logging_backoffs(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=loggers.OBJECTS_LOGGER_NAME)
    settings.posting.loggers = True
    settings.posting.logging_backoffs = (4, 4)
    logger = loggers.ObjectLogger(body=POD1, settings=settings)
    logger.info("Hello.")
    assert event_queue.get_nowait().backoffs == (4, 4)


# Retrying and giving up.

@pytest.mark.looptime
async def test_failed_post_is_retried_per_the_backoffs_then_given_up(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        caplog: pytest.LogCaptureFixture) -> None:
    client = ScriptedClient(failures={'R': [forbidden()] * 10})
    kopf.info(POD1, reason='R', message='hi', backoffs=[1, 2, 3])
    with caplog.at_level(logging.DEBUG, logger='kopf._core.engines.posting'):
        await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0, 1, 3, 6]
    assert client.created == []
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith("Request attempt #1/4 failed; will retry: "
                                  "POST /api/v1/namespaces/ns/events -> APIForbiddenError(")
    assert any(message.startswith("Request attempt #4/4 failed; escalating: ") for message in messages)
    assert messages[-1] == ("Failed to post an event. Ignoring and continuing. "
                            "Code: 403. Message: events is forbidden. Details: {'kind': 'events'}"
                            "Event: type='Normal', reason='R', message='hi'.")
    assert caplog.records[-1].levelno == logging.WARNING


@pytest.mark.looptime
async def test_default_backoffs_apply_without_backoffs_given(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(failures={'R': [forbidden()] * 100})
    kopf.info(POD1, reason='R')
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0, 1, 2, 4, 7, 12, 20, 33, 54]  # Kopf's (1, 1, 2, 3, 5, 8, 13, 21)


@pytest.mark.looptime
async def test_logging_backoffs_apply_to_log_messages(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=loggers.OBJECTS_LOGGER_NAME)
    settings.posting.loggers = True
    client = ScriptedClient(failures={'Logging': [forbidden()] * 100})
    loggers.ObjectLogger(body=POD1, settings=settings).info("Hello.")
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'Logging') == [0, 1, 2, 4, 7, 12]  # Kopf's (1, 1, 2, 3, 5)


@pytest.mark.looptime
async def test_a_scalar_backoff_is_one_retry(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(failures={'R': [forbidden()] * 10})
    kopf.info(POD1, reason='R', backoffs=2.5)
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0, 2.5]


@pytest.mark.looptime
async def test_a_generator_of_backoffs_counts_attempts_without_a_total(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        caplog: pytest.LogCaptureFixture) -> None:
    def backoffs() -> Iterator[float]:
        yield 1
        yield 1
    client = ScriptedClient(failures={'R': [forbidden()] * 10})
    kopf.info(POD1, reason='R', backoffs=backoffs())
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0, 1, 2]
    assert "Request attempt #3 failed; escalating" in caplog.text


@pytest.mark.looptime
async def test_a_retried_post_succeeds_eventually(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        caplog: pytest.LogCaptureFixture) -> None:
    client = ScriptedClient(failures={'R': [APIServerError(status=503), ConnectionResetError('reset')]})
    kopf.info(POD1, reason='R', backoffs=[5, 5, 5])
    with caplog.at_level(logging.DEBUG, logger='kopf._core.engines.posting'):
        await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0, 5, 10]
    assert client.created == ['R']
    assert "Failed to post an event" not in caplog.text
    assert "Request attempt #3/4 succeeded" in caplog.text


@pytest.mark.looptime
async def test_only_the_posting_backoffs_apply_not_the_clients_own_retries(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(failures={'R': [APIServerError(status=503)] * 2})
    settings.networking.error_backoffs = [100, 100]  # would multiply each attempt if the client retried too
    kopf.info(POD1, reason='R', backoffs=[5, 5])
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0, 5, 10]
    assert client.client_backoffs == [(), (), ()]  # every attempt: no retries inside the client


@pytest.mark.looptime
@pytest.mark.parametrize('error', [
    pytest.param(APINotFoundError({'message': 'namespace gone', 'code': 404}, status=404), id='404'),
    pytest.param(APIConflictError({'message': 'conflict', 'code': 409}, status=409), id='409'),
])
async def test_permanent_errors_are_given_up_at_once(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        caplog: pytest.LogCaptureFixture, error: Exception) -> None:
    client = ScriptedClient(failures={'R': [error] * 10})
    kopf.info(POD1, reason='R', backoffs=[1, 1, 1])
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0]
    assert "Request attempt" not in caplog.text
    assert f"Failed to post an event. Ignoring and continuing. Code: {error.code}." in caplog.text  # type: ignore[attr-defined]


@pytest.mark.looptime
@pytest.mark.parametrize('enforce, expected', [pytest.param(False, [0, 10], id='longer-wins'),
                                               pytest.param(True, [0, 10], id='enforced')])
async def test_throttled_posts_wait_as_long_as_the_server_asks(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        enforce: bool, expected: List[float]) -> None:
    settings.networking.enforce_retry_after = enforce
    client = ScriptedClient(failures={'R': [APITooManyRequestsError(retry_after=10)]})
    kopf.info(POD1, reason='R', backoffs=[1])
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == expected


@pytest.mark.looptime
async def test_an_enforced_shorter_retry_after_replaces_the_backoff(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    settings.networking.enforce_retry_after = True
    client = ScriptedClient(failures={'R': [APITooManyRequestsError(retry_after=2)]})
    kopf.info(POD1, reason='R', backoffs=[30])
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'R') == [0, 2]


# The per-object workers.

@pytest.mark.looptime
async def test_a_retrying_object_does_not_delay_other_objects(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(failures={'A': [forbidden()] * 10})
    kopf.info(POD1, reason='A', backoffs=[10, 10])
    kopf.info(POD2, reason='B')
    await run_poster(event_queue, client, settings)
    assert attempt_times(client, 'B') == [0]
    assert attempt_times(client, 'A') == [0, 10, 20]


@pytest.mark.looptime
async def test_one_objects_events_are_posted_in_order_after_retries(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(failures={'A': [forbidden()]})
    kopf.info(POD1, reason='A', backoffs=[10])
    kopf.info(POD1, reason='B')
    await run_poster(event_queue, client, settings)
    assert client.created == ['A', 'B']
    assert attempt_times(client, 'B') == [10]


@pytest.mark.looptime
async def test_worker_limit_of_one_posts_every_event_one_object_at_a_time(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    settings.posting.worker_limit = 1
    settings.posting.idle_timeout = 0.5
    client = ScriptedClient(delay=1)
    for reason in ['A1', 'A2']:
        kopf.info(POD1, reason=reason)
    for reason in ['B1', 'B2']:
        kopf.info(POD2, reason=reason)
    await run_poster(event_queue, client, settings)
    assert sorted(client.created) == ['A1', 'A2', 'B1', 'B2']
    assert client.max_concurrent == 1
    # The 2nd object's worker starts only when the 1st one has idled out: 2 posts + the idle timeout.
    assert attempt_times(client, 'B1') == [2.5]


@pytest.mark.looptime
async def test_unlimited_workers_post_objects_concurrently(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(delay=1)
    for pod in [POD1, POD2]:
        kopf.info(pod, reason='R')
    took = await run_poster(event_queue, client, settings)
    assert client.max_concurrent == 2
    assert took == 1


@pytest.mark.looptime
async def test_worker_limit_set_after_the_poster_started_applies(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(delay=1)
    task = asyncio.create_task(posters.poster(event_queue=event_queue, client=client, settings=settings))
    await asyncio.sleep(0)
    settings.posting.worker_limit = 1
    for pod in [POD1, POD2]:
        kopf.info(pod, reason='R')
    await event_queue.join()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert client.max_concurrent == 1


@pytest.mark.looptime
@pytest.mark.parametrize('idle_timeout', [0.5, 3.0])
async def test_idle_workers_exit_after_the_idle_timeout(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings, idle_timeout: float) -> None:
    settings.posting.idle_timeout = idle_timeout
    client = ScriptedClient()
    task = asyncio.create_task(posters.poster(event_queue=event_queue, client=client, settings=settings))
    kopf.info(POD1, reason='R')
    await event_queue.join()
    loop = asyncio.get_running_loop()
    start = loop.time()
    workers = [t for t in asyncio.all_tasks() if t.get_name().startswith('poster of events for')]
    assert len(workers) == 1
    await asyncio.wait(workers)
    assert loop.time() - start == pytest.approx(idle_timeout)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.looptime
async def test_an_object_gets_a_new_worker_after_the_old_one_exited(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    settings.posting.idle_timeout = 1
    client = ScriptedClient()
    task = asyncio.create_task(posters.poster(event_queue=event_queue, client=client, settings=settings))
    kopf.info(POD1, reason='A')
    await asyncio.sleep(5)
    kopf.info(POD1, reason='B')
    await event_queue.join()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert client.created == ['A', 'B']


async def test_stopping_the_poster_stops_its_workers(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings) -> None:
    client = ScriptedClient(failures={'R': [forbidden()] * 10})
    task = asyncio.create_task(posters.poster(event_queue=event_queue, client=client, settings=settings))
    kopf.info(POD1, reason='R', backoffs=[1000])
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert not any(t.get_name().startswith('poster of events for') for t in asyncio.all_tasks())


@pytest.mark.looptime
async def test_one_objects_flood_while_retrying_is_bounded(
        event_queue: asyncio.Queue[posting.K8sEvent], settings: OperatorSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(posting, 'QUEUE_LIMIT', 3)
    client = ScriptedClient(failures={'R0': [forbidden()]})
    task = asyncio.create_task(posters.poster(event_queue=event_queue, client=client, settings=settings))
    kopf.info(POD1, reason='R0', backoffs=[10])
    await asyncio.sleep(1)  # the first post has failed and waits for its retry
    for i in range(1, 10):
        kopf.info(POD1, reason=f'R{i}')
    await event_queue.join()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert client.created == ['R0', 'R1', 'R2', 'R3']  # 3 more fit in the object's backlog
