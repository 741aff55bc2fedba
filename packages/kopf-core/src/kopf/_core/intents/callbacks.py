"""
The types of the user-provided callables: handlers, filters, value callbacks.

They are deliberately loose (``Callable[..., ...]``): handlers accept any
subset of the documented kwargs plus ``**kwargs``, which no static type can
express precisely. The names document the intended role of each callable.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, TypeAlias

# A handler of any kind: sync or async, returning a result or None (or a coroutine of them).
HandlerFn: TypeAlias = Callable[..., object]

ActivityFn: TypeAlias = HandlerFn
ChangingFn: TypeAlias = HandlerFn
WatchingFn: TypeAlias = HandlerFn

# A whole-body filter (``when=``): called with the handler's kwargs.
WhenFilterFn: TypeAlias = Callable[..., bool]

# A value filter (``labels={'x': fn}``, ``value=fn``): the value is positional.
MetaFilterFn: TypeAlias = Callable[..., bool]

# A daemon's or timer's ``initial_delay=`` as a function: called (sync only) with the object's
# kwargs (body, spec, meta, ..., patch, logger, memo, the indices), returns the seconds to wait.
DelayFn: TypeAlias = Callable[..., Optional[float]]


def not_(fn: Callable[..., bool]) -> Callable[..., bool]:
    """The filter passes when the function returns false."""
    def not_fn(*args: object, **kwargs: object) -> bool:
        return not fn(*args, **kwargs)
    return not_fn


def all_(fns: Iterable[Callable[..., bool]]) -> Callable[..., bool]:
    """The filter passes when all the functions return true."""
    fns = list(fns)

    def all_fn(*args: object, **kwargs: object) -> bool:
        return all(fn(*args, **kwargs) for fn in fns)
    return all_fn


def any_(fns: Iterable[Callable[..., bool]]) -> Callable[..., bool]:
    """The filter passes when at least one of the functions returns true."""
    fns = list(fns)

    def any_fn(*args: object, **kwargs: object) -> bool:
        return any(fn(*args, **kwargs) for fn in fns)
    return any_fn


def none_(fns: Iterable[Callable[..., bool]]) -> Callable[..., bool]:
    """The filter passes when all the functions return false."""
    fns = list(fns)

    def none_fn(*args: object, **kwargs: object) -> bool:
        return not any(fn(*args, **kwargs) for fn in fns)
    return none_fn
