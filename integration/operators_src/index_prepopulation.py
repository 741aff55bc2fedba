"""
An index over all objects, and a handler that reports how complete it is when it first runs.

The queueing's worker limit is 1, so that a framework that indexes in the
workers (and blocks them until the index is complete) would deadlock here.
"""
import logging
from typing import Any

import kopf

logger = logging.getLogger('indices')
_reported = False


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.queueing.worker_limit = 1


@kopf.index('kopfexamples')
def names(name: str, **_: Any) -> str:
    return name


@kopf.on.event('kopfexamples')
def first_event(names: kopf.Index, **_: Any) -> None:  # type: ignore[type-arg]
    global _reported
    if not _reported:
        _reported = True
        logger.info(f"The first handler sees {len(names.get(None, []))} indexed objects.")
