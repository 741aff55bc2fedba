"""
The smallest operator: react to the creation and the deletion of an object.

The creation handler's result is stored in the object's ``status.create_fn``;
the deletion handler makes the framework put a finalizer on the object, so
that the deletion waits until the handler has succeeded.
"""
from typing import Any

import kopf


@kopf.on.create('kopfexamples')
def create_fn(spec: kopf.Spec, logger: kopf.ObjectLogger, **kwargs: Any) -> dict[str, str]:
    logger.info(f"And here we are! Creating: {dict(spec)}")
    return {'message': 'hello world'}  # will be the new status


@kopf.on.delete('kopfexamples')
def delete_fn(name: str, logger: kopf.ObjectLogger, **kwargs: Any) -> None:
    logger.info(f"Goodbye, {name}! Releasing the object.")
