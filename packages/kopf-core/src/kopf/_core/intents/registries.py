"""
Registries: the collections of handlers of an operator.

The decorators add handlers to the default registry unless one is given
explicitly; the engine asks the registry which handlers apply to a resource,
an object, and a cause. Selection is pure: no I/O, no state.
"""
from __future__ import annotations

from typing import Any, Collection, Container, Generic, Iterator, List, Mapping, Optional, Sequence, TypeVar

from kopf._cogs.structs import references
from kopf._core.intents import causes, conversions, handlers, matching, webhooks

HandlerT = TypeVar('HandlerT', bound=handlers.BaseHandler)
ResourceHandlerT = TypeVar('ResourceHandlerT', bound=handlers.ResourceHandler)


# The handlers of each kind are kept in a sub-registry of their own, as in Kopf:
# operators' tests and tools introspect (and even replace) them via
# ``registry._changing._handlers``, ``registry._spawning.get_all_handlers()``, etc.
# The engine reads the same live lists, so such changes take effect.

class GenericRegistry(Generic[HandlerT]):
    """The handlers of one kind, in the order of declaration."""

    def __init__(self) -> None:
        self._handlers: List[HandlerT] = []

    def append(self, handler: HandlerT) -> None:
        # The same function decorated twice with the same id and selector is one handler.
        if handler not in self._handlers:
            self._handlers.append(handler)

    def get_all_handlers(self) -> Collection[HandlerT]:
        return list(self._handlers)


class ActivityRegistry(GenericRegistry[handlers.ActivityHandler]):
    """The operator-level handlers: startup, cleanup, login, probes."""

    def get_handlers(self, activity: handlers.Activity) -> Sequence[handlers.ActivityHandler]:
        return matching.deduplicated(self.iter_handlers(activity=activity))

    def iter_handlers(self, activity: handlers.Activity) -> Iterator[handlers.ActivityHandler]:
        return (handler for handler in self._handlers if handler.activity == activity)


class ResourceRegistry(GenericRegistry[ResourceHandlerT]):
    """The handlers of resources: selected by the resource, then by the object (the cause)."""

    def get_all_selectors(self) -> frozenset[references.Selector]:
        return frozenset(handler.selector for handler in self._handlers if handler.selector is not None)

    def has_handlers(self, resource: references.Resource) -> bool:
        return any(_serves(handler, resource) for handler in self._handlers)

    def get_resource_handlers(self, resource: references.Resource) -> Sequence[ResourceHandlerT]:
        """The handlers of the resource regardless of the objects, in the order of declaration."""
        return [handler for handler in self._handlers if _serves(handler, resource)]

    def get_handlers(
            self,
            cause: causes.BaseCause,
            excluded: Container[handlers.HandlerId] = frozenset(),
    ) -> Sequence[ResourceHandlerT]:
        return matching.deduplicated(self.iter_handlers(cause, excluded=excluded))

    def iter_handlers(
            self,
            cause: causes.BaseCause,
            excluded: Container[handlers.HandlerId] = frozenset(),
    ) -> Iterator[ResourceHandlerT]:
        """The handlers whose resource and filters match the cause's object."""
        kwargs = _kwargs_of(cause)
        for handler in self.get_resource_handlers(cause.resource):
            if handler.id not in excluded and self._matches(handler, cause, kwargs):
                yield handler

    def _matches(self, handler: ResourceHandlerT, cause: causes.BaseCause, kwargs: Mapping[str, Any]) -> bool:
        return matching.match_resource_filters(handler, body=cause.body, kwargs=kwargs)

    def get_extra_fields(self, resource: references.Resource) -> set[tuple[str, ...]]:
        return set(self.iter_extra_fields(resource))

    def iter_extra_fields(self, resource: references.Resource) -> Iterator[tuple[str, ...]]:
        """Fields that the diff-base keeps although they are usually dropped (e.g. status.x)."""
        return (handler.field for handler in self.get_resource_handlers(resource) if handler.field)


class WatchingRegistry(ResourceRegistry[handlers.WatchingHandler]):
    """``@kopf.on.event`` handlers."""


class IndexingRegistry(ResourceRegistry[handlers.IndexingHandler]):
    """``@kopf.index`` handlers: the index names (their ids) are unique."""

    def append(self, handler: handlers.IndexingHandler) -> None:
        if any(h.id == handler.id and h.fn is not handler.fn for h in self._handlers):
            raise ValueError(f"The index {handler.id!r} is already declared by another function: "
                             f"give one of them another id= (index names must be unique).")
        super().append(handler)


class SpawningRegistry(ResourceRegistry[handlers.SpawningHandler]):
    """Daemons and timers."""

    def requires_finalizer(
            self,
            cause: causes.BaseCause,
            excluded: Container[handlers.HandlerId] = frozenset(),
    ) -> bool:
        handlers_ = [h for h in self.get_resource_handlers(cause.resource) if h.id not in excluded]
        return matching.requires_finalizer(handlers_, body=cause.body, kwargs=_kwargs_of(cause))


class ChangingRegistry(ResourceRegistry[handlers.ChangingHandler]):
    """Creation, update, deletion, resuming and field handlers."""

    def get_handlers(
            self,
            cause: causes.BaseCause,
            excluded: Container[handlers.HandlerId] = frozenset(),
    ) -> Sequence[handlers.ChangingHandler]:
        if not isinstance(cause, causes.ChangingCause):
            return super().get_handlers(cause, excluded=excluded)
        # The same function as e.g. @on.resume+@on.create: the one that applies to the cause.
        handlers_ = [h for h in self.get_resource_handlers(cause.resource) if h.id not in excluded]
        return matching.select_changing_handlers(handlers_, cause=cause, kwargs=_kwargs_of(cause))

    def iter_handlers(
            self,
            cause: causes.BaseCause,
            excluded: Container[handlers.HandlerId] = frozenset(),
    ) -> Iterator[handlers.ChangingHandler]:
        if not isinstance(cause, causes.ChangingCause):
            return super().iter_handlers(cause, excluded=excluded)  # the filters only: no reason to select by
        return iter(self.get_handlers(cause, excluded=excluded))

    def requires_finalizer(
            self,
            cause: causes.BaseCause,
            excluded: Container[handlers.HandlerId] = frozenset(),
    ) -> bool:
        handlers_ = [h for h in self.get_resource_handlers(cause.resource) if h.id not in excluded]
        return matching.requires_finalizer(handlers_, body=cause.body, kwargs=_kwargs_of(cause))

    def prematch(self, cause: causes.BaseCause) -> bool:
        """Whether any handler can match the object at all, changes aside (else: stealth mode)."""
        handlers_ = self.get_resource_handlers(cause.resource)
        return matching.is_in_scope(handlers_, body=cause.body, kwargs=_kwargs_of(cause))


class WebhooksRegistry(ResourceRegistry[webhooks.WebhookHandler]):
    """Admission handlers: served by their ids (which name the webhooks), so the ids are unique."""

    def append(self, handler: webhooks.WebhookHandler) -> None:
        if any(h.id == handler.id and h.fn is not handler.fn for h in self._handlers):
            raise ValueError(f"The admission handler id {handler.id!r} is already used by another function: "
                             f"give one of them another id= (it names the webhook and its URL path).")
        super().append(handler)

    def _matches(self, handler: webhooks.WebhookHandler, cause: causes.BaseCause, kwargs: Mapping[str, Any]) -> bool:
        operation, subresource = getattr(cause, 'operation', None), getattr(cause, 'subresource', None)
        if operation is not None and not handler.accepts(operation=operation, subresource=subresource):
            return False
        return super()._matches(handler, cause, kwargs)


def _kwargs_of(cause: causes.BaseCause) -> Mapping[str, Any]:
    """The kwargs for the filters (``when=``, callable label values) from a cause's own fields."""
    body = cause.body
    kwargs: dict[str, Any] = dict(
        resource=cause.resource, body=body, spec=body.spec, meta=body.metadata, status=body.status,
        uid=body.metadata.uid, name=body.metadata.name, namespace=body.metadata.namespace,
        labels=body.metadata.labels, annotations=body.metadata.annotations,
        patch=cause.patch, logger=cause.logger, memo=cause.memo,
    )
    kwargs.update(cause.indices or {})  # the indices override the framework's kwargs by name
    extra = ('type', 'event', 'reason', 'diff', 'old', 'new')
    kwargs.update({name: getattr(cause, name) for name in extra if hasattr(cause, name)})
    return kwargs


class OperatorRegistry:
    """All the handlers of one operator: activities and per-resource handlers, by kind."""

    def __init__(self) -> None:
        self._activities = ActivityRegistry()
        self._indexing = IndexingRegistry()
        self._watching = WatchingRegistry()
        self._spawning = SpawningRegistry()
        self._changing = ChangingRegistry()
        self._webhooks = WebhooksRegistry()
        self._conversions = conversions.ConversionRegistry()  # not in Kopf: @kopf.on.convert

    # Registration.

    def register_activity(self, handler: handlers.ActivityHandler) -> None:
        self._activities.append(handler)

    def register_watching(self, handler: handlers.WatchingHandler) -> None:
        self._watching.append(handler)

    def register_changing(self, handler: handlers.ChangingHandler) -> None:
        self._changing.append(handler)

    def register_spawning(self, handler: handlers.SpawningHandler) -> None:
        self._spawning.append(handler)

    def register_indexing(self, handler: handlers.IndexingHandler) -> None:
        self._indexing.append(handler)

    def register_webhook(self, handler: webhooks.WebhookHandler) -> None:
        self._webhooks.append(handler)

    def register_conversion(self, handler: conversions.ConversionHandler) -> None:
        self._conversions.append(handler)

    # Inspection: the engine's questions, answered from the live lists of the sub-registries.

    @property
    def selectors(self) -> Sequence[references.Selector]:
        """All resource selectors used by any handler, in the order of declaration."""
        result: List[references.Selector] = []
        registries_: List[ResourceRegistry[Any]] = [self._indexing, self._watching, self._changing, self._spawning]
        for registry in registries_:
            for handler in registry._handlers:
                if handler.selector is not None and handler.selector not in result:
                    result.append(handler.selector)
        return result

    def get_activity_handlers(self, *, activity: handlers.Activity) -> Sequence[handlers.ActivityHandler]:
        return self._activities.get_handlers(activity=activity)

    def has_activity_handlers(self, *, activity: handlers.Activity) -> bool:
        return any(h.activity == activity for h in self._activities._handlers)

    def get_watching_handlers(self, *, resource: references.Resource) -> Sequence[handlers.WatchingHandler]:
        return _deduplicated(self._watching.get_resource_handlers(resource))

    def get_changing_handlers(self, *, resource: references.Resource) -> Sequence[handlers.ChangingHandler]:
        # Not deduplicated here: e.g. @on.resume+@on.create on one function share the id, and
        # which of them applies depends on the cause. See matching.select_changing_handlers().
        return self._changing.get_resource_handlers(resource)

    def get_spawning_handlers(self, *, resource: references.Resource) -> Sequence[handlers.SpawningHandler]:
        return _deduplicated(self._spawning.get_resource_handlers(resource))

    def get_indexing_handlers(self, *, resource: references.Resource) -> Sequence[handlers.IndexingHandler]:
        return _deduplicated(self._indexing.get_resource_handlers(resource))

    def get_webhook_handlers(self) -> Sequence[webhooks.WebhookHandler]:
        """All admission handlers, in the order of declaration (they are served by id, not by resource)."""
        return list(self._webhooks._handlers)

    def has_webhook_handlers(self) -> bool:
        return bool(self._webhooks._handlers)

    def get_conversion_handlers(self) -> conversions.ConversionRegistry:
        """The conversion functions: the chains between versions are found there."""
        return self._conversions

    def has_conversion_handlers(self) -> bool:
        return bool(self._conversions._handlers)

    @property
    def index_names(self) -> Sequence[str]:
        """The names of all declared indices (the indexing handlers' ids)."""
        return list(dict.fromkeys(h.id for h in self._indexing._handlers))

    def has_indexing_handlers(self, *, resource: Optional[references.Resource] = None) -> bool:
        return bool(self._indexing._handlers) if resource is None else self._indexing.has_handlers(resource)

    def get_all_changing_handlers(self) -> Sequence[handlers.ChangingHandler]:
        """All resource-changing handlers regardless of resources (e.g. for kopf.execute(registry=))."""
        return list(self._changing._handlers)

    def has_state_handlers(self, *, resource: references.Resource) -> bool:
        """Whether the objects need the change-handling cycle (state, finalizers, daemons)."""
        return self._changing.has_handlers(resource) or self._spawning.has_handlers(resource)

    def get_extra_fields(self, *, resource: references.Resource) -> Sequence[tuple[str, ...]]:
        """Fields that the diff-base keeps although they are usually dropped (e.g. status.x)."""
        return list(self._changing.iter_extra_fields(resource))


def _serves(handler: handlers.ResourceHandler, resource: references.Resource) -> bool:
    return handler.selector is not None and handler.selector.check(resource)


_default_registry: Optional[OperatorRegistry] = None


def get_default_registry() -> OperatorRegistry:
    """The registry used by the decorators when no ``registry=`` is given."""
    global _default_registry
    if _default_registry is None:
        _default_registry = OperatorRegistry()
    return _default_registry


def set_default_registry(registry: OperatorRegistry) -> None:
    """Make this registry the one that the decorators use when no ``registry=`` is given."""
    global _default_registry
    _default_registry = registry


def _deduplicated(found: Sequence[HandlerT]) -> Sequence[HandlerT]:
    """The handlers without repeated ids; a single handler or none needs no look."""
    return matching.deduplicated(found) if len(found) > 1 else found
