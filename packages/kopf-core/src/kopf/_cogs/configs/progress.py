"""
Storages of the handlers' progress: retries, delays, outcomes, sub-handlers.

The progress of every handler is kept on the object itself, so that an operator
can be restarted (or replaced by another replica, or by upstream Kopf) at any
moment and continue where the previous one stopped, without re-running the
handlers that have already succeeded.

Originally, the progress was stored in ``status.kopf.progress.<handler id>``.
But the structural schemas of CRDs (Kubernetes 1.16+) prune unknown status
fields, and built-in resources cannot have them at all. So the progress moved
to annotations, one per handler, each with a JSON-encoded record::

    kopf.zalando.org/create_fn: '{"started":"…","retries":1,"success":false,…}'

The default :class:`SmartProgressStorage` writes the annotations, but still
reads the status as a fallback (and cleans it up), so the objects with the old
status-based progress continue smoothly.

The records are byte-compatible with upstream Kopf's: the same key order,
compact JSON, dropped nulls, ASCII-escaped text, and timestamps formatted as
``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` (see :func:`format_timestamp`).
"""
from __future__ import annotations

import abc
import datetime
import json
from collections.abc import Mapping, MutableMapping
from typing import Any, Collection, Dict, Optional, TypedDict

from kopf._cogs.configs import conventions
from kopf._cogs.structs import bodies, dicts, patches

_RECORD_FIELDS = ('started', 'stopped', 'delayed', 'purpose', 'retries', 'success', 'failure', 'message', 'subrefs')


class ProgressRecord(TypedDict, total=False):
    """
    The persisted state of a single handler. Timestamps are ISO-formatted strings.

    ``None`` means "not set"; such fields are not stored in the annotations.
    """
    started: Optional[str]
    stopped: Optional[str]
    delayed: Optional[str]
    purpose: Optional[str]
    retries: Optional[int]
    success: Optional[bool]
    failure: Optional[bool]
    message: Optional[str]
    subrefs: Optional[Collection[str]]


def format_timestamp(value: datetime.datetime) -> str:
    """
    Format a timestamp as stored in the records: ``2026-11-22T08:14:26.515992+00:00``.

    The microseconds are always present (unlike in ``isoformat()``). Naive
    datetimes are ambiguous and are rejected with a :class:`TypeError`, as
    upstream Kopf does; aware ones are converted to UTC.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise TypeError(f"Timestamps must be timezone-aware, got a naive one: {value!r}")
    return value.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f+00:00')


def parse_timestamp(value: Optional[str]) -> Optional[datetime.datetime]:
    """
    Parse a stored timestamp into an aware UTC datetime (``None`` stays ``None``).

    Timestamps without an offset (as written by older operators) are taken as UTC.
    """
    if value is None:
        return None
    parsed = datetime.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.astimezone(datetime.timezone.utc)


def canonicalize_record(record: Mapping[str, Any], *, verbose: bool = False) -> Dict[str, Any]:
    """
    The record in its canonical stored form: fields in the fixed order, sorted subrefs.

    Unknown extra fields (e.g. from newer versions) are kept after the known ones.
    Nulls and empty subrefs are dropped unless ``verbose``.
    """
    result: Dict[str, Any] = {key: record[key] for key in _RECORD_FIELDS if key in record}
    result.update({key: value for key, value in record.items() if key not in result})
    if 'subrefs' in result:
        result['subrefs'] = sorted(result['subrefs']) if result['subrefs'] else None
    if not verbose:
        result = {key: value for key, value in result.items() if value is not None}
    return result


def encode_record(record: Mapping[str, Any], *, verbose: bool = False) -> str:
    """The record as stored in an annotation: canonical, compact, ASCII-only JSON."""
    return json.dumps(canonicalize_record(record, verbose=verbose), separators=(',', ':'))


def decode_record(value: Any) -> Optional[ProgressRecord]:
    """Parse a stored record (a JSON string or an object); unparseable values are no records."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # anyone who may patch the object may nest it too deep
            return None
    if not isinstance(value, Mapping):
        return None
    # Unproven: the fields' values are not checked (the readers convert them), and unknown fields are kept.
    record: ProgressRecord = {**value}  # type: ignore[typeddict-item]
    return record


class ProgressStorage(conventions.StorageStanzaCleaner, metaclass=abc.ABCMeta):
    """
    The interface of all storages of the handlers' progress.

    The state is persisted per handler, never for all handlers at once: so that
    several operators (with different handler ids) can keep their state on the
    same objects without merging each other's structures.

    The storages do not call the API: they read the body and write into the
    patch, which the framework applies together with other changes. A storage
    that keeps the state elsewhere (e.g. a database) can buffer the writes and
    send them in :meth:`flush`.
    """

    @abc.abstractmethod
    def fetch(self, *, key: str, body: bodies.Body) -> Optional[ProgressRecord]:
        raise NotImplementedError

    @abc.abstractmethod
    def store(self, *, key: str, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        raise NotImplementedError

    @abc.abstractmethod
    def purge(self, *, key: str, body: bodies.Body, patch: patches.Patch) -> None:
        raise NotImplementedError

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: Optional[str]) -> None:
        """Change a dummy field to cause a new watch-event later (``None`` removes it)."""

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        """Remove the storage's own fields from an essence (the result is a new essence)."""
        return dicts.copy_tree(essence)

    def flush(self) -> None:
        """Send the buffered state, if any (the on-object storages have nothing to send)."""


class AnnotationsProgressStorage(
    conventions.StorageKeyFormingConvention,
    conventions.StorageKeyMarkingConvention,
    ProgressStorage,
):
    """
    The progress in ``metadata.annotations``: one JSON-encoded record per handler.

    For example, with the default prefix, a handler ``create_fn`` has its state
    in ``kopf.zalando.org/create_fn``; see the key conventions for long ids.
    """

    def __init__(
            self,
            *,
            prefix: str = 'kopf.zalando.org',
            verbose: bool = False,
            touch_key: str = 'touch-dummy',
            v1: bool = True,
    ) -> None:
        super().__init__(prefix=prefix, v1=v1)
        self.verbose = verbose
        self.touch_key = touch_key

    def fetch(self, *, key: str, body: bodies.Body) -> Optional[ProgressRecord]:
        annotations = conventions.get_annotations(body)
        for full_key in self.make_keys(key, body=body):
            value = annotations.get(full_key)
            record = decode_record(value) if value is not None else None
            if record is not None:
                return record
        return None

    def store(self, *, key: str, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        encoded = encode_record(record, verbose=self.verbose)
        canonical = canonicalize_record(record, verbose=self.verbose)
        annotations = conventions.get_annotations(body)
        for full_key in self.make_keys(key, body=body):
            existing = decode_record(annotations.get(full_key))
            unchanged = existing is not None and canonicalize_record(existing, verbose=self.verbose) == canonical
            if unchanged and full_key not in patch.meta.annotations:
                continue
            patch.meta.annotations[full_key] = encoded

    def purge(self, *, key: str, body: bodies.Body, patch: patches.Patch) -> None:
        annotations = conventions.get_annotations(body)
        for full_key in self.make_keys(key, body=body):
            _set_or_drop(patch.meta.annotations, full_key, None, current=annotations.get(full_key))

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: Optional[str]) -> None:
        annotations = conventions.get_annotations(body)
        for full_key in self.make_keys(self.touch_key, body=body):
            _set_or_drop(patch.meta.annotations, full_key, value, current=annotations.get(full_key))

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        essence = super().clear(essence=essence)
        annotations = (essence.get('metadata') or {}).get('annotations')
        if isinstance(annotations, MutableMapping):
            for name in list(annotations):
                if name.startswith(f'{self.prefix}/'):
                    del annotations[name]
        self.remove_empty_stanzas(essence)
        return essence


class StatusProgressStorage(ProgressStorage):
    """
    The progress in the status stanza, as objects (not strings)::

        status:
          kopf:
            progress:
              create_fn: {started: "…", retries: 1, success: false, …}
              parent/child1: {…}

    The handler ids are keys at one level, even if they contain dots or slashes.
    """

    def __init__(
            self,
            *,
            name: str = 'kopf',
            field: dicts.FieldSpec = 'status.{name}.progress',
            touch_field: dicts.FieldSpec = 'status.{name}.dummy',
    ) -> None:
        super().__init__()
        self._name = name
        self._field = dicts.parse_field(field.format(name=name) if isinstance(field, str) else field)
        self._touch_field = dicts.parse_field(
            touch_field.format(name=name) if isinstance(touch_field, str) else touch_field)

    @property
    def field(self) -> dicts.FieldPath:
        return self._field

    @property
    def touch_field(self) -> dicts.FieldPath:
        return self._touch_field

    def fetch(self, *, key: str, body: bodies.Body) -> Optional[ProgressRecord]:
        container = dicts.resolve(body, self._field, None, assume_empty=True, ignore_wrong=True)
        value = container.get(key) if isinstance(container, Mapping) else None
        return decode_record(value) if value is not None else None

    def store(self, *, key: str, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        # All known fields are sent, the unset ones as nulls: the merge-patch removes their old values.
        full_record = canonicalize_record({**dict.fromkeys(_RECORD_FIELDS), **record}, verbose=True)
        existing = self.fetch(key=key, body=body)
        in_patch = key in (dicts.resolve(patch, self._field, None, assume_empty=True, ignore_wrong=True) or {})
        if existing is not None and not in_patch and canonicalize_record(existing) == canonicalize_record(record):
            return
        dicts.ensure(patch, (*self._field, key), full_record)

    def purge(self, *, key: str, body: bodies.Body, patch: patches.Patch) -> None:
        container = dicts.resolve(body, self._field, None, assume_empty=True, ignore_wrong=True)
        current = container.get(key) if isinstance(container, Mapping) else None
        _set_or_drop_nested(patch, (*self._field, key), None, current=current)

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: Optional[str]) -> None:
        current = dicts.resolve(body, self._touch_field, None, assume_empty=True, ignore_wrong=True)
        _set_or_drop_nested(patch, self._touch_field, value, current=current)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        essence = super().clear(essence=essence)
        dicts.remove(essence, self._field, prune=True)
        self.remove_empty_stanzas(essence)
        return essence


class MultiProgressStorage(ProgressStorage):
    """
    Several storages at once: all are written; the first one with a record is read.

    Useful for moving between storages: the new one goes first, the old one second.
    """

    def __init__(self, storages: Collection[ProgressStorage]) -> None:
        super().__init__()
        self.storages = list(storages)

    def fetch(self, *, key: str, body: bodies.Body) -> Optional[ProgressRecord]:
        for storage in self.storages:
            record = storage.fetch(key=key, body=body)
            if record is not None:
                return record
        return None

    def store(self, *, key: str, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        for storage in self.storages:
            storage.store(key=key, record=record, body=body, patch=patch)

    def purge(self, *, key: str, body: bodies.Body, patch: patches.Patch) -> None:
        for storage in self.storages:
            storage.purge(key=key, body=body, patch=patch)

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: Optional[str]) -> None:
        for storage in self.storages:
            storage.touch(body=body, patch=patch, value=value)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        for storage in self.storages:
            essence = storage.clear(essence=essence)
        return essence

    def flush(self) -> None:
        for storage in self.storages:
            storage.flush()


class SmartProgressStorage(MultiProgressStorage):
    """
    The default: the annotations are read and written; the status is a read-only fallback.

    The status is never written or touched (it may be pruned by the CRD's schema
    anyway), but the records found there are read, and nulled when purged, so
    that the objects handled by older operators continue and get cleaned up.
    """

    def __init__(
            self,
            *,
            name: str = 'kopf',
            field: dicts.FieldSpec = 'status.{name}.progress',
            touch_key: str = 'touch-dummy',
            touch_field: dicts.FieldSpec = 'status.{name}.dummy',
            prefix: str = 'kopf.zalando.org',
            v1: bool = True,
            verbose: bool = False,
    ) -> None:
        self.annotations = AnnotationsProgressStorage(prefix=prefix, verbose=verbose, touch_key=touch_key, v1=v1)
        self.status = StatusProgressStorage(name=name, field=field, touch_field=touch_field)
        super().__init__([self.annotations, self.status])

    def store(self, *, key: str, record: ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        self.annotations.store(key=key, record=record, body=body, patch=patch)

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: Optional[str]) -> None:
        self.annotations.touch(body=body, patch=patch, value=value)


def _set_or_drop(section: MutableMapping[str, Any], key: str, value: Any, *, current: Any) -> None:
    """
    Put a value into a patch's section only if the object's value differs.

    If the object already has the value, the patch must not change it: so any
    earlier change of the same key in this patch is dropped instead.
    """
    if current == value:
        section.pop(key, None)
    else:
        section[key] = value


def _set_or_drop_nested(patch: patches.Patch, path: dicts.FieldPath, value: Any, *, current: Any) -> None:
    if current == value:
        dicts.remove(patch, path, prune=True)
    else:
        dicts.ensure(patch, path, value)
