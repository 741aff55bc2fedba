"""
Helpers on nested dicts, as Kubernetes objects are nested JSON-like dicts.

Fields are addressed either by dotted strings (``'spec.field'``), as users write
them in decorators, or by tuples of keys (``('spec', 'field')``), as the
framework passes them around. A dotted string cannot address keys with dots
inside (e.g. annotations); tuples can, which is why everything internal
normalises to tuples with :func:`parse_field` as early as possible.

Also here: :class:`MappingView`, a read-only live view over a sub-path of a
source mapping. Bodies are built of such views, so that ``body.spec`` handed to
a long-running daemon keeps showing the freshest ``spec`` after every
watch-event, without the daemon being re-invoked with new kwargs.
"""
from __future__ import annotations

import collections.abc
import copy
import enum
from typing import (
    Any,
    Callable,
    Iterable,
    Iterator,
    List,
    Mapping,
    MutableMapping,
    Optional,
    Tuple,
    TypeAlias,
    TypeVar,
    Union,
    cast,
)

FieldPath: TypeAlias = Tuple[str, ...]
FieldSpec: TypeAlias = Union[str, FieldPath, List[str], None]  # lists are taken as they are, like tuples

# The runtime checks use the abstract classes themselves: ``typing.Mapping`` is an alias that
# makes every isinstance() on the hot path (each access to a body's field) several times slower.
_ABCMapping = collections.abc.Mapping
_ABCMutableMapping = collections.abc.MutableMapping

_T = TypeVar('_T')
_K = TypeVar('_K')
_V = TypeVar('_V')


class _UNSET(enum.Enum):
    token = enum.auto()


def parse_field(field: FieldSpec) -> FieldPath:
    """
    Normalise a field specification into a tuple of keys.

    ``None`` and empty strings mean the root (an empty path); strings are split
    by dots; tuples and lists are taken as they are.
    """
    if field is None or field == '':
        return ()
    if isinstance(field, str):
        return tuple(field.split('.'))
    if isinstance(field, (tuple, list)):
        return tuple(field)
    raise ValueError(f"Field must be either a str, or a list/tuple. Got {field!r}")


def resolve(
        d: Optional[Mapping[Any, Any]],
        field: FieldSpec,
        default: Any = _UNSET.token,
        *,
        assume_empty: bool = False,
        ignore_wrong: bool = False,
) -> Any:
    """
    Get a value from a nested dict by a field path.

    A missing key anywhere on the path gives the ``default`` if one is passed,
    or a :class:`KeyError` otherwise. ``assume_empty`` treats ``None`` on the
    path (e.g. ``status: null``) as an empty dict rather than a missing key.
    ``ignore_wrong`` treats a non-mapping on the path (e.g. resolving
    ``spec.x.y`` where ``spec.x`` is a string) as a missing key instead of
    raising a :class:`TypeError`.
    """
    path = parse_field(field)
    result: Any = d
    try:
        for key in path:
            if result is None and assume_empty:
                result = {}
            if not isinstance(result, _ABCMapping):
                if ignore_wrong:
                    raise KeyError(key)
                raise TypeError(f"The structure is not a dict with field {key!r}: {result!r}")
            result = result[key]
    except KeyError:
        if default is not _UNSET.token:
            return default
        raise
    return result


def ensure(d: MutableMapping[Any, Any], field: FieldSpec, value: Any) -> None:
    """Set a value into a nested dict, creating the intermediate dicts as needed."""
    path = parse_field(field)
    if not path:
        raise ValueError("Setting a value to the root of a dict is impossible: replace the dict.")
    parent = d
    for key in path[:-1]:
        child = parent.get(key)
        if child is None:
            child = parent[key] = {}
        elif not isinstance(child, _ABCMutableMapping):
            raise TypeError(f"Cannot set a nested field {field!r} into a non-dict value: {child!r}")
        parent = child
    parent[path[-1]] = value


def remove(d: MutableMapping[Any, Any], field: FieldSpec, *, prune: bool = False) -> None:
    """
    Remove a value from a nested dict if it is there; ignore it if it is not.

    With ``prune``, the parent dicts left empty by the removal are removed too,
    so that e.g. removing ``status.kopf.progress`` from ``{'status': {'kopf':
    {'progress': {...}}}}`` leaves no empty ``status`` behind.
    """
    path = parse_field(field)
    if not path:
        raise ValueError("Removing the root of a dict is impossible: replace the dict.")
    parents: list[MutableMapping[Any, Any]] = [d]
    for key in path[:-1]:
        child = parents[-1].get(key)
        if not isinstance(child, _ABCMutableMapping):
            return
        parents.append(child)
    if path[-1] not in parents[-1]:
        return
    del parents[-1][path[-1]]
    if prune:
        for parent, key in reversed(list(zip(parents[:-1], path[:-1], strict=False))):
            if parent[key]:
                break
            del parent[key]


def cherrypick(
        *,
        src: Mapping[Any, Any],
        dst: MutableMapping[Any, Any],
        fields: Optional[Iterable[FieldSpec]],
        picker: Optional[Callable[[_T], _T]] = None,
) -> None:
    """
    Copy the specified fields (if present in the source) to the destination.

    The ``picker`` transforms the values on the way (e.g. ``copy.deepcopy``),
    so that the destination does not share mutable values with the source.
    """
    for field in fields or ():
        try:
            value = resolve(src, field)
        except (KeyError, TypeError):
            continue
        ensure(dst, field, picker(value) if picker is not None else value)


_IMMUTABLE_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_tree(value: _T) -> _T:
    """
    A deep copy of JSON-like data: dicts, lists and scalars, as the API gives them.

    Several times faster than :func:`copy.deepcopy`, which matters on the hot path
    (the essences of every object are copied in every cycle): it keeps no memo of
    shared references, as the API's data has none. Anything else is deep-copied
    as usual.
    """
    return cast(_T, _copy_tree(value))  # a copy is of the same type as its original


def _copy_tree(value: object) -> object:
    if type(value) is dict:
        return {key: _copy_tree(item) for key, item in value.items()}
    if type(value) is list:
        return [_copy_tree(item) for item in value]
    if type(value) in _IMMUTABLE_SCALARS:
        return value
    return copy.deepcopy(value)


def walk(
        objs: Union[Mapping[Any, Any], Iterable[Mapping[Any, Any]]],
        *,
        nested: Optional[Iterable[FieldSpec]] = None,
) -> Iterator[Mapping[Any, Any]]:
    """
    Iterate over one or many objects, and also their existing nested sub-objects.

    A single mapping is treated as one object; other iterables (lists, tuples,
    generators) as many objects, possibly nested collections too. Only
    the nested sub-objects that already exist are yielded: the callers modify
    the existing structures, but never invent new ones.
    """
    # Mappings are iterable too (over keys), but they are objects, not collections of objects.
    if isinstance(objs, _ABCMapping):
        yield objs
        for subfield in nested or ():
            nested_obj = resolve(objs, subfield, None, ignore_wrong=True)
            if isinstance(nested_obj, _ABCMapping):
                yield nested_obj
    else:
        for obj in objs:
            yield from walk(obj, nested=nested)


class _Cell:
    """
    The source of a family of views: each of them refers to it, none to another.

    So the views of a body (``body.meta``, its ``labels``, ...) form no reference
    cycle with it: a body is freed as soon as nobody needs it, by reference
    counting, not at some later pass of the garbage collector, all at once.
    """
    __slots__ = ('source',)

    def __init__(self, source: Mapping[Any, Any]) -> None:
        self.source = source


class MappingView(Mapping[_K, _V]):
    """
    A read-only live view over a sub-path of a source mapping.

    Unlike a plain copy (or ``types.MappingProxyType`` over a sub-dict), the
    path is resolved on every access: if the sub-dict is created, deleted, or
    replaced in the source later (e.g. a new ``spec`` arrives with an event),
    the view shows the new content. Missing or ``None`` sub-dicts look empty.
    A view over another view resolves its whole path from their common source.
    """

    def __init__(self, source: Mapping[Any, Any], path: FieldPath = ()) -> None:
        super().__init__()
        self._cell: _Cell
        self._path: FieldPath
        if isinstance(source, MappingView):  # not held: its source and path are enough
            self._cell, self._path = source._cell, (*source._path, *path)
        else:
            self._cell, self._path = _Cell(source), tuple(path)

    def __repr__(self) -> str:
        return repr(dict(self))

    def __len__(self) -> int:
        return len(self._resolve())

    def __iter__(self) -> Iterator[_K]:
        return iter(self._resolve())

    def __getitem__(self, item: _K) -> _V:
        value: _V = self._resolve()[item]
        return value

    # The mixins' versions go through __getitem__ and catch its KeyError: these are direct.
    def __contains__(self, item: object) -> bool:
        return item in self._resolve()

    def get(self, item: _K, default: Any = None) -> Any:
        return self._resolve().get(item, default)

    def _resolve(self) -> Mapping[_K, _V]:
        # The same as resolve(..., default={}, assume_empty=True, ignore_wrong=True), inlined:
        # it runs on every access to every field of every body.
        value: Any = self._cell.source
        for key in self._path:
            value = value.get(key) if isinstance(value, _ABCMapping) else None
        return value if isinstance(value, _ABCMapping) else {}


class ReplaceableMappingView(MappingView[_K, _V]):
    """
    A view whose whole source can be replaced, so that all views atop it follow.

    It has a source of its own (even over another view), and the views atop it
    share that source, so one replacement here is seen by all of them at once.
    """

    def __init__(self, source: Mapping[Any, Any], path: FieldPath = ()) -> None:
        super().__init__({}, path)
        self._cell.source = source

    def _replace_with(self, source: Mapping[Any, Any]) -> None:
        self._cell.source = source
