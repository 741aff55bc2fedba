"""
Handlers: the registered user functions with everything known about them.

A handler is immutable once registered; the decorators build them, the
registries keep them, the engine selects and invokes them per cause.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING, Any, ClassVar, NewType, Optional, Tuple, Union

from kopf._cogs.structs import references
from kopf._core.intents import callbacks, causes, filters

HandlerId = NewType('HandlerId', str)


class ErrorsMode(enum.Enum):
    """How arbitrary (non-kopf) exceptions of a handler are treated."""
    IGNORED = enum.auto()
    TEMPORARY = enum.auto()
    PERMANENT = enum.auto()


class Activity(str, enum.Enum):
    """The operator-level activities (not related to any object)."""
    STARTUP = 'startup'
    CLEANUP = 'cleanup'
    AUTHENTICATION = 'authentication'
    PROBE = 'probe'


@dataclasses.dataclass(frozen=True)
class BaseHandler:
    fn: callbacks.HandlerFn
    id: HandlerId
    param: Optional[Any]
    errors: Optional[ErrorsMode]
    timeout: Optional[float]
    retries: Optional[int]
    backoff: Optional[float]

    # How the handlers of a kind are named in the log lines: ``Handler 'fn'``, ``Timer 'fn'``.
    KIND: ClassVar[str] = 'Handler'

    def __post_init__(self) -> None:
        # Made once, not at every log line: ``title`` is read for each attempt's lines.
        object.__setattr__(self, 'title', f"{self.KIND} {self.id!r}")

    def __str__(self) -> str:
        return f"Handler {self.id!r}"

    if TYPE_CHECKING:  # an attribute set in __post_init__, not a field (neither compared nor shown)
        @property
        def title(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class ActivityHandler(BaseHandler):
    activity: Optional[Activity] = None
    KIND = 'Activity'


@dataclasses.dataclass(frozen=True)
class ResourceHandler(BaseHandler):
    selector: Optional[references.Selector] = None
    labels: Optional[filters.MetaFilter] = None
    annotations: Optional[filters.MetaFilter] = None
    when: Optional[callbacks.WhenFilterFn] = None
    field: Optional[Tuple[str, ...]] = None
    value: filters.ValueFilter = None


@dataclasses.dataclass(frozen=True)
class WatchingHandler(ResourceHandler):
    """An ``@kopf.on.event`` handler: raw watch-events, no state, no retries."""


@dataclasses.dataclass(frozen=True)
class ChangingHandler(ResourceHandler):
    """A handler of creation, update, deletion, resuming, or field changes."""
    reason: Optional[causes.Reason] = None  # None for field handlers and sub-handlers: any reason
    initial: Optional[bool] = None  # True for resuming handlers
    deleted: Optional[bool] = None  # resuming handlers that also run for deleted objects
    requires_finalizer: Optional[bool] = None
    old: filters.ValueFilter = None
    new: filters.ValueFilter = None
    field_needs_change: Optional[bool] = None  # for on.update/on.field with field=: only if it changed


@dataclasses.dataclass(frozen=True)
class SpawningHandler(ResourceHandler):
    """A daemon or a timer: a long-running task per object (see ``engines.daemons``)."""
    initial_delay: Union[float, callbacks.DelayFn, None] = None  # a function: called at the start
    requires_finalizer: Optional[bool] = True
    cancellation_backoff: Optional[float] = None
    cancellation_timeout: Optional[float] = None
    cancellation_polling: Optional[float] = None
    KIND = 'Daemon'


@dataclasses.dataclass(frozen=True)
class DaemonHandler(SpawningHandler):
    """``@kopf.daemon``: runs until the object is deleted (or it exits on its own)."""


@dataclasses.dataclass(frozen=True)
class TimerHandler(SpawningHandler):
    """``@kopf.timer``: runs on a schedule (interval, idle, initial delay) while the object exists."""
    interval: Optional[float] = None
    idle: Optional[float] = None
    sharp: Optional[bool] = None
    KIND = 'Timer'


@dataclasses.dataclass(frozen=True)
class IndexingHandler(ResourceHandler):
    """``@kopf.index``: maintains an in-memory index named after the handler's id."""


def build_handler_id(fn: Any, id: Optional[str], field: Optional[Tuple[str, ...]]) -> HandlerId:
    """The explicit id, or the function's qualified name; field handlers get ``/spec.field``."""
    real_id = id if id is not None else _get_callable_name(fn)
    if field:
        real_id = f'{real_id}/{".".join(field)}'
    return HandlerId(real_id)


def _get_callable_name(fn: Any) -> str:
    name = getattr(fn, '__qualname__', None) or getattr(fn, '__name__', None)
    if name is None and hasattr(fn, 'func'):  # functools.partial
        return _get_callable_name(fn.func)
    return str(name if name is not None else repr(fn))


def parse_field(field: Any) -> Optional[Tuple[str, ...]]:
    """``'spec.field'``, ``['spec', 'field']`` or ``('spec', 'field')`` → a tuple."""
    if field is None:
        return None
    if isinstance(field, str):
        return tuple(field.split('.')) if field else None
    if isinstance(field, (list, tuple)):
        return tuple(str(part) for part in field)
    raise TypeError(f"Field must be a dotted string or a sequence of names, got {field!r}.")
