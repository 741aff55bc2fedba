"""
The last resort of a stuck exit: ``settings.process.ultimate_exiting_timeout``.

When a signal (SIGTERM/SIGINT) asks the operator to stop, the graceful exit
may get stuck (cleanup handlers, daemons, threads that never end). The
countdown starts with the signal, whatever the exit is doing then; when it
is over, the operator's thread is killed with SIGKILL, which ends the process.
The stop-flag of an embedded operator is an intentional stop and arms nothing:
killing the host application is not the operator's call.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import threading
from typing import Callable, Optional

from kopf._cogs.configs import configuration

logger = logging.getLogger('kopf.reactor.running')


def _kill_current_thread() -> None:
    # SIGKILL cannot be handled: whichever thread it targets, the whole process ends.
    signal.pthread_kill(threading.get_ident(), signal.SIGKILL)


def arm_ultimate_exit(
        settings: configuration.OperatorSettings,
        *,
        kill: Callable[[], None] = _kill_current_thread,
) -> Optional[asyncio.TimerHandle]:
    """Schedule the kill in the current loop after the timeout (none if the timeout is ``None``)."""
    timeout = settings.process.ultimate_exiting_timeout
    if timeout is None:
        return None

    def expire() -> None:
        logger.warning(f"The operator has not exited in {timeout}s after the signal: killing it.")
        kill()

    return asyncio.get_running_loop().call_later(timeout, expire)
