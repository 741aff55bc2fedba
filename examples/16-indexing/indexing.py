"""
Indices: an in-memory overview of many objects, given to every handler.

``by_field`` maps each ``spec.field`` value to the names of the objects that
have it. The framework calls the indexing function for every object as it is
listed and on each change, and forgets the object when it is deleted; the
handlers get the index as a kwarg named after the function, and see it complete
(at the start, they wait until the initial listing has been indexed). No
handler needs to list the objects from the API.
"""
from typing import Any, Optional

import kopf


@kopf.index('kopfexamples')
def by_field(name: str, spec: kopf.Spec, **_: Any) -> Optional[dict[str, str]]:
    field = spec.get('field')
    return {field: name} if field is not None else None


def namesakes(index: kopf.Index[str, str], field: Optional[str], name: str) -> list[str]:
    """The other objects with the same field."""
    return sorted(other for other in index.get(field, []) if other != name) if field is not None else []


@kopf.on.create('kopfexamples')
def create_fn(by_field: kopf.Index[str, str], spec: kopf.Spec, name: str, **_: Any) -> dict[str, list[str]]:
    return {'namesakes': namesakes(by_field, spec.get('field'), name)}  # stored in status.create_fn


@kopf.on.update('kopfexamples', field='spec.field')
def update_fn(by_field: kopf.Index[str, str], new: Optional[str], name: str,
              logger: kopf.ObjectLogger, **_: Any) -> dict[str, list[str]]:
    others = namesakes(by_field, new, name)
    logger.info(f"The other objects with the field {new!r}: {others}")
    return {'namesakes': others}
