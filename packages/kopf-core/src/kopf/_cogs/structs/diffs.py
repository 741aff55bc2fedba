"""
Diffs between the last handled state of an object and its current state.

A diff is a sequence of ``(operation, field, old, new)`` items::

    (('add', ('metadata', 'labels', 'label1'), None, 'new-value'),
     ('change', ('spec', 'size'), '1G', '2G'),
     ('remove', ('metadata', 'labels', 'label3'), 'old-value', None))

Dicts are compared key by key, recursively; everything else (lists included)
is compared as a whole value. As in Kubernetes, ``None`` means the absence of
a value: a key going from ``None`` to a value is added, not changed. So the
``new`` of a removed key is ``None``, which is exactly what a merge-patch
needs to remove the same key elsewhere.

Field handlers get the diff :func:`reduce`-d to their field: with the paths
relative to the field, and the unrelated changes filtered out.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Iterable, Iterator, NamedTuple, overload

from kopf._cogs.structs import dicts


class DiffOperation(str, enum.Enum):
    """The kind of one change in a diff: a field added, changed, or removed."""
    ADD = 'add'
    CHANGE = 'change'
    REMOVE = 'remove'

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


class DiffItem(NamedTuple):
    operation: DiffOperation
    field: dicts.FieldPath
    old: Any
    new: Any

    def __repr__(self) -> str:
        # Shown in logs the same way as the plain tuples users compare it with.
        return repr(tuple(self))

    @property
    def op(self) -> DiffOperation:
        return self.operation


class Diff(Sequence[DiffItem]):
    """
    An immutable sequence of diff items, equal to any sequence of the same tuples.

    Users compare diffs with literals (``diff == [('add', ('spec', 'x'), None, 1)]``),
    and both the strings and the enums of operations are accepted in them.
    """

    def __init__(self, items: Iterable[Iterable[Any]]) -> None:
        super().__init__()
        self._items = tuple(DiffItem(DiffOperation(op), tuple(field), old, new) for op, field, old, new in items)

    def __repr__(self) -> str:
        return repr(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[DiffItem]:
        return iter(self._items)

    @overload
    def __getitem__(self, item: int) -> DiffItem: ...

    @overload
    def __getitem__(self, item: slice) -> Sequence[DiffItem]: ...

    def __getitem__(self, item: int | slice) -> DiffItem | Sequence[DiffItem]:
        return self._items[item]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        # Tuples of str-enums equal the tuples of plain strings, but lists of fields do not: normalise.
        try:
            others = [(op, tuple(field), old, new) for op, field, old, new in other]
        except (TypeError, ValueError):
            return False
        return list(self._items) == others


def diff_iter(a: Any, b: Any, path: dicts.FieldPath = ()) -> Iterator[DiffItem]:
    """Yield the differences between two values: recursively for dicts, as a whole otherwise."""
    if a == b:
        return
    elif a is None:
        yield DiffItem(DiffOperation.ADD, path, a, b)
    elif b is None:
        yield DiffItem(DiffOperation.REMOVE, path, a, b)
    elif isinstance(a, Mapping) and isinstance(b, Mapping):
        # Sorted for determinism: dicts from JSON have no meaningful key order to follow.
        for key in sorted(set(a) | set(b), key=str):
            yield from diff_iter(a.get(key), b.get(key), (*path, key))
    else:
        yield DiffItem(DiffOperation.CHANGE, path, a, b)


def diff(a: Any, b: Any, path: dicts.FieldPath = ()) -> Diff:
    """The differences between two values (``None`` means an absent value)."""
    return Diff(diff_iter(a, b, path))


def reduce_iter(d: Diff, path: dicts.FieldPath) -> Iterator[DiffItem]:
    for op, field, old, new in d:
        # The diff item is inside the field: re-address it relative to the field.
        if field[:len(path)] == path:
            yield DiffItem(op, field[len(path):], old, new)
        # The diff item is an ancestor of the field (e.g. the whole "spec" added):
        # re-diff the field's own old and new values within the ancestor's values.
        elif path[:len(field)] == field:
            tail = path[len(field):]
            old_tail = dicts.resolve(old, tail, None, assume_empty=True, ignore_wrong=True)
            new_tail = dicts.resolve(new, tail, None, assume_empty=True, ignore_wrong=True)
            yield from diff_iter(old_tail, new_tail)
        # Unrelated items (siblings or their descendants) are filtered out.


def reduce(d: Diff, path: dicts.FieldSpec) -> Diff:
    """Narrow a diff to a field: the items relative to it, without the unrelated ones."""
    return Diff(reduce_iter(d, dicts.parse_field(path)))
