"""
Storages of the diff-base: the last handled essence of an object.

Kubernetes sends the operators only the newest state of an object, never what
has changed. To detect the changes (and to tell a creation from an update), the
framework keeps the essence of the last successfully handled state on the object
itself, similar to what ``kubectl apply`` does with its own annotation::

    kopf.zalando.org/last-handled-configuration: |
      {"spec":{"field":"value"},"metadata":{"labels":{"app":"x"}}}

The essence is the object without the fields that change on their own or are
not meaningful for the handlers: system metadata, status, and the framework's
own annotations. Its absence means that the object was never handled: a creation.

The storages' ``ignored_fields`` (as in Kopf 1.45) exclude more fields from the
essence, e.g. those that other controllers change: changes of only those fields
are not changes for the handlers (and the stored essence lacks them).

Big objects do not fit their essence into the annotations (256 KiB in all) or
into the object (etcd's 1.5 MiB): their diff-base is stored packed, or not at
all if even that does not fit; see :mod:`packing`. Every object that fits gets
Kopf's format, byte for byte.

Whoever may patch an object may also forge its diff-base: it is read only within
the bounds of a real one (``packing.READ_BOUNDS``); beyond them, it is ignored as a
broken one is (the object has none), and reported (see ``packing.Ignored``).
"""
from __future__ import annotations

import abc
import dataclasses
import json
from collections.abc import Mapping, MutableMapping
from typing import Any, Collection, Dict, Iterable, List, Optional

from kopf._cogs.configs import boundedjson, conventions, packing
from kopf._cogs.structs import bodies, dicts, patches

_KOPF_DOMAIN = 'kopf.zalando.org'
_KUBECTL_LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'


class DiffBaseStorage(conventions.StorageKeyMarkingConvention, conventions.StorageStanzaCleaner, metaclass=abc.ABCMeta):
    """
    Store the essence of the last handled state, to compare the new states with it.

    Only the meaningful fields are tracked, so that the system's changes
    (resource versions, managed fields, status updates) are not seen as changes.
    Neither are the ``ignored_fields`` (dotted strings or tuples/lists of keys),
    even if a handler's ``field=`` names them.
    """

    def __init__(self, *, ignored_fields: Optional[Iterable[dicts.FieldSpec]] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ignored_fields: List[dicts.FieldSpec] = _check_ignored_fields(ignored_fields)
        self._ignored_paths = [dicts.parse_field(field) for field in self.ignored_fields]

    def drop_ignored(self, essence: bodies.BodyEssence) -> None:
        """Remove the ignored fields in place, and the parents that they leave empty."""
        for path in getattr(self, '_ignored_paths', ()):  # subclasses that skip __init__ ignore nothing
            dicts.remove(essence, path, prune=True)

    def build(
            self,
            *,
            body: bodies.Body,
            extra_fields: Optional[Iterable[dicts.FieldSpec]] = None,
    ) -> bodies.BodyEssence:
        """
        Extract the fields relevant for detecting the changes.

        The ``extra_fields`` are the fields of the handlers (``field=...``) that are
        tracked even if they are otherwise excluded (e.g. ``status.phase``).
        """
        raw = bodies.as_raw(body)
        essence: bodies.BodyEssence = {
            key: dicts.copy_tree(value)
            for key, value in raw.items()
            if key not in ('apiVersion', 'kind', 'metadata', 'status')
        }

        # Some metadata is meaningful to the handlers; it goes after the other fields.
        dicts.cherrypick(src=raw, dst=essence, fields=['metadata.labels', 'metadata.annotations'],
                         picker=dicts.copy_tree)
        annotations = (essence.get('metadata') or {}).get('annotations')
        if isinstance(annotations, MutableMapping):
            for name in [name for name in annotations if _is_system_annotation(name, annotations)]:
                del annotations[name]

        dicts.cherrypick(src=raw, dst=essence, fields=extra_fields, picker=dicts.copy_tree)
        self.remove_empty_stanzas(essence)
        return self.clear(essence=essence)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        """Remove the storage's own fields and the ignored ones from an essence (stored or built)."""
        essence = dicts.copy_tree(essence)
        self.drop_ignored(essence)
        self.remove_empty_stanzas(essence)
        return essence

    @abc.abstractmethod
    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        raise NotImplementedError

    @abc.abstractmethod
    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        raise NotImplementedError


class AnnotationsDiffBaseStorage(conventions.StorageKeyFormingConvention, DiffBaseStorage):
    """
    The diff-base in an annotation: compact JSON plus a newline.

    If it does not fit the annotations (or the object), it is stored packed under
    the key with the ``-packed`` suffix instead (and the plain one is removed).
    """

    def __init__(
            self,
            *,
            prefix: str = _KOPF_DOMAIN,
            key: str = 'last-handled-configuration',
            ignored_fields: Optional[Iterable[dicts.FieldSpec]] = None,
            v1: bool = True,
    ) -> None:
        super().__init__(prefix=prefix, v1=v1, ignored_fields=ignored_fields)
        self.key = key

    @property
    def packed_key(self) -> str:
        return f'{self.key}{packing.PACKED_SUFFIX}'

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        essence = dicts.copy_tree(essence)
        self.drop_ignored(essence)
        annotations = (essence.get('metadata') or {}).get('annotations')
        if isinstance(annotations, MutableMapping):
            # The marked keys of ReplicaSets, too: the body is not known here, so all forms go.
            own_keys = {full_key for key in [self.key, self.packed_key] for marked in [key, f'{key}-ofDRS']
                        for full_key in self.make_keys(marked)}
            for name in own_keys & set(annotations):
                del annotations[name]
        self.remove_empty_stanzas(essence)
        return essence

    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        # Kopf's form first: if both are there, Kopf has written it after us (we remove the other one).
        annotations = conventions.get_annotations(body)
        for full_key in self.make_keys(self.key, body=body):
            essence = _decode_essence(annotations.get(full_key), where=f"the annotation {full_key}")
            if essence is not None:
                return self.clear(essence=essence)
        for full_key in self.make_keys(self.packed_key, body=body):
            essence = _decode_packed(annotations.get(full_key), where=f"the annotation {full_key}")
            if essence is not None:
                return self.clear(essence=essence)
        return None

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        annotations = conventions.get_annotations(body)

        def place(key: str) -> _Place:
            keys = self.make_keys(key, body=body)
            return _Place(paths=[('metadata', 'annotations', full_key) for full_key in keys],
                          current=[annotations.get(full_key) for full_key in keys],
                          where=f"the annotation {keys[0]}")

        value = json.dumps(essence, separators=(',', ':')) + '\n'
        _store_fitting(body=body, patch=patch, value=value, plain=place(self.key), packed=place(self.packed_key),
                       nowhere="the annotations", annotations=True)


class StatusDiffBaseStorage(DiffBaseStorage):
    """
    The diff-base in a status field: compact JSON as a string (no trailing newline).

    If it does not fit the object, it is stored packed in the sibling field with
    the ``-packed`` suffix instead (and the plain one is removed).
    """

    def __init__(
            self,
            *,
            name: str = 'kopf',
            field: dicts.FieldSpec = 'status.{name}.last-handled-configuration',
            ignored_fields: Optional[Iterable[dicts.FieldSpec]] = None,
    ) -> None:
        super().__init__(ignored_fields=ignored_fields)
        self._name = name
        self._field = dicts.parse_field(field.format(name=name) if isinstance(field, str) else field)

    @property
    def field(self) -> dicts.FieldPath:
        return self._field

    @property
    def packed_field(self) -> dicts.FieldPath:
        return (*self._field[:-1], f'{self._field[-1]}{packing.PACKED_SUFFIX}')

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        essence = dicts.copy_tree(essence)
        self.drop_ignored(essence)
        dicts.remove(essence, self._field, prune=True)
        dicts.remove(essence, self.packed_field, prune=True)
        self.remove_empty_stanzas(essence)
        return essence

    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        essence = _decode_essence(self._resolve(body, self._field), where=f"the field {'.'.join(self._field)}")
        if essence is None:
            essence = _decode_packed(self._resolve(body, self.packed_field),
                                     where=f"the field {'.'.join(self.packed_field)}")
        return self.clear(essence=essence) if essence is not None else None

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        def place(field: dicts.FieldPath) -> _Place:
            return _Place(paths=[field], current=[self._resolve(body, field)], where=f"the field {'.'.join(field)}")

        value = json.dumps(essence, separators=(',', ':'))
        _store_fitting(body=body, patch=patch, value=value, plain=place(self._field), packed=place(self.packed_field),
                       nowhere="the status", annotations=False)

    @staticmethod
    def _resolve(body: Mapping[str, Any], field: dicts.FieldPath) -> Any:
        return dicts.resolve(body, field, None, assume_empty=True, ignore_wrong=True)


class MultiDiffBaseStorage(DiffBaseStorage):
    """Several storages at once: all are written; the first one with an essence is read."""

    def __init__(self, storages: Collection[DiffBaseStorage]) -> None:
        super().__init__()
        self.storages = list(storages)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        essence = super().clear(essence=essence)
        for storage in self.storages:
            essence = storage.clear(essence=essence)
        return essence

    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        for storage in self.storages:
            essence = storage.fetch(body=body)
            if essence is not None:
                return self.clear(essence=essence)
        return None

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        for storage in self.storages:
            storage.store(body=body, patch=patch, essence=essence)


def _check_ignored_fields(fields: Optional[Iterable[dicts.FieldSpec]]) -> List[dicts.FieldSpec]:
    """The ignored fields as a list; refuse what cannot be a field (at once, not when building)."""
    if isinstance(fields, str):
        raise TypeError(f"ignored_fields must be a collection of fields, not a single string: "
                        f"use ignored_fields=[{fields!r}].")
    result = list(fields or [])
    for field in result:
        if not isinstance(field, (str, tuple, list)):
            raise TypeError(f"An ignored field must be a dotted string or a tuple/list of keys, got {field!r}.")
        if not dicts.parse_field(field):
            raise ValueError(f"An ignored field must name a field, not the whole object: got {field!r}.")
    return result


def _is_system_annotation(name: str, annotations: Mapping[str, Any]) -> bool:
    """
    Whether an annotation belongs to the system or to an operator, not to the users.

    Those are kubectl's copy of the applied object, Kopf's own annotations (any
    subdomain of its domain), and those of any prefix that declares itself
    managed by an operator with a ``<prefix>/kopf-managed`` annotation.
    """
    if name == _KUBECTL_LAST_APPLIED:
        return True
    if '/' not in name:
        return False
    prefix = name.split('/', 1)[0]
    return prefix == _KOPF_DOMAIN or prefix.endswith(f'.{_KOPF_DOMAIN}') or f'{prefix}/kopf-managed' in annotations


def _decode_essence(value: Any, *, where: Optional[str] = None) -> Optional[bodies.BodyEssence]:
    """
    The essence in a stored value (JSON or a dict); ``None`` if there is none or it is unreadable.

    Whatever is beyond the bounds of a real diff-base is unreadable too, and is reported
    as ignored if it is said ``where`` it is (read from the object, not just checked).
    """
    if isinstance(value, str):
        try:
            value = boundedjson.loads(value, packing.READ_BOUNDS)
        except boundedjson.BoundExceededError as e:
            _report_ignored(where, e)
            return None
        except ValueError:
            return None
    if not isinstance(value, Mapping):
        return None
    return dict(value)


def _decode_packed(value: Any, *, where: str) -> Optional[bodies.BodyEssence]:
    """The essence in a packed value; ``None`` if there is none or it is unreadable (as above)."""
    try:
        plain = packing.unpack(value)
    except boundedjson.BoundExceededError as e:
        _report_ignored(where, e)
        return None
    return _decode_essence(plain, where=where)


def _report_ignored(where: Optional[str], error: boundedjson.BoundExceededError) -> None:
    if where is not None:
        packing.report_ignored(packing.Ignored(where=where, reason=str(error)))


@dataclasses.dataclass(frozen=True)
class _Place:
    """Where one form of the diff-base goes (several keys: v2 and v1), and what the object has there."""
    paths: List[dicts.FieldPath]
    current: List[Any]
    where: str

    def entries(self, value: str) -> Dict[str, str]:
        return {path[-1]: value for path in self.paths}

    def write(self, patch: patches.Patch, value: Optional[str]) -> None:
        """Put the value into the patch, unless the object has it already (``None`` removes it)."""
        for path, current in zip(self.paths, self.current, strict=True):
            if current == value:
                dicts.remove(patch, path, prune=True)
            else:
                dicts.ensure(patch, path, value)


def _store_fitting(
        *,
        body: bodies.Body,
        patch: patches.Patch,
        value: str,
        plain: _Place,
        packed: _Place,
        nowhere: str,
        annotations: bool,
) -> None:
    """
    Store the diff-base in Kopf's form if it fits, packed if only that fits, or not at all.

    Either form replaces the other one. If neither fits, whatever the object has
    (if anything) is left as it is: it is the last state that could be stored.
    """
    previous = _form_of(plain.current, packed.current)
    emptied = packing.overlay(patch, dict.fromkeys(plain.paths + packed.paths))
    room = packing.Room.measure(bodies.as_raw(body), emptied, annotations=annotations)
    limit = room.excess(plain.entries(value))
    if limit is None:
        plain.write(patch, value)
        packed.write(patch, None)
        _report(packing.Form.PLAIN, plain.where, '', value, '', previous)
        return
    packed_value = packing.pack(value)
    packed_limit = room.excess(packed.entries(packed_value))
    if packed_limit is None:
        packed.write(patch, packed_value)
        plain.write(patch, None)
        _report(packing.Form.PACKED, packed.where, limit, value, packed_value, previous)
    else:
        _report(packing.Form.UNSTORED, nowhere, packed_limit, value, packed_value, previous)


def _form_of(plain_values: List[Any], packed_values: List[Any]) -> Optional[packing.Form]:
    """The form of the diff-base on the object, as it is read (Kopf's first); ``None`` if none."""
    if any(_decode_essence(value) is not None for value in plain_values):
        return packing.Form.PLAIN
    if any(value is not None for value in packed_values):
        return packing.Form.PACKED
    return None


def _report(form: packing.Form, where: str, limit: str, plain: str, packed: str,
            previous: Optional[packing.Form]) -> None:
    packing.report(packing.Placement(form=form, where=where, limit=limit, size=packing.text_size(plain),
                                     packed_size=packing.text_size(packed), previous=previous))
