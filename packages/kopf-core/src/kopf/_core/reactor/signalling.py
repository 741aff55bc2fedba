"""
SIGINT and SIGTERM of the operator's process, delivered to its event loop even when it lags.

asyncio's own ``loop.add_signal_handler()`` learns of a signal only through the
loop's wakeup socket, one byte per signal. That socket is also where every
``call_soon_threadsafe()`` writes — one byte per sync handler finished in the
thread pool — and a local socket holds only a few hundred such bytes: when the
loop falls behind a burst of sync handlers, the socket is full, the signal's byte
is dropped ("Exception ignored when trying to write to the signal wakeup fd"),
and the signal is lost: the operator does not stop.

Here, a plain Python signal handler runs in the main thread (the loop's thread)
between two bytecodes whatever the socket's state, and puts the reaction into
the loop's queue of ready callbacks, which never drops anything.
"""
from __future__ import annotations

import asyncio
import signal
import threading
from types import FrameType
from typing import Any, Callable, Dict, Optional, Union

_Handler = Union[Callable[[int, Optional[FrameType]], Any], int, None]
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalCatcher:
    """Call ``react(sig)`` in the loop for SIGINT/SIGTERM; restore the previous handlers when removed."""

    def __init__(self, react: Callable[[signal.Signals], None]) -> None:
        self._react = react
        self._previous: Dict[signal.Signals, _Handler] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signals are delivered to the main thread only: embedded operators use the stop-flag
        self._loop = asyncio.get_running_loop()
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def release(self, sig: signal.Signals) -> None:
        """Give one signal back to its previous handler (e.g. the second Ctrl-C then interrupts at once)."""
        if sig in self._previous:
            previous = self._previous.pop(sig)
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)  # None: not set from Python

    def remove(self) -> None:
        for sig in list(self._previous):
            self.release(sig)
        self._loop = None

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._react, signal.Signals(signum))
