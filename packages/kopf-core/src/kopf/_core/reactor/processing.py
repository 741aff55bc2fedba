"""
Processing of one object's event: the change-handling cycle.

For each event of an object (the latest one, see ``queueing``), this module
invokes the event-watching handlers, detects the cause of the change from the
object's stored state (the diff-base, the deletion mark, the finalizers),
executes the due change handlers, and writes all the framework's and the
user's changes back in as few requests as possible.

The result is when to come back: a delay if some handlers are postponed
(retries, backoffs), or nothing if the cycle is complete. Waiting is the
worker's job: it wakes up earlier if a newer event arrives.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Dict, Mapping, Optional, Sequence

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration, diffbase, progress
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, diffs, hierarchies, patches, references
from kopf._core.actions import (
    application,
    execution,
    invocation,
    lifecycles,
    loggers,
    progression,
    remembering,
    subhandling,
)
from kopf._core.actions import kwargs as kwargs_
from kopf._core.actions.results import store_result
from kopf._core.engines import daemons, indexing, stoppers
from kopf._core.intents import causes, handlers, registries
from kopf._core.reactor import inventory


@dataclasses.dataclass(frozen=True)
class ProcessingContext:
    """What is shared by all cycles of all objects of one operator."""
    registry: registries.OperatorRegistry
    settings: configuration.OperatorSettings
    client: protocols.ApiClient
    memories: inventory.ObjectMemories
    memo: Any
    indexers: indexing.OperatorIndexers
    lifecycle: Optional[lifecycles.LifeCycleFn] = None  # None is the default lifecycle (at each cycle)


# How often to check if the daemons of a deleted object have exited (to release it).
DAEMONS_POLLING_INTERVAL = 1.0


@dataclasses.dataclass(frozen=True)
class CycleResult:
    """When to come back, and which version of the object our own patch produced."""
    delay: Optional[float] = None
    patched_body: Optional[typedefs.RawBody] = None


async def process_resource_event(
        *,
        context: ProcessingContext,
        resource: references.Resource,
        raw_event: typedefs.RawEvent,
) -> CycleResult:
    raw_type = raw_event.get('type')
    raw_body = raw_event['object']
    memories = context.memories

    # The indices are complete before any handler runs (indexing itself is done in the stream).
    await context.indexers.ready.wait()

    if raw_type == 'DELETED':
        memory = memories.forget(raw_body)
    else:
        memory = memories.recall(raw_body, memo=context.memo, initial=raw_type is None)

    body = bodies.Body(raw_body)
    patch = patches.Patch()
    hierarchies.current_body.set(body)  # the default owner for kopf.adopt() & co in the handlers
    memo = memory.memo if memory is not None else context.memo
    if memory is not None and memory.pending_fns:
        # The transformation functions rejected by a conflict last time: retry on the fresh body.
        patch.fns.extend(memory.pending_fns)
        memory.pending_fns.clear()

    if memory is not None and memory.daemons is not None:
        memory.daemons.notice_change(raw_body)  # the daemons' live body; idling timers start over

    await _process_watching(context=context, resource=resource, raw_event=raw_event,
                            body=body, patch=patch, memo=memo)

    result = CycleResult()
    if context.registry.has_state_handlers(resource=resource):
        logger = loggers.ObjectLogger(body=body, settings=context.settings)
        result = await _process_changing(
            context=context, resource=resource, raw_type=raw_type, body=body, patch=patch,
            memory=memory, memo=memo, logger=logger,
            all_handlers=context.registry.get_changing_handlers(resource=resource),
            spawning_handlers=context.registry.get_spawning_handlers(resource=resource))
    elif patch:
        logger = loggers.LocalObjectLogger(body=body, settings=context.settings)
        patched = await application.apply_patch(client=context.client, resource=resource, body=body,
                                                patch=patch, logger=logger)
        result = CycleResult(patched_body=patched)
    if memory is not None and patch.fns:
        memory.pending_fns.extend(patch.fns)
    return result


async def index_resource_event(
        *,
        context: ProcessingContext,
        resource: references.Resource,
        raw_event: typedefs.RawEvent,
) -> None:
    """Update the indices with the object's new state (or remove it): runs in the stream."""
    raw_body = raw_event['object']
    obj = inventory.ObjectMemories.key_of(raw_body)
    if raw_event.get('type') == 'DELETED':
        context.indexers.forget(obj)
        return
    body = bodies.Body(raw_body)
    logger = loggers.LocalObjectLogger(body=body, settings=context.settings)
    memory = context.memories.recall(raw_body, memo=context.memo, initial=raw_event.get('type') is None)
    cause = causes.BaseCause(resource=resource, body=body, patch=patches.Patch(), memo=memory.memo,
                             logger=logger, indices=context.indexers.as_kwargs())
    kwargs = kwargs_.build_resource_kwargs(cause)

    def build_kwargs(handler: handlers.BaseHandler, state: progression.HandlerState) -> Dict[str, Any]:
        return dict(kwargs, param=handler.param, retry=state.retries,
                    started=state.started.replace(tzinfo=None), runtime=progression.utcnow() - state.started)

    exec_context = execution.ExecutionContext(settings=context.settings, logger=logger, build_kwargs=build_kwargs)
    await context.indexers.index_object(obj=obj, handlers_=context.registry.get_indexing_handlers(resource=resource),
                                        kwargs=kwargs, body=body, context=exec_context)


async def _process_watching(
        *,
        context: ProcessingContext,
        resource: references.Resource,
        raw_event: typedefs.RawEvent,
        body: bodies.Body,
        patch: patches.Patch,
        memo: Any,
) -> None:
    """Invoke the raw-event handlers: no state, no retries; errors are only logged."""
    watching_handlers = context.registry.get_watching_handlers(resource=resource)
    if not watching_handlers:
        return
    logger = loggers.LocalObjectLogger(body=body, settings=context.settings)
    cause = causes.WatchingCause(resource=resource, body=body, patch=patch, memo=memo, logger=logger,
                                 indices=context.indexers.as_kwargs(), type=raw_event.get('type'), event=raw_event)
    kwargs = kwargs_.build_watching_kwargs(cause)
    for handler in watching_handlers:
        if not registries.match_resource_filters(handler, body=body, kwargs=kwargs):
            continue
        try:
            logger.debug(f"{handler.title} is invoked.")
            await invocation.invoke(handler.fn, kwargs=dict(kwargs, param=handler.param),
                                    settings=context.settings)
        except Exception as e:
            logger.exception(f"{handler.title} failed with an exception. Will ignore. {e}")
        else:
            logger.debug(f"{handler.title} succeeded.")


@dataclasses.dataclass(frozen=True)
class _Change:
    """What has changed since the last handled state, and where the state is kept."""
    reason: causes.Reason
    initial: bool
    old: Optional[Mapping[str, Any]]
    new: Mapping[str, Any]
    diff: diffs.Diff
    diffbase_storage: remembering.RememberingDiffBaseStorage
    progress_storage: remembering.RememberingProgressStorage


# The reasons that end the cycle right away: the object is gone or is not ours to finalize.
_NOTHING_TO_DO = {
    causes.Reason.GONE: "Deleted, really deleted, and we are notified.",
    causes.Reason.FREE: "Deletion, but we are done with it, and we do not care.",
}


async def _process_changing(
        *,
        context: ProcessingContext,
        resource: references.Resource,
        raw_type: Optional[str],
        body: bodies.Body,
        patch: patches.Patch,
        memory: Optional[inventory.ObjectMemory],
        memo: Any,
        logger: Any,
        all_handlers: Sequence[handlers.ChangingHandler],
        spawning_handlers: Sequence[handlers.SpawningHandler],
) -> CycleResult:
    """
    One cycle of the change handlers, in steps; each step can end the cycle.

    The scope, the change since the last handled state, the finalizer, the
    daemons, then the due handlers and the write-back of all changes.
    """
    base_kwargs = kwargs_.build_resource_kwargs(
        causes.BaseCause(resource=resource, body=body, patch=patch, memo=memo, logger=logger,
                         indices=context.indexers.as_kwargs()))
    state_handlers: Sequence[handlers.ResourceHandler] = [*all_handlers, *spawning_handlers]

    if raw_type == 'DELETED' and memory is not None and memory.daemons is not None:
        _stop_daemons(context, resource, memory, logger, stoppers.DaemonStoppingReason.RESOURCE_DELETED)

    # Stealth mode: objects matching no handler's filters are neither logged nor annotated.
    if not registries.is_in_scope(state_handlers, body=body, kwargs=base_kwargs):
        return await _process_out_of_scope(context, resource, raw_type, body, patch, memory, logger)

    change = _detect_change(context, resource, raw_type, body, memory)
    if change.reason in _NOTHING_TO_DO:
        logger.debug(_NOTHING_TO_DO[change.reason])
        return CycleResult()

    deleting = change.reason == causes.Reason.DELETE
    needs_finalizer = registries.requires_finalizer(state_handlers, body=body, kwargs=base_kwargs)
    if not deleting:
        finalized = await _fix_finalizer(context, resource, body, patch, logger, needs_finalizer=needs_finalizer)
        if finalized is not None:
            return finalized

    if spawning_handlers and memory is not None:
        waiting = await _keep_daemons(context, resource, body, patch, memory, logger, spawning_handlers,
                                      base_kwargs, deleting=deleting)
        if waiting is not None:
            return waiting

    cause = causes.ChangingCause(resource=resource, body=body, patch=patch, memo=memo, logger=logger,
                                 indices=context.indexers.as_kwargs(), reason=change.reason,
                                 initial=change.initial, diff=change.diff, old=change.old, new=change.new)
    if change.reason == causes.Reason.NOOP:
        logger.debug("Something has changed, but we are not interested (the essence is the same).")
        return CycleResult(patched_body=await _apply(context, resource, body, patch, logger))

    cause_kwargs = kwargs_.build_changing_kwargs(cause)
    selected = registries.select_changing_handlers(all_handlers, cause=cause, kwargs=cause_kwargs)
    delay = await _run_handlers(context=context, cause=cause, selected=selected, all_handlers=all_handlers,
                                old=change.old, new=change.new, progress_storage=change.progress_storage,
                                diffbase_storage=change.diffbase_storage)
    if delay is None and memory is not None:
        memory.initial_pending = False
    return await _write_back(context, resource, body, patch, logger, change, delay=delay, deleting=deleting)


async def _process_out_of_scope(
        context: ProcessingContext,
        resource: references.Resource,
        raw_type: Optional[str],
        body: bodies.Body,
        patch: patches.Patch,
        memory: Optional[inventory.ObjectMemory],
        logger: Any,
) -> CycleResult:
    """No handler is interested: stop the daemons, release the finalizer, apply the event handlers' patch."""
    if memory is not None and memory.daemons is not None:
        _stop_daemons(context, resource, memory, logger, stoppers.DaemonStoppingReason.FILTERS_MISMATCH)
    if raw_type == 'DELETED':
        return CycleResult()
    patched = None
    if context.settings.persistence.finalizer in body.metadata.get('finalizers', []):
        patched = await _release_finalizer(context, resource, body, logger,
                                           "Removing the finalizer, as there are no handlers requiring it.")
    # The event handlers' changes (if any) are theirs, not ours: they are applied anyway.
    return CycleResult(patched_body=await _apply_on_top(context, resource, body, patched, patch, logger))


def _detect_change(
        context: ProcessingContext,
        resource: references.Resource,
        raw_type: Optional[str],
        body: bodies.Body,
        memory: Optional[inventory.ObjectMemory],
) -> _Change:
    """The diff since the last handled state (the diff-base), and the reason of the cycle."""
    settings = context.settings
    # What the storages fail to keep (e.g. in a pruned status) is remembered instead: otherwise,
    # every cycle would start from scratch and re-run the finished handlers endlessly.
    lost = memory.lost if memory is not None else remembering.LostState()
    diffbase_storage = remembering.RememberingDiffBaseStorage(settings.persistence.diffbase_storage, lost)
    progress_storage = remembering.RememberingProgressStorage(settings.persistence.progress_storage, lost)
    extra_fields = context.registry.get_extra_fields(resource=resource)
    old = diffbase_storage.fetch(body=body)
    old = progress_storage.clear(essence=old) if old is not None else None
    new = progress_storage.clear(essence=diffbase_storage.build(body=body, extra_fields=extra_fields))
    diff = diffs.diff(old, new)
    initial = bool(memory is not None and memory.initial_pending)
    reason = causes.detect_changing_reason(finalizer=settings.persistence.finalizer, raw_event_type=raw_type,
                                           body=body, old=old, diff=diff, initial=initial)
    return _Change(reason=reason, initial=initial, old=old, new=new, diff=diff,
                   diffbase_storage=diffbase_storage, progress_storage=progress_storage)


async def _fix_finalizer(
        context: ProcessingContext,
        resource: references.Resource,
        body: bodies.Body,
        patch: patches.Patch,
        logger: Any,
        *,
        needs_finalizer: bool,
) -> Optional[CycleResult]:
    """Add the finalizer if the handlers need it, or release it if not; nothing else happens in such a cycle."""
    finalizer = context.settings.persistence.finalizer
    has_finalizer = finalizer in body.metadata.get('finalizers', [])
    if needs_finalizer and not has_finalizer:
        logger.debug("Adding the finalizer, thus preventing the actual deletion.")
        patched = await application.add_finalizer(client=context.client, resource=resource, body=body,
                                                  finalizer=finalizer, logger=logger)
    elif not needs_finalizer and has_finalizer:
        patched = await _release_finalizer(context, resource, body, logger,
                                           "Removing the finalizer, as there are no handlers requiring it.")
    else:
        return None
    return CycleResult(patched_body=await _apply_on_top(context, resource, body, patched, patch, logger))


async def _keep_daemons(
        context: ProcessingContext,
        resource: references.Resource,
        body: bodies.Body,
        patch: patches.Patch,
        memory: inventory.ObjectMemory,
        logger: Any,
        spawning_handlers: Sequence[handlers.SpawningHandler],
        kwargs: Mapping[str, Any],
        *,
        deleting: bool,
) -> Optional[CycleResult]:
    """Spawn the daemons of a live object; on deletion, stop them and wait until they exit."""
    if not deleting:
        _spawn_daemons(context, resource, memory, body, logger, spawning_handlers, kwargs)
        return None
    if memory.daemons is None:
        return None
    # The deletion handlers run (and the finalizer is released) only after the daemons exit.
    _stop_daemons(context, resource, memory, logger, stoppers.DaemonStoppingReason.RESOURCE_DELETED)
    await daemons.wait_for_instant_exit(memory.daemons, settings=context.settings)
    if memory.daemons.stopped:
        return None
    return CycleResult(delay=DAEMONS_POLLING_INTERVAL,
                       patched_body=await _apply(context, resource, body, patch, logger))


async def _write_back(
        context: ProcessingContext,
        resource: references.Resource,
        body: bodies.Body,
        patch: patches.Patch,
        logger: Any,
        change: _Change,
        *,
        delay: Optional[float],
        deleting: bool,
) -> CycleResult:
    """Apply the cycle's patch; release the finalizer when the deletion is handled; check what was kept."""
    patched = await _apply(context, resource, body, patch, logger)
    patched_body = bodies.Body(patched) if patched is not None else None
    change.progress_storage.verify(patched_body)
    if delay is None and deleting:
        patched = await _release_finalizer(context, resource, patched_body or body, logger,
                                           "Removing the finalizer, thus allowing the actual deletion.")
        return CycleResult(patched_body=patched)
    change.diffbase_storage.verify(patched_body)
    if delay is None:
        logger.debug("Handling cycle is finished, waiting for new changes.")
    return CycleResult(delay=delay, patched_body=patched)


async def _run_handlers(
        *,
        context: ProcessingContext,
        cause: causes.ChangingCause,
        selected: Sequence[handlers.ChangingHandler],
        all_handlers: Sequence[handlers.ChangingHandler],
        old: Optional[Mapping[str, Any]],
        new: Mapping[str, Any],
        progress_storage: progress.ProgressStorage,
        diffbase_storage: diffbase.DiffBaseStorage,
) -> Optional[float]:
    """Execute the due handlers, record the outcomes; return the delay until the next attempt."""
    settings = context.settings
    body, patch, logger = cause.body, cause.patch, cause.logger
    purpose = cause.reason.value
    title = causes.TITLES[cause.reason]

    known_ids = {h.id for h in all_handlers}
    state = progression.State.from_storage(body=body, storage=progress_storage, handlers_=all_handlers)
    superseded = state.superseding_purposes(purpose)
    if superseded:
        s, f, r = state.counts(state.keys())
        logger.info(f"{causes.TITLES.get(causes.Reason(next(iter(superseded))), 'Handling')} "
                    f"is superseded by {title.lower()}: {s} succeeded; {f} failed; {r} left to the moment.")
        state.purge(body=body, patch=patch, storage=progress_storage, ids=list(state.keys()))
        state = progression.State({}, purpose=purpose)
    state = state.with_purpose(purpose, selected)

    if selected and logger.isEnabledFor(logging.DEBUG):  # the whole body's repr is costly: only if shown
        logger.debug(f"{title} is in progress: {dict(body)!r}")
        if cause.reason == causes.Reason.UPDATE:
            logger.debug(f"{title} diff: {cause.diff!r}")

    def build_kwargs(handler: handlers.BaseHandler, handler_state: progression.HandlerState) -> Dict[str, Any]:
        return kwargs_.build_changing_kwargs(cause, handler=handler, state=handler_state)

    subscope = subhandling.make_scope(purpose=purpose, body=body, patch=patch, storage=progress_storage,
                                      settings=settings, logger=logger, build_kwargs=build_kwargs,
                                      lifecycle=context.lifecycle)
    exec_context = execution.ExecutionContext(settings=settings, logger=logger, build_kwargs=build_kwargs,
                                              subscope=subscope, lifecycle=context.lifecycle)
    outcomes = await execution.execute_handlers_once(handlers_=selected, state=state, context=exec_context)
    for handler_id, outcome in outcomes.items():
        store_result(patch, handler_id, outcome, logger)
    state = state.with_outcomes(outcomes)

    selected_ids = [h.id for h in selected]
    if state.done_for(selected_ids):
        s, f, _ = state.counts(selected_ids)
        if selected:
            logger.info(f"{title} is processed: {s} succeeded; {f} failed.")
            if f == 0:
                logger.info(f"All handlers succeeded for {causes.NOUNS[cause.reason]}.")
        state.purge(body=body, patch=patch, storage=progress_storage, ids=known_ids & set(state.keys()))
        if cause.reason != causes.Reason.DELETE and old != new:
            diffbase_storage.store(body=body, patch=patch, essence=dict(new))
        return None

    state.store(body=body, patch=patch, storage=progress_storage)
    delays = state.delays(selected_ids)
    return min(delays) if delays else None


def _daemon_context(
        context: ProcessingContext,
        resource: references.Resource,
        memory: inventory.ObjectMemory,
        logger: Any,
) -> daemons.DaemonContext:
    assert memory.daemons is not None
    live_body = memory.daemons.body
    daemon_logger = loggers.ObjectLogger(body=live_body, settings=context.settings)

    def build_kwargs(handler: handlers.BaseHandler, state: progression.HandlerState,
                     patch: patches.Patch, body: Any) -> Dict[str, Any]:
        cause = causes.BaseCause(resource=resource, body=body, patch=patch, memo=memory.memo,
                                 logger=daemon_logger, indices=context.indexers.as_kwargs())
        kwargs = kwargs_.build_resource_kwargs(cause)
        kwargs.update(param=handler.param, retry=state.retries,
                      started=state.started.replace(tzinfo=None), runtime=progression.utcnow() - state.started)
        return kwargs

    async def apply_patch(patch: patches.Patch) -> None:
        await application.apply_patch(client=context.client, resource=resource, body=live_body,
                                      patch=patch, logger=daemon_logger)

    return daemons.DaemonContext(settings=context.settings, logger=daemon_logger, memo=memory.memo,
                                 build_kwargs=build_kwargs, apply_patch=apply_patch,
                                 pending_fns=memory.pending_fns)


def _spawn_daemons(
        context: ProcessingContext,
        resource: references.Resource,
        memory: inventory.ObjectMemory,
        body: bodies.Body,
        logger: Any,
        spawning_handlers: Sequence[handlers.SpawningHandler],
        kwargs: Mapping[str, Any],
) -> None:
    if memory.daemons is None:
        memory.daemons = daemons.DaemonsMemory(body=bodies.Body(dict(body)))
    matching = [h for h in spawning_handlers if registries.match_resource_filters(h, body=body, kwargs=kwargs)]
    daemons.spawn_daemons(memory=memory.daemons, matching=matching,
                          context=_daemon_context(context, resource, memory, logger))


def _stop_daemons(
        context: ProcessingContext,
        resource: references.Resource,
        memory: inventory.ObjectMemory,
        logger: Any,
        reason: stoppers.DaemonStoppingReason,
) -> None:
    if memory.daemons is not None:
        daemons.stop_daemons(memory=memory.daemons, reason=reason,
                             context=_daemon_context(context, resource, memory, logger))


async def _apply(
        context: ProcessingContext,
        resource: references.Resource,
        body: bodies.Body,
        patch: patches.Patch,
        logger: Any,
) -> Optional[typedefs.RawBody]:
    if not patch:
        return None
    return await application.apply_patch(client=context.client, resource=resource, body=body,
                                         patch=patch, logger=logger)


async def _apply_on_top(
        context: ProcessingContext,
        resource: references.Resource,
        body: bodies.Body,
        patched: Optional[typedefs.RawBody],
        patch: patches.Patch,
        logger: Any,
) -> Optional[typedefs.RawBody]:
    """
    Apply the event handlers' patch after the framework's own change of this cycle (if any).

    In the cycles that only add or release the finalizer (or see the object out
    of scope), the change handlers do not run, but the event handlers have run
    already: their changes must not be lost. The freshest body is the one the
    framework's own change has produced, if it has succeeded.
    """
    latest = bodies.Body(patched) if patched is not None else body
    return await _apply(context, resource, latest, patch, logger) or patched


async def _release_finalizer(
        context: ProcessingContext,
        resource: references.Resource,
        body: bodies.Body,
        logger: Any,
        message: str,
) -> Optional[typedefs.RawBody]:
    logger.debug(message)
    return await application.remove_finalizer(client=context.client, resource=resource, body=body,
                                              finalizer=context.settings.persistence.finalizer, logger=logger)
