"""
One handler of each kind on ``handlerobjs.handlers.kopf.dev``, and an optional deletion on ``optionalobjs``.

The handlers report what they received in their results (``status.<handler id>``)
or in log lines about their object, so that the tests can compare both with
what they did to the objects.
"""
from typing import Any

import kopf

GROUP = 'handlers.kopf.dev'


@kopf.on.event(GROUP, 'handlerobjs')
def event_fn(event: kopf.RawEvent, logger: kopf.ObjectLogger, **_: Any) -> None:
    # The raw event as the API sent it (None for the initial listing), not the detected cause.
    logger.info(f"Raw event {event['type']!r} of {event['object']['metadata']['name']}.")


@kopf.on.resume(GROUP, 'handlerobjs')
def resume_fn(reason: kopf.Reason, **_: Any) -> dict[str, str]:
    return {'reason': str(reason)}


@kopf.on.resume(GROUP, 'handlerobjs', deleted=True)
def resume_deleted_fn(reason: kopf.Reason, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Resumed with the reason {str(reason)!r}.")


@kopf.on.create(GROUP, 'handlerobjs')
def create_fn(spec: kopf.Spec, **_: Any) -> dict[str, Any]:
    return {'message': 'created', 'spec': dict(spec)}


@kopf.on.update(GROUP, 'handlerobjs')
def update_fn(diff: kopf.Diff, **_: Any) -> dict[str, Any]:
    # Lists keep their nulls in a merge-patch (unlike dicts, where null means "remove").
    return {'diff': [[str(op), list(field), old, new] for op, field, old, new in diff]}


@kopf.on.field(GROUP, 'handlerobjs', field='spec.watched')
def watched_fn(old: Any, new: Any, reason: kopf.Reason, **_: Any) -> dict[str, Any]:
    return {'change': [old, new], 'reason': str(reason)}


@kopf.on.delete(GROUP, 'handlerobjs')
def delete_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Cleaning up after the object.")


@kopf.on.create(GROUP, 'optionalobjs')
def optional_create_fn(**_: Any) -> str:
    return 'created'


@kopf.on.delete(GROUP, 'optionalobjs', optional=True)
def optional_delete_fn(**_: Any) -> None:
    pass
