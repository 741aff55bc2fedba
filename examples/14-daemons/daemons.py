"""
Daemons: a function that runs for as long as its object exists.

Each object gets its own daemon, started when the operator sees the object and
stopped when the object is deleted (the deletion waits: a finalizer) or when
the operator exits. ``spec`` and ``body`` are live: they show the latest state.

- A sync daemon runs in a thread; it must check ``stopped`` and wait on it
  (``stopped.wait(seconds)``), never ``time.sleep()``, so that it ends in time.
  (``kopf.SyncDaemonStopperChecker`` is the type of a sync daemon's ``stopped``:
  ``kopf.DaemonStopped`` with a blocking ``wait()``.)
- An async daemon is cancelled when it must stop; ``cancellation_timeout``
  gives it that long to clean up before the framework gives up on it.
"""
import asyncio
from typing import Any

import kopf


@kopf.daemon('kopfexamples')  # no cancellation_timeout: a thread cannot be cancelled, only asked to stop
def monitor(stopped: kopf.SyncDaemonStopperChecker, spec: kopf.Spec, logger: kopf.ObjectLogger, **_: Any) -> None:
    while not stopped:
        logger.info(f"Monitoring the field: {spec.get('field')!r}.")
        stopped.wait(0.5)
    logger.info(f"The monitor has stopped: {stopped.reason}.")


@kopf.daemon('kopfexamples', cancellation_timeout=10)  # cancelled at once, 10 s to clean up
async def pinger(logger: kopf.ObjectLogger, **_: Any) -> None:
    try:
        while True:
            logger.info("Ping.")
            await asyncio.sleep(0.5)
    except asyncio.CancelledError:
        logger.info("The pinger is cancelled.")
        raise
