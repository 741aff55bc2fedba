"""
Handlers for bad input, selected per object by the label ``mode``.

``plain`` objects are the others that the operator must carry on with; the
rest provoke one kind of bad input each: a result that cannot be stored as
JSON, a handler id that is not valid in an annotation key.
"""
import datetime
from typing import Any

import kopf

PLURAL = 'badinputs.bad.kopf.dev'


@kopf.on.create(PLURAL, labels={'mode': 'plain'})
def plain_fn(logger: Any, name: str, **_: Any) -> dict[str, str]:
    logger.info(f"plain_fn handled {name}")
    return {'handled': name}


@kopf.on.create(PLURAL, labels={'mode': 'unserialisable'})
def unserialisable_fn(logger: Any, **_: Any) -> object:
    logger.info("unserialisable_fn is called")
    return {'when': datetime.datetime(2020, 1, 1), 'what': object()}


@kopf.on.create(PLURAL, labels={'mode': 'bad-id'}, id='Not a key: spaces, slashes/and ' + 'long' * 30)
def bad_id_fn(logger: Any, **_: Any) -> None:
    logger.info("bad_id_fn is called")
