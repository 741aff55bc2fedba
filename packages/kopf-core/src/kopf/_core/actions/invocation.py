"""
Invocation of the user functions: sync in the executor, async in the loop.

Sync functions run in ``settings.execution.executor`` with a copy of the
context variables, so that ``kopf.info()`` and other context-bound helpers
work in them as in async functions. A function that does not accept
``**kwargs`` gets a clear error instead of a confusing ``TypeError`` deep
inside: the framework adds new kwargs over time, and the manual requires it.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from typing import Any, Mapping, Optional

from kopf._cogs.configs import configuration


class HandlerSignatureError(TypeError):
    """The handler cannot accept the framework's keyword arguments."""


def check_signature(fn: Any, *, kind: str = 'handler') -> None:
    """
    Fail early (at registration) if the function cannot take arbitrary kwargs.

    Only ``**kwargs`` makes a function forward-compatible with new kwargs.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins, some C callables: nothing to check
        return
    if not any(param.kind == param.VAR_KEYWORD for param in signature.parameters.values()):
        name = getattr(fn, '__qualname__', repr(fn))
        raise HandlerSignatureError(
            f"The {kind} {name}{signature} must accept arbitrary keyword arguments: "
            f"add **kwargs (or **_) to its parameters, e.g. def {getattr(fn, '__name__', 'fn')}(spec, **_): ...")


def is_async_fn(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
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
    if is_async_fn(fn):
        return await fn(*args, **kwargs)
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    executor = settings.execution.executor if settings is not None else None
    return await loop.run_in_executor(executor, call)
