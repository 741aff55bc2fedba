"""
The handlers of an object's life: creation, updates, deletion, resuming, fields, raw events.

- ``on.create``, ``on.update``, ``on.delete``: once per change, with retries on
  errors and the outcome stored on the object; a deletion handler puts a
  finalizer on the object, so that its deletion waits for the handler.
- ``on.resume``: for the objects that exist when the operator starts (after a
  restart, say), once per operator's lifetime; mixed into the creation if the
  object was never handled before.
- ``on.field``: when one field changes; ``old`` and ``new`` are that field's.
- ``on.event``: every raw watch event, silently: no retries, nothing stored.
"""
from typing import Any

import kopf


@kopf.on.create('kopfexamples')
def create_fn(spec: kopf.Spec, logger: kopf.ObjectLogger, **_: Any) -> dict[str, str]:
    logger.info(f"Created with {dict(spec)}.")
    return {'message': 'created'}  # stored in status.create_fn


@kopf.on.update('kopfexamples')
def update_fn(diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    for op, field, old, new in diff:
        logger.info(f"{op} {'.'.join(field)}: {old!r} -> {new!r}")


@kopf.on.delete('kopfexamples')
def delete_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Deleted: the finalizer is released after this handler.")


@kopf.on.resume('kopfexamples')
def resume_fn(spec: kopf.Spec, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Resumed the existing object with {dict(spec)}.")


@kopf.on.field('kopfexamples', field='spec.field')
def field_fn(old: Any, new: Any, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"spec.field: {old!r} -> {new!r}")


@kopf.on.event('kopfexamples')
def event_fn(event: kopf.RawEvent, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Watch event: {event['type']}")  # None for the objects listed at the start
