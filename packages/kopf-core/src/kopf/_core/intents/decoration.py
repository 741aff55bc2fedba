"""
The keyword options of the decorators in :mod:`kopf.on`, each declared once.

The options are small typed bundles (``Filtering``, ``Retrying``, ...), and each
decorator's keyword arguments are the union of the bundles it supports: type
checkers and IDEs see every option with its type (PEP 692), and at runtime
:func:`keyword_options` gives each decorator the full documented signature and
refuses unknown options as Python would.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Collection, Optional, TypedDict, TypeVar, Union, cast

from kopf._cogs.structs import dicts, references, reviews
from kopf._core.intents import callbacks, filters, handlers, registries

DecoratingFnT = TypeVar('DecoratingFnT', bound=Callable[..., object])

SelectorArg = Union[None, str, references.EverythingMarker, references.SelectorFn]

# The option bundles: each option is declared here once, with its type and its meaning (the docstring
# under it, which the API reference shows in the table of every decorator that takes the option).

class Selecting(TypedDict, total=False):
    group: Optional[str]
    """The API group (``'kopf.dev'``; ``''`` for the core API), if not given positionally."""
    version: Optional[str]
    """The API version (``'v1'``); without one, the preferred version of each group."""
    kind: Optional[str]
    """The resource's kind (``'KopfExample'``)."""
    plural: Optional[str]
    """The resource's plural name (``'kopfexamples'``)."""
    singular: Optional[str]
    """The resource's singular name (``'kopfexample'``)."""
    shortcut: Optional[str]
    """One of the resource's short names (``'kex'``)."""
    category: Optional[str]
    """A category of resources (``'all'``, as in ``kubectl get all``)."""


class Identifying(TypedDict, total=False):
    id: Optional[str]
    """
    The handler's id: the key of its progress and result on the object (keep it stable).
    By default, the function's qualified name, with ``/`` and the field appended if ``field=`` is given.
    """
    param: object
    """Any value, passed to the handler as ``param`` (to tell apart one function registered several times)."""


class Retrying(TypedDict, total=False):
    errors: Optional[handlers.ErrorsMode]
    """
    What an exception other than ``kopf.TemporaryError``/``kopf.PermanentError`` means:
    ``kopf.ErrorsMode.TEMPORARY`` (retried), ``PERMANENT`` (given up) or ``IGNORED``
    (logged, counted as a success). By default, temporary (for indices: ignored; for probes: permanent).
    """
    timeout: Optional[float]
    """
    Seconds since the first attempt after which a failing handler fails for good
    (``kopf.HandlerTimeoutError``); no limit by default.
    """
    retries: Optional[int]
    """
    The number of attempts after which a failing handler fails for good
    (``kopf.HandlerRetriesError``); no limit by default.
    """
    backoff: Optional[float]
    """Seconds before a retry after an arbitrary exception; ``settings.execution.default_backoff`` (60) by default."""


class MetaFiltering(TypedDict, total=False):
    labels: Optional[filters.MetaFilter]
    """
    Only the objects whose labels match: ``{key: value}``, where a value is a string, ``kopf.PRESENT``,
    ``kopf.ABSENT`` or a callable that gets the label's value as ``value``.
    """
    annotations: Optional[filters.MetaFilter]
    """Only the objects whose annotations match, in the same way as ``labels=``."""
    when: Optional[callbacks.WhenFilterFn]
    """Only when this callable, given the handler's arguments, returns true."""


class FieldFiltering(TypedDict, total=False):
    field: dicts.FieldSpec
    """
    A field of the object: ``'spec.size'`` or a sequence of keys; only the objects that have it
    (for the changing handlers: only when it changes), and the ``diff``, ``old``, ``new`` are of that field.
    """


class RequiredField(TypedDict):
    field: dicts.FieldSpec
    """
    The field to follow: ``'spec.size'`` or a sequence of keys; the handler runs when it changes
    (also at the creation, if it is set), with the ``diff``, ``old``, ``new`` of that field.
    """


class ValueFiltering(TypedDict, total=False):
    value: filters.ValueFilter
    """
    Only if the field's current value matches: equal to it, ``kopf.PRESENT``, ``kopf.ABSENT``, or a callable
    that gets the value as ``value``. Needs ``field=``.
    """


class ChangeFiltering(TypedDict, total=False):
    old: filters.ValueFilter
    """Only if the field's value before the change matches (as ``value=`` does); needs ``field=``, not ``value=``."""
    new: filters.ValueFilter
    """Only if the field's value after the change matches (as ``value=`` does); needs ``field=``, not ``value=``."""


class Filtering(MetaFiltering, FieldFiltering, ValueFiltering, total=False):
    pass


class Registering(TypedDict, total=False):
    registry: Optional[registries.OperatorRegistry]
    """The registry to add the handler to, instead of the default one."""


class Resuming(TypedDict, total=False):
    deleted: Optional[bool]
    """Also for the objects that are being deleted (by default, only for those that are not)."""


class Deleting(TypedDict, total=False):
    optional: Optional[bool]
    """
    Do not put the framework's finalizer on the objects: the handler runs only if the operator sees
    the deletion before the object is gone.
    """


class Daemoning(TypedDict, total=False):
    initial_delay: Union[float, callbacks.DelayFn, None]
    """
    Seconds after the object is seen before the daemon starts, or a function of the object's
    arguments that returns them.
    """
    cancellation_backoff: Optional[float]
    """Seconds of grace between the ``stopped`` flag and the cancellation; none by default."""
    cancellation_timeout: Optional[float]
    """Seconds to wait for a cancelled daemon before abandoning it; without it, a daemon is never cancelled."""
    cancellation_polling: Optional[float]
    """
    Seconds between the reminders in the log while a daemon that does not stop is waited for;
    ``settings.background.cancellation_polling`` (60) by default.
    """


class Timing(TypedDict, total=False):
    interval: Optional[float]
    """
    Seconds between the runs (counted from the end of a run unless ``sharp=True``).
    With neither ``interval=`` nor ``idle=``, the timer runs once per object.
    """
    initial_delay: Union[float, callbacks.DelayFn, None]
    """
    Seconds after the object is seen before the first run, or a function of the object's
    arguments that returns them.
    """
    sharp: Optional[bool]
    """Run at multiples of the interval since the timer started, not an interval after each run's end."""
    idle: Optional[float]
    """Seconds without changes of the object before the timer runs."""


class Admitting(TypedDict, total=False):
    operation: Optional[reviews.Operation]
    """
    Only this operation: ``'CREATE'``, ``'UPDATE'``, ``'DELETE'`` or ``'CONNECT'``;
    all by default (``None`` or ``'*'``).
    """
    operations: Optional[Collection[reviews.Operation]]
    """Only these operations (a collection of the above); not together with ``operation=``."""
    subresource: Optional[str]
    """
    Only this subresource (``'status'``, ``'scale'``, ...) instead of the object itself;
    ``'*'`` for the object and all its subresources; by default, the object only.
    """
    persistent: Optional[bool]
    """Keep the webhook in the managed configuration when the operator exits."""
    side_effects: Optional[bool]
    """
    The handler has side effects outside of the review (``sideEffects: NoneOnDryRun``);
    it must then check ``dryrun`` and do nothing in a dry run.
    """
    ignore_failures: Optional[bool]
    """``failurePolicy: Ignore`` instead of ``Fail``: the objects are admitted when the webhook cannot be called."""


class Converting(TypedDict):
    source: str
    """The version that the function converts from (the version's name only: ``'v1'``)."""
    target: str
    """The version that the function converts to (the version's name only: ``'v2'``)."""


# The options of each decorator: the bundles in the order the manual lists them.

class ActivityOptions(Identifying, Retrying, Registering, total=False):
    pass


class WatchingOptions(Selecting, Identifying, Filtering, Registering, total=False):
    pass


class ResourceOptions(Selecting, Identifying, Retrying, Filtering, Registering, total=False):
    pass


class ResumeOptions(Selecting, Identifying, Retrying, Resuming, Filtering, Registering, total=False):
    pass


class UpdateOptions(Selecting, Identifying, Retrying, Filtering, ChangeFiltering, Registering,
                     total=False):
    pass


class DeleteOptions(Selecting, Identifying, Retrying, Deleting, Filtering, Registering, total=False):
    pass


class FieldOptions(Selecting, Identifying, Retrying, MetaFiltering, RequiredField, ValueFiltering,
                    ChangeFiltering, Registering, total=False):
    pass


class DaemonOptions(Selecting, Identifying, Retrying, Daemoning, Filtering, Registering, total=False):
    pass


class TimerOptions(Selecting, Identifying, Retrying, Timing, Filtering, Registering, total=False):
    pass


class WebhookOptions(Selecting, Identifying, Admitting, Filtering, Registering, total=False):
    pass


class ConvertOptions(Selecting, Identifying, Converting, Registering, total=False):
    pass


class SubhandlerOptions(Identifying, Retrying, Filtering, ChangeFiltering, total=False):
    pass


class RegisterOptions(Identifying, Retrying, MetaFiltering, total=False):
    pass


def keyword_options(options: type) -> Callable[[DecoratingFnT], DecoratingFnT]:
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

        checked.__dict__['__signature__'] = signature  # as inspect.signature() reads it; a function's attribute
        return cast(DecoratingFnT, checked)  # called as the decorator is, returning what it returns
    return wrap


def registry_of(options: Registering) -> registries.OperatorRegistry:
    """The explicitly given registry, or the default one (at the moment of decoration)."""
    registry = options.get('registry')
    return registry if registry is not None else registries.get_default_registry()


def selector_of(names: tuple[SelectorArg, SelectorArg, SelectorArg], options: Selecting) -> references.Selector:
    return references.Selector(*names, group=options.get('group'), version=options.get('version'),
                               kind=options.get('kind'), plural=options.get('plural'),
                               singular=options.get('singular'), shortcut=options.get('shortcut'),
                               category=options.get('category'))


def retry_options(options: Retrying) -> dict[str, Any]:
    return dict(errors=options.get('errors'), timeout=options.get('timeout'),
                retries=options.get('retries'), backoff=options.get('backoff'))


def filter_options(options: MetaFiltering) -> dict[str, Any]:
    return dict(labels=options.get('labels'), annotations=options.get('annotations'), when=options.get('when'))
