"""
Matching: which handlers apply to a specific object and cause (pure: no I/O, no state).

The filters of the decorators (labels, annotations, field/value, old/new, when)
are checked here against an object's body and its handlers' kwargs; the
registries and the engine ask these questions for each event.
"""
from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional, Sequence, TypeVar

from kopf._cogs.structs import diffs
from kopf._core.intents import causes, filters, handlers

HandlerT = TypeVar('HandlerT', bound=handlers.BaseHandler)


def match_resource_filters(
        handler: handlers.ResourceHandler,
        *,
        body: Mapping[str, Any],
        kwargs: Mapping[str, Any],
        diff: Optional[diffs.Diff] = None,
        old: Optional[Mapping[str, Any]] = None,
        new: Optional[Mapping[str, Any]] = None,
) -> bool:
    """
    Check the labels, annotations, field/value/old/new and ``when=`` filters.

    With a diff (for updates), a ``field=`` must be affected by the change, and
    ``value=`` applies to either side of the change; ``old=``/``new=`` apply to
    their sides only. Without a diff, the object's current state is checked.
    """
    # The checks of the absent filters are skipped here, not in their functions: most handlers have few.
    meta = body.get('metadata', {})
    if handler.labels and not filters.match_meta(handler.labels, meta.get('labels', {}), kwargs):
        return False
    if handler.annotations and not filters.match_meta(handler.annotations, meta.get('annotations', {}), kwargs):
        return False
    if handler.field and not _match_field(handler, body=body, kwargs=kwargs, diff=diff, old=old, new=new):
        return False
    if handler.when is not None and not handler.when(**kwargs):
        return False
    return True


def _match_field(
        handler: handlers.ResourceHandler,
        *,
        body: Mapping[str, Any],
        kwargs: Mapping[str, Any],
        diff: Optional[diffs.Diff],
        old: Optional[Mapping[str, Any]],
        new: Optional[Mapping[str, Any]],
) -> bool:
    assert handler.field  # the caller checks that there is a field filter
    old_crit = getattr(handler, 'old', None)
    new_crit = getattr(handler, 'new', None)
    needs_change = getattr(handler, 'field_needs_change', None)
    if diff is not None and needs_change:
        old_present, old_value = filters.resolve_field(old or {}, handler.field)
        new_present, new_value = filters.resolve_field(new or {}, handler.field)
        if (old_present, old_value) == (new_present, new_value):
            return False  # not affected by this change
        if old_crit is not None or new_crit is not None:
            old_ok = old_crit is None or filters.match_value(old_crit, old_value, present=old_present, kwargs=kwargs)
            new_ok = new_crit is None or filters.match_value(new_crit, new_value, present=new_present, kwargs=kwargs)
            return old_ok and new_ok
        criterion = handler.value if handler.value is not None else filters.PRESENT
        return (filters.match_value(criterion, old_value, present=old_present, kwargs=kwargs) or
                filters.match_value(criterion, new_value, present=new_present, kwargs=kwargs))
    present, value = filters.resolve_field(body, handler.field)
    criterion = handler.value if handler.value is not None else filters.PRESENT
    return filters.match_value(criterion, value, present=present, kwargs=kwargs)


def select_changing_handlers(
        handlers_: Sequence[handlers.ChangingHandler],
        *,
        cause: causes.ChangingCause,
        kwargs: Mapping[str, Any],
) -> Sequence[handlers.ChangingHandler]:
    """The handlers to run for this cause, in the order of declaration."""
    return deduplicated(
        handler for handler in handlers_
        if applies_to(handler, cause)
        and match_resource_filters(handler, body=cause.body, kwargs=kwargs,
                                   diff=cause.diff if _checks_change(handler, cause) else None,
                                   old=cause.old, new=cause.new)
    )


def applies_to(handler: handlers.ChangingHandler, cause: causes.ChangingCause) -> bool:
    """Whether the handler is selected for the cause (filters aside)."""
    if handler.initial:  # resuming handlers
        if not cause.initial:
            return False
        if cause.reason == causes.Reason.DELETE:
            return bool(handler.deleted)
        return cause.reason in causes.HANDLER_REASONS
    if handler.reason is None:
        # Field handlers: for any reason with a change of their field (checked by the filters),
        # so also at creation when the field is set, as operators written for Kopf 1.45 expect.
        return cause.reason in causes.HANDLER_REASONS
    return handler.reason == cause.reason


def _checks_change(handler: handlers.ChangingHandler, cause: causes.ChangingCause) -> bool:
    """Whether the handler's ``field=`` must be changed by this cause rather than just be set."""
    # Field handlers (no reason of their own) need a change of the field whatever the reason:
    # at creation, its first appearance is such a change; at resuming, nothing has changed.
    is_field_handler = handler.reason is None and not handler.initial
    return cause.reason == causes.Reason.UPDATE or is_field_handler


def requires_finalizer(
        handlers_: Sequence[handlers.ResourceHandler],
        *,
        body: Mapping[str, Any],
        kwargs: Mapping[str, Any],
) -> bool:
    """Whether a non-optional deletion handler, or a daemon/timer, applies to the object as it is now."""
    for handler in handlers_:
        if not getattr(handler, 'requires_finalizer', None):
            continue
        if isinstance(handler, handlers.ChangingHandler) and handler.reason != causes.Reason.DELETE:
            continue
        if match_resource_filters(handler, body=body, kwargs=kwargs):
            return True
    return False


def is_in_scope(
        handlers_: Sequence[handlers.ResourceHandler],
        *,
        body: Mapping[str, Any],
        kwargs: Mapping[str, Any],
) -> bool:
    """
    Whether any handler's filters match the object at all (else: stealth mode).

    The update & field handlers (``@on.update``/``@on.field`` with ``field=``)
    count as matching regardless of the field: they are about a change, not
    about the current state, so that a dummy field handler keeps all objects
    in scope, as the manual suggests. The ``field=``/``value=`` filters of all
    other handlers check the current state: an object starts matching them,
    e.g., when its spec changes --- and this is then a creation for it.
    """
    for handler in handlers_:
        meta = body.get('metadata', {})
        if handler.labels and not filters.match_meta(handler.labels, meta.get('labels', {}), kwargs):
            continue
        if handler.annotations and not filters.match_meta(handler.annotations, meta.get('annotations', {}), kwargs):
            continue
        if handler.field and not getattr(handler, 'field_needs_change', None):
            present, value = filters.resolve_field(body, handler.field)
            criterion = handler.value if handler.value is not None else filters.PRESENT
            if not filters.match_value(criterion, value, present=present, kwargs=kwargs):
                continue
        if handler.when is not None and not handler.when(**kwargs):
            continue
        return True
    return False


def deduplicated(items: Iterable[HandlerT]) -> List[HandlerT]:
    """The first handler of each id: the same function under several selectors runs once."""
    seen: set[tuple[Any, str]] = set()
    result: List[HandlerT] = []
    for handler in items:
        key = (handler.fn, handler.id)
        if key not in seen:
            seen.add(key)
            result.append(handler)
    return result
