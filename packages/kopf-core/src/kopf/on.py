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

The keyword options are declared once, as small typed bundles (``_Filtering``,
``_Retrying``, ...), and each decorator's keyword arguments are the union of
the bundles it supports: type checkers and IDEs see every option with its type
(PEP 692), and at runtime :func:`_keyword_options` gives each decorator the
full documented signature and refuses unknown options as Python would.
"""
from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable, Collection, Optional, Protocol, TypedDict, TypeVar, Union

from kopf._cogs.structs import references, reviews
from kopf._core.actions import invocation, subhandling
from kopf._core.intents import callbacks, causes, filters, handlers, registries, webhooks

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack since Python 3.11; annotations only

FnT = TypeVar('FnT', bound=Callable[..., Any])
DecoratingFnT = TypeVar('DecoratingFnT', bound=Callable[..., Any])


class Decorator(Protocol):
    """A decorator that registers the function and returns it unchanged (types kept)."""
    def __call__(self, fn: FnT, /) -> FnT: ...


# What each group of decorators returns (the names are public, as in Kopf).
ActivityDecorator = Decorator
WatchingDecorator = Decorator
ChangingDecorator = Decorator
DaemonDecorator = Decorator
TimerDecorator = Decorator
IndexingDecorator = Decorator
WebhookDecorator = Decorator

SelectorArg = Union[None, str, references.EverythingMarker, references.SelectorFn]


# The option bundles: each option is declared here once, with its type.

class _Selecting(TypedDict, total=False):
    group: Optional[str]
    version: Optional[str]
    kind: Optional[str]
    plural: Optional[str]
    singular: Optional[str]
    shortcut: Optional[str]
    category: Optional[str]


class _Identifying(TypedDict, total=False):
    id: Optional[str]
    param: Optional[Any]


class _Retrying(TypedDict, total=False):
    errors: Optional[handlers.ErrorsMode]
    timeout: Optional[float]
    retries: Optional[int]
    backoff: Optional[float]


class _MetaFiltering(TypedDict, total=False):
    labels: Optional[filters.MetaFilter]
    annotations: Optional[filters.MetaFilter]
    when: Optional[callbacks.WhenFilterFn]


class _FieldFiltering(TypedDict, total=False):
    field: Optional[Any]


class _RequiredField(TypedDict):
    field: Any


class _ValueFiltering(TypedDict, total=False):
    value: filters.ValueFilter


class _ChangeFiltering(TypedDict, total=False):
    old: filters.ValueFilter
    new: filters.ValueFilter


class _Filtering(_MetaFiltering, _FieldFiltering, _ValueFiltering, total=False):
    pass


class _Registering(TypedDict, total=False):
    registry: Optional[registries.OperatorRegistry]


class _Resuming(TypedDict, total=False):
    deleted: Optional[bool]


class _Deleting(TypedDict, total=False):
    optional: Optional[bool]


class _Daemoning(TypedDict, total=False):
    initial_delay: Optional[float]
    cancellation_backoff: Optional[float]
    cancellation_timeout: Optional[float]
    cancellation_polling: Optional[float]


class _Timing(TypedDict, total=False):
    interval: Optional[float]
    initial_delay: Optional[float]
    sharp: Optional[bool]
    idle: Optional[float]


class _Admitting(TypedDict, total=False):
    operation: Optional[reviews.Operation]
    operations: Optional[Collection[reviews.Operation]]
    subresource: Optional[str]
    persistent: Optional[bool]
    side_effects: Optional[bool]
    ignore_failures: Optional[bool]


# The options of each decorator: the bundles in the order the manual lists them.

class _ActivityOptions(_Identifying, _Retrying, _Registering, total=False):
    pass


class _WatchingOptions(_Selecting, _Identifying, _Filtering, _Registering, total=False):
    pass


class _ResourceOptions(_Selecting, _Identifying, _Retrying, _Filtering, _Registering, total=False):
    pass


class _ResumeOptions(_Selecting, _Identifying, _Retrying, _Resuming, _Filtering, _Registering, total=False):
    pass


class _UpdateOptions(_Selecting, _Identifying, _Retrying, _Filtering, _ChangeFiltering, _Registering,
                     total=False):
    pass


class _DeleteOptions(_Selecting, _Identifying, _Retrying, _Deleting, _Filtering, _Registering, total=False):
    pass


class _FieldOptions(_Selecting, _Identifying, _Retrying, _MetaFiltering, _RequiredField, _ValueFiltering,
                    _ChangeFiltering, _Registering, total=False):
    pass


class _DaemonOptions(_Selecting, _Identifying, _Retrying, _Daemoning, _Filtering, _Registering, total=False):
    pass


class _TimerOptions(_Selecting, _Identifying, _Retrying, _Timing, _Filtering, _Registering, total=False):
    pass


class _WebhookOptions(_Selecting, _Identifying, _Admitting, _Filtering, _Registering, total=False):
    pass


class _SubhandlerOptions(_Identifying, _Retrying, _Filtering, _ChangeFiltering, total=False):
    pass


class _RegisterOptions(_Identifying, _Retrying, _MetaFiltering, total=False):
    pass


def _keyword_options(options: type) -> Callable[[DecoratingFnT], DecoratingFnT]:
    """
    Give a decorator the documented signature built from its option bundle.

    The explicit parameters stay (the resource specification, or the function);
    ``**options`` becomes the keyword-only options, each ``None`` by default
    unless required. Unknown or missing options raise the usual ``TypeError``.
    """
    def wrap(fn: DecoratingFnT) -> DecoratingFnT:
        explicit = [p for p in inspect.signature(fn).parameters.values() if p.kind != p.VAR_KEYWORD]
        required: frozenset[str] = getattr(options, '__required_keys__', frozenset())
        keywords = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                      annotation=getattr(annotation, '__forward_arg__', annotation),
                                      default=inspect.Parameter.empty if name in required else None)
                    for name, annotation in options.__annotations__.items()]
        signature = inspect.signature(fn).replace(parameters=[*explicit, *keywords])

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{fn.__name__}() {e}") from None
            return fn(*args, **kwargs)

        checked.__signature__ = signature  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]
    return wrap


def _registry(options: _Registering) -> registries.OperatorRegistry:
    """The explicitly given registry, or the default one (at the moment of decoration)."""
    registry = options.get('registry')
    return registry if registry is not None else registries.get_default_registry()


def _selector(names: tuple[SelectorArg, SelectorArg, SelectorArg], options: _Selecting) -> references.Selector:
    return references.Selector(*names, group=options.get('group'), version=options.get('version'),
                               kind=options.get('kind'), plural=options.get('plural'),
                               singular=options.get('singular'), shortcut=options.get('shortcut'),
                               category=options.get('category'))


def _retrying(options: _Retrying) -> dict[str, Any]:
    return dict(errors=options.get('errors'), timeout=options.get('timeout'),
                retries=options.get('retries'), backoff=options.get('backoff'))


def _filtering(options: _MetaFiltering) -> dict[str, Any]:
    return dict(labels=options.get('labels'), annotations=options.get('annotations'), when=options.get('when'))


# Operator-level activities.

@_keyword_options(_ActivityOptions)
def startup(**options: Unpack[_ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.startup()`` handler for the operator's start (e.g. to tune the settings)."""
    return _activity(handlers.Activity.STARTUP, options)


@_keyword_options(_ActivityOptions)
def cleanup(**options: Unpack[_ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.cleanup()`` handler for the operator's exit."""
    return _activity(handlers.Activity.CLEANUP, options)


@_keyword_options(_ActivityOptions)
def login(**options: Unpack[_ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.login()`` handler for custom (re-)authentication: returns ``kopf.ConnectionInfo``."""
    return _activity(handlers.Activity.AUTHENTICATION, options)


@_keyword_options(_ActivityOptions)
def probe(**options: Unpack[_ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.probe()`` handler for the health checks (its result is reported)."""
    return _activity(handlers.Activity.PROBE, options)


def _activity(activity: handlers.Activity, options: _ActivityOptions) -> ActivityDecorator:
    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind=f'{activity.value} handler')
        _registry(options).register_activity(handlers.ActivityHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), None), param=options.get('param'),
            **_retrying(options), activity=activity))
        return fn
    return decorator


# Resource-watching and resource-changing handlers.

@_keyword_options(_WatchingOptions)
def event(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[_WatchingOptions]) -> WatchingDecorator:
    """``@kopf.on.event()`` handler for the raw watch-events (no state, no retries)."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='event handler')
        field = handlers.parse_field(options.get('field'))
        _registry(options).register_watching(handlers.WatchingHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), field), param=options.get('param'),
            errors=None, timeout=None, retries=None, backoff=None, selector=selector,
            **_filtering(options), field=field, value=options.get('value')))
        return fn
    return decorator


@_keyword_options(_ResumeOptions)
def resume(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[_ResumeOptions]) -> ChangingDecorator:
    """``@kopf.on.resume()`` handler for the objects existing when the operator (re)starts."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=None, initial=True, deleted=options.get('deleted'))


@_keyword_options(_ResourceOptions)
def create(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[_ResourceOptions]) -> ChangingDecorator:
    """``@kopf.on.create()`` handler for the object creation."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=causes.Reason.CREATE)


@_keyword_options(_UpdateOptions)
def update(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[_UpdateOptions]) -> ChangingDecorator:
    """``@kopf.on.update()`` handler for the object update or change."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=causes.Reason.UPDATE, old=options.get('old'),
                     new=options.get('new'), field_needs_change=True)


@_keyword_options(_DeleteOptions)
def delete(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[_DeleteOptions]) -> ChangingDecorator:
    """``@kopf.on.delete()`` handler for the object deletion (behind a finalizer unless optional)."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=causes.Reason.DELETE,
                     requires_finalizer=not options.get('optional'))


@_keyword_options(_FieldOptions)
def field(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[_FieldOptions]) -> ChangingDecorator:
    """``@kopf.on.field()`` handler for the changes of one field, also its first appearance at creation."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=None, old=options.get('old'), new=options.get('new'),
                     field_needs_change=True)


def _changing(
        selector: references.Selector,
        options: _ResourceOptions | _FieldOptions,
        *,
        reason: Optional[causes.Reason],
        old: filters.ValueFilter = None,
        new: filters.ValueFilter = None,
        initial: Optional[bool] = None,
        deleted: Optional[bool] = None,
        requires_finalizer: Optional[bool] = None,
        field_needs_change: Optional[bool] = None,
) -> ChangingDecorator:
    value = options.get('value')
    if value is not None and (old is not None or new is not None):
        raise TypeError("Either value= or old=/new= can be used in the filters, not both: "
                        "value= applies to either side of a change, old=/new= to their sides only.")
    real_field = handlers.parse_field(options.get('field'))
    if real_field is None and (value is not None or old is not None or new is not None):
        raise TypeError("The value=, old= and new= filters need a field= to check.")

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn)
        _registry(options).register_changing(handlers.ChangingHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), real_field), param=options.get('param'),
            **_retrying(options), selector=selector, **_filtering(options), field=real_field, value=value,
            reason=reason, initial=initial, deleted=deleted, requires_finalizer=requires_finalizer,
            old=old, new=new, field_needs_change=field_needs_change))
        return fn
    return decorator


# Daemons, timers, indices.

@_keyword_options(_DaemonOptions)
def daemon(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[_DaemonOptions]) -> DaemonDecorator:
    """``@kopf.daemon()`` for the background threads/tasks accompanying each object."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='daemon')
        _registry(options).register_spawning(handlers.DaemonHandler(
            **_resource_handler_fields(fn, selector, options), initial_delay=options.get('initial_delay'),
            cancellation_backoff=options.get('cancellation_backoff'),
            cancellation_timeout=options.get('cancellation_timeout'),
            cancellation_polling=options.get('cancellation_polling')))
        return fn
    return decorator


@_keyword_options(_TimerOptions)
def timer(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[_TimerOptions]) -> TimerDecorator:
    """``@kopf.timer()`` for the scheduled runs per object (interval, idle, initial delay)."""
    if options.get('interval') is None and options.get('idle') is None:
        raise TypeError("A timer needs interval= or idle= (or both): otherwise it never runs.")
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='timer')
        _registry(options).register_spawning(handlers.TimerHandler(
            **_resource_handler_fields(fn, selector, options), initial_delay=options.get('initial_delay'),
            interval=options.get('interval'), idle=options.get('idle'), sharp=options.get('sharp')))
        return fn
    return decorator


@_keyword_options(_ResourceOptions)
def index(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[_ResourceOptions]) -> IndexingDecorator:
    """``@kopf.index()`` for the in-memory indices, injected into all handlers' kwargs by name."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='indexing function')
        fields = _resource_handler_fields(fn, selector, options)
        fields['id'] = handlers.build_handler_id(fn, options.get('id'), None)  # index names ignore the field
        _registry(options).register_indexing(handlers.IndexingHandler(**fields))
        return fn
    return decorator


def _resource_handler_fields(fn: Callable[..., Any], selector: references.Selector,
                             options: _ResourceOptions) -> dict[str, Any]:
    """The fields of a resource handler common to daemons, timers, and indices."""
    field = handlers.parse_field(options.get('field'))
    return dict(fn=fn, id=handlers.build_handler_id(fn, options.get('id'), field), param=options.get('param'),
                **_retrying(options), selector=selector, **_filtering(options), field=field,
                value=options.get('value'))


# Admission handlers: called by the apiservers through the webhook server.

@_keyword_options(_WebhookOptions)
def validate(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
             __name: SelectorArg = None, **options: Unpack[_WebhookOptions]) -> WebhookDecorator:
    """``@kopf.on.validate()`` handler for validating admission webhooks."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _webhook(webhooks.WebhookType.VALIDATING, selector, options)


@_keyword_options(_WebhookOptions)
def mutate(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[_WebhookOptions]) -> WebhookDecorator:
    """``@kopf.on.mutate()`` handler for mutating admission webhooks."""
    selector = _selector((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _webhook(webhooks.WebhookType.MUTATING, selector, options)


def _webhook(type: webhooks.WebhookType, selector: references.Selector,
             options: _WebhookOptions) -> WebhookDecorator:
    operations = webhooks.parse_operations(options.get('operation'), options.get('operations'))

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind=f'{type} admission handler')
        field = handlers.parse_field(options.get('field'))
        _registry(options).register_webhook(webhooks.WebhookHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), field), param=options.get('param'),
            errors=None, timeout=None, retries=None, backoff=None, selector=selector, **_filtering(options),
            field=field, value=options.get('value'), type=type, operations=operations,
            subresource=options.get('subresource'), persistent=options.get('persistent'),
            side_effects=options.get('side_effects'), ignore_failures=options.get('ignore_failures')))
        return fn
    return decorator


# Sub-handlers: registered by other handlers while they run.

@_keyword_options(_SubhandlerOptions)
def subhandler(**options: Unpack[_SubhandlerOptions]) -> ChangingDecorator:
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
            fn, parent_id=scope.parent_id, id=options.get('id'), param=options.get('param'),
            **_retrying(options), **_filtering(options), field=options.get('field'), value=options.get('value'),
            old=options.get('old'), new=options.get('new')))
        return fn
    return decorator


@_keyword_options(_RegisterOptions)
def register(fn: FnT, **options: Unpack[_RegisterOptions]) -> FnT:
    """Register a function as a sub-handler of the currently executed handler."""
    return subhandler(**options)(fn)
