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
"""
from __future__ import annotations

import abc
import json
from collections.abc import Mapping, MutableMapping
from typing import Any, Collection, Iterable, Optional

from kopf._cogs.configs import conventions
from kopf._cogs.structs import bodies, dicts, patches

_KOPF_DOMAIN = 'kopf.zalando.org'
_KUBECTL_LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'


class DiffBaseStorage(conventions.StorageKeyMarkingConvention, conventions.StorageStanzaCleaner, metaclass=abc.ABCMeta):
    """
    Store the essence of the last handled state, to compare the new states with it.

    Only the meaningful fields are tracked, so that the system's changes
    (resource versions, managed fields, status updates) are not seen as changes.
    """

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
        """Remove the storage's own fields from an essence (they would compare as changes)."""
        essence = dicts.copy_tree(essence)
        self.remove_empty_stanzas(essence)
        return essence

    @abc.abstractmethod
    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        raise NotImplementedError

    @abc.abstractmethod
    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        raise NotImplementedError


class AnnotationsDiffBaseStorage(conventions.StorageKeyFormingConvention, DiffBaseStorage):
    """The diff-base in an annotation: compact JSON plus a newline."""

    def __init__(
            self,
            *,
            prefix: str = _KOPF_DOMAIN,
            key: str = 'last-handled-configuration',
            v1: bool = True,
    ) -> None:
        super().__init__(prefix=prefix, v1=v1)
        self.key = key

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        essence = dicts.copy_tree(essence)
        annotations = (essence.get('metadata') or {}).get('annotations')
        if isinstance(annotations, MutableMapping):
            # The marked keys of ReplicaSets, too: the body is not known here, so all forms go.
            own_keys = set(self.make_keys(self.key)) | set(self.make_keys(f'{self.key}-ofDRS'))
            for name in own_keys & set(annotations):
                del annotations[name]
        self.remove_empty_stanzas(essence)
        return essence

    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        annotations = conventions.get_annotations(body)
        for full_key in self.make_keys(self.key, body=body):
            essence = _decode_essence(annotations.get(full_key))
            if essence is not None:
                return self.clear(essence=essence)
        return None

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        encoded = json.dumps(essence, separators=(',', ':')) + '\n'
        annotations = conventions.get_annotations(body)
        for full_key in self.make_keys(self.key, body=body):
            if annotations.get(full_key) == encoded:
                patch.meta.annotations.pop(full_key, None)
            else:
                patch.meta.annotations[full_key] = encoded


class StatusDiffBaseStorage(DiffBaseStorage):
    """The diff-base in a status field: compact JSON as a string (no trailing newline)."""

    def __init__(
            self,
            *,
            name: str = 'kopf',
            field: dicts.FieldSpec = 'status.{name}.last-handled-configuration',
    ) -> None:
        super().__init__()
        self._name = name
        self._field = dicts.parse_field(field.format(name=name) if isinstance(field, str) else field)

    @property
    def field(self) -> dicts.FieldPath:
        return self._field

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        essence = dicts.copy_tree(essence)
        dicts.remove(essence, self._field, prune=True)
        self.remove_empty_stanzas(essence)
        return essence

    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        value = dicts.resolve(body, self._field, None, assume_empty=True, ignore_wrong=True)
        essence = _decode_essence(value)
        return self.clear(essence=essence) if essence is not None else None

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        encoded = json.dumps(essence, separators=(',', ':'))
        current = dicts.resolve(body, self._field, None, assume_empty=True, ignore_wrong=True)
        if current == encoded:
            dicts.remove(patch, self._field, prune=True)
        else:
            dicts.ensure(patch, self._field, encoded)


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


def _decode_essence(value: Any) -> Optional[bodies.BodyEssence]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, Mapping):
        return None
    return dict(value)
