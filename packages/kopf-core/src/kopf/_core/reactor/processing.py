"""
Processing of one object's event: the event handlers, then the change cycle.

For each event of an object (the latest one, see ``queueing``), this module
invokes the event-watching handlers and then, if the resource has change
handlers, daemons or timers, one cycle of them (see ``changing``), which writes
all the framework's and the user's changes back in as few requests as possible.

The result is when to come back: a delay if some handlers are postponed
(retries, backoffs), or nothing if the cycle is complete. Waiting is the
worker's job: it wakes up earlier if a newer event arrives.
"""
from __future__ import annotations

from typing import Any, Sequence

from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, hierarchies, patches, references
from kopf._core.actions import application, execution, invocation, loggers
from kopf._core.actions import kwargs as kwargs_
from kopf._core.intents import causes, handlers, matching
from kopf._core.reactor.changing import ChangeCycle
from kopf._core.reactor.cycles import CycleResult, ProcessingContext


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

    watching_handlers = context.registry.get_watching_handlers(resource=resource)
    if watching_handlers:
        await _process_watching(context=context, handlers_=watching_handlers, resource=resource,
                                raw_event=raw_event, body=body, patch=patch, memo=memo)

    result = CycleResult()
    if context.registry.has_state_handlers(resource=resource):
        cycle = ChangeCycle(context=context, resource=resource, raw_type=raw_type, body=body, patch=patch,
                            memory=memory, memo=memo)
        result = await cycle.run()
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
    obj = bodies.object_key(raw_body)
    if raw_event.get('type') == 'DELETED':
        context.indexers.forget(obj)
        return
    body = bodies.Body(raw_body)
    logger = loggers.LocalObjectLogger(body=body, settings=context.settings)
    memory = context.memories.recall(raw_body, memo=context.memo, initial=raw_event.get('type') is None)
    cause = causes.BaseCause(resource=resource, body=body, patch=patches.Patch(), memo=memory.memo,
                             logger=logger, indices=context.indexers.as_kwargs())
    kwargs = kwargs_.build_resource_kwargs(cause)
    exec_context = execution.ExecutionContext(
        settings=context.settings, logger=logger,
        build_kwargs=lambda handler, state: kwargs_.build_handler_kwargs(kwargs, handler, state))
    await context.indexers.index_object(obj=obj, handlers_=context.registry.get_indexing_handlers(resource=resource),
                                        kwargs=kwargs, body=body, context=exec_context)


async def _process_watching(
        *,
        context: ProcessingContext,
        handlers_: Sequence[handlers.WatchingHandler],
        resource: references.Resource,
        raw_event: typedefs.RawEvent,
        body: bodies.Body,
        patch: patches.Patch,
        memo: Any,
) -> None:
    """Invoke the raw-event handlers: no state, no retries; errors are only logged."""
    logger = loggers.LocalObjectLogger(body=body, settings=context.settings)
    cause = causes.WatchingCause(resource=resource, body=body, patch=patch, memo=memo, logger=logger,
                                 indices=context.indexers.as_kwargs(), type=raw_event.get('type'), event=raw_event)
    kwargs = kwargs_.build_watching_kwargs(cause)
    for handler in handlers_:
        if not matching.match_resource_filters(handler, body=body, kwargs=kwargs):
            continue
        try:
            logger.debug(f"{handler.title} is invoked.")
            await invocation.invoke(handler.fn, kwargs=dict(kwargs, param=handler.param),
                                    settings=context.settings)
        except Exception as e:
            logger.exception(f"{handler.title} failed with an exception. Will ignore. {e}")
        else:
            logger.debug(f"{handler.title} succeeded.")
