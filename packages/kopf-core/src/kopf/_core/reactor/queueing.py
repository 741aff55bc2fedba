"""
Queueing: per-object serialisation of the events of one resource.

The watch-stream multiplexes the events of all objects; here they are
demultiplexed into per-object workers. One object is processed by one worker
at a time, and only its latest state is processed: events that arrive while
a cycle runs are batched, and the older ones are dropped. A worker lives only
while its object has something to do (then exits after the idle timeout), so
memory is bounded by the objects in flux, not by all objects ever seen.

After the framework patches an object, the events older than that patch are
stale (they would, for example, show no diff-base and cause a repeated
creation); they are skipped until the patched version comes in the stream,
but for no longer than ``settings.persistence.consistency_timeout``: then the
latest of them is processed anyway (``0`` disables the waiting).

A cycle starts only while the stream is ``admitted`` (e.g. the replica still
holds its Lease within the renew deadline, and still serves the object's
shard): the check is made right before each cycle, after the wait for a free
worker slot, so a replica that steps down runs no new cycle from that moment
on, however long its backlog; the objects are the next owner's, who lists them.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from typing import AsyncIterator, Awaitable, Callable, Dict, Iterable, Optional, Set

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import scheduling
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import instruments, typedefs
from kopf._cogs.structs import bodies
from kopf._core.reactor import cycles, throttling

logger = logging.getLogger('kopf.reactor.queueing')

Processor = Callable[[typedefs.RawEvent], Awaitable[cycles.CycleResult]]
Admission = Callable[[], bool]  # whether this operator may still start cycles for the stream's objects


class _NotAdmitted(Exception):
    """The stream's objects are not ours to process anymore: the worker drops its backlog and exits."""


@dataclasses.dataclass
class _Inbox:
    """
    One object's inbox: its newest unprocessed event, and the worker that processes it.

    Only the newest event matters, so a newer one replaces an older one at once:
    no queue of events, and no wake-up of the worker for every event of a burst.
    """
    latest: Optional[typedefs.RawEvent] = None  # not yet taken by the worker
    arrived: float = 0.0  # the loop time when the latest event arrived
    since: float = 0.0  # the loop time when the oldest event not yet taken arrived (for the metrics)
    waiter: Optional[asyncio.Future[None]] = None  # set while the worker waits for an event
    task: Optional[asyncio.Task[None]] = None

    def put(self, event: typedefs.RawEvent, *, now: float) -> None:
        if self.latest is None:
            self.since = now
        self.latest, self.arrived = event, now
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def take(self) -> Optional[typedefs.RawEvent]:
        event, self.latest = self.latest, None
        return event

    async def wait(self, timeout: float) -> bool:
        """Wait until an event arrives, but no longer than the timeout; whether one has arrived."""
        if self.latest is None:
            loop = asyncio.get_running_loop()
            waiter = self.waiter = loop.create_future()
            timer = loop.call_later(timeout, _wake_up, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self.waiter = None
        return self.latest is not None


def _wake_up(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def watcher(
        *,
        events: AsyncIterator[typedefs.RawEvent],
        processor: Processor,
        settings: configuration.OperatorSettings,
        limiter: Optional[asyncio.Semaphore] = None,
        preprocessor: Optional[Callable[[typedefs.RawEvent], Awaitable[None]]] = None,
        resource: str = '',
        admitted: Optional[Admission] = None,
        unsettled: Optional[Set[str]] = None,
) -> None:
    """
    Dispatch the events to per-object workers until the stream ends or is cancelled.

    The preprocessor (e.g. indexing) runs for every event in the stream's order,
    before the workers see it, and never waits for the workers. The resource
    (``plural.group``) labels the metrics of the objects waiting and their waiting times.
    Without ``admitted``, every cycle is admitted. At the end, ``unsettled`` gets
    the objects that were in flux (a worker, or an event in hand): their state is
    not to be taken as processed by whoever continues the stream.
    """
    inboxes: Dict[str, _Inbox] = {}
    loop = asyncio.get_running_loop()
    unsource = instruments.OBJECTS_WAITING.add_source((resource,), lambda: _count_waiting(inboxes))
    in_hand: Optional[str] = None  # received, not yet given to a worker (e.g. while indexing it)
    try:
        async for raw_event in events:
            key = in_hand = bodies.object_key(raw_event.get('object', {}))
            if preprocessor is not None:
                await preprocessor(raw_event)
            inbox = inboxes.get(key)
            if inbox is None:
                inbox = inboxes[key] = _Inbox()
            inbox.put(raw_event, now=loop.time())
            if inbox.task is None or inbox.task.done():
                inbox.task = asyncio.create_task(
                    _worker(key=key, inboxes=inboxes, processor=processor, settings=settings, limiter=limiter,
                            resource=resource, admitted=admitted),
                    name=f'worker for {key}')
            in_hand = None
    finally:
        unsource()
        if unsettled is not None:
            unsettled.update(inboxes)
            if in_hand is not None:
                unsettled.add(in_hand)
        await _stop_workers(inboxes.values(), timeout=settings.queueing.exit_timeout)


def _count_waiting(inboxes: Dict[str, _Inbox]) -> float:
    """The objects with an event not yet taken by their worker (read at the metrics' snapshots only)."""
    return sum(1 for inbox in inboxes.copy().values() if inbox.latest is not None)


async def _stop_workers(inboxes: Iterable[_Inbox], *, timeout: Optional[float]) -> None:
    tasks = [inbox.task for inbox in inboxes if inbox.task is not None and not inbox.task.done()]
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)


@dataclasses.dataclass
class _OwnPatch:
    """
    The object's version produced by our own patch, awaited in the stream.

    The events older than it are stale: skipped until it comes, but for no longer
    than the consistency timeout; the latest of them is then processed after all.
    """
    version: Optional[str] = None
    until: float = 0.0  # the loop time when the awaiting is over
    stale: Optional[typedefs.RawEvent] = None  # the latest event skipped meanwhile

    def expect(self, body: typedefs.RawBody, *, timeout: float, now: float) -> None:
        if timeout:  # 0 disables the awaiting: the stale events are processed at once
            self.version = body.get('metadata', {}).get('resourceVersion')
            self.until = now + timeout

    def limit(self, timeout: float, *, now: float) -> float:
        """How long to wait for the next event: not beyond the end of the awaiting."""
        return timeout if self.version is None else max(0.0, min(timeout, self.until - now))

    def is_overdue(self, *, now: float) -> bool:
        return self.version is not None and now >= self.until

    def skips(self, event: typedefs.RawEvent, *, now: float) -> bool:
        """Whether the event is stale and skipped (kept as the latest stale one); if not, the awaiting is over."""
        if self.version is not None and not _is_fresh(event, self.version) and now < self.until:
            self.stale = event
            return True
        self.give_up()
        return False

    def give_up(self) -> Optional[typedefs.RawEvent]:
        """Stop awaiting; the latest stale event (if any) is to be processed."""
        stale, self.version, self.stale = self.stale, None, None
        return stale


@dataclasses.dataclass
class _WorkerState:
    """What one object's worker knows between its cycles."""
    processed_at: float  # the loop time of the last successful cycle (or of the start)
    # The delays after consecutive errors: made at the first error, dropped (started over) on success.
    throttler: Optional[throttling.ErrorThrottler] = None
    latest: Optional[typedefs.RawEvent] = None  # the latest known state, processed again after a delay
    own_patch: _OwnPatch = dataclasses.field(default_factory=_OwnPatch)  # skip the events older than it
    delay: Optional[float] = None  # when to process the latest state again, if nothing comes earlier
    changed: Optional[float] = None  # the loop time when the change being taken arrived (for the metrics)


async def _worker(
        *,
        key: str,
        inboxes: Dict[str, _Inbox],
        processor: Processor,
        settings: configuration.OperatorSettings,
        limiter: Optional[asyncio.Semaphore],
        resource: str = '',
        admitted: Optional[Admission] = None,
) -> None:
    """Process one object's events, one cycle at a time, until it has nothing to do (or may not)."""
    inbox = inboxes[key]
    state = _WorkerState(processed_at=asyncio.get_running_loop().time())
    try:
        while True:
            event = await _next_event(inbox, state, settings)
            if event is None:
                # Idle: the object has nothing to do. No await between this check and the
                # removal (in `finally`), so the watcher cannot put an event into a dying inbox.
                if inbox.latest is None:
                    return
                continue
            try:
                settled = await _run_cycle(key, event, state, processor=processor, limiter=limiter,
                                           settings=settings, resource=resource, admitted=admitted)
            except _NotAdmitted:
                logger.debug(f"Not processing {key} anymore: this operator does not serve it now.")
                inbox.take()  # the backlog is the next owner's (or ours again, from a new listing)
                return
            if settled and inbox.latest is None:
                # Nothing to wait for (no own patch to see back, no delayed handlers): free the
                # memory now instead of lingering, e.g. after the initial listing of many objects.
                return
    finally:
        if inboxes.get(key) is inbox and inbox.latest is None:
            del inboxes[key]


async def _next_event(
        inbox: _Inbox,
        state: _WorkerState,
        settings: configuration.OperatorSettings,
) -> Optional[typedefs.RawEvent]:
    """
    The next state to process, or ``None`` if the object has been idle for long enough.

    It is the newest of the events that arrive together (the older ones are
    dropped), or the latest known state again when the delay is over. The
    events older than our own patch are stale and are skipped, unless our
    patched version does not come within the consistency timeout.
    """
    loop = asyncio.get_running_loop()
    while True:
        timeout = state.delay if state.delay is not None else settings.queueing.idle_timeout
        timeout = state.own_patch.limit(timeout, now=loop.time())
        waited_since = loop.time()
        if not await inbox.wait(timeout):
            if state.own_patch.is_overdue(now=loop.time()):
                # The patched version has not come in time: the API is inconsistent or slow.
                stale = state.own_patch.give_up()
                if stale is not None:
                    return stale
                if state.delay is None and loop.time() - state.processed_at >= settings.queueing.idle_timeout:
                    return None  # idle as long as the idle timeout since the last cycle
                if state.delay is not None:  # the handlers' delay goes on from where it was
                    state.delay = max(0.0, state.delay - (loop.time() - waited_since))
                continue
            if state.delay is None or state.latest is None:
                return None
            return state.latest  # the handlers' delay is over: process the latest known state again
        await _batch(inbox, window=settings.queueing.batch_window)
        event = inbox.take()
        if event is not None and not state.own_patch.skips(event, now=loop.time()):
            state.changed = inbox.since
            return event


async def _run_cycle(
        key: str,
        event: typedefs.RawEvent,
        state: _WorkerState,
        *,
        processor: Processor,
        limiter: Optional[asyncio.Semaphore],
        settings: configuration.OperatorSettings,
        resource: str = '',
        admitted: Optional[Admission] = None,
) -> bool:
    """Process one state of the object; return whether it is settled (nothing to wait for)."""
    state.latest = event
    try:
        async with (limiter or contextlib.nullcontext()):
            if admitted is not None and not admitted():  # checked after the wait for a worker slot
                raise _NotAdmitted()
            now = asyncio.get_running_loop().time()
            # Under load, each step's requests take their turn by when the change that it handles arrived
            # (a repeat after a delay: by now), whichever object it is: no object's first step waits
            # behind the later steps of the objects that came before it.
            scheduling.request_priority.set(state.changed if state.changed is not None else now)
            if state.changed is not None:  # a change from the stream, not a repeat after a delay
                instruments.QUEUE_DURATION.observe((resource,), now - state.changed)
                state.changed = None
            result = await processor(event)
    except (asyncio.CancelledError, _NotAdmitted):
        raise
    except Exception as e:
        if state.throttler is None:
            state.throttler = throttling.ErrorThrottler(settings.queueing.error_delays)
        state.delay = state.throttler.next_delay()
        if isinstance(e, apierrors.APIForbiddenError):  # the message names the verb and the resource
            logger.error(f"Not permitted while processing {key}: {e}. Grant the operator this "
                         f"permission; retrying in {state.delay} seconds.")
        else:
            logger.exception(f"Unexpected error while processing {key}: {e!r}. "
                             f"Throttling for {state.delay} seconds.")
        return False
    state.throttler = None  # the next error starts the delays from their beginning
    state.delay = result.delay
    state.processed_at = asyncio.get_running_loop().time()
    if result.patched_body is not None:
        state.latest = typedefs.RawEvent(type='MODIFIED', object=result.patched_body)
        state.own_patch.expect(result.patched_body, timeout=settings.persistence.consistency_timeout,
                               now=state.processed_at)
        return False
    return result.delay is None


async def _batch(inbox: _Inbox, *, window: float) -> None:
    """Let the events that arrive within the batching window after the latest one replace it."""
    loop = asyncio.get_running_loop()
    # Sleeping until the window's end, not waiting for an event: the newer events only move
    # the end further, and waking the worker up for each event of a burst is what this avoids.
    while (remaining := inbox.arrived + window - loop.time()) > 0:  # noqa: ASYNC110
        await asyncio.sleep(remaining)


def _is_fresh(event: typedefs.RawEvent, awaited_version: str) -> bool:
    """Whether the event is at or after the awaited version (deletions always are)."""
    if event.get('type') == 'DELETED':
        return True
    version = event.get('object', {}).get('metadata', {}).get('resourceVersion')
    if version == awaited_version:
        return True
    # Versions are opaque in the API contract, but are etcd's revisions in practice:
    # a listing after a reconnect can jump over the awaited version.
    if version is not None and version.isdigit() and awaited_version.isdigit():
        return int(version) > int(awaited_version)
    return False
