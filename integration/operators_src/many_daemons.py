"""
A daemon and a timer on every object: reports the task count and memory once all run.
"""
import asyncio
import logging
import pathlib
import re
from typing import Any

import kopf

logger = logging.getLogger('many-daemons')
EXPECTED = 1000
_running = 0


def _rss_mib() -> float:
    status = pathlib.Path('/proc/self/status').read_text()
    match = re.search(r'^VmRSS:\s+(\d+) kB', status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else -1.0


@kopf.daemon('kopfexamples')
async def watcher(stopped: kopf.DaemonStopped, **_: Any) -> None:
    global _running
    _running += 1
    if _running == EXPECTED:
        await asyncio.sleep(1)  # let the timers of the last objects start too
        logger.info(f"{EXPECTED} daemons are running: {len(asyncio.all_tasks())} tasks, "
                    f"RSS {_rss_mib():.1f} MiB.")
    while not stopped:
        await stopped.wait(60)


@kopf.timer('kopfexamples', interval=30)
async def ticker(**_: Any) -> None:
    pass
