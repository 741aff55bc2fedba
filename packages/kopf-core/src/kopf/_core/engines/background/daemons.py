"""
Daemons and timers: long-running tasks that accompany individual objects.

Each daemon (and each timer, which is a daemon with a schedule) of each
object runs in its own asyncio task, spawned when the object appears or
starts matching the filters, and stopped when the object is marked for
deletion, stops matching, or the operator exits. The object is held by the
finalizer until its daemons have exited (or have been abandoned after their
cancellation timeout).

The retrying state of daemons and timers is in memory only: they belong to
this operator process, not to the object, so nothing is stored on it.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import warnings
from typing import Any, Awaitable, Callable, Collection, Dict, List, Mapping, Optional, Set

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import instruments, typedefs
from kopf._cogs.structs import bodies, patches, references
from kopf._core.actions import application, loggers, progression
from kopf._core.actions import kwargs as kwargs_
from kopf._core.engines.background import daemonrunners, stoppers
from kopf._core.intents import causes, handlers

logger = logging.getLogger('kopf.engines.daemons')

_now = daemonrunners.now  # the loop's clock, shared with the runners of the daemons and timers

# Applies the accumulated patch of one run to the object (the reactor provides it).
PatchApplier = Callable[[patches.Patch], Awaitable[None]]
# Builds the handler's kwargs for one run (the reactor provides it: body, memo, indices, ...).
KwargsBuilder = Callable[[handlers.BaseHandler, progression.HandlerState, patches.Patch, Any], Dict[str, Any]]
# Builds the object's kwargs without a handler's (for a callable initial_delay): body, ..., patch, logger, memo.
BaseKwargsBuilder = Callable[[patches.Patch, Any], Dict[str, Any]]


@dataclasses.dataclass
class Daemon:
    handler: handlers.SpawningHandler
    stopper: stoppers.DaemonStopper
    task: asyncio.Task[None]
    terminator: Optional[asyncio.Task[None]] = None  # the termination sequence, once requested
    abandoned: bool = False


@dataclasses.dataclass
class DaemonsMemory:
    """The daemons' part of an object's memory: what runs, what must not run again."""
    body: bodies.Body  # the live view, replaced on every watch-event
    running: Dict[handlers.HandlerId, Daemon] = dataclasses.field(default_factory=dict)
    done: Set[handlers.HandlerId] = dataclasses.field(default_factory=set)  # exited: never again here
    last_change: float = dataclasses.field(default_factory=lambda: _now())

    def notice_change(self, raw: Mapping[str, Any]) -> None:
        """Every watch-event: the live body is updated, idling timers start over."""
        self.body._replace_with(dict(raw))
        self.last_change = _now()

    @property
    def stopped(self) -> bool:
        """Whether all daemons have exited or are abandoned (so the object can be released)."""
        return all(daemon.task.done() or daemon.abandoned for daemon in self.running.values())


@dataclasses.dataclass(frozen=True)
class DaemonContext:
    """What the daemons of one object need from the reactor."""
    settings: Any
    logger: typedefs.Logger
    memo: Any
    build_kwargs: KwargsBuilder
    apply_patch: PatchApplier
    pending_fns: List[Any]  # the object's patch.fns rejected by a conflict, carried to the next run
    resource: str = ''  # plural.group: for the metrics of the daemons running
    build_base_kwargs: Optional[BaseKwargsBuilder] = None  # if none: only body, patch, logger, memo


def object_context(
        *,
        settings: configuration.OperatorSettings,
        client: protocols.ApiClient,
        resource: references.Resource,
        memory: DaemonsMemory,
        memo: Any,
        indices: Mapping[str, Any],
        pending_fns: List[Any],
) -> DaemonContext:
    """The context of one object's daemons: kwargs of their live body, their patches applied to it."""
    live_body = memory.body
    logger = loggers.ObjectLogger(body=live_body, settings=settings)

    def build_base_kwargs(patch: patches.Patch, body: Any) -> Dict[str, Any]:
        cause = causes.BaseCause(resource=resource, body=body, patch=patch, memo=memo,
                                 logger=logger, indices=indices)
        return kwargs_.build_resource_kwargs(cause)

    def build_kwargs(handler: handlers.BaseHandler, state: progression.HandlerState,
                     patch: patches.Patch, body: Any) -> Dict[str, Any]:
        return kwargs_.build_handler_kwargs(build_base_kwargs(patch, body), handler, state)

    async def apply_patch(patch: patches.Patch) -> None:
        await application.apply_patch(client=client, resource=resource, body=live_body, patch=patch, logger=logger)

    return DaemonContext(settings=settings, logger=logger, memo=memo, build_kwargs=build_kwargs,
                         apply_patch=apply_patch, pending_fns=pending_fns, resource=resource.name,
                         build_base_kwargs=build_base_kwargs)


def spawn_daemons(
        *,
        memory: DaemonsMemory,
        matching: Collection[handlers.SpawningHandler],
        context: DaemonContext,
) -> None:
    """Spawn the matching daemons that are not running; stop the running ones that stopped matching."""
    matching_ids = {handler.id for handler in matching}
    for handler_id, daemon in list(memory.running.items()):
        if daemon.task.done():
            del memory.running[handler_id]
        elif handler_id not in matching_ids:
            request_stop(daemon, reason=stoppers.DaemonStoppingReason.FILTERS_MISMATCH, context=context)
    for handler in matching:
        if handler.id in memory.running or handler.id in memory.done:
            continue  # a terminating daemon counts as running: not respawned until it has exited
        stopper = stoppers.DaemonStopper()
        stopper.bind()
        runner = daemonrunners.run_guarded(handler=handler, stopper=stopper, memory=memory, context=context)
        task = asyncio.create_task(runner, name=f'{handler.title} of {memory.body.metadata.name}')
        memory.running[handler.id] = Daemon(handler=handler, stopper=stopper, task=task)
        _count_running(task, handler, context)


def _count_running(task: asyncio.Task[None], handler: handlers.SpawningHandler, context: DaemonContext) -> None:
    """The daemons and timers running, for the metrics: one more until the task is done."""
    timer = isinstance(handler, handlers.TimerHandler)
    gauge = instruments.TIMERS_RUNNING if timer else instruments.DAEMONS_RUNNING
    labels = (str(handler.id), context.resource)
    gauge.inc(labels)
    task.add_done_callback(lambda _: gauge.dec(labels))


def stop_daemons(
        *,
        memory: DaemonsMemory,
        reason: stoppers.DaemonStoppingReason,
        context: DaemonContext,
) -> None:
    """Request all daemons of the object to stop (idempotent); see ``DaemonsMemory.stopped``."""
    for daemon in memory.running.values():
        request_stop(daemon, reason=reason, context=context)


async def wait_for_instant_exit(memory: DaemonsMemory, *, settings: Any) -> None:
    """
    Give the daemons asked to stop a moment to exit "instantly", within the current handling cycle.

    Well-behaved daemons exit as soon as their stopper is set: with this moment, the object is
    released in the same cycle rather than in a later one (one more patch and a delay saved).
    The moment is ``settings.background.instant_exit_timeout`` (seconds) if set, else that many
    zero-time cycles of the event loop as ``settings.background.instant_exit_zero_time_cycles``.
    """
    tasks = [daemon.task for daemon in memory.running.values() if not daemon.task.done()]
    if not tasks:
        return
    if settings.background.instant_exit_timeout is not None:
        await asyncio.wait(tasks, timeout=settings.background.instant_exit_timeout)
    elif settings.background.instant_exit_zero_time_cycles is not None:
        for _ in range(settings.background.instant_exit_zero_time_cycles):
            await asyncio.sleep(0)
            if all(task.done() for task in tasks):
                break


def request_stop(daemon: Daemon, *, reason: stoppers.DaemonStoppingReason, context: DaemonContext) -> None:
    daemon.stopper.set(reason=reason)
    if daemon.terminator is None and not daemon.task.done():
        daemon.terminator = asyncio.create_task(_terminate(daemon, context=context),
                                                name=f'terminator of {daemon.task.get_name()}')


async def _terminate(daemon: Daemon, *, context: DaemonContext) -> None:
    """
    The three stages: graceful (the flag, then ``cancellation_backoff``), forced
    (``CancelledError``, then ``cancellation_timeout``), then either abandoning
    (with a ResourceWarning) or, with no timeout, waiting forever while polling.
    """
    handler = daemon.handler
    backoff = handler.cancellation_backoff
    timeout = handler.cancellation_timeout
    if backoff:
        await asyncio.wait([daemon.task], timeout=backoff)
    if daemon.task.done():
        return
    if timeout is not None:
        daemon.task.cancel()
        await asyncio.wait([daemon.task], timeout=timeout)
        if not daemon.task.done():
            daemon.abandoned = True
            daemon.stopper.set(reason=stoppers.DaemonStoppingReason.DAEMON_ABANDONED)
            warnings.warn(f"{handler.title} did not exit in time: abandoned, the object is released.",
                          ResourceWarning, stacklevel=1)
            context.logger.warning(f"{handler.title} did not exit in time: abandoned, the object is released.")
        return
    polling = handler.cancellation_polling or context.settings.background.cancellation_polling
    while not daemon.task.done():
        await asyncio.wait([daemon.task], timeout=polling)
        if not daemon.task.done():
            context.logger.warning(f"{handler.title} has not exited yet. Waiting for it; "
                                   f"the object stays blocked by the finalizer.")


async def stop_all(memories: Collection[DaemonsMemory], *, reason: stoppers.DaemonStoppingReason,
                   context_of: Callable[[DaemonsMemory], DaemonContext], timeout: Optional[float]) -> None:
    """At the operator's exit: stop all daemons of all objects, wait (within the timeout), cancel the rest."""
    tasks: List[asyncio.Task[None]] = []
    for memory in memories:
        for daemon in memory.running.values():
            request_stop(daemon, reason=reason, context=context_of(memory))
            tasks.append(daemon.task)
    pending = [task for task in tasks if not task.done()]
    if pending:
        _, pending_set = await asyncio.wait(pending, timeout=timeout)
        for task in pending_set:
            task.cancel()
        if pending_set:
            await asyncio.wait(pending_set, timeout=timeout)
