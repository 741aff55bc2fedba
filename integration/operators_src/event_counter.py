"""
An operator that only watches: it counts the raw events of the listing and the watch.

It makes no changes to the objects, so that the listing's cost is measured alone.
"""
import logging
from typing import Any

import kopf

logger = logging.getLogger('event-counter')
_seen = 0


@kopf.on.event('kopfexamples')
def event_fn(**_: Any) -> None:
    global _seen
    _seen += 1
    if _seen % 1000 == 0:
        logger.info(f"Seen {_seen} events.")
