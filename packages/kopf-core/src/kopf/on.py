"""
The decorators to register the handlers::

    import kopf

    @kopf.on.create('kopfexamples')
    def create_fn(spec, **_):
        return {'message': f"spec is {spec}"}

    @kopf.on.delete('kopf.dev', 'v1', 'kopfexamples', optional=True)
    async def delete_fn(name, logger, **_):
        logger.info(f"{name} is deleted")

Each resource decorator takes the resource specification positionally (see
"Resource specification"), the filters, and the error-handling options; the
handler is added to the default registry unless ``registry=`` is given.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, TypeVar, Union

from kopf._cogs.structs import references
from kopf._core.actions import invocation, subhandling
from kopf._core.intents import callbacks, causes, filters, handlers, registries

FnT = TypeVar('FnT', bound=Callable[..., Any])


class Decorator(Protocol):
    """A decorator that registers the function and returns it unchanged (types kept)."""
    def __call__(self, fn: FnT, /) -> FnT: ...

SelectorArg = Union[None, str, references.EverythingMarker]


# Operator-level activities.

def startup(*, id: Optional[str] = None, param: Optional[Any] = None,
            errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
            retries: Optional[int] = None, backoff: Optional[float] = None,
            registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.startup()`` handler for the operator's start (e.g. to tune the settings)."""
    return _activity(handlers.Activity.STARTUP, id=id, param=param, errors=errors, timeout=timeout,
                     retries=retries, backoff=backoff, registry=registry)


def cleanup(*, id: Optional[str] = None, param: Optional[Any] = None,
            errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
            retries: Optional[int] = None, backoff: Optional[float] = None,
            registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.cleanup()`` handler for the operator's exit."""
    return _activity(handlers.Activity.CLEANUP, id=id, param=param, errors=errors, timeout=timeout,
                     retries=retries, backoff=backoff, registry=registry)


def login(*, id: Optional[str] = None, param: Optional[Any] = None,
          errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
          retries: Optional[int] = None, backoff: Optional[float] = None,
          registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.login()`` handler for custom (re-)authentication: returns ``kopf.ConnectionInfo``."""
    return _activity(handlers.Activity.AUTHENTICATION, id=id, param=param, errors=errors, timeout=timeout,
                     retries=retries, backoff=backoff, registry=registry)


def probe(*, id: Optional[str] = None, param: Optional[Any] = None,
          errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
          retries: Optional[int] = None, backoff: Optional[float] = None,
          registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.probe()`` handler for the health checks (its result is reported)."""
    return _activity(handlers.Activity.PROBE, id=id, param=param, errors=errors, timeout=timeout,
                     retries=retries, backoff=backoff, registry=registry)


def _activity(activity: handlers.Activity, *, id: Optional[str], param: Optional[Any],
              errors: Optional[handlers.ErrorsMode], timeout: Optional[float], retries: Optional[int],
              backoff: Optional[float], registry: Optional[registries.OperatorRegistry]) -> Decorator:
    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind=f'{activity.value} handler')
        real_registry = registry if registry is not None else registries.get_default_registry()
        real_registry.register_activity(handlers.ActivityHandler(
            fn=fn, id=handlers.build_handler_id(fn, id, None), param=param, errors=errors,
            timeout=timeout, retries=retries, backoff=backoff, activity=activity))
        return fn
    return decorator


# Resource-watching and resource-changing handlers.

def event(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
          kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
          shortcut: Optional[str] = None, category: Optional[str] = None,
          id: Optional[str] = None, param: Optional[Any] = None,
          labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
          when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
          value: filters.ValueFilter = None,
          registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.event()`` handler for the raw watch-events (no state, no retries)."""
    selector = references.Selector(__group_or_groupversion_or_name, __version_or_name, __name,
                                   group=group, version=version, kind=kind, plural=plural,
                                   singular=singular, shortcut=shortcut, category=category)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='event handler')
        real_field = handlers.parse_field(field)
        real_registry = registry if registry is not None else registries.get_default_registry()
        real_registry.register_watching(handlers.WatchingHandler(
            fn=fn, id=handlers.build_handler_id(fn, id, real_field), param=param,
            errors=None, timeout=None, retries=None, backoff=None, selector=selector,
            labels=labels, annotations=annotations, when=when, field=real_field, value=value))
        return fn
    return decorator


def resume(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
           kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
           shortcut: Optional[str] = None, category: Optional[str] = None,
           id: Optional[str] = None, param: Optional[Any] = None,
           errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
           retries: Optional[int] = None, backoff: Optional[float] = None, deleted: Optional[bool] = None,
           labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
           when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
           value: filters.ValueFilter = None,
           registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.resume()`` handler for the objects existing when the operator (re)starts."""
    return _changing(
        references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                            version=version, kind=kind, plural=plural, singular=singular,
                            shortcut=shortcut, category=category),
        reason=None, initial=True, deleted=deleted, id=id, param=param, errors=errors, timeout=timeout,
        retries=retries, backoff=backoff, labels=labels, annotations=annotations, when=when,
        field=field, value=value, registry=registry)


def create(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
           kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
           shortcut: Optional[str] = None, category: Optional[str] = None,
           id: Optional[str] = None, param: Optional[Any] = None,
           errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
           retries: Optional[int] = None, backoff: Optional[float] = None,
           labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
           when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
           value: filters.ValueFilter = None,
           registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.create()`` handler for the object creation."""
    return _changing(
        references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                            version=version, kind=kind, plural=plural, singular=singular,
                            shortcut=shortcut, category=category),
        reason=causes.Reason.CREATE, id=id, param=param, errors=errors, timeout=timeout,
        retries=retries, backoff=backoff, labels=labels, annotations=annotations, when=when,
        field=field, value=value, registry=registry)


def update(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
           kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
           shortcut: Optional[str] = None, category: Optional[str] = None,
           id: Optional[str] = None, param: Optional[Any] = None,
           errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
           retries: Optional[int] = None, backoff: Optional[float] = None,
           labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
           when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
           value: filters.ValueFilter = None, old: filters.ValueFilter = None, new: filters.ValueFilter = None,
           registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.update()`` handler for the object update or change."""
    return _changing(
        references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                            version=version, kind=kind, plural=plural, singular=singular,
                            shortcut=shortcut, category=category),
        reason=causes.Reason.UPDATE, id=id, param=param, errors=errors, timeout=timeout,
        retries=retries, backoff=backoff, labels=labels, annotations=annotations, when=when,
        field=field, value=value, old=old, new=new, field_needs_change=True, registry=registry)


def delete(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
           kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
           shortcut: Optional[str] = None, category: Optional[str] = None,
           id: Optional[str] = None, param: Optional[Any] = None,
           errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
           retries: Optional[int] = None, backoff: Optional[float] = None, optional: Optional[bool] = None,
           labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
           when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
           value: filters.ValueFilter = None,
           registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.delete()`` handler for the object deletion (behind a finalizer unless optional)."""
    return _changing(
        references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                            version=version, kind=kind, plural=plural, singular=singular,
                            shortcut=shortcut, category=category),
        reason=causes.Reason.DELETE, requires_finalizer=not optional, id=id, param=param, errors=errors,
        timeout=timeout, retries=retries, backoff=backoff, labels=labels, annotations=annotations,
        when=when, field=field, value=value, registry=registry)


def field(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
          kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
          shortcut: Optional[str] = None, category: Optional[str] = None,
          id: Optional[str] = None, param: Optional[Any] = None,
          errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
          retries: Optional[int] = None, backoff: Optional[float] = None,
          labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
          when: Optional[callbacks.WhenFilterFn] = None, field: Any,
          value: filters.ValueFilter = None, old: filters.ValueFilter = None, new: filters.ValueFilter = None,
          registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.on.field()`` handler for the changes of one field (on updates)."""
    return _changing(
        references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                            version=version, kind=kind, plural=plural, singular=singular,
                            shortcut=shortcut, category=category),
        reason=None, id=id, param=param, errors=errors, timeout=timeout, retries=retries, backoff=backoff,
        labels=labels, annotations=annotations, when=when, field=field, value=value, old=old, new=new,
        field_needs_change=True, registry=registry)


def _changing(
        selector: references.Selector,
        *,
        reason: Optional[causes.Reason],
        id: Optional[str],
        param: Optional[Any],
        errors: Optional[handlers.ErrorsMode],
        timeout: Optional[float],
        retries: Optional[int],
        backoff: Optional[float],
        labels: Optional[filters.MetaFilter],
        annotations: Optional[filters.MetaFilter],
        when: Optional[callbacks.WhenFilterFn],
        field: Optional[Any],
        value: filters.ValueFilter,
        registry: Optional[registries.OperatorRegistry],
        old: filters.ValueFilter = None,
        new: filters.ValueFilter = None,
        initial: Optional[bool] = None,
        deleted: Optional[bool] = None,
        requires_finalizer: Optional[bool] = None,
        field_needs_change: Optional[bool] = None,
) -> Decorator:
    if value is not None and (old is not None or new is not None):
        raise TypeError("Either value= or old=/new= can be used in the filters, not both: "
                        "value= applies to either side of a change, old=/new= to their sides only.")
    real_field = handlers.parse_field(field)
    if real_field is None and (value is not None or old is not None or new is not None):
        raise TypeError("The value=, old= and new= filters need a field= to check.")

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn)
        real_registry = registry if registry is not None else registries.get_default_registry()
        real_registry.register_changing(handlers.ChangingHandler(
            fn=fn, id=handlers.build_handler_id(fn, id, real_field), param=param, errors=errors,
            timeout=timeout, retries=retries, backoff=backoff, selector=selector, labels=labels,
            annotations=annotations, when=when, field=real_field, value=value, reason=reason,
            initial=initial, deleted=deleted, requires_finalizer=requires_finalizer, old=old, new=new,
            field_needs_change=field_needs_change))
        return fn
    return decorator


# Daemons, timers, indices.

def daemon(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
           kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
           shortcut: Optional[str] = None, category: Optional[str] = None,
           id: Optional[str] = None, param: Optional[Any] = None,
           errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
           retries: Optional[int] = None, backoff: Optional[float] = None,
           initial_delay: Optional[float] = None, cancellation_backoff: Optional[float] = None,
           cancellation_timeout: Optional[float] = None, cancellation_polling: Optional[float] = None,
           labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
           when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
           value: filters.ValueFilter = None,
           registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.daemon()`` for the background threads/tasks accompanying each object."""
    selector = references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                                   version=version, kind=kind, plural=plural, singular=singular,
                                   shortcut=shortcut, category=category)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='daemon')
        real_field = handlers.parse_field(field)
        real_registry = registry if registry is not None else registries.get_default_registry()
        real_registry.register_spawning(handlers.DaemonHandler(
            fn=fn, id=handlers.build_handler_id(fn, id, real_field), param=param, errors=errors,
            timeout=timeout, retries=retries, backoff=backoff, selector=selector, labels=labels,
            annotations=annotations, when=when, field=real_field, value=value, initial_delay=initial_delay,
            cancellation_backoff=cancellation_backoff, cancellation_timeout=cancellation_timeout,
            cancellation_polling=cancellation_polling))
        return fn
    return decorator


def timer(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
          kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
          shortcut: Optional[str] = None, category: Optional[str] = None,
          id: Optional[str] = None, param: Optional[Any] = None,
          errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
          retries: Optional[int] = None, backoff: Optional[float] = None,
          interval: Optional[float] = None, initial_delay: Optional[float] = None,
          sharp: Optional[bool] = None, idle: Optional[float] = None,
          labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
          when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
          value: filters.ValueFilter = None,
          registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.timer()`` for the scheduled runs per object (interval, idle, initial delay)."""
    if interval is None and idle is None:
        raise TypeError("A timer needs interval= or idle= (or both): otherwise it never runs.")
    selector = references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                                   version=version, kind=kind, plural=plural, singular=singular,
                                   shortcut=shortcut, category=category)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='timer')
        real_field = handlers.parse_field(field)
        real_registry = registry if registry is not None else registries.get_default_registry()
        real_registry.register_spawning(handlers.TimerHandler(
            fn=fn, id=handlers.build_handler_id(fn, id, real_field), param=param, errors=errors,
            timeout=timeout, retries=retries, backoff=backoff, selector=selector, labels=labels,
            annotations=annotations, when=when, field=real_field, value=value, initial_delay=initial_delay,
            interval=interval, idle=idle, sharp=sharp))
        return fn
    return decorator


def index(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, *, group: Optional[str] = None, version: Optional[str] = None,
          kind: Optional[str] = None, plural: Optional[str] = None, singular: Optional[str] = None,
          shortcut: Optional[str] = None, category: Optional[str] = None,
          id: Optional[str] = None, param: Optional[Any] = None,
          errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
          retries: Optional[int] = None, backoff: Optional[float] = None,
          labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
          when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
          value: filters.ValueFilter = None,
          registry: Optional[registries.OperatorRegistry] = None) -> Decorator:
    """``@kopf.index()`` for the in-memory indices, injected into all handlers' kwargs by name."""
    selector = references.Selector(__group_or_groupversion_or_name, __version_or_name, __name, group=group,
                                   version=version, kind=kind, plural=plural, singular=singular,
                                   shortcut=shortcut, category=category)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='indexing function')
        real_field = handlers.parse_field(field)
        real_registry = registry if registry is not None else registries.get_default_registry()
        real_registry.register_indexing(handlers.IndexingHandler(
            fn=fn, id=handlers.build_handler_id(fn, id, None), param=param, errors=errors,
            timeout=timeout, retries=retries, backoff=backoff, selector=selector, labels=labels,
            annotations=annotations, when=when, field=real_field, value=value))
        return fn
    return decorator


# Sub-handlers: registered by other handlers while they run.

def subhandler(*, id: Optional[str] = None, param: Optional[Any] = None,
               errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
               retries: Optional[int] = None, backoff: Optional[float] = None,
               labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
               when: Optional[callbacks.WhenFilterFn] = None, field: Optional[Any] = None,
               value: filters.ValueFilter = None, old: filters.ValueFilter = None,
               new: filters.ValueFilter = None) -> Decorator:
    """
    ``@kopf.subhandler()`` for the dynamically generated sub-handlers, inside a handler::

        @kopf.on.create('kopfexamples')
        def create(spec, **_):
            for task in spec.get('tasks', []):
                @kopf.subhandler(id=f'task_{task}')
                def create_task(task=task, **_):
                    ...

    The children get the ids ``create/task_abc`` etc.; the parent is not finished
    until all of them are, and is invoked again to register them again until then.
    """
    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='sub-handler')
        scope = subhandling.get_current()
        scope.registered.append(subhandling.build_child(
            fn, parent_id=scope.parent_id, id=id, param=param, errors=errors, timeout=timeout,
            retries=retries, backoff=backoff, labels=labels, annotations=annotations, when=when,
            field=field, value=value, old=old, new=new))
        return fn
    return decorator


def register(fn: FnT, *, id: Optional[str] = None, param: Optional[Any] = None,
             errors: Optional[handlers.ErrorsMode] = None, timeout: Optional[float] = None,
             retries: Optional[int] = None, backoff: Optional[float] = None,
             labels: Optional[filters.MetaFilter] = None, annotations: Optional[filters.MetaFilter] = None,
             when: Optional[callbacks.WhenFilterFn] = None) -> FnT:
    """Register a function as a sub-handler of the currently executed handler."""
    decorator = subhandler(id=id, param=param, errors=errors, timeout=timeout, retries=retries,
                           backoff=backoff, labels=labels, annotations=annotations, when=when)
    return decorator(fn)
