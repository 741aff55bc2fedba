"""
Filters: which objects a handler applies to (labels, annotations, fields, callbacks).

Values in label/annotation/field filters are either literal values (compared
with ``==``), the markers ``kopf.PRESENT``/``kopf.ABSENT``, or callables that
get the value positionally plus the handler's kwargs. An absent value is
``None`` for the callables; an empty string is a present value.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Callable, Optional, TypeAlias, Union


class MetaFilterToken(enum.Enum):
    """Markers for the presence or absence of a value (not the value itself)."""
    PRESENT = enum.auto()
    ABSENT = enum.auto()

    def __repr__(self) -> str:
        return f'kopf.{self.name}'


PRESENT = MetaFilterToken.PRESENT
ABSENT = MetaFilterToken.ABSENT

# A marker, a callable that gets the value (and the handler's kwargs), or any value to compare with ``==``.
ValueFilter: TypeAlias = Union[MetaFilterToken, Callable[..., bool], object, None]
MetaFilter: TypeAlias = Mapping[str, ValueFilter]

def match_value(criterion: ValueFilter, value: Any, *, present: bool, kwargs: Mapping[str, Any]) -> bool:
    """Check one value (present or absent) against one criterion."""
    if criterion is PRESENT:
        return present
    if criterion is ABSENT:
        return not present
    if callable(criterion):
        return bool(criterion(value if present else None, **kwargs))
    return present and bool(value == criterion)


def match_meta(criteria: Optional[MetaFilter], values: Mapping[str, Any], kwargs: Mapping[str, Any]) -> bool:
    """Check all label or annotation criteria (joined with AND)."""
    for key, criterion in (criteria or {}).items():
        if criterion is None:
            criterion = PRESENT  # the old spelling of kopf.PRESENT, still seen in operators
        present = key in values
        value = values.get(key)
        if not match_value(criterion, value, present=present, kwargs=kwargs):
            return False
    return True


def resolve_field(obj: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    """Find the value at a path: ``(present, value)``; absent paths give ``(False, None)``."""
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return False, None
        obj = obj[key]
    return obj is not None, obj
