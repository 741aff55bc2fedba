"""
Registries: the collections of handlers of an operator.

The decorators add handlers to the default registry unless one is given
explicitly; the engine asks the registry which handlers apply to a resource,
an object, and a cause. Selection is pure: no I/O, no state.
"""
from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional, Sequence, TypeVar

from kopf._cogs.structs import diffs, references
from kopf._core.intents import causes, filters, handlers, webhooks

HandlerT = TypeVar('HandlerT', bound=handlers.BaseHandler)


class OperatorRegistry:
    """All the handlers of one operator: activities and per-resource handlers."""

    def __init__(self) -> None:
        self._activities: List[handlers.ActivityHandler] = []
        self._watching: List[handlers.WatchingHandler] = []
        self._changing: List[handlers.ChangingHandler] = []
        self._spawning: List[handlers.SpawningHandler] = []
        self._indexing: List[handlers.IndexingHandler] = []
        self._webhooks: List[webhooks.WebhookHandler] = []

    # Registration.

    def register_activity(self, handler: handlers.ActivityHandler) -> None:
        self._append_unique(self._activities, handler)

    def register_watching(self, handler: handlers.WatchingHandler) -> None:
        self._append_unique(self._watching, handler)

    def register_changing(self, handler: handlers.ChangingHandler) -> None:
        self._append_unique(self._changing, handler)

    def register_spawning(self, handler: handlers.SpawningHandler) -> None:
        self._append_unique(self._spawning, handler)

    def register_indexing(self, handler: handlers.IndexingHandler) -> None:
        if any(h.id == handler.id and h.fn is not handler.fn for h in self._indexing):
            raise ValueError(f"The index {handler.id!r} is already declared by another function: "
                             f"give one of them another id= (index names must be unique).")
        self._append_unique(self._indexing, handler)

    def register_webhook(self, handler: webhooks.WebhookHandler) -> None:
        if any(h.id == handler.id and h.fn is not handler.fn for h in self._webhooks):
            raise ValueError(f"The admission handler id {handler.id!r} is already used by another function: "
                             f"give one of them another id= (it names the webhook and its URL path).")
        self._append_unique(self._webhooks, handler)

    @staticmethod
    def _append_unique(items: List[HandlerT], handler: HandlerT) -> None:
        # The same function decorated twice with the same id and selector is one handler.
        if handler not in items:
            items.append(handler)

    # Inspection.

    @property
    def selectors(self) -> Sequence[references.Selector]:
        """All resource selectors used by any handler, in the order of declaration."""
        result: List[references.Selector] = []
        for handler in [*self._indexing, *self._watching, *self._changing, *self._spawning]:
            if handler.selector is not None and handler.selector not in result:
                result.append(handler.selector)
        return result

    def get_activity_handlers(self, *, activity: handlers.Activity) -> Sequence[handlers.ActivityHandler]:
        return _deduplicated(h for h in self._activities if h.activity == activity)

    def has_activity_handlers(self, *, activity: handlers.Activity) -> bool:
        return any(h.activity == activity for h in self._activities)

    def get_watching_handlers(self, *, resource: references.Resource) -> Sequence[handlers.WatchingHandler]:
        return _deduplicated(h for h in self._watching if _serves(h, resource))

    def get_changing_handlers(self, *, resource: references.Resource) -> Sequence[handlers.ChangingHandler]:
        # Not deduplicated here: e.g. @on.resume+@on.create on one function share the id, and
        # which of them applies depends on the cause. See select_changing_handlers().
        return [h for h in self._changing if _serves(h, resource)]

    def get_spawning_handlers(self, *, resource: references.Resource) -> Sequence[handlers.SpawningHandler]:
        return _deduplicated(h for h in self._spawning if _serves(h, resource))

    def get_indexing_handlers(self, *, resource: references.Resource) -> Sequence[handlers.IndexingHandler]:
        return _deduplicated(h for h in self._indexing if _serves(h, resource))

    def get_webhook_handlers(self) -> Sequence[webhooks.WebhookHandler]:
        """All admission handlers, in the order of declaration (they are served by id, not by resource)."""
        return list(self._webhooks)

    def has_webhook_handlers(self) -> bool:
        return bool(self._webhooks)

    @property
    def index_names(self) -> Sequence[str]:
        """The names of all declared indices (the indexing handlers' ids)."""
        return list(dict.fromkeys(h.id for h in self._indexing))

    def has_indexing_handlers(self, *, resource: Optional[references.Resource] = None) -> bool:
        return any(resource is None or _serves(h, resource) for h in self._indexing)

    def get_all_changing_handlers(self) -> Sequence[handlers.ChangingHandler]:
        """All resource-changing handlers regardless of resources (e.g. for kopf.execute(registry=))."""
        return list(self._changing)

    def has_changing_handlers(self, *, resource: references.Resource) -> bool:
        return any(_serves(h, resource) for h in self._changing)

    def has_state_handlers(self, *, resource: references.Resource) -> bool:
        """Whether the objects need the change-handling cycle (state, finalizers, daemons)."""
        return any(_serves(h, resource) for h in [*self._changing, *self._spawning])

    def get_extra_fields(self, *, resource: references.Resource) -> Sequence[tuple[str, ...]]:
        """Fields that the diff-base keeps although they are usually dropped (e.g. status.x)."""
        return [h.field for h in self._changing if h.field and _serves(h, resource)]


def _serves(handler: handlers.ResourceHandler, resource: references.Resource) -> bool:
    return handler.selector is not None and handler.selector.check(resource)


def _deduplicated(items: Iterable[HandlerT]) -> Sequence[HandlerT]:
    """The first handler of each id: the same function under several selectors runs once."""
    seen: set[tuple[Any, str]] = set()
    result: List[HandlerT] = []
    for handler in items:
        key = (handler.fn, handler.id)
        if key not in seen:
            seen.add(key)
            result.append(handler)
    return result


# Filtering: which handlers apply to a specific object and cause.

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
    meta = body.get('metadata', {})
    if not filters.match_meta(handler.labels, meta.get('labels', {}), kwargs):
        return False
    if not filters.match_meta(handler.annotations, meta.get('annotations', {}), kwargs):
        return False
    if not _match_field(handler, body=body, kwargs=kwargs, diff=diff, old=old, new=new):
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
    if not handler.field:
        return True
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
    return _deduplicated(
        handler for handler in handlers_
        if handler.applies_to(cause)
        and match_resource_filters(handler, body=cause.body, kwargs=kwargs,
                                   diff=cause.diff if _checks_change(handler, cause) else None,
                                   old=cause.old, new=cause.new)
    )


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
        if not filters.match_meta(handler.labels, meta.get('labels', {}), kwargs):
            continue
        if not filters.match_meta(handler.annotations, meta.get('annotations', {}), kwargs):
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


_default_registry: Optional[OperatorRegistry] = None


def get_default_registry() -> OperatorRegistry:
    """The registry used by the decorators when no ``registry=`` is given."""
    global _default_registry
    if _default_registry is None:
        _default_registry = OperatorRegistry()
    return _default_registry


def set_default_registry(registry: OperatorRegistry) -> None:
    global _default_registry
    _default_registry = registry
