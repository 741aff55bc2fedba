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
from typing import Any, Callable, Collection, Optional, TypedDict, TypeVar, Union

from kopf._cogs.structs import references, reviews
from kopf._core.intents import callbacks, filters, handlers, registries

DecoratingFnT = TypeVar('DecoratingFnT', bound=Callable[..., Any])

SelectorArg = Union[None, str, references.EverythingMarker, references.SelectorFn]

# The option bundles: each option is declared here once, with its type.

class Selecting(TypedDict, total=False):
    group: Optional[str]
    version: Optional[str]
    kind: Optional[str]
    plural: Optional[str]
    singular: Optional[str]
    shortcut: Optional[str]
    category: Optional[str]


class Identifying(TypedDict, total=False):
    id: Optional[str]
    param: Optional[Any]


class Retrying(TypedDict, total=False):
    errors: Optional[handlers.ErrorsMode]
    timeout: Optional[float]
    retries: Optional[int]
    backoff: Optional[float]


class MetaFiltering(TypedDict, total=False):
    labels: Optional[filters.MetaFilter]
    annotations: Optional[filters.MetaFilter]
    when: Optional[callbacks.WhenFilterFn]


class FieldFiltering(TypedDict, total=False):
    field: Optional[Any]


class RequiredField(TypedDict):
    field: Any


class ValueFiltering(TypedDict, total=False):
    value: filters.ValueFilter


class ChangeFiltering(TypedDict, total=False):
    old: filters.ValueFilter
    new: filters.ValueFilter


class Filtering(MetaFiltering, FieldFiltering, ValueFiltering, total=False):
    pass


class Registering(TypedDict, total=False):
    registry: Optional[registries.OperatorRegistry]


class Resuming(TypedDict, total=False):
    deleted: Optional[bool]


class Deleting(TypedDict, total=False):
    optional: Optional[bool]


class Daemoning(TypedDict, total=False):
    initial_delay: Union[float, callbacks.DelayFn, None]
    cancellation_backoff: Optional[float]
    cancellation_timeout: Optional[float]
    cancellation_polling: Optional[float]


class Timing(TypedDict, total=False):
    interval: Optional[float]
    initial_delay: Union[float, callbacks.DelayFn, None]
    sharp: Optional[bool]
    idle: Optional[float]


class Admitting(TypedDict, total=False):
    operation: Optional[reviews.Operation]
    operations: Optional[Collection[reviews.Operation]]
    subresource: Optional[str]
    persistent: Optional[bool]
    side_effects: Optional[bool]
    ignore_failures: Optional[bool]


class Converting(TypedDict):
    source: str
    target: str


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

        checked.__signature__ = signature  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]
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
