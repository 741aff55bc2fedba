"""
Bodies of Kubernetes objects as handlers see them: read-only live views.

Handlers get ``body``, ``spec``, ``meta``, ``status`` as read-only mappings::

    @kopf.on.create('kopfexamples')
    def create_fn(body: kopf.Body, spec: kopf.Spec, meta: kopf.Meta, **_):
        print(spec.get('field'), meta.labels, body.status)

They are views rather than dicts for two reasons. First, the handlers must not
modify the object in memory expecting it to be stored: changes go through
``patch``. Second, long-running daemons get their kwargs once; the framework
swaps the raw body underneath on every watch-event (:meth:`Body._replace_with`),
so a daemon's ``spec`` always shows the freshest state of the object.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, TypeAlias, TypedDict

from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import dicts

BodyEssence: TypeAlias = Dict[str, Any]
"""
The meaningful part of a body: what changes are detected in (see diff-bases).

It is a plain JSON-like dict: the body without the system fields and status,
but with labels, annotations, and any other top-level fields (``spec``,
``data``, ``rules``, ...), so it cannot be a closed ``TypedDict``.
"""

# The ``labels`` and ``annotations`` kwargs (and ``meta.labels``, ``meta.annotations``).
Labels: TypeAlias = Mapping[str, str]
Annotations: TypeAlias = Mapping[str, str]


class ObjectReference(TypedDict, total=False):
    """A reference to an object, e.g. in k8s-events (see :func:`kopf.build_object_reference`)."""
    apiVersion: str
    kind: str
    namespace: Optional[str]
    name: str
    uid: str


class OwnerReference(TypedDict, total=False):
    """An entry of ``metadata.ownerReferences`` (see :func:`kopf.build_owner_reference`)."""
    controller: bool
    blockOwnerDeletion: bool
    apiVersion: str
    kind: str
    name: str
    uid: str


class Meta(dicts.MappingView[str, Any]):
    """The object's ``metadata``, with shortcuts to the commonly used fields."""

    def __init__(self, body: Body) -> None:
        super().__init__(body, ('metadata',))
        self._labels: dicts.MappingView[str, str] = dicts.MappingView(self, ('labels',))
        self._annotations: dicts.MappingView[str, str] = dicts.MappingView(self, ('annotations',))

    @property
    def labels(self) -> Labels:
        return self._labels

    @property
    def annotations(self) -> Annotations:
        return self._annotations

    @property
    def uid(self) -> Optional[str]:
        return self._get_str('uid')

    @property
    def name(self) -> Optional[str]:
        return self._get_str('name')

    @property
    def namespace(self) -> Optional[str]:
        return self._get_str('namespace')

    @property
    def creation_timestamp(self) -> Optional[str]:
        return self._get_str('creationTimestamp')

    @property
    def deletion_timestamp(self) -> Optional[str]:
        return self._get_str('deletionTimestamp')

    def _get_str(self, key: str) -> Optional[str]:
        value = self.get(key)
        return None if value is None else str(value)


class Spec(dicts.MappingView[str, Any]):
    """The object's ``spec`` (empty if absent)."""

    def __init__(self, body: Body) -> None:
        super().__init__(body, ('spec',))


class Status(dicts.MappingView[str, Any]):
    """The object's ``status`` (empty if absent)."""

    def __init__(self, body: Body) -> None:
        super().__init__(body, ('status',))


class Body(dicts.ReplaceableMappingView[str, Any]):
    """
    The whole object as a read-only mapping, with live views of its stanzas.

    ``Body(raw)`` wraps a raw dict without copying it. The views
    (``body.meta``, ``body.spec``, ...) are created once and follow
    the replacements of the raw dict by :meth:`_replace_with`.
    """

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        self._meta = Meta(self)
        self._spec = Spec(self)
        self._status = Status(self)

    @property
    def raw(self) -> Mapping[str, Any]:
        """The current underlying raw dict (do not modify it: it is shared)."""
        raw: Mapping[str, Any] = self._cell.source
        return raw

    @property
    def metadata(self) -> Meta:
        return self._meta

    @property
    def meta(self) -> Meta:
        return self._meta

    @property
    def spec(self) -> Spec:
        return self._spec

    @property
    def status(self) -> Status:
        return self._status


def as_raw(body: Mapping[str, Any]) -> typedefs.RawBody:
    """The raw dict of a body or a body-like mapping, without copying dicts."""
    if isinstance(body, Body):
        raw = body.raw
        return raw if isinstance(raw, dict) else dict(raw)
    return body if isinstance(body, dict) else dict(body)


def object_key(raw: Mapping[str, Any]) -> str:
    """
    The object's identity among the watched ones: its uid, or its namespace and name.

    The uid tells a re-created object from its deleted namesake; the names are only
    for bodies without a uid (e.g. in tests and hand-made events).
    """
    meta = raw.get('metadata', {})
    return str(meta.get('uid') or f"{meta.get('namespace')}/{meta.get('name')}")
