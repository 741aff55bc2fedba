"""
Logging: the per-object loggers, the log formats, and the process-wide setup.

Messages about specific objects are logged through :class:`ObjectLogger`, which
attaches the object's reference to every record (in ``extra``) instead of
putting the object's name into the message text. The name is rendered only at
the very end, by the formatters, as the ``[namespace/name] `` prefix (or as a
separate JSON field). This keeps the messages themselves stable and equal to
what the documentation shows, so that operators' tests can assert on them
(e.g. with ``caplog``) regardless of the output format.

The same reference lets the k8s-event poster (see ``engines.posting``) attach
the messages as Kubernetes events to the objects they are about, even after the
objects have changed or gone, since the reference is copied when the logger is
made.

Logging is configured once per process, before the operator's code is imported
(``kopf run`` does it from the command line options; embedding applications
call :func:`configure` themselves or set up the logging their own way).
"""
from __future__ import annotations

import copy
import datetime
import enum
import json
import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Dict, MutableMapping, Optional, TextIO, Tuple, TypeAlias

from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs

# The stream handlers are generic for the type checkers only (not subscriptable at run time before 3.11).
if TYPE_CHECKING:
    _TextStreamHandler: TypeAlias = logging.StreamHandler[TextIO]
else:
    _TextStreamHandler = logging.StreamHandler

OBJECTS_LOGGER_NAME = 'kopf.objects'
"""The logger of all per-object messages: handlers, finalizers, patches, etc."""

ACTIVITY_LOGGER_NAMES: Mapping[str, str] = {
    'startup': 'kopf.activities.startup',
    'cleanup': 'kopf.activities.cleanup',
    'authentication': 'kopf.activities.authentication',
    'probe': 'kopf.activities.probe',
}
"""The loggers of the operator-level activities (not related to any object)."""

DEFAULT_REFKEY = 'object'
"""The JSON field with the object reference, unless configured otherwise."""

# Third-party loggers that are silenced below WARNING unless in the debug mode:
# their low-level chatter (the event loop's internals, the HTTP traffic) is
# only useful when debugging the framework itself, not the operator.
_LOW_LEVEL_LOGGER_NAMES = ('asyncio', 'aiohttp', 'urllib3', 'kubernetes')


class LogFormat(enum.Enum):
    """
    Log formats, as specified on CLI.
    """
    PLAIN = '%(message)s'
    FULL = '[%(asctime)s] %(name)-20.20s [%(levelname)-8.8s] %(message)s'
    JSON = '-json-'


def build_object_ref(body: Mapping[str, Any]) -> Dict[str, Any]:
    """
    The reference to an object, as Kubernetes puts it into ``involvedObject``.

    It is a fresh dict with only the identifying fields, so that later changes
    of the body (or its garbage collection) do not affect the logged records
    that are still waiting in the queues.
    """
    metadata = body.get('metadata') or {}
    ref: Dict[str, Any] = {
        'apiVersion': body.get('apiVersion'),
        'kind': body.get('kind'),
        'name': metadata.get('name'),
        'uid': metadata.get('uid'),
    }
    namespace = metadata.get('namespace')
    if namespace is not None:
        ref['namespace'] = namespace
    return ref


class ObjectLogger(typedefs.LoggerAdapter):
    """
    A logger/adapter to carry the object identifiers for formatting.

    The identifiers are used both for formatting the per-object messages (by
    :class:`ObjectPrefixingFormatter` and :class:`ObjectJsonFormatter`) and for
    posting the messages as k8s-events to the objects they are about.

    Only the reference is kept, never the body: the body can be modified later
    (or be huge), while the records can wait in the posting queue for a while.
    """

    # Whether the records of this logger can become k8s-events (if the settings allow).
    posting: bool = True

    def __init__(self, *, body: Mapping[str, Any], settings: configuration.OperatorSettings) -> None:
        super().__init__(logging.getLogger(OBJECTS_LOGGER_NAME), dict(
            k8s_skip=not self.posting,
            k8s_ref=build_object_ref(body),
            settings=settings,
        ))

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> Tuple[Any, MutableMapping[str, Any]]:
        # The stdlib's adapter replaces the caller's extra= with its own; we merge them,
        # so that the callers can add their own fields, but never override ours.
        kwargs['extra'] = {**(kwargs.get('extra') or {}), **(self.extra or {})}
        return msg, kwargs


class LocalObjectLogger(ObjectLogger):
    """
    The same as :class:`ObjectLogger`, but does not post the messages as k8s-events.

    Used where the messages are too frequent to be k8s-events without overloading
    the API server (e.g. the invocations of the watching handlers).
    """
    posting = False


def get_object_ref(record: logging.LogRecord) -> Optional[Mapping[str, Any]]:
    """The object reference of a record, if it was logged via :class:`ObjectLogger`."""
    ref = getattr(record, 'k8s_ref', None)
    return ref if isinstance(ref, Mapping) else None


def make_object_prefix(ref: Mapping[str, Any]) -> str:
    """The ``[namespace/name]`` prefix of object-related messages (``[name]`` if cluster-scoped)."""
    namespace = ref.get('namespace')
    name = ref.get('name')
    return f'[{namespace}/{name}]' if namespace else f'[{name}]'


class ObjectPrefixingFormatter(logging.Formatter):
    """
    A formatter that prefixes the object-related messages with the object's name.

    The prefix is added only to the rendered output, never to the records, so
    that other handlers (e.g. pytest's ``caplog``) see the messages unchanged.
    """

    def __init__(self, *args: Any, prefix: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix
        if not prefix and type(self).formatMessage is ObjectPrefixingFormatter.formatMessage:
            # Without the prefix, the output is the standard formatter's: it formats each line
            # itself, with no call into the framework for every line.
            vars(self)['formatMessage'] = super().formatMessage

    def formatMessage(self, record: logging.LogRecord) -> str:
        ref = get_object_ref(record)
        if self.prefix and ref is not None:
            # A shallow copy, so that the original record keeps its own message.
            record = copy.copy(record)
            record.message = f'{make_object_prefix(ref)} {record.message}'
        return super().formatMessage(record)


# The attributes of every log record, which the JSON formatter does not repeat as "extra" fields.
_RECORD_ATTRS = frozenset(vars(logging.LogRecord('', 0, '', 0, '', (), None))) | {
    'message', 'asctime', 'k8s_ref', 'k8s_skip', 'settings', 'taskName',
}


class ObjectJsonFormatter(ObjectPrefixingFormatter):
    """
    A formatter that renders every record as one JSON object per line.

    The object reference goes to a separate field (``refkey``), so the prefix
    in the message is disabled by default. The severity is a lowercase level
    name, as most log collectors expect; the timestamp is in UTC.
    """

    def __init__(self, *args: Any, refkey: Optional[str] = None, prefix: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, prefix=prefix, **kwargs)
        self.refkey = refkey or DEFAULT_REFKEY

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        payload: Dict[str, Any] = {'message': self.formatMessage(record)}
        ref = get_object_ref(record)
        if ref is not None:
            payload[self.refkey] = dict(ref)
        for key, val in vars(record).items():
            if key not in _RECORD_ATTRS and not key.startswith('_') and key not in payload:
                payload[key] = val
        if record.exc_info:
            payload['exc_info'] = self.formatException(record.exc_info)
        elif record.exc_text:
            payload['exc_info'] = record.exc_text
        if record.stack_info:
            payload['stack_info'] = self.formatStack(record.stack_info)
        payload['severity'] = record.levelname.lower()
        payload['timestamp'] = self._format_timestamp(record.created)
        return json.dumps(payload, default=str)

    def formatMessage(self, record: logging.LogRecord) -> str:
        # Only the message itself (with the optional prefix): other fields are separate in JSON.
        ref = get_object_ref(record)
        if self.prefix and ref is not None:
            return f'{make_object_prefix(ref)} {record.message}'
        return record.message

    @staticmethod
    def _format_timestamp(created: float) -> str:
        moment = datetime.datetime.fromtimestamp(created, tz=datetime.timezone.utc)
        return moment.replace(tzinfo=None).isoformat(timespec='microseconds')


def make_formatter(
        log_format: LogFormat = LogFormat.FULL,
        log_prefix: Optional[bool] = None,
        log_refkey: Optional[str] = None,
) -> logging.Formatter:
    """
    A formatter for the format; the prefix is on for text formats unless disabled.

    ``log_prefix=None`` means the format's default: prefixed text logs, flat JSON logs
    (where the object reference is a separate field anyway).
    """
    if log_format is LogFormat.JSON:
        return ObjectJsonFormatter(refkey=log_refkey, prefix=bool(log_prefix))
    if isinstance(log_format, LogFormat):
        return ObjectPrefixingFormatter(log_format.value, prefix=log_prefix is not False)
    raise ValueError(f"Unsupported log format: {log_format!r}. Use one of: {', '.join(f.name for f in LogFormat)}.")


class _StderrHandler(_TextStreamHandler):
    """
    A stream handler bound to the ``sys.stderr`` of the moment when the logging is configured.

    As in Kopf: the operator's log goes to the stream that was there when it started,
    even if ``sys.stderr`` is replaced later in another thread. E.g. ``KopfRunner``
    captures the output of an operator running in a thread, while pytest replaces
    ``sys.stderr`` in the main thread between the test's phases: following the
    current ``sys.stderr`` would put the operator's lines into pytest's capture.

    Once the bound stream is closed (e.g. a runner's capture after its run), the
    records go to the current ``sys.stderr`` instead of failing on the closed one:
    the failed writing is noticed (rather than the stream checked before every line),
    and the record is written again, once, to the current ``sys.stderr``.
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def handleError(self, record: logging.LogRecord) -> None:
        if getattr(self.stream, 'closed', False) and self.stream is not sys.stderr:
            self.stream = sys.stderr  # not setStream(): it would flush the closed stream and fail
            self.emit(record)
        else:
            super().handleError(record)


def configure(
        debug: Optional[bool] = None,
        verbose: Optional[bool] = None,
        quiet: Optional[bool] = None,
        log_format: LogFormat = LogFormat.FULL,
        log_prefix: Optional[bool] = False,
        log_refkey: Optional[str] = None,
) -> None:
    """
    Configure the process-wide logging: the output format and the verbosity.

    ``debug`` shows everything, including the event loop's and HTTP libraries'
    internals; ``verbose`` shows the framework's debug messages but keeps those
    low-level loggers at warnings; ``quiet`` shows only warnings and errors.
    The default is the informational level.

    Configuring again replaces the framework's previous handler, so the output
    is never duplicated (e.g. when several operators start in one process).
    """
    level = logging.DEBUG if debug or verbose else logging.WARNING if quiet else logging.INFO

    handler = _StderrHandler()
    handler.setFormatter(make_formatter(log_format=log_format, log_prefix=log_prefix, log_refkey=log_refkey))

    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing, _StderrHandler):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)

    for name in _LOW_LEVEL_LOGGER_NAMES:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.WARNING)
