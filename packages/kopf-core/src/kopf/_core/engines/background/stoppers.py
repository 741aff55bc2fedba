"""
The stop-flags of daemons and timers: one flag, readable from threads and tasks.

A sync daemon runs in a thread and checks ``stopped`` / ``stopped.wait(10)``
there; an async daemon awaits ``stopped.wait(10)`` in the event loop. Neither
``threading.Event`` nor ``asyncio.Event`` serves both, so the stopper keeps
both in sync, and hands out a checker of the right kind to each daemon.
"""
from __future__ import annotations

import asyncio
import enum
import threading
from typing import Any, Optional


class DaemonStoppingReason(enum.Flag):
    """A reason or reasons of a daemon being terminated (several can combine)."""
    NONE = 0
    DONE = enum.auto()  # the daemon has exited on its own
    RESOURCE_DELETED = enum.auto()
    OPERATOR_PAUSING = enum.auto()
    OPERATOR_EXITING = enum.auto()
    FILTERS_MISMATCH = enum.auto()
    DAEMON_SIGNALLED = enum.auto()
    DAEMON_CANCELLED = enum.auto()
    DAEMON_ABANDONED = enum.auto()


class DaemonStopper:
    """The internal side of the flag: set by the framework, read by the daemon."""

    def __init__(self) -> None:
        self.reason = DaemonStoppingReason.NONE
        self._sync_event = threading.Event()
        self._async_event = asyncio.Event()
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def __repr__(self) -> str:
        return f'<{type(self).__name__}: {self.is_set()}, reason={self.reason!r}>'

    def bind(self) -> None:
        """Remember the loop of the framework, to wake async waiters from any thread."""
        self._loop = asyncio.get_running_loop()

    def is_set(self) -> bool:
        return self._sync_event.is_set()

    def set(self, *, reason: DaemonStoppingReason) -> None:
        """Stop (idempotent): the reasons accumulate, the waiters wake up."""
        self.reason |= reason
        self._sync_event.set()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._async_event.set)
        else:
            self._async_event.set()

    def wait_sync(self, timeout: Optional[float] = None) -> bool:
        return self._sync_event.wait(timeout)

    async def wait_async(self, timeout: Optional[float] = None) -> bool:
        try:
            await asyncio.wait_for(self._async_event.wait(), timeout=timeout)
        except asyncio.TimeoutError:
            pass
        return self.is_set()


class DaemonStopped:
    """
    The ``stopped`` kwarg of daemons: true when the daemon must exit.

    ``if stopped``, ``stopped.is_set()``, ``stopped.reason``; ``stopped.wait(t)``
    replaces ``time.sleep(t)`` in sync daemons and ``asyncio.sleep(t)`` (awaited)
    in async daemons, but returns as soon as the daemon is asked to stop.
    """

    def __init__(self, stopper: DaemonStopper) -> None:
        self._stopper = stopper

    def __repr__(self) -> str:
        return f'<{type(self).__name__}: {self.is_set()}, reason={self.reason!r}>'

    def __bool__(self) -> bool:
        return self._stopper.is_set()

    def is_set(self) -> bool:
        return self._stopper.is_set()

    @property
    def reason(self) -> Optional[DaemonStoppingReason]:
        return self._stopper.reason if self._stopper.is_set() else None

    def wait(self, timeout: Optional[float] = None) -> Any:
        """
        Sleep until the timeout or until stopped: a bool in sync daemons, awaited in async ones.

        Declared here for the users who annotate ``stopped: kopf.DaemonStopped``
        (as Kopf's type allows both uses); the kwarg is always one of the subclasses.
        """
        raise NotImplementedError(f'{type(self).__name__} is not given to daemons; '
                                  f'SyncDaemonStopped or AsyncDaemonStopped is.')


class SyncDaemonStopped(DaemonStopped):
    """The ``stopped`` kwarg of sync daemons (in threads): ``stopped.wait(10)`` blocks the thread."""

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Sleep until the timeout or until stopped (whichever is first); true if stopped."""
        return self._stopper.wait_sync(timeout)


class AsyncDaemonStopped(DaemonStopped):
    """The ``stopped`` kwarg of async daemons: ``await stopped.wait(10)`` does not block the loop."""

    async def wait(self, timeout: Optional[float] = None) -> bool:
        """Sleep until the timeout or until stopped (whichever is first); true if stopped."""
        return await self._stopper.wait_async(timeout)


# The older names of the ``stopped`` kwarg's types of sync and async daemons (as in Kopf's annotations).
SyncDaemonStopperChecker = SyncDaemonStopped
AsyncDaemonStopperChecker = AsyncDaemonStopped
