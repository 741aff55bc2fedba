"""
The schedules of timers and the lifecycle of daemons, on a fast-forwarded loop.

Inputs: timer/daemon handlers with their options, run by the engine against an
in-memory object (``DaemonsMemory``) with a recording patch applier; the loop
time is fake (looptime), so every assertion is on exact loop seconds and no
test sleeps for real. Not mocked: the engine's own scheduling and the error
protocol of the handlers' execution.
"""
import asyncio
import logging
from typing import Any, Callable, Dict, List

import pytest

import kopf
from kopf._cogs.structs import bodies, patches
from kopf._core.actions import progression
from kopf._core.engines.background import daemons, stoppers
from kopf._core.intents import handlers

logger = logging.getLogger('test')


def make_timer(fn: Callable[..., Any], **options: Any) -> handlers.TimerHandler:
    return handlers.TimerHandler(fn=fn, id=handlers.HandlerId(fn.__name__), param=None, errors=None, timeout=None,
                                 retries=None, **{'backoff': None, **options})


def make_daemon(fn: Callable[..., Any], **options: Any) -> handlers.DaemonHandler:
    return handlers.DaemonHandler(fn=fn, id=handlers.HandlerId(fn.__name__), param=None, errors=None, timeout=None,
                                  retries=None, **{'backoff': None, **options})


class Recorder:
    """The reactor's side for the engine: kwargs for the handlers, and the applied patches."""

    def __init__(self) -> None:
        self.patches: List[Dict[str, Any]] = []
        self.pending_fns: List[Any] = []

    def context(self) -> daemons.DaemonContext:
        def build_kwargs(handler: handlers.BaseHandler, state: progression.HandlerState,
                         patch: patches.Patch, body: Any) -> Dict[str, Any]:
            return dict(body=body, patch=patch, retry=state.retries, logger=logger, param=handler.param)

        async def apply_patch(patch: patches.Patch) -> None:
            self.patches.append(dict(patch))

        return daemons.DaemonContext(settings=kopf.OperatorSettings(), logger=logger, memo=kopf.Memo(),
                                     build_kwargs=build_kwargs, apply_patch=apply_patch,
                                     pending_fns=self.pending_fns)


def make_memory() -> daemons.DaemonsMemory:
    """Made inside the test: its clock is the test's (fast-forwarded) loop, not the fixtures'."""
    return daemons.DaemonsMemory(body=bodies.Body({'metadata': {'name': 'obj'}, 'spec': {'x': 1}}))


async def run_for(seconds: float, memory: daemons.DaemonsMemory, handler: handlers.SpawningHandler,
                  recorder: Recorder) -> None:
    daemons.spawn_daemons(memory=memory, matching=[handler], context=recorder.context())
    await asyncio.sleep(seconds)
    daemons.stop_daemons(memory=memory, reason=stoppers.DaemonStoppingReason.OPERATOR_EXITING,
                         context=recorder.context())
    await asyncio.wait([daemon.task for daemon in memory.running.values()])


@pytest.mark.looptime
async def test_timer_runs_every_interval() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def tick(**_: Any) -> None:
        calls.append(loop.time())
    await run_for(16, memory, make_timer(tick, interval=5), Recorder())
    assert calls == [0, 5, 10, 15]


@pytest.mark.looptime
async def test_timer_never_overlaps_with_itself() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def slow(**_: Any) -> None:
        calls.append(loop.time())
        await asyncio.sleep(3)  # longer than the interval
    await run_for(14, memory, make_timer(slow, interval=2), Recorder())
    assert calls == [0, 5, 10]  # run 3s + wait 2s: never two runs at once


@pytest.mark.looptime
async def test_timer_with_initial_delay() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def tick(**_: Any) -> None:
        calls.append(loop.time())
    await run_for(26, memory, make_timer(tick, interval=10, initial_delay=5), Recorder())
    assert calls == [5, 15, 25]


@pytest.mark.looptime
async def test_idle_timer_waits_for_the_object_to_be_unchanged() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def tick(**_: Any) -> None:
        calls.append(loop.time())

    async def change_at(when: float) -> None:
        await asyncio.sleep(when)
        memory.notice_change({'metadata': {'name': 'obj'}, 'spec': {'x': 2}})

    changer = asyncio.create_task(change_at(5.5))
    await run_for(11, memory, make_timer(tick, idle=3, interval=1), Recorder())
    await changer
    # Idle since the start: at 3, then every 1s; the change at 5.5 restarts the idling: 8.5, 9.5, 10.5.
    assert calls == [3, 4, 5, 8.5, 9.5, 10.5]


@pytest.mark.looptime
async def test_sharp_timer_keeps_its_schedule_despite_slow_runs() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def slow(**_: Any) -> None:
        calls.append(loop.time())
        await asyncio.sleep(1)
    await run_for(16, memory, make_timer(slow, interval=5, sharp=True), Recorder())
    assert calls == [0, 5, 10, 15]


@pytest.mark.looptime
async def test_timer_errors_follow_the_backoff_then_the_interval() -> None:
    memory = make_memory()
    # The manual's example: 3 failures with backoff=5, then a success, then interval=10.
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def flaky(retry: int, **_: Any) -> None:
        calls.append(loop.time())
        if retry < 3:
            raise Exception("not yet")
    await run_for(26, memory, make_timer(flaky, interval=10, backoff=5), Recorder())
    assert calls == [0, 5, 10, 15, 25]


@pytest.mark.looptime
async def test_timer_temporary_errors_use_their_own_delay() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def temporary(retry: int, **_: Any) -> None:
        calls.append(loop.time())
        if retry == 0:
            raise kopf.TemporaryError("later", delay=2)
    await run_for(13, memory, make_timer(temporary, interval=10), Recorder())
    assert calls == [0, 2, 12]


@pytest.mark.looptime
async def test_timer_runs_again_after_a_permanent_error() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def broken(**_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        raise kopf.PermanentError("not this time")
    handler = make_timer(broken, interval=1)
    await run_for(4.5, memory, handler, Recorder())
    assert calls == [0, 1, 2, 3, 4]  # as Kopf 1.45.2 does; its manual says the timer stops
    assert handler.id not in memory.done


@pytest.mark.looptime
async def test_timer_patch_is_applied_after_each_run_even_if_it_failed() -> None:
    memory = make_memory()
    recorder = Recorder()

    async def patching(retry: int, patch: kopf.Patch, **_: Any) -> None:
        patch.status['attempt'] = retry
        if retry == 0:
            raise kopf.TemporaryError("failed", delay=1)
    await run_for(1.5, memory, make_timer(patching, interval=10), recorder)
    assert recorder.patches == [{'status': {'attempt': 0}}, {'status': {'attempt': 1}}]


@pytest.mark.looptime
async def test_timer_results_go_to_the_status() -> None:
    memory = make_memory()
    recorder = Recorder()

    async def answering(**_: Any) -> int:
        return 42
    await run_for(0.5, memory, make_timer(answering, interval=10), recorder)
    assert recorder.patches == [{'status': {'answering': 42}}]


@pytest.mark.looptime
async def test_daemon_restarts_after_a_temporary_error_with_its_delay() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    calls: List[float] = []

    async def restarting(stopped: kopf.DaemonStopped, retry: int, **_: Any) -> None:
        calls.append(loop.time())
        if retry < 2:
            raise kopf.TemporaryError("restart me", delay=10)
        await stopped.wait()
    await run_for(30, memory, make_daemon(restarting), Recorder())
    assert calls == [0, 10, 20]


@pytest.mark.looptime
async def test_daemon_that_exits_on_its_own_is_not_restarted() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def once(**_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
    handler = make_daemon(once)
    recorder = Recorder()
    daemons.spawn_daemons(memory=memory, matching=[handler], context=recorder.context())
    await asyncio.sleep(1)
    daemons.spawn_daemons(memory=memory, matching=[handler], context=recorder.context())  # a new event
    await asyncio.sleep(1)
    assert calls == [0]
    assert handler.id in memory.done


@pytest.mark.looptime
async def test_daemon_stopped_by_filters_can_be_spawned_again() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def follower(stopped: kopf.DaemonStopped, **_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        await stopped.wait()
    handler = make_daemon(follower)
    recorder = Recorder()
    daemons.spawn_daemons(memory=memory, matching=[handler], context=recorder.context())
    await asyncio.sleep(1)
    daemons.spawn_daemons(memory=memory, matching=[], context=recorder.context())  # stopped matching
    await asyncio.sleep(1)
    daemons.spawn_daemons(memory=memory, matching=[handler], context=recorder.context())  # matching again
    await asyncio.sleep(1)
    assert calls == [0, 2]


@pytest.mark.looptime
async def test_daemon_initial_delay() -> None:
    memory = make_memory()
    calls: List[float] = []

    async def late(stopped: kopf.DaemonStopped, **_: Any) -> None:
        calls.append(asyncio.get_running_loop().time())
        await stopped.wait()
    await run_for(10, memory, make_daemon(late, initial_delay=7), Recorder())
    assert calls == [7]


@pytest.mark.looptime
async def test_stubborn_daemon_is_cancelled_then_abandoned_after_the_timeouts() -> None:
    memory = make_memory()
    loop = asyncio.get_running_loop()
    cancellations: List[float] = []
    released = asyncio.Event()  # lets the test end the orphan; the framework cannot

    async def stubborn(**_: Any) -> None:
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                cancellations.append(loop.time())

    handler = make_daemon(stubborn, cancellation_backoff=1, cancellation_timeout=2)
    recorder = Recorder()
    daemons.spawn_daemons(memory=memory, matching=[handler], context=recorder.context())
    await asyncio.sleep(1)
    daemons.stop_daemons(memory=memory, reason=stoppers.DaemonStoppingReason.RESOURCE_DELETED,
                         context=recorder.context())
    with pytest.warns(ResourceWarning, match="abandoned"):
        await asyncio.sleep(2.5)
        stopped_while_cancelling = memory.stopped
        await asyncio.sleep(1)
    stopped_after_the_timeout = memory.stopped
    assert not stopped_while_cancelling  # the graceful backoff (1s) is over, the cancellation is pending
    assert cancellations == [2]  # cancelled right after the backoff
    assert stopped_after_the_timeout  # abandoned after the timeout (at 4): the object can be released
    released.set()  # clean up the orphan for the test's loop
    await memory.running[handler.id].task


@pytest.mark.looptime
async def test_daemon_without_cancellation_timeout_is_waited_for_forever() -> None:
    memory = make_memory()
    async def deaf(**_: Any) -> None:
        await asyncio.sleep(3600)

    handler = make_daemon(deaf)
    recorder = Recorder()
    daemons.spawn_daemons(memory=memory, matching=[handler], context=recorder.context())
    await asyncio.sleep(1)  # let it start: a daemon stopped before it has started does not run at all
    daemons.stop_daemons(memory=memory, reason=stoppers.DaemonStoppingReason.RESOURCE_DELETED,
                         context=recorder.context())
    await asyncio.sleep(600)
    assert not memory.stopped  # never cancelled, never abandoned: the finalizer stays
    memory.running[handler.id].task.cancel()
    await asyncio.sleep(0)
