"""
One handler of each common kind, run unchanged by upstream Kopf and by ours to compare their log lines.

A startup and a cleanup activity, create/update/delete handlers on ``kopfexamples``
(one of them logging a message of its own, one returning a result), and a field handler.
"""
from typing import Any

import kopf


@kopf.on.startup()
def startup_fn(logger: Any, **_: Any) -> None:
    logger.info("Starting up.")


@kopf.on.cleanup()
def cleanup_fn(logger: Any, **_: Any) -> None:
    logger.info("Cleaning up.")


@kopf.on.create('kopfexamples')
def create_fn(logger: Any, **_: Any) -> dict[str, str]:
    logger.info("Creating.")
    return {'message': 'created'}


@kopf.on.update('kopfexamples')
def update_fn(**_: Any) -> None:
    pass


@kopf.on.field('kopfexamples', field='spec.field')
def field_fn(old: Any, new: Any, logger: Any, **_: Any) -> None:
    logger.info(f"The field is changed from {old!r} to {new!r}.")


@kopf.on.delete('kopfexamples')
def delete_fn(logger: Any, **_: Any) -> None:
    logger.info("Deleting.")
