"""
The life of one daemon or timer of one object, in its own task (see ``engines.daemons``).

The initial delay, the runs with the handlers' error protocol (each run's patch applied
after it), and a timer's schedule: the interval, sharpness, idling, and its retry cycles.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Dict, Optional

from kopf._cogs.structs import hierarchies, patches
from kopf._core.actions import execution, invocation, progression, results
from kopf._core.engines.background import stoppers
from kopf._core.intents import handlers

if TYPE_CHECKING:
    from kopf._core.engines.background.daemons import DaemonContext, DaemonsMemory


def now() -> float:
    """The event loop's time: the schedules follow the loop's clock (which tests can fast-forward)."""
    return asyncio.get_running_loop().time()


async def run_guarded(
        *,
        handler: handlers.SpawningHandler,
        stopper: stoppers.DaemonStopper,
        memory: DaemonsMemory,
        context: DaemonContext,
) -> None:
    """The task of a daemon or timer: whatever escapes its runner is logged, never lost silently."""
    runner = _run_timer if isinstance(handler, handlers.TimerHandler) else _run_daemon
    # The default owner of kopf.adopt() & co in this task (and its threads): the live body, as in Kopf,
    # not the body of the event that spawned the daemon (the task's context is a copy of that one's).
    hierarchies.current_body.set(memory.body)
    try:
        await runner(handler=handler, stopper=stopper, memory=memory, context=context)
    except Exception as e:
        memory.done.add(handler.id)  # as if it exited on its own: not restarted for this object
        context.logger.exception(f"{handler.title} has crashed and will not be restarted: {e}")


async def _initial_delay(
        handler: handlers.SpawningHandler,
        stopper: stoppers.DaemonStopper,
        memory: DaemonsMemory,
        context: DaemonContext,
) -> bool:
    """
    Wait for the ``initial_delay=`` (seconds, or a function returning them); true if stopped meanwhile.

    The function is called as Kopf calls it: synchronously, with the object's kwargs only
    (body and its parts, resource, patch, logger, memo, indices), without the handler's.
    """
    delay = handler.initial_delay
    if callable(delay):
        patch = patches.Patch()
        base_kwargs = context.build_base_kwargs
        kwargs = (base_kwargs(patch, memory.body) if base_kwargs is not None else
                  dict(body=memory.body, patch=patch, logger=context.logger, memo=context.memo))
        delay = delay(**kwargs)
        if patch:
            await _apply_safely(context, patch)
    if not delay or delay <= 0:
        return stopper.is_set()
    return await stopper.wait_async(delay)


async def _run_daemon(
        *,
        handler: handlers.SpawningHandler,
        stopper: stoppers.DaemonStopper,
        memory: DaemonsMemory,
        context: DaemonContext,
) -> None:
    if await _initial_delay(handler, stopper, memory, context):
        return
    state = progression.HandlerState.from_scratch()
    while not stopper.is_set():
        outcome, state = await _run_once(handler=handler, stopper=stopper, memory=memory,
                                         context=context, state=state)
        if outcome.final:
            if not stopper.is_set():
                # Exited on its own (or failed for good): not restarted for this object in this
                # process. A daemon that exits because it was asked to can be spawned again later.
                memory.done.add(handler.id)
                if outcome.exception is None:
                    context.logger.debug(f"{handler.title} has exited on its own.")
            return
        await stopper.wait_async(outcome.delay or 0)


async def _run_timer(
        *,
        handler: handlers.SpawningHandler,
        stopper: stoppers.DaemonStopper,
        memory: DaemonsMemory,
        context: DaemonContext,
) -> None:
    assert isinstance(handler, handlers.TimerHandler)
    if await _initial_delay(handler, stopper, memory, context):
        return
    state: Optional[progression.HandlerState] = None
    schedule_start = now()
    while not stopper.is_set():
        if state is None or state.finished:
            # A new cycle of retries: its started/runtime (and timeout=) count from here, as in
            # Kopf 1.45.2: after the wait for the interval (or for a change), before the idling.
            state = progression.HandlerState.from_scratch()
        if handler.idle is not None and not await _wait_for_idling(handler.idle, memory, stopper):
            return
        run_started = now()
        outcome, state = await _run_once(handler=handler, stopper=stopper, memory=memory,
                                         context=context, state=state)
        # A permanent failure (also an exceeded retries= or timeout=) ends the cycle as a success
        # does: the timer runs again on its schedule, as Kopf 1.45.2 does (its manual says it stops).
        if not outcome.final:
            delay = outcome.delay or 0  # a retry: the error's delay overrides the schedule
        elif handler.interval is None and handler.idle is None:
            memory.done.add(handler.id)  # no schedule: once per object (until it succeeds or fails for good)
            return
        elif handler.interval is None:
            # No interval: run again only after the next change and a new idle period.
            if not await _wait_for_change(memory, stopper, since=run_started, poll=handler.idle):
                return
            continue
        elif handler.sharp:
            elapsed = now() - schedule_start
            delay = handler.interval - elapsed % handler.interval
        else:
            delay = handler.interval
        if await stopper.wait_async(delay):
            return


async def _wait_for_idling(idle: float, memory: DaemonsMemory, stopper: stoppers.DaemonStopper) -> bool:
    """Wait until the object is unchanged for ``idle`` seconds; false if stopped meanwhile."""
    while True:
        left = memory.last_change + idle - now()
        if left <= 0:
            return True
        if await stopper.wait_async(left):
            return False


async def _wait_for_change(memory: DaemonsMemory, stopper: stoppers.DaemonStopper, *,
                           since: float, poll: Optional[float]) -> bool:
    """
    Wait until the object has changed since a moment; false if stopped meanwhile.

    As in Kopf 1.45.2, the change is looked for every ``poll`` (the idle) seconds: the runs
    are not later for it (the idle period after the change is longer), but the new cycle's
    ``started`` is the moment when the change is seen.
    """
    while memory.last_change <= since:
        if await stopper.wait_async(poll):
            return False
    return True


async def _run_once(
        *,
        handler: handlers.SpawningHandler,
        stopper: stoppers.DaemonStopper,
        memory: DaemonsMemory,
        context: DaemonContext,
        state: progression.HandlerState,
) -> tuple[progression.HandlerOutcome, progression.HandlerState]:
    """One invocation with the error protocol; the patch is applied even if it failed."""
    patch = patches.Patch()
    patch.fns.extend(context.pending_fns)  # visible to the handler as bool(patch)
    context.pending_fns.clear()
    is_async = invocation.is_async_fn(handler.fn)
    stopped: stoppers.DaemonStopped = (stoppers.AsyncDaemonStopped(stopper) if is_async
                                       else stoppers.SyncDaemonStopped(stopper))

    def build_kwargs(h: handlers.BaseHandler, s: progression.HandlerState) -> Dict[str, Any]:
        kwargs = context.build_kwargs(h, s, patch, memory.body)
        kwargs['stopped'] = stopped
        return kwargs

    exec_context = execution.ExecutionContext(settings=context.settings, logger=context.logger,
                                              build_kwargs=build_kwargs)
    try:
        outcome = await execution.execute_handler_once(handler=handler, state=state, context=exec_context)
    except asyncio.CancelledError:
        if patch:
            await _apply_safely(context, patch)
        raise
    results.store_result(patch, handler.id, outcome, context.logger)
    if patch:
        await _apply_safely(context, patch)
    return outcome, state.with_outcome(outcome)


async def _apply_safely(context: DaemonContext, patch: patches.Patch) -> None:
    try:
        await context.apply_patch(patch)
    except Exception as e:
        context.logger.exception(f"Failed to apply the patch of a daemon or timer: {e}")
    context.pending_fns.extend(patch.fns)  # rejected by a conflict: retried on the next run
