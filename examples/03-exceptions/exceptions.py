"""
Errors in handlers: what is retried, when, and what is given up.

- ``kopf.TemporaryError``: the handler is retried after ``delay`` seconds; the
  ``retry`` kwarg counts the attempts so far. The other handlers of the object
  go on meanwhile.
- ``kopf.PermanentError``: the handler has failed for good; it is not retried,
  the failure is stored in the object's status, and the other handlers go on.
- ``retries=`` on the decorator: at most so many attempts; then the handler
  has failed for good, as with a permanent error.
- Any other exception is retried too, ``backoff=`` seconds later (60 by
  default), with its traceback in the log: a bug, not a foreseen condition.
"""
import re
from typing import Any

import kopf

DURATION = re.compile(r'^(\d+)([smh])$')


@kopf.on.create('kopfexamples')
def create_fn(retry: int, logger: kopf.ObjectLogger, **_: Any) -> dict[str, int]:
    if retry < 2:  # as if something it needs were not ready yet
        raise kopf.TemporaryError(f"The backend is not ready yet (attempt {retry + 1}).", delay=1)
    logger.info(f"The backend is ready at the attempt {retry + 1}.")
    return {'attempts': retry + 1}


@kopf.on.create('kopfexamples')
def check_fn(spec: kopf.Spec, **_: Any) -> dict[str, int]:
    text = str(spec.get('duration', '0s'))
    match = DURATION.match(text)
    if match is None:  # retrying will not fix the user's input: give up at once
        raise kopf.PermanentError(f"Cannot parse the duration {text!r}: use a number with s, m or h, e.g. 90s.")
    amount, unit = match.groups()
    return {'seconds': int(amount) * {'s': 1, 'm': 60, 'h': 3600}[unit]}


@kopf.on.update('kopfexamples', retries=3)
def update_fn(retry: int, **_: Any) -> None:
    if retry == 0:
        raise kopf.TemporaryError("The change cannot be applied yet.", delay=0.5)  # 60 s if not given


@kopf.on.delete('kopfexamples')
def delete_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Cleaned up.")
