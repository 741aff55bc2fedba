"""
Freeing large admission reviews in slices, as they are parsed (see :mod:`~kopf_webhooks._parsing`).

A parsed review of several MiB is hundreds of thousands of objects. When the
last reference to it goes, CPython frees them all at once, in one C call that
holds the event loop: ~7 ms for a review of 8 MiB of numbers here, tens of ms
for a few such reviews answered together, and several times more on a busy
machine. So the server hands the large reviews over to :func:`dismantle` once it
has answered them: their containers are emptied a few thousand members at a
time, and the loop runs its other tasks in between.

Only the containers that nobody else refers to are emptied. A handler may keep a
part of the review (e.g. its ``spec`` in a memo or an index): such parts are left
intact, and freed whenever their holders let them go.
"""
from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, Dict, List, Optional, Set, Union

# How long the emptying runs before it lets the loop run other tasks.
SLICE_DURATION = 0.005

# Members removed between two looks at the clock.
_CHECK_EVERY = 1024

Container = Union[Dict[Any, Any], List[Any]]


class Dismantler:
    """
    Dismantles the documents given to it in background tasks, which it keeps until they are done.

    One document at a time, and not while the ``lock`` is held by others (e.g. the parser's):
    so that the loop's lag is one slice, not one per document being parsed or dismantled.
    """

    def __init__(self, lock: Optional[asyncio.Lock] = None) -> None:
        self._lock = lock if lock is not None else asyncio.Lock()
        self._tasks: Set[asyncio.Task[None]] = set()

    def dismantle_later(self, document: Any) -> None:
        task = asyncio.create_task(self._dismantle(document), name='dismantling a large admission review')
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _dismantle(self, document: Any) -> None:
        holder = [document]
        del document  # the holder's is the only reference of ours while waiting for the turn
        async with self._lock:
            await dismantle(holder.pop())


async def dismantle(document: Any, *, slice_duration: float = SLICE_DURATION) -> None:
    """Empty the document's containers that only it refers to, yielding every ``slice_duration`` seconds."""
    if not _refcounts_are_exact():
        return  # the document is freed at once, as usual
    stack: List[Container] = [document] if isinstance(document, (dict, list)) else []
    del document  # from now on, the stack holds the only reference of ours
    probe: List[Any] = []
    sole = sys.getrefcount(probe)  # what a container held by one local variable counts (it varies by version)
    del probe
    deadline = time.perf_counter() + slice_duration
    removed = 0
    while stack:
        node = stack.pop()
        if sys.getrefcount(node) > sole:  # anyone else's reference is one more
            continue  # someone keeps it: left intact
        while node:
            child = node.popitem()[1] if isinstance(node, dict) else node.pop()
            if isinstance(child, (dict, list)) and child:
                stack.append(child)
            del child  # a scalar (or an empty container) is freed here, if nobody else has it
            removed += 1
            if removed % _CHECK_EVERY == 0 and time.perf_counter() >= deadline:
                await asyncio.sleep(0)
                deadline = time.perf_counter() + slice_duration
        del node


def _refcounts_are_exact() -> bool:
    """Free-threaded builds count the references differently: nothing is emptied there, to be safe."""
    is_gil_enabled = getattr(sys, '_is_gil_enabled', None)
    return is_gil_enabled is None or bool(is_gil_enabled())
