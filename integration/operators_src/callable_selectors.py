"""
Handlers whose resources are chosen by callables (Kopf 1.45's callable resource selectors).

The callables accept the resources of the API group ``selectors.kopf.dev`` whose
kind starts with ``Wanted``: ``wanteds`` is served, ``unwanteds`` of the same group
is not. The handlers record what they saw: the creation handler in the object's
status (its result), the event handler in the log.
"""
from typing import Any

import kopf


def is_wanted(resource: kopf.Resource) -> bool:
    return resource.group == 'selectors.kopf.dev' and (resource.kind or '').startswith('Wanted')


@kopf.on.create(is_wanted)
def create_fn(resource: kopf.Resource, **_: Any) -> str:
    return f"created as {resource.plural}"


@kopf.on.event(lambda r: is_wanted(r))
def event_fn(name: str, type: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"event_fn sees {type} of {name}")
