"""
One rendering of the metrics for all the scrapes that come together: made off the event loop, reused briefly.

A scrape renders the whole exposition: milliseconds for a usual operator, much
more for a big one. When every scrape rendered its own text in the event loop,
200 scrapes opened at once held the loop for 38 seconds (the health probes were
not answered meanwhile) and their texts grew the operator by hundreds of
megabytes. Hence:

- the text is rendered in a thread of its own, so that the event loop keeps its
  turns (the core's figures are made to be read from another thread, see
  :mod:`kopf._cogs.helpers.metrics`; ``prometheus_client`` reads its own so);
- while a rendering is in progress, the scrapes that come wait for it and share
  its text: there is never more than one rendering at a time;
- a finished text also serves the scrapes of the next :data:`MAX_AGE` seconds
  (Prometheus scrapes every 15 seconds or so: one second of staleness is nothing
  to it), so that a flood of scrapes costs one rendering per second at most.

A failed rendering is not reused: each of its waiters gets the error, the next scrape tries again.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Callable, Generic, Optional, Tuple, TypeVar

MAX_AGE = 1.0  # seconds that a finished text serves the next scrapes: counted from the end of its rendering

T = TypeVar('T')


class SharedRendering(Generic[T]):
    """What ``render`` returns, rendered in a thread, shared by the concurrent callers and reused for a while."""

    def __init__(self, render: Callable[[], T], *, max_age: float = MAX_AGE) -> None:
        self._render = render
        self._max_age = max_age
        self._latest: Optional[Tuple[float, T]] = None  # when it was finished (monotonic), and what
        self._pending: Optional[asyncio.Future[T]] = None
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None

    async def get(self) -> T:
        """The latest text if it is fresh; else the rendering in progress, or a new one."""
        if self._latest is not None and time.monotonic() - self._latest[0] < self._max_age:
            return self._latest[1]
        if self._pending is None:
            if self._executor is None:  # a thread of its own: the default executor runs the sync handlers
                self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix='kopf-metrics')
            self._pending = asyncio.get_running_loop().run_in_executor(self._executor, self._render)
            self._pending.add_done_callback(self._finished)
        # A caller that goes away (e.g. its connection is aborted) does not cancel the others' rendering.
        return await asyncio.shield(self._pending)

    def close(self) -> None:
        """Let the thread go once its rendering (if any) is over; the waiters are cancelled by their owners."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _finished(self, future: asyncio.Future[T]) -> None:
        self._pending = None
        # Reading the exception marks it as retrieved, even if no caller waits for it anymore.
        if not future.cancelled() and future.exception() is None:
            self._latest = (time.monotonic(), future.result())
