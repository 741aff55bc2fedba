"""
An operator that only watches: it counts the raw events of the listing and the watch.

It makes no changes to the objects, so that the listing's cost is measured alone.
``$COUNTER_CHUNK_SIZE`` sets ``settings.watching.chunk_size`` (the listing's page size;
one whole listing without it, as Kopf 1.45.2 does by default).
"""
import logging
import os
from typing import Any

import kopf

logger = logging.getLogger('event-counter')
_seen = 0


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    if 'COUNTER_CHUNK_SIZE' in os.environ:
        settings.watching.chunk_size = int(os.environ['COUNTER_CHUNK_SIZE'])


@kopf.on.event('kopfexamples')
def event_fn(**_: Any) -> None:
    global _seen
    _seen += 1
    if _seen % 1000 == 0:
        logger.info(f"Seen {_seen} events.")
