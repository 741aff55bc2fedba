"""
Stopping groups of tasks, with the log lines that Kopf's users know.

At the exit, each group of the operator's tasks (the root task, the core tasks,
the watch-streams, the tasks left hanging) is cancelled, awaited, and reported
in the same words as Kopf 1.45's (``Root tasks are stopped: ...``), since users'
and end-to-end tests wait for these lines.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Collection, Optional, Set


def report_stopped(title: str, pending: Collection[asyncio.Task[Any]], *, logger: logging.Logger) -> None:
    """Say whether a group of tasks has stopped (``tasks left`` shows those that have not)."""
    are = 'are' if not pending else 'are not'
    logger.debug(f"{title} tasks {are} stopped: finishing normally; tasks left: {set(pending)!r}")


async def stop_tasks(
        tasks: Collection[asyncio.Task[Any]],
        *,
        title: str,
        logger: logging.Logger,
        timeout: Optional[float] = None,
) -> Set[asyncio.Task[Any]]:
    """Cancel the tasks, wait for them (within the timeout, if any), report; return those still running."""
    if not tasks:
        logger.debug(f"{title} tasks stopping is skipped: no tasks given.")
        return set()
    for task in tasks:
        task.cancel()
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    report_stopped(title, pending, logger=logger)
    return pending
