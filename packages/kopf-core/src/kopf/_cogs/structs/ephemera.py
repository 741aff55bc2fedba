"""
Memos: in-memory containers for arbitrary values of the operator developers.

A :class:`Memo` is a dict whose keys are also accessible as attributes. The
operator-level memo is shallow-copied into each object's memo, so that shared
values (e.g. a connection pool) are shared while per-object keys stay per-object.
"""
from __future__ import annotations

from typing import Any, Dict


class Memo(Dict[Any, Any]):
    """A dict with attribute access to its keys (except for dict's own methods)."""

    def __repr__(self) -> str:
        return f'{type(self).__name__}({dict.__repr__(self)})'

    def __copy__(self) -> Memo:
        return type(self)(self)

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"Memo has no attribute {key!r}.") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __delattr__(self, key: str) -> None:
        try:
            del self[key]
        except KeyError:
            raise AttributeError(f"Memo has no attribute {key!r}.") from None
