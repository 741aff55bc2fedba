"""
A create, an update (on a spec field) and a delete handler on the resource named in $TEST_PLURAL.
"""
import os
from typing import Any

import kopf

PLURAL = os.environ['TEST_PLURAL']


@kopf.on.create(PLURAL)
def create_fn(**_: Any) -> dict[str, str]:
    return {'message': 'created'}


@kopf.on.update(PLURAL, field='spec.field')
def update_fn(new: Any, **_: Any) -> dict[str, Any]:
    return {'field': new}


@kopf.on.delete(PLURAL)
def delete_fn(**_: Any) -> None:
    pass
