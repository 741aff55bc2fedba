"""
Parent-children relations: labelling, owning, naming, and namespacing children.

An operator usually creates children objects (pods, jobs, PVCs) for the object
it handles, and wants them labelled, named, and namespaced like their parent,
and owned by it (so that Kubernetes garbage-collects them with the parent)::

    @kopf.on.create('kopfexamples')
    def create_fn(**_):
        pod = {'apiVersion': 'v1', 'kind': 'Pod', 'spec': {...}}
        kopf.adopt(pod)
        ...  # create it with any client library

These helpers modify the children before they are sent to the API, so no
patches are involved. The owner defaults to the object being handled at the
moment: the engine sets :data:`current_body` for the handler's context.

Besides raw dicts, the children can be pykube-ng objects (their ``.obj`` dict
is modified) or models of the official Kubernetes client (their attributes are
modified; the client's model classes are taken from the already imported
client, since such objects cannot exist without it).
"""
from __future__ import annotations

import contextvars
import enum
import sys
from typing import Any, Dict, Iterable, Iterator, Mapping, MutableMapping, Optional, Union

from kopf._cogs.structs import bodies, dicts

current_body: contextvars.ContextVar[bodies.Body] = contextvars.ContextVar('current_body')
"""The object being handled now: the default owner of the children (set by the engine)."""

Objects = Union[Any, Iterable[Any]]  # dicts, pykube objects, kubernetes models, or collections of them.


class _UNSET(enum.Enum):
    token = enum.auto()


def build_object_reference(body: Mapping[str, Any]) -> Dict[str, Any]:
    """
    Construct an object reference, e.g. for the events about the object.

    Absent fields are omitted: e.g. ``namespace`` of cluster-scoped objects,
    or ``apiVersion`` of some built-in kinds when it is not known.
    """
    meta = body.get('metadata') or {}
    ref = {
        'apiVersion': body.get('apiVersion'),
        'kind': body.get('kind'),
        'name': meta.get('name'),
        'uid': meta.get('uid'),
        'namespace': meta.get('namespace'),
    }
    return {key: value for key, value in ref.items() if value}


def build_owner_reference(
        body: Mapping[str, Any],
        *,
        controller: Optional[bool] = True,
        block_owner_deletion: Optional[bool] = True,
) -> Dict[str, Any]:
    """
    Construct an owner reference to link the children to the object as a parent.

    Owner references have no namespace: the owner must be either in the same
    namespace as the child, or cluster-scoped (which is valid for children of
    any scope). See Kubernetes's garbage collection for details.
    """
    meta = body.get('metadata') or {}
    ref: Dict[str, Any] = {
        'controller': controller,
        'blockOwnerDeletion': block_owner_deletion,
        'apiVersion': body.get('apiVersion'),
        'kind': body.get('kind'),
        'name': meta.get('name'),
        'uid': meta.get('uid'),
    }
    return {key: value for key, value in ref.items() if value is not None}


def append_owner_reference(
        objs: Objects,
        owner: Optional[Mapping[str, Any]] = None,
        *,
        controller: Optional[bool] = True,
        block_owner_deletion: Optional[bool] = True,
) -> None:
    """Append an owner reference to the object(s), unless the owner is already there."""
    real_owner = _guess_owner(owner)
    owner_ref = build_owner_reference(real_owner, controller=controller, block_owner_deletion=block_owner_deletion)
    for obj in _walk(objs):
        refs = _get_owner_references(obj)
        if not any(ref.get('uid') == owner_ref.get('uid') for ref in refs):
            _set_owner_references(obj, [*refs, owner_ref])


def remove_owner_reference(
        objs: Objects,
        owner: Optional[Mapping[str, Any]] = None,
) -> None:
    """Remove an owner reference from the object(s), if it is there (matched by uid)."""
    real_owner = _guess_owner(owner)
    owner_ref = build_owner_reference(real_owner)
    for obj in _walk(objs):
        refs = _get_owner_references(obj)
        kept = [ref for ref in refs if ref.get('uid') != owner_ref.get('uid')]
        if len(kept) != len(refs):
            _set_owner_references(obj, kept)


def label(
        objs: Objects,
        labels: Union[Mapping[str, Union[str, None]], _UNSET, None] = _UNSET.token,
        *,
        forced: bool = False,
        nested: Union[str, Iterable[dicts.FieldSpec], None] = None,
        force: Optional[bool] = None,  # deprecated spelling of ``forced``
) -> None:
    """
    Apply the labels to the object(s), and to their existing nested templates.

    With no labels (or ``None``), the owner's labels are applied. An empty dict
    applies nothing. Existing labels are kept unless ``forced``.
    """
    forced = force if force is not None else forced
    if labels is _UNSET.token or labels is None:
        real_labels: Mapping[str, Union[str, None]] = dict(_guess_owner(None).get('metadata', {}).get('labels') or {})
    else:
        real_labels = labels
    for obj in _walk(objs, nested=_parse_nested(nested)):
        existing = _get_meta_value(obj, 'labels') or {}
        merged = dict(existing)
        for key, value in real_labels.items():
            if forced or key not in merged:
                merged[key] = value
        if merged != existing:
            _set_meta_value(obj, 'labels', merged)


def harmonize_naming(
        objs: Objects,
        name: Optional[str] = None,
        *,
        forced: bool = False,
        strict: bool = False,
) -> None:
    """
    Name the object(s) after the owner: exactly (``strict``) or as a name prefix.

    Without ``strict``, Kubernetes generates the names from ``generateName``
    (``name-`` plus a random suffix), which suits several children of one kind.
    Objects that already have a name or a ``generateName`` keep it unless ``forced``.
    """
    if name is None:
        name = _guess_owner(None).get('metadata', {}).get('name')
    if name is None:
        raise LookupError("Name must be set explicitly: couldn't find it automatically.")
    for obj in _walk(objs):
        has_name = bool(_get_meta_value(obj, 'name')) or bool(_get_meta_value(obj, 'generateName'))
        if forced or not has_name:
            if strict:
                _set_meta_value(obj, 'name', name)
                _del_meta_value(obj, 'generateName')
            else:
                _set_meta_value(obj, 'generateName', f'{name}-')
                _del_meta_value(obj, 'name')


def adjust_namespace(
        objs: Objects,
        namespace: Optional[str] = None,
        *,
        forced: bool = False,
) -> None:
    """
    Put the object(s) into the owner's namespace, unless they already have one.

    If the owner is cluster-scoped (no namespace), nothing is implied for
    the children: they keep whatever namespace they have (or none).
    """
    if namespace is None:
        namespace = _guess_owner(None).get('metadata', {}).get('namespace')
    _adjust_namespace(objs, namespace, forced=forced)


def _adjust_namespace(objs: Objects, namespace: Optional[str], *, forced: bool) -> None:
    if namespace is None:
        return
    for obj in _walk(objs):
        if forced or not _get_meta_value(obj, 'namespace'):
            _set_meta_value(obj, 'namespace', namespace)


def adopt(
        objs: Objects,
        owner: Optional[Mapping[str, Any]] = None,
        *,
        forced: bool = False,
        strict: bool = False,
        nested: Union[str, Iterable[dicts.FieldSpec], None] = None,
) -> None:
    """The children should be in the same namespace, named after their parent, and owned by it."""
    real_owner = _guess_owner(owner)
    meta = real_owner.get('metadata') or {}
    append_owner_reference(objs, owner=real_owner)
    harmonize_naming(objs, name=meta.get('name'), forced=forced, strict=strict)
    _adjust_namespace(objs, meta.get('namespace'), forced=forced)
    label(objs, labels=dict(meta.get('labels') or {}), forced=forced, nested=nested)


def _guess_owner(owner: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
    if owner is not None:
        return owner
    try:
        return current_body.get()
    except LookupError:
        raise LookupError("Owner must be set explicitly, since running outside of a handler.") from None


def _parse_nested(nested: Union[str, Iterable[dicts.FieldSpec], None]) -> list[dicts.FieldSpec]:
    if nested is None:
        return []
    if isinstance(nested, str):
        return [nested]
    return list(nested)


def _walk(objs: Objects, *, nested: Iterable[dicts.FieldSpec] = ()) -> Iterator[Any]:
    """Iterate over the objects (one or many) and their existing nested templates."""
    if _is_single_object(objs):
        yield objs
        for field in nested:
            path = dicts.parse_field(field)
            if _is_k8s_model(objs):
                sub = _resolve_model(objs, path)
            else:
                sub = dicts.resolve(_as_dict(objs), path, None, ignore_wrong=True)
            if sub is not None and _is_single_object(sub):
                yield sub
    elif isinstance(objs, Iterable) and not isinstance(objs, (str, bytes)):
        for obj in objs:
            yield from _walk(obj, nested=nested)
    else:
        raise TypeError(f"{type(objs)} is not supported as an object: {objs!r}")


def _is_single_object(obj: Any) -> bool:
    return isinstance(obj, Mapping) or _is_pykube_object(obj) or _is_k8s_model(obj)


def _is_pykube_object(obj: Any) -> bool:
    return not isinstance(obj, Mapping) and isinstance(getattr(obj, 'obj', None), MutableMapping)


def _is_k8s_model(obj: Any) -> bool:
    return hasattr(obj, 'openapi_types') and hasattr(obj, 'attribute_map')


def _as_dict(obj: Any) -> MutableMapping[str, Any]:
    if _is_pykube_object(obj):
        raw: MutableMapping[str, Any] = obj.obj
        return raw
    if isinstance(obj, MutableMapping):
        return obj
    raise TypeError(f"{type(obj)} is not supported as an object: {obj!r}")


# The Kubernetes client's models use snake_case attributes for the camelCase fields.
_MODEL_ATTRS = {
    'labels': 'labels',
    'name': 'name',
    'generateName': 'generate_name',
    'namespace': 'namespace',
    'ownerReferences': 'owner_references',
}


def _k8s_class(name: str) -> Any:
    # Such models exist only if the client is imported already: take the class from there.
    module = sys.modules.get('kubernetes.client')
    if module is None or not hasattr(module, name):
        raise TypeError(f"Kubernetes client's {name} is not available for modifying its models.")
    return getattr(module, name)


def _resolve_model(obj: Any, path: dicts.FieldPath) -> Any:
    for key in path:
        attr = {v: k for k, v in getattr(obj, 'attribute_map', {}).items()}.get(key, key)
        obj = getattr(obj, attr, None)
        if obj is None:
            return None
    return obj


def _get_meta_value(obj: Any, key: str) -> Any:
    if _is_k8s_model(obj):
        return getattr(obj.metadata, _MODEL_ATTRS[key], None) if obj.metadata is not None else None
    return (_as_dict(obj).get('metadata') or {}).get(key)


def _set_meta_value(obj: Any, key: str, value: Any) -> None:
    if _is_k8s_model(obj):
        if obj.metadata is None:
            obj.metadata = _k8s_class('V1ObjectMeta')()
        setattr(obj.metadata, _MODEL_ATTRS[key], value)
    else:
        _as_dict(obj).setdefault('metadata', {})[key] = value


def _del_meta_value(obj: Any, key: str) -> None:
    if _is_k8s_model(obj):
        if obj.metadata is not None:
            setattr(obj.metadata, _MODEL_ATTRS[key], None)
    else:
        meta = _as_dict(obj).get('metadata')
        if isinstance(meta, MutableMapping):
            meta.pop(key, None)


def _get_owner_references(obj: Any) -> list[Dict[str, Any]]:
    refs = _get_meta_value(obj, 'ownerReferences') or []
    if _is_k8s_model(obj):
        return [_model_ref_to_dict(ref) for ref in refs]
    return list(refs)


def _set_owner_references(obj: Any, refs: list[Dict[str, Any]]) -> None:
    if _is_k8s_model(obj):
        cls = _k8s_class('V1OwnerReference')
        _set_meta_value(obj, 'ownerReferences', [_dict_to_model_ref(cls, ref) for ref in refs])
    else:
        _set_meta_value(obj, 'ownerReferences', refs)


_REF_ATTRS = {
    'apiVersion': 'api_version',
    'kind': 'kind',
    'name': 'name',
    'uid': 'uid',
    'controller': 'controller',
    'blockOwnerDeletion': 'block_owner_deletion',
}


def _model_ref_to_dict(ref: Any) -> Dict[str, Any]:
    if isinstance(ref, Mapping):
        return dict(ref)
    return {key: getattr(ref, attr) for key, attr in _REF_ATTRS.items() if getattr(ref, attr, None) is not None}


def _dict_to_model_ref(cls: Any, ref: Mapping[str, Any]) -> Any:
    return cls(**{attr: ref[key] for key, attr in _REF_ATTRS.items() if key in ref})
