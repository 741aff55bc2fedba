"""
Invocation of the user functions: sync in the executor, async in the loop.

Sync functions run in ``settings.execution.executor`` with a copy of the
context variables, so that ``kopf.info()`` and other context-bound helpers
work in them as in async functions.

The manual requires the handlers to accept ``**kwargs``: the framework adds
new kwargs over time. A function that does not is still registered and called
(Kopf runs such operators, e.g. with handlers that name every kwarg they get):
a warning says so at registration, and if a call then fails because of the
signature, the error says what to change instead of Python's bare
``TypeError``. The callable itself is judged, not the function it wraps
(``functools.wraps`` copies the wrapped signature, but the wrapper is called).
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from typing import Any, Mapping, Optional

from kopf._cogs.configs import configuration

logger = logging.getLogger(__name__)


class HandlerSignatureError(TypeError):
    """The handler cannot accept the framework's keyword arguments."""


def _get_signature(fn: Any) -> Optional[inspect.Signature]:
    try:
        return inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):  # builtins, some C callables: nothing to judge
        return None


def _describe(fn: Any, signature: inspect.Signature, kind: str) -> str:
    name = getattr(fn, '__qualname__', None) or repr(fn)
    short = getattr(fn, '__name__', None) or 'fn'
    return (f"The {kind} {name}{signature} does not accept arbitrary keyword arguments: "
            f"add **kwargs (or **_) to its parameters, e.g. def {short}(spec, **_): ...")


def check_signature(fn: Any, *, kind: str = 'handler') -> None:
    """
    Warn at registration if the function cannot take arbitrary kwargs; never refuse it.

    Only ``**kwargs`` makes a function forward-compatible with new kwargs; but a
    function that names all the kwargs it gets works, and so it is registered.
    """
    signature = _get_signature(fn)
    if signature is None or _accepts_any_kwargs(signature):
        return
    logger.warning(_describe(fn, signature, kind))


def _accepts_any_kwargs(signature: inspect.Signature) -> bool:
    return any(param.kind == param.VAR_KEYWORD for param in signature.parameters.values())


def _explain_failed_call(
        fn: Any,
        error: TypeError,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
) -> Optional[HandlerSignatureError]:
    """A clear error if the call failed on the signature itself, not inside the function."""
    signature = _get_signature(fn)
    if signature is None or _accepts_any_kwargs(signature):
        return None
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return HandlerSignatureError(f"{_describe(fn, signature, 'handler')} ({error})")
    return None


def is_async_fn(fn: Any) -> bool:
    """
    Whether the function is to be awaited in the event loop.

    Besides coroutine functions and objects with an async ``__call__``, a sync
    wrapper made with ``functools.wraps`` around an async function is async
    (as in Kopf): it returns the coroutine of the wrapped function.
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    if _is_own_coroutine_fn(fn):
        return True
    wrapped = getattr(fn, '__wrapped__', None)
    return wrapped is not None and wrapped is not fn and is_async_fn(wrapped)


def _is_own_coroutine_fn(fn: Any) -> bool:
    # Callable objects with an async __call__ are async too (the method is on the type).
    if inspect.iscoroutinefunction(fn):
        return True
    method = vars(type(fn)).get('__call__') if not inspect.isfunction(fn) else None
    return method is not None and inspect.iscoroutinefunction(method)


async def invoke(
        fn: Any,
        *,
        kwargs: Mapping[str, Any],
        settings: Optional[configuration.OperatorSettings] = None,
        args: tuple[Any, ...] = (),
) -> Any:
    """Call a sync or async function with the kwargs, return its result."""
    try:
        if is_async_fn(fn):
            result = fn(*args, **kwargs)
            # A sync wrapper of an async function returns the coroutine; or a plain value.
            return await result if inspect.isawaitable(result) else result
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        call = functools.partial(context.run, fn, *args, **kwargs)
        executor = settings.execution.executor if settings is not None else None
        return await loop.run_in_executor(executor, call)
    except TypeError as e:
        explained = _explain_failed_call(fn, e, args, kwargs)
        if explained is None:
            raise
        raise explained from e


def call_sync(fn: Any, *, kwargs: Mapping[str, Any], args: tuple[Any, ...] = ()) -> Any:
    """
    Call a sync function here and now, with the same explanation of a wrong signature as :func:`invoke`.

    For the callers that are in a worker thread already and call many functions
    in one go (e.g. all the conversions of a review): one hop to the thread for
    all of them instead of one per call.
    """
    try:
        return fn(*args, **kwargs)
    except TypeError as e:
        explained = _explain_failed_call(fn, e, args, kwargs)
        if explained is None:
            raise
        raise explained from e
