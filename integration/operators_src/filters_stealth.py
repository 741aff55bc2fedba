"""
Handlers on ``stealthobjs.filters.kopf.dev`` that match only some objects.

An unfiltered event handler reports every event in the operator's own log
(not about the object, so it does not count as the object's log lines), so
that the tests know when an event has been seen.
"""
import logging
from typing import Any

import kopf

GROUP = 'filters.kopf.dev'
PLURAL = 'stealthobjs'

logger = logging.getLogger('stealth')


@kopf.on.event(GROUP, PLURAL)
def seen_fn(event: kopf.RawEvent, **_: Any) -> None:
    metadata = event['object']['metadata']
    logger.info(f"Seen {metadata['name']} with labels {metadata.get('labels', {})} "
                f"and spec {event['object'].get('spec', {})}.")


@kopf.on.create(GROUP, PLURAL, labels={'watched': 'yes'})
def create_labelled(**_: Any) -> str:
    return 'created'


@kopf.on.update(GROUP, PLURAL, labels={'watched': 'yes'})
def update_labelled(**_: Any) -> str:
    return 'updated'


@kopf.on.create(GROUP, PLURAL, when=lambda spec, **_: spec.get('enabled') is True)
def create_enabled(**_: Any) -> str:
    return 'created'


@kopf.on.create(GROUP, PLURAL, field='spec.phase', value='ready')
def create_ready(**_: Any) -> str:
    return 'created'
