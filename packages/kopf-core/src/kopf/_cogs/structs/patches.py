"""
Patches: the changes that handlers (and the framework) accumulate for an object.

A :class:`Patch` carries two kinds of changes, applied differently:

* **The merge-patch**: the dict content of the patch itself, sent as
  ``application/merge-patch+json``. ``None`` values delete the fields;
  nested dicts are merged; other values replace the existing ones::

      patch.spec['greeting'] = 'hello'
      patch.status['obsolete'] = None

* **Transformation functions** in ``patch.fns``: for the changes that depend on
  the current state of the object (e.g. adding or removing a list item, such as
  a finalizer). They are applied to a deep copy of the freshest known body,
  and the result is diffed into an ``application/json-patch+json`` list of
  operations, guarded by a ``test`` of ``metadata.resourceVersion`` — so that
  a concurrent change makes the API reject the patch (``422``) rather than
  apply the indices computed for an outdated list. The functions can be called
  again later, against a newer body: they must check before they change.

``dict(patch)`` (or :meth:`Patch.as_merge_patch`) is the merge-patch alone;
``patch.fns`` are the functions alone; :func:`build_json_patch` turns the
functions into JSON-patch operations for a specific body.
"""
from __future__ import annotations

import copy
import difflib
import json
import weakref
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterable, Iterator, List, MutableMapping, Optional

from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import dicts

PatchFn = Callable[[typedefs.RawBody], None]
"""A transformation function: it mutates the raw body (a deep copy) in place."""


class PatchSection(MutableMapping[str, Any]):
    """
    A live mutable view of a sub-dict of a patch, created only when written.

    Reading ``patch.spec`` must not put an empty ``spec: {}`` into the patch:
    the patch would then look non-empty and cause a useless API request.
    Deleting a key deletes it from the patch (not from the object): to delete
    a field from the object, set it to ``None``.
    """

    def __init__(self, patch: MutableMapping[str, Any], path: dicts.FieldPath) -> None:
        super().__init__()
        # A patch's own sections refer to it weakly: kept in it, they would otherwise form a reference
        # cycle, and the patch, with the body it holds, would wait for the garbage collector to be freed.
        self._ref: Callable[[], Optional[MutableMapping[str, Any]]]
        self._ref = weakref.ref(patch) if isinstance(patch, Patch) else (lambda: patch)
        self._path = path

    @property
    def _patch(self) -> MutableMapping[str, Any]:
        patch = self._ref()
        if patch is None:
            raise ReferenceError("The patch of this section is gone: keep the patch, not only its section.")
        return patch

    def __repr__(self) -> str:
        return repr(dict(self))

    def __len__(self) -> int:
        return len(self._resolve())

    def __iter__(self) -> Iterator[str]:
        return iter(self._resolve())

    def __getitem__(self, key: str) -> Any:
        return self._resolve()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        dicts.ensure(self._patch, (*self._path, key), value)

    def __delitem__(self, key: str) -> None:
        if key not in self._resolve():
            raise KeyError(key)
        dicts.remove(self._patch, (*self._path, key), prune=True)

    def _resolve(self) -> Mapping[str, Any]:
        value = dicts.resolve(self._patch, self._path, None, assume_empty=True, ignore_wrong=True)
        return value if isinstance(value, Mapping) else {}


class MetaPatch(PatchSection):
    """The ``metadata`` section of a patch, with its own ``labels`` & ``annotations`` sections."""

    def __init__(self, patch: MutableMapping[str, Any]) -> None:
        super().__init__(patch, ('metadata',))
        self._labels = PatchSection(patch, ('metadata', 'labels'))
        self._annotations = PatchSection(patch, ('metadata', 'annotations'))

    @property
    def labels(self) -> PatchSection:
        return self._labels

    @property
    def annotations(self) -> PatchSection:
        return self._annotations


class Patch(Dict[str, Any]):
    """
    A merge-patch (the dict content) plus transformation functions (``fns``).

    ``bool(patch)`` is true if there is anything to apply: either the merge
    content or the functions. ``patch.clear()`` clears only the merge content,
    as dicts do; ``patch.fns.clear()`` clears the functions (they are kept
    separately so that the rejected ones can be carried forward).
    """

    def __init__(
            self,
            src: Optional[Mapping[str, Any]] = None,
            /,
            body: Optional[typedefs.RawBody] = None,
            fns: Iterable[PatchFn] = (),
    ) -> None:
        super().__init__(src or {})
        self._fns: List[PatchFn] = [*(src.fns if isinstance(src, Patch) else []), *fns]
        self._body = body
        self._meta = MetaPatch(self)
        self._spec = PatchSection(self, ('spec',))
        self._status = PatchSection(self, ('status',))

    def __bool__(self) -> bool:
        return len(self) > 0 or len(self.fns) > 0

    def __copy__(self) -> Patch:
        return Patch(self, body=self._body)

    def __deepcopy__(self, memo: Dict[int, Any]) -> Patch:
        return Patch(copy.deepcopy(dict(self), memo), body=self._body, fns=self.fns)

    @property
    def fns(self) -> List[PatchFn]:
        """The transformation functions: applied as a JSON-patch each, after the merge-patch."""
        return self._fns

    @property
    def metadata(self) -> MetaPatch:
        return self._meta

    @property
    def meta(self) -> MetaPatch:
        return self._meta

    @property
    def spec(self) -> PatchSection:
        return self._spec

    @property
    def status(self) -> PatchSection:
        return self._status

    def as_merge_patch(self) -> Dict[str, Any]:
        """The merge-patch content alone, detached from the patch (a deep copy)."""
        return copy.deepcopy(dict(self))

    def as_json_patch(self, body: Optional[Mapping[str, Any]] = None) -> typedefs.JsonPatch:
        """
        The merge-patch content as JSON-patch operations for a specific body.

        This is for where only JSON-patches are accepted (e.g. the responses
        of mutating admission webhooks). It ignores ``fns``: those have their own
        :func:`build_json_patch`, with the concurrency check on the resourceVersion.
        """
        base = body if body is not None else (self._body if self._body is not None else {})
        return list(_merge_to_json_ops(base, self, ''))


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """
    Apply a merge-patch (RFC 7386) to a value; return the new value.

    The target is not modified; the unchanged parts of it are shared with the
    result, so deep-copy the target first if the result will be modified.
    """
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result: Dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def build_json_patch(body: Mapping[str, Any], fns: Iterable[PatchFn]) -> typedefs.JsonPatch:
    """
    Run the transformation functions on a copy of the body; diff it to JSON-patch ops.

    The operations are prefixed with a ``test`` of ``/metadata/resourceVersion``
    (if the body has one), so that the API rejects them if the object has
    changed since this body was seen: the indices in the list operations are
    valid only for this very version. If the functions change nothing, the
    result is empty: there is nothing to send, not even the test.
    """
    original = copy.deepcopy(dict(body))
    transformed = copy.deepcopy(original)
    for fn in fns:
        fn(transformed)
    ops = list(_diff_to_json_ops(original, transformed, ''))
    if not ops:
        return []
    resource_version = dicts.resolve(original, ('metadata', 'resourceVersion'), None, ignore_wrong=True)
    if resource_version is None:
        return ops
    return [{'op': 'test', 'path': '/metadata/resourceVersion', 'value': resource_version}, *ops]


def _pointer(path: str, key: Any) -> str:
    # RFC 6901: "~" and "/" inside the keys are escaped (e.g. in annotations' names).
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _same(a: Any, b: Any) -> bool:
    # In Python, True == 1 and False == 0, but they are different JSON values.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


def _diff_to_json_ops(a: Any, b: Any, path: str) -> Iterator[Dict[str, Any]]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in a:
            if key not in b:
                yield {'op': 'remove', 'path': _pointer(path, key)}
        for key in b:
            if key not in a:
                yield {'op': 'add', 'path': _pointer(path, key), 'value': copy.deepcopy(b[key])}
            else:
                yield from _diff_to_json_ops(a[key], b[key], _pointer(path, key))
    elif isinstance(a, list) and isinstance(b, list):
        yield from _diff_lists_to_json_ops(a, b, path)
    elif not _same(a, b):
        yield {'op': 'replace', 'path': path, 'value': copy.deepcopy(b)}


def _diff_lists_to_json_ops(a: List[Any], b: List[Any], path: str) -> Iterator[Dict[str, Any]]:
    """
    Diff two lists into the minimal-ish item-level operations.

    The blocks of changes go from the end to the beginning: every operation then
    addresses the indices of the original list, untouched by the previous ones.
    Items that only changed inside (same position, same count) are diffed deeper.
    """
    matcher = difflib.SequenceMatcher(None, [_canonical(x) for x in a], [_canonical(x) for x in b], autojunk=False)
    for tag, i1, i2, j1, j2 in reversed(matcher.get_opcodes()):
        if tag == 'equal':
            continue
        if tag == 'replace' and i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                yield from _diff_to_json_ops(a[i1 + offset], b[j1 + offset], f'{path}/{i1 + offset}')
            continue
        for index in reversed(range(i1, i2)):
            yield {'op': 'remove', 'path': f'{path}/{index}'}
        for offset, item in enumerate(b[j1:j2]):
            appended = i1 == len(a)
            target = f'{path}/-' if appended else f'{path}/{i1 + offset}'
            yield {'op': 'add', 'path': target, 'value': copy.deepcopy(item)}


def _merge_to_json_ops(body: Any, patch: Mapping[str, Any], path: str) -> Iterator[Dict[str, Any]]:
    body_dict: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    for key, value in patch.items():
        pointer = _pointer(path, key)
        if value is None:
            if key in body_dict:
                yield {'op': 'remove', 'path': pointer}
        elif isinstance(value, Mapping) and isinstance(body_dict.get(key), Mapping):
            yield from _merge_to_json_ops(body_dict[key], value, pointer)
        elif key in body_dict:
            yield {'op': 'replace', 'path': pointer, 'value': apply_merge_patch(None, value)}
        else:
            yield {'op': 'add', 'path': pointer, 'value': apply_merge_patch(None, value)}
