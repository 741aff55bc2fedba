"""
Adapters for the flags that embedding code passes in: ``stop_flag``, ``ready_flag``.

Users may pass an asyncio or a threading event, or an asyncio or a concurrent
future (e.g. to stop an operator running in a thread from the main thread).
The framework needs to wait for them and to set them uniformly.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Optional, Union

Flag = Union[asyncio.Future[Any], asyncio.Event, concurrent.futures.Future[Any], threading.Event]


async def wait_flag(flag: Optional[Flag]) -> Any:
    """Wait until the flag is set/resolved; return the future's result if any. Never if None."""
    if flag is None:
        await asyncio.Event().wait()
        return None
    if isinstance(flag, asyncio.Future):
        return await asyncio.shield(flag)
    if isinstance(flag, asyncio.Event):
        await flag.wait()
        return None
    if isinstance(flag, concurrent.futures.Future):
        # Shielded: cancelling the wait must not cancel the caller's future (wrap_future would).
        return await asyncio.shield(asyncio.wrap_future(flag))
    if isinstance(flag, threading.Event):
        loop = asyncio.get_running_loop()
        while not flag.is_set():  # poll in a thread, so that cancellation stays possible
            await loop.run_in_executor(None, flag.wait, 0.5)
        return None
    raise TypeError(f"Unsupported flag type: {type(flag)!r}. Use asyncio/threading events or futures.")


def raise_flag(flag: Optional[Flag], result: Any = None) -> None:
    """Set the event or resolve the future (if not yet), from the event loop's thread."""
    if flag is None:
        return
    if isinstance(flag, asyncio.Future):
        if not flag.done():
            flag.get_loop().call_soon_threadsafe(_resolve_asyncio_future, flag, result)
    elif isinstance(flag, asyncio.Event):
        flag.set()
    elif isinstance(flag, concurrent.futures.Future):
        if not flag.done():
            flag.set_result(result)
    elif isinstance(flag, threading.Event):
        flag.set()
    else:
        raise TypeError(f"Unsupported flag type: {type(flag)!r}. Use asyncio/threading events or futures.")


def _resolve_asyncio_future(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)
