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

The keyword options are declared once, as small typed bundles, and each
decorator's keyword arguments are the union of the bundles it supports
(see :mod:`kopf._core.intents.decoration`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, TypeVar

from kopf._cogs.structs import references
from kopf._core.actions import invocation, subhandling
from kopf._core.intents import causes, conversions, filters, handlers, webhooks
from kopf._core.intents.decoration import (
    ActivityOptions,
    ConvertOptions,
    DaemonOptions,
    DeleteOptions,
    FieldOptions,
    RegisterOptions,
    ResourceOptions,
    ResumeOptions,
    SelectorArg,
    SubhandlerOptions,
    TimerOptions,
    UpdateOptions,
    WatchingOptions,
    WebhookOptions,
    filter_options,
    keyword_options,
    registry_of,
    retry_options,
    selector_of,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack since Python 3.11; annotations only

# Any function, sync or async, whatever it returns (the framework only stores or reports the result).
FnT = TypeVar('FnT', bound=Callable[..., object])
DecoratingFnT = TypeVar('DecoratingFnT', bound=Callable[..., object])


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
ConversionDecorator = Decorator



# Operator-level activities.

@keyword_options(ActivityOptions)
def startup(**options: Unpack[ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.startup()`` handler for the operator's start (e.g. to tune the settings)."""
    return _activity(handlers.Activity.STARTUP, options)


@keyword_options(ActivityOptions)
def cleanup(**options: Unpack[ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.cleanup()`` handler for the operator's exit."""
    return _activity(handlers.Activity.CLEANUP, options)


@keyword_options(ActivityOptions)
def login(**options: Unpack[ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.login()`` handler for custom (re-)authentication: returns ``kopf.ConnectionInfo``."""
    return _activity(handlers.Activity.AUTHENTICATION, options)


@keyword_options(ActivityOptions)
def probe(**options: Unpack[ActivityOptions]) -> ActivityDecorator:
    """``@kopf.on.probe()`` handler for the health checks (its result is reported)."""
    return _activity(handlers.Activity.PROBE, options)


def _activity(activity: handlers.Activity, options: ActivityOptions) -> ActivityDecorator:
    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind=f'{activity.value} handler')
        registry_of(options).register_activity(handlers.ActivityHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), None), param=options.get('param'),
            **retry_options(options), activity=activity))
        return fn
    return decorator


# Resource-watching and resource-changing handlers.

@keyword_options(WatchingOptions)
def event(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[WatchingOptions]) -> WatchingDecorator:
    """``@kopf.on.event()`` handler for the raw watch-events (no state, no retries)."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='event handler')
        field = handlers.parse_field(options.get('field'))
        registry_of(options).register_watching(handlers.WatchingHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), field), param=options.get('param'),
            errors=None, timeout=None, retries=None, backoff=None, selector=selector,
            **filter_options(options), field=field, value=options.get('value')))
        return fn
    return decorator


@keyword_options(ResumeOptions)
def resume(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[ResumeOptions]) -> ChangingDecorator:
    """``@kopf.on.resume()`` handler for the objects existing when the operator (re)starts."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=None, initial=True, deleted=options.get('deleted'))


@keyword_options(ResourceOptions)
def create(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[ResourceOptions]) -> ChangingDecorator:
    """``@kopf.on.create()`` handler for the object creation."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=causes.Reason.CREATE)


@keyword_options(UpdateOptions)
def update(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[UpdateOptions]) -> ChangingDecorator:
    """``@kopf.on.update()`` handler for the object update or change."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=causes.Reason.UPDATE, old=options.get('old'),
                     new=options.get('new'), field_needs_change=True)


@keyword_options(DeleteOptions)
def delete(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[DeleteOptions]) -> ChangingDecorator:
    """``@kopf.on.delete()`` handler for the object deletion (behind a finalizer unless optional)."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=causes.Reason.DELETE,
                     requires_finalizer=not options.get('optional'))


@keyword_options(FieldOptions)
def field(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[FieldOptions]) -> ChangingDecorator:
    """``@kopf.on.field()`` handler for the changes of one field, also its first appearance at creation."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _changing(selector, options, reason=None, old=options.get('old'), new=options.get('new'),
                     field_needs_change=True)


def _changing(
        selector: references.Selector,
        options: ResourceOptions | FieldOptions,
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
        registry_of(options).register_changing(handlers.ChangingHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), real_field), param=options.get('param'),
            **retry_options(options), selector=selector, **filter_options(options), field=real_field, value=value,
            reason=reason, initial=initial, deleted=deleted, requires_finalizer=requires_finalizer,
            old=old, new=new, field_needs_change=field_needs_change))
        return fn
    return decorator


# Daemons, timers, indices.

@keyword_options(DaemonOptions)
def daemon(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[DaemonOptions]) -> DaemonDecorator:
    """``@kopf.daemon()`` for the background threads/tasks accompanying each object."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='daemon')
        registry_of(options).register_spawning(handlers.DaemonHandler(
            **_resource_handler_fields(fn, selector, options), initial_delay=options.get('initial_delay'),
            cancellation_backoff=options.get('cancellation_backoff'),
            cancellation_timeout=options.get('cancellation_timeout'),
            cancellation_polling=options.get('cancellation_polling')))
        return fn
    return decorator


@keyword_options(TimerOptions)
def timer(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[TimerOptions]) -> TimerDecorator:
    """``@kopf.timer()`` for the scheduled runs per object (interval, idle, initial delay; none: once)."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='timer')
        registry_of(options).register_spawning(handlers.TimerHandler(
            **_resource_handler_fields(fn, selector, options), initial_delay=options.get('initial_delay'),
            interval=options.get('interval'), idle=options.get('idle'), sharp=options.get('sharp')))
        return fn
    return decorator


@keyword_options(ResourceOptions)
def index(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
          __name: SelectorArg = None, **options: Unpack[ResourceOptions]) -> IndexingDecorator:
    """``@kopf.index()`` for the in-memory indices, injected into all handlers' kwargs by name."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='indexing function')
        fields = _resource_handler_fields(fn, selector, options)
        fields['id'] = handlers.build_handler_id(fn, options.get('id'), None)  # index names ignore the field
        registry_of(options).register_indexing(handlers.IndexingHandler(**fields))
        return fn
    return decorator


def _resource_handler_fields(fn: Callable[..., Any], selector: references.Selector,
                             options: ResourceOptions) -> dict[str, Any]:
    """The fields of a resource handler common to daemons, timers, and indices."""
    field = handlers.parse_field(options.get('field'))
    return dict(fn=fn, id=handlers.build_handler_id(fn, options.get('id'), field), param=options.get('param'),
                **retry_options(options), selector=selector, **filter_options(options), field=field,
                value=options.get('value'))


# Admission handlers: called by the apiservers through the webhook server.

@keyword_options(WebhookOptions)
def validate(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
             __name: SelectorArg = None, **options: Unpack[WebhookOptions]) -> WebhookDecorator:
    """``@kopf.on.validate()`` handler for validating admission webhooks."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _webhook(webhooks.WebhookType.VALIDATING, selector, options)


@keyword_options(WebhookOptions)
def mutate(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
           __name: SelectorArg = None, **options: Unpack[WebhookOptions]) -> WebhookDecorator:
    """``@kopf.on.mutate()`` handler for mutating admission webhooks."""
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    return _webhook(webhooks.WebhookType.MUTATING, selector, options)


def _webhook(type: webhooks.WebhookType, selector: references.Selector,
             options: WebhookOptions) -> WebhookDecorator:
    operations = webhooks.parse_operations(options.get('operation'), options.get('operations'))

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind=f'{type} admission handler')
        field = handlers.parse_field(options.get('field'))
        registry_of(options).register_webhook(webhooks.WebhookHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), field), param=options.get('param'),
            errors=None, timeout=None, retries=None, backoff=None, selector=selector, **filter_options(options),
            field=field, value=options.get('value'), type=type, operations=operations,
            subresource=options.get('subresource'), persistent=options.get('persistent'),
            side_effects=options.get('side_effects'), ignore_failures=options.get('ignore_failures')))
        return fn
    return decorator


# Conversion functions: called by the apiservers through the webhook server (not in Kopf).

@keyword_options(ConvertOptions)
def convert(__group_or_groupversion_or_name: SelectorArg = None, __version_or_name: SelectorArg = None,
            __name: SelectorArg = None, **options: Unpack[ConvertOptions]) -> ConversionDecorator:
    """
    ``@kopf.on.convert()`` for the conversion of a CRD's objects between two of its versions::

        @kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2')
        def v1_to_v2(body, **_):
            return {'metadata': body['metadata'], 'spec': {'items': [body['spec']['item']]}}

    The function gets the object in ``source`` and returns it in ``target``
    (the framework sets ``apiVersion``); see ``docs/conversion.md``.
    """
    selector = selector_of((__group_or_groupversion_or_name, __version_or_name, __name), options)
    conversions.check_selector(selector)
    source, target = conversions.check_versions(options.get('source'), options.get('target'))

    def decorator(fn: FnT) -> FnT:
        invocation.check_signature(fn, kind='conversion function')
        registry_of(options).register_conversion(conversions.ConversionHandler(
            fn=fn, id=handlers.build_handler_id(fn, options.get('id'), None), param=options.get('param'),
            errors=None, timeout=None, retries=None, backoff=None, selector=selector, source=source, target=target))
        return fn
    return decorator


# Sub-handlers: registered by other handlers while they run.

@keyword_options(SubhandlerOptions)
def subhandler(**options: Unpack[SubhandlerOptions]) -> ChangingDecorator:
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
            **retry_options(options), **filter_options(options), field=options.get('field'), value=options.get('value'),
            old=options.get('old'), new=options.get('new')))
        return fn
    return decorator


@keyword_options(RegisterOptions)
def register(fn: FnT, **options: Unpack[RegisterOptions]) -> FnT:
    """Register a function as a sub-handler of the currently executed handler."""
    return subhandler(**options)(fn)
