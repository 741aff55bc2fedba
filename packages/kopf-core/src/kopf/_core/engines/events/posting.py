"""
Posting of k8s-events: the explicit ones and those from the per-object logs.

Kubernetes events (as seen in ``kubectl describe``) are created in the background
from a queue: the poster (see :mod:`posters`) routes them to per-object workers, which post
each object's events in order, retrying the failed posts with their back-offs
(``settings.posting.default_backoffs`` for the explicit ones unless the call
gives ``backoffs=``, ``settings.posting.logging_backoffs`` for the log messages).
So a retrying object never delays the events of others, unless all the workers
allowed (``settings.posting.worker_limit``) are busy. An idle worker exits after
``settings.posting.idle_timeout``. Everything else only puts the events into the
queue and never waits for the API: logging must not block, and the handlers (sync
ones in threads included) must not slow down because of the events, which are
a secondary, best-effort channel.

The queue, its loop, and the operator's settings are in context variables,
set by the operator when it starts: this way, several operators in one process
(see embedding) post to their own queues, and the synchronous handlers in the
executor's threads see them too (they run in a copy of the handling context).
Outside of any operator (no queue), events are silently dropped.

Events about events are never created, to avoid "event explosions" when the
operator handles the events themselves (one event causing another, and so on).
"""
from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import datetime
import logging
import sys
from typing import Any, Iterable, Mapping, Optional, Union

from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.actions import loggers
from kopf._core.engines import retrying

# Posting is best-effort: under a flood of events, the newest ones are dropped
# rather than letting the queue (and the memory) grow without a bound.
QUEUE_LIMIT = 1000

logger = logging.getLogger('kopf._core.engines.posting')  # the name its log lines have always had

EVENTS = references.Resource('', 'v1', 'events', kind='Event', namespaced=True)

# Kubernetes keeps the events' messages short (the newer API refuses >1 KiB);
# long messages are cut in the middle, where they are the least informative.
MAX_MESSAGE_LENGTH = 1024
CUT_MESSAGE_INFIX = '...'

event_queue_var: contextvars.ContextVar[asyncio.Queue[K8sEvent]] = contextvars.ContextVar('event_queue_var')
event_queue_loop_var: contextvars.ContextVar[asyncio.AbstractEventLoop] = contextvars.ContextVar('event_queue_loop_var')
settings_var: contextvars.ContextVar[configuration.OperatorSettings] = contextvars.ContextVar('settings_var')


@dataclasses.dataclass(frozen=True)
class K8sEvent:
    """A k8s-event waiting in the queue: everything needed to post it later."""
    ref: Mapping[str, Any]
    type: str
    reason: str
    message: str
    timestamp: datetime.datetime
    backoffs: retrying.Backoffs = ()


def bind(
        *,
        event_queue: asyncio.Queue[K8sEvent],
        settings: configuration.OperatorSettings,
        loop: Optional[asyncio.AbstractEventLoop] = None,
) -> None:
    """
    Make the current context (and the tasks it spawns later) post to this queue.

    Called by the operator when it starts, in the event loop that runs the
    :func:`poster` task (the current one, unless given).
    """
    event_queue_var.set(event_queue)
    event_queue_loop_var.set(loop if loop is not None else asyncio.get_running_loop())
    settings_var.set(settings)


def is_event_for_event(ref: Mapping[str, Any]) -> bool:
    """Whether the object is a k8s-event itself (core v1 or ``events.k8s.io``)."""
    api_version = str(ref.get('apiVersion') or '')
    return ref.get('kind') == 'Event' and (api_version == 'v1' or api_version.startswith('events.k8s.io/'))


def truncate_message(message: str) -> str:
    """Cut too long messages in the middle, keeping their beginnings and ends."""
    if len(message) <= MAX_MESSAGE_LENGTH:
        return message
    room = MAX_MESSAGE_LENGTH - len(CUT_MESSAGE_INFIX)
    head = room // 2
    tail = room - head
    return message[:head] + CUT_MESSAGE_INFIX + message[-tail:]


def enqueue(
        *,
        ref: Mapping[str, Any],
        type: str,
        reason: str,
        message: str,
        backoffs: retrying.Backoffs = (),
) -> None:
    """
    Queue a k8s-event for posting, from any thread; never block, never fail.

    Events for events and events outside of a running operator are dropped.
    If the queue is full (the API is too slow for the amount of events),
    the new events are dropped too: the memory stays bounded.
    """
    if is_event_for_event(ref):
        return
    try:
        queue = event_queue_var.get()
        loop = event_queue_loop_var.get()
    except LookupError:
        return  # no operator is running in this context: nowhere to post.

    event = K8sEvent(
        ref=dict(ref),
        type=type,
        reason=reason,
        message=truncate_message(message),
        timestamp=datetime.datetime.now(datetime.timezone.utc),
        backoffs=backoffs,
    )

    try:
        running_loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
    except RuntimeError:
        running_loop = None

    if running_loop is loop:
        _put_nowait(queue, event)
    else:
        # The queues are not thread-safe: put the event from the queue's own loop.
        try:
            loop.call_soon_threadsafe(_put_nowait, queue, event)
        except RuntimeError:
            pass  # the loop is closed: the operator has exited, nobody will post it.


def _put_nowait(queue: asyncio.Queue[K8sEvent], event: K8sEvent) -> None:
    try:
        queue.put_nowait(event)
    except asyncio.QueueFull:
        logger.debug(f"Too many k8s-events are queued; dropping one: {event.reason}: {event.message}")


def _effective_backoffs(backoffs: Optional[retrying.Backoffs]) -> retrying.Backoffs:
    """The call's own back-offs, or the settings' default ones at the moment of the call."""
    if backoffs is not None:
        return backoffs
    try:
        return settings_var.get().posting.default_backoffs
    except LookupError:
        return ()  # no operator, so nothing is posted anyway


def _is_posting_allowed(level: Optional[int]) -> bool:
    """Whether the settings of the current operator allow posting (at this level)."""
    try:
        settings = settings_var.get()
    except LookupError:
        return True  # the queue decides; no settings means no operator, so nothing is posted anyway.
    if not settings.posting.enabled:
        return False
    return level is None or level >= settings.posting.level


def _iter_bodies(objs: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]]) -> Iterable[Mapping[str, Any]]:
    if isinstance(objs, Mapping):
        yield objs
    else:
        for obj in objs:
            yield from _iter_bodies(obj)


def _post(
        objs: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]],
        *,
        type: str,
        reason: str,
        message: str,
        level: Optional[int],
        backoffs: Optional[retrying.Backoffs],
) -> None:
    if not _is_posting_allowed(level):
        return
    effective = _effective_backoffs(backoffs)
    for obj in _iter_bodies(objs):
        enqueue(ref=loggers.build_object_ref(obj), type=type, reason=reason, message=message, backoffs=effective)


def event(
        objs: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]],
        *,
        type: str,
        reason: str,
        message: str = '',
        backoffs: Optional[retrying.Backoffs] = None,
) -> None:
    """
    Post a k8s-event of an arbitrary type to one or several objects.

    A failed post is retried after each of the ``backoffs`` (seconds; by default,
    ``settings.posting.default_backoffs``), then logged and dropped.
    """
    _post(objs, type=type, reason=reason, message=message, level=None, backoffs=backoffs)


def info(
        objs: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]],
        *,
        reason: str,
        message: str = '',
        backoffs: Optional[retrying.Backoffs] = None,
) -> None:
    """Post a ``Normal`` k8s-event (if the posting level is ``INFO`` or lower); see :func:`event`."""
    _post(objs, type='Normal', reason=reason, message=message, level=logging.INFO, backoffs=backoffs)


def warn(
        objs: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]],
        *,
        reason: str,
        message: str = '',
        backoffs: Optional[retrying.Backoffs] = None,
) -> None:
    """Post a ``Warning`` k8s-event (if the posting level is ``WARNING`` or lower); see :func:`event`."""
    _post(objs, type='Warning', reason=reason, message=message, level=logging.WARNING, backoffs=backoffs)


def exception(
        objs: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]],
        *,
        reason: str = '',
        message: str = '',
        exc: Optional[BaseException] = None,
        backoffs: Optional[retrying.Backoffs] = None,
) -> None:
    """
    Post an ``Error`` k8s-event about an exception (the current one by default).

    The exception's text is appended to the message; its class names the reason,
    unless the reason is given. Failed posts are retried as in :func:`event`.
    """
    if exc is None:
        exc = sys.exc_info()[1]
    reason = reason or (type(exc).__name__ if exc is not None else '')
    message = ' '.join(text for text in [message, str(exc) if exc is not None else ''] if text)
    _post(objs, type='Error', reason=reason, message=message, level=logging.ERROR, backoffs=backoffs)


class K8sPoster(logging.Handler):
    """
    A logging handler that posts the per-object log messages as k8s-events.

    Only the records of :class:`loggers.ObjectLogger` are posted (not those of
    :class:`loggers.LocalObjectLogger`), and only if the operator's settings
    allow it at the record's level. Messages go as is, without the prefix:
    the event is attached to the object anyway.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        settings = getattr(record, 'settings', None)
        return (
            isinstance(settings, configuration.OperatorSettings)
            and settings.posting.enabled
            and settings.posting.loggers
            and record.levelno >= settings.posting.level
            and not getattr(record, 'k8s_skip', False)
            and loggers.get_object_ref(record) is not None
            and super().filter(record)
        )

    def emit(self, record: logging.LogRecord) -> None:
        try:
            ref = loggers.get_object_ref(record)
            settings = getattr(record, 'settings', None)
            if ref is not None and isinstance(settings, configuration.OperatorSettings):
                type_ = 'Normal' if record.levelno < logging.WARNING else 'Warning'
                enqueue(ref=ref, type=type_, reason='Logging', message=record.getMessage(),
                        backoffs=settings.posting.logging_backoffs)
        except Exception:
            self.handleError(record)


def install_poster_handler() -> K8sPoster:
    """Attach the posting handler to the per-object logger (only once per process)."""
    objects_logger = logging.getLogger(loggers.OBJECTS_LOGGER_NAME)
    for handler in objects_logger.handlers:
        if isinstance(handler, K8sPoster):
            return handler
    handler = K8sPoster()
    objects_logger.addHandler(handler)
    return handler


install_poster_handler()
