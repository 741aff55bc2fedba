"""
Seeing a request through to its answer, even when the task that made it is cancelled.

A patch that stores the outcome of handlers is worth finishing once sent: if
the worker is cancelled meanwhile (a stream restarted for new shards, an
operator's exit), the API server may still apply it, but nobody would know;
the next stream would list the object before it lands and run its handlers
again. Here the request goes on in a task of its own; a cancellation of the
caller waits for it to end (bounded by the client's timeouts and retries), and
only then is the cancellation raised.
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, TypeVar

T = TypeVar('T')


async def complete(aw: Awaitable[T]) -> T:
    """Await to the end despite cancellations of the caller; then re-raise the cancellation, if any."""
    inner = asyncio.ensure_future(aw)
    cancelled = False
    while not inner.done():
        try:
            await asyncio.shield(inner)
        except asyncio.CancelledError:
            if inner.cancelled():
                raise
            cancelled = True  # ours, not the request's: keep waiting for the answer
        except BaseException:
            break  # the request's own failure: taken from the task below
    if cancelled:
        if not inner.cancelled():
            inner.exception()  # retrieved, so that a failure is not reported as never retrieved
        raise asyncio.CancelledError()
    return inner.result()
