"""
Daemons and timers where Kopf 1.45.2's behaviour is the reference, on a fast-forwarded loop.

Inputs: daemon/timer handlers with their options, run by the engine against an
in-memory object (``DaemonsMemory``) with the kwargs that the reactor gives
them (``daemons.object_context`` with a client that records the patches).
Outputs: the loop times of the runs, their kwargs, the log records.
Not mocked: the engine's scheduling and the error protocol of the handlers.
"""
import asyncio
import copy
import datetime
import logging
import threading
from typing import Any, Callable, Dict, List

import pytest

import kopf
from kopf._cogs.structs import bodies, hierarchies, references
from kopf._core.actions import progression
from kopf._core.engines.background import daemons, stoppers
from kopf._core.intents import handlers

RESOURCE = references.Resource(group='kopf.dev', version='v1', plural='kopfexamples', namespaced=True)


class RecordingClient:
    """The API client's seam for the daemons' patches: each merge-patch is recorded and answered."""

    def __init__(self) -> None:
        self.patches: List[Dict[str, Any]] = []

    async def patch_object(self, resource: Any, *, patch: Any, **_: Any) -> Any:
        self.patches.append(dict(patch))
        return None


def make_handler(cls: type, fn: Callable[..., Any], **options: Any) -> Any:
    return cls(fn=fn, id=handlers.HandlerId(fn.__name__), param=None,
               **{'errors': None, 'timeout': None, 'retries': None, 'backoff': None, **options})


def make_memory() -> daemons.DaemonsMemory:
    """Made inside the test: its clock is the test's (fast-forwarded) loop, not the fixtures'."""
    return daemons.DaemonsMemory(body=bodies.Body({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
        'metadata': {'name': 'obj', 'namespace': 'ns', 'uid': 'uid1', 'labels': {'x': '0'}},
        'spec': {'delay': 3}}))


def make_context(memory: daemons.DaemonsMemory, logger: logging.Logger) -> daemons.DaemonContext:
    context = daemons.object_context(settings=kopf.OperatorSettings(), client=RecordingClient(),  # type: ignore[arg-type]
                                     resource=RESOURCE, memory=memory, memo=kopf.Memo(),
                                     indices={'myindex': {'k': 'v'}}, pending_fns=[])
    return daemons.DaemonContext(**{**context.__dict__, 'logger': logger})


async def run_for(seconds: float, memory: daemons.DaemonsMemory, handler: handlers.SpawningHandler,
                  context: daemons.DaemonContext) -> None:
    daemons.spawn_daemons(memory=memory, matching=[handler], context=context)
    await asyncio.sleep(seconds)
    daemons.stop_daemons(memory=memory, reason=stoppers.DaemonStoppingReason.OPERATOR_EXITING, context=context)
    await asyncio.wait([daemon.task for daemon in memory.running.values()])


@pytest.fixture
def loop_utcnow(monkeypatch: pytest.MonkeyPatch) -> None:
    """The handlers' ``started``/``runtime`` follow the fast-forwarded loop, as the schedules do."""
    base = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    monkeypatch.setattr(progression, 'utcnow',
                        lambda: base + datetime.timedelta(seconds=asyncio.get_running_loop().time()))


# A callable initial_delay=.

@pytest.mark.looptime
async def test_timer_initial_delay_as_a_function_of_the_object() -> None:
    memory = make_memory()
    calls: List[float] = []
    delay_kwargs: List[Dict[str, Any]] = []

    def delay_of(**kwargs: Any) -> float:
        delay_kwargs.append(kwargs)
        return float(kwargs['spec']['delay'])

    async def tick(**_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
    handler = make_handler(handlers.TimerHandler, tick, interval=10, initial_delay=delay_of)
    await run_for(15, memory, handler, make_context(memory, logging.getLogger('test')))
    assert calls == [3, 13]
    # As in Kopf 1.45.2: the object's kwargs and the indices, not the handler's (param, retry, ...).
    assert len(delay_kwargs) == 1
    assert set(delay_kwargs[0]) == {'resource', 'body', 'spec', 'meta', 'status', 'uid', 'name', 'namespace',
                                    'labels', 'annotations', 'patch', 'logger', 'memo', 'myindex'}
    assert delay_kwargs[0]['body'] is memory.body


@pytest.mark.looptime
async def test_daemon_initial_delay_as_a_function() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def late(stopped: kopf.DaemonStopped, **_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        await stopped.wait()
    handler = make_handler(handlers.DaemonHandler, late, initial_delay=lambda name, **_: 7 if name == 'obj' else 1)
    await run_for(10, memory, handler, make_context(memory, logging.getLogger('test')))
    assert calls == [7]


@pytest.mark.looptime
async def test_initial_delay_function_returning_none_means_no_delay() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def tick(**_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
    handler = make_handler(handlers.TimerHandler, tick, interval=10, initial_delay=lambda **_: None)
    await run_for(5, memory, handler, make_context(memory, logging.getLogger('test')))
    assert calls == [0]


@pytest.mark.looptime
async def test_a_failing_initial_delay_function_is_logged_and_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    memory = make_memory()
    calls: List[float] = []

    def broken_delay(**_: Any) -> float:
        raise ValueError("no delay today")

    async def tick(**_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
    handler = make_handler(handlers.TimerHandler, tick, interval=1, initial_delay=broken_delay)
    context = make_context(memory, logging.getLogger('test.objects'))
    with caplog.at_level(logging.DEBUG, logger='test.objects'):
        await run_for(5, memory, handler, context)
        daemons.spawn_daemons(memory=memory, matching=[handler], context=context)  # a later event
        await asyncio.sleep(5)
    assert calls == []
    assert handler.id in memory.done  # as in Kopf: not restarted for this object
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "Timer 'tick' has crashed" in errors[0].getMessage()
    assert "no delay today" in errors[0].getMessage()
    assert errors[0].exc_info is not None


# The cycles of a timer: started/runtime/timeout= count from the cycle's start, as in Kopf 1.45.2
# (after the wait for the interval or a change, before the idling).

def recording(calls: List[Any], *, fail_first: bool = False) -> Callable[..., Any]:
    async def timer(retry: int, runtime: datetime.timedelta, **_: Any) -> None:
        calls.append((asyncio.get_running_loop().time(), retry, runtime.total_seconds()))
        if fail_first and retry == 0:
            raise kopf.TemporaryError("once per cycle", delay=2)
    return timer


@pytest.mark.looptime
@pytest.mark.usefixtures('loop_utcnow')
async def test_timer_timeout_shorter_than_the_interval_does_not_end_the_timer() -> None:
    memory = make_memory()
    calls: List[Any] = []
    handler = make_handler(handlers.TimerHandler, recording(calls), interval=1, timeout=0.5)
    await run_for(4.5, memory, handler, make_context(memory, logging.getLogger('test')))
    assert calls == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0), (4, 0, 0)]


@pytest.mark.looptime
@pytest.mark.usefixtures('loop_utcnow')
async def test_timer_runtime_counts_from_the_cycle_start_after_the_interval() -> None:
    memory = make_memory()
    calls: List[Any] = []
    handler = make_handler(handlers.TimerHandler, recording(calls, fail_first=True), interval=10)
    await run_for(15, memory, handler, make_context(memory, logging.getLogger('test')))
    assert calls == [(0, 0, 0), (2, 1, 2), (12, 0, 0), (14, 1, 2)]


@pytest.mark.looptime
@pytest.mark.usefixtures('loop_utcnow')
async def test_timer_runtime_includes_the_idling_but_not_the_interval() -> None:
    memory = make_memory()
    calls: List[Any] = []
    handler = make_handler(handlers.TimerHandler, recording(calls), idle=3, interval=5)
    await run_for(14, memory, handler, make_context(memory, logging.getLogger('test')))
    assert calls == [(3, 0, 3), (8, 0, 0), (13, 0, 0)]


@pytest.mark.looptime
@pytest.mark.usefixtures('loop_utcnow')
async def test_idle_only_timer_starts_a_new_cycle_when_it_sees_the_change() -> None:
    memory = make_memory()
    calls: List[Any] = []

    async def change_at(when: float) -> None:
        await asyncio.sleep(when)
        memory.notice_change({'metadata': {'name': 'obj'}, 'spec': {'x': 2}})
    changer = asyncio.create_task(change_at(5))
    handler = make_handler(handlers.TimerHandler, recording(calls), idle=3)
    await run_for(10, memory, handler, make_context(memory, logging.getLogger('test')))
    await changer
    # The change at 5 is seen at 6 (every idle period after the run at 3); the idling ends at 8.
    assert calls == [(3, 0, 3), (8, 0, 2)]


# The default owner of kopf.adopt() & co in daemons and timers: the live object, as in Kopf 1.45.2.

def relabel(memory: daemons.DaemonsMemory, value: str) -> None:
    raw = dict(memory.body)
    raw['metadata'] = dict(raw['metadata'], labels={'x': value})
    memory.notice_change(raw)


@pytest.mark.looptime
@pytest.mark.parametrize('is_async', [True, False], ids=['async', 'sync'])
async def test_daemon_default_owner_is_the_live_object(is_async: bool) -> None:
    memory = make_memory()
    children: List[Dict[str, Any]] = []
    adopted = threading.Event()

    def adopt_one() -> None:
        child: Dict[str, Any] = {'metadata': {'name': 'child'}}
        kopf.adopt(child)
        children.append(child)
        adopted.set()

    async def async_daemon(stopped: kopf.DaemonStopped, **_: Any) -> None:
        while not await stopped.wait(1):
            adopt_one()

    def sync_daemon(stopped: kopf.DaemonStopped, **_: Any) -> None:
        adopt_one()
        while not stopped.wait(0.2):
            pass
        adopt_one()

    # The reactor spawns the daemons in the context of the event's handling: the body as it was then.
    hierarchies.current_body.set(bodies.Body(copy.deepcopy(dict(memory.body))))
    handler = make_handler(handlers.DaemonHandler, async_daemon if is_async else sync_daemon)
    context = make_context(memory, logging.getLogger('test'))
    daemons.spawn_daemons(memory=memory, matching=[handler], context=context)
    if is_async:
        await asyncio.sleep(1.5)
    else:
        await asyncio.to_thread(adopted.wait, 10)  # the sync daemon's thread runs in real time, not the loop's
    relabel(memory, '1')
    await asyncio.sleep(1)
    daemons.stop_daemons(memory=memory, reason=stoppers.DaemonStoppingReason.OPERATOR_EXITING, context=context)
    await asyncio.wait([daemon.task for daemon in memory.running.values()])
    assert children[0]['metadata']['labels'] == {'x': '0'}
    assert children[-1]['metadata']['labels'] == {'x': '1'}
    assert children[-1]['metadata']['ownerReferences'][0]['uid'] == 'uid1'


@pytest.mark.looptime
async def test_timer_default_owner_is_the_live_object() -> None:
    memory = make_memory()
    labels: List[Any] = []

    def tick(**_: Any) -> None:
        child: Dict[str, Any] = {'metadata': {'name': 'child'}}
        kopf.label(child)
        labels.append(child['metadata']['labels'])

    hierarchies.current_body.set(bodies.Body(copy.deepcopy(dict(memory.body))))
    context = make_context(memory, logging.getLogger('test'))
    daemons.spawn_daemons(memory=memory, matching=[make_handler(handlers.TimerHandler, tick, interval=1)],
                          context=context)
    await asyncio.sleep(1.5)
    relabel(memory, '1')
    await asyncio.sleep(1)
    daemons.stop_daemons(memory=memory, reason=stoppers.DaemonStoppingReason.OPERATOR_EXITING, context=context)
    await asyncio.wait([daemon.task for daemon in memory.running.values()])
    assert labels == [{'x': '0'}, {'x': '0'}, {'x': '1'}]


# A timer after a permanent failure: it runs again on its schedule, as Kopf 1.45.2 does
# (its manual says the timer stops; see docs/migration.md).

@pytest.mark.looptime
async def test_timer_with_exhausted_retries_runs_again_after_the_interval() -> None:
    memory = make_memory()
    calls: List[Any] = []

    async def failing(retry: int, **_: Any) -> None:
        calls.append((asyncio.get_running_loop().time(), retry))
        raise Exception("still failing")
    handler = make_handler(handlers.TimerHandler, failing, interval=10, retries=2, backoff=1)
    await run_for(25, memory, handler, make_context(memory, logging.getLogger('test')))
    # Two attempts per cycle (the second is the last one: retries=2), then the interval.
    assert calls == [(0, 0), (1, 1), (11, 0), (12, 1), (22, 0), (23, 1)]
    assert handler.id not in memory.done


@pytest.mark.looptime
@pytest.mark.usefixtures('loop_utcnow')
async def test_idle_timer_with_a_timeout_below_the_idle_time_runs_after_the_first_timeout(
        caplog: pytest.LogCaptureFixture) -> None:
    memory = make_memory()
    calls: List[Any] = []
    handler = make_handler(handlers.TimerHandler, recording(calls), idle=3, interval=1, timeout=2)
    with caplog.at_level(logging.DEBUG, logger='test.objects'):
        await run_for(5.5, memory, handler, make_context(memory, logging.getLogger('test.objects')))
    # The first cycle times out while idling (before its run); the next one starts after the interval.
    assert calls == [(4, 0, 0), (5, 0, 0)]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "Timer 'timer' has timed out after 0:00:03."]


@pytest.mark.looptime
async def test_idle_only_timer_after_a_permanent_error_runs_after_the_next_change() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def broken(**_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        raise kopf.PermanentError("not this time")

    async def change_at(when: float) -> None:
        await asyncio.sleep(when)
        relabel(memory, '1')
    changer = asyncio.create_task(change_at(5))
    handler = make_handler(handlers.TimerHandler, broken, idle=3)
    await run_for(10, memory, handler, make_context(memory, logging.getLogger('test')))
    await changer
    assert calls == [3, 8]


# A timer with neither interval= nor idle=: it runs once per object, as in Kopf 1.45.2.

@pytest.mark.looptime
async def test_timer_without_a_schedule_runs_once_per_object_with_its_retries() -> None:
    memory = make_memory()
    calls: List[Any] = []

    async def once(retry: int, **_: Any) -> None:
        calls.append((asyncio.get_running_loop().time(), retry))
        if retry == 0:
            raise kopf.TemporaryError("not yet", delay=2)
    handler = make_handler(handlers.TimerHandler, once, initial_delay=1)
    context = make_context(memory, logging.getLogger('test'))
    daemons.spawn_daemons(memory=memory, matching=[handler], context=context)
    await asyncio.sleep(10)
    relabel(memory, '1')
    daemons.spawn_daemons(memory=memory, matching=[handler], context=context)  # a later event: not again
    await asyncio.sleep(10)
    assert calls == [(1, 0), (3, 1)]
    assert handler.id in memory.done
    assert memory.stopped


@pytest.mark.looptime
async def test_timer_without_a_schedule_is_not_run_again_after_a_permanent_error() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def broken(**_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        raise kopf.PermanentError("no")
    handler = make_handler(handlers.TimerHandler, broken)
    await run_for(10, memory, handler, make_context(memory, logging.getLogger('test')))
    assert calls == [0]
    assert handler.id in memory.done
