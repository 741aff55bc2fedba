"""
Timers: a function called every so often for each object, while the object exists.

- ``interval``: seconds between the calls (counted from the end of the last one).
- ``idle``: call only when the object has not changed for so many seconds
  (e.g. to act once the user has stopped editing it).
- ``initial_delay``: seconds to wait before the first call.

A timer's object gets a finalizer, so that its timers stop before it is gone.
The ``memo`` kwarg is the object's own memory, kept between the calls.
"""
from typing import Any

import kopf


@kopf.timer('kopfexamples', interval=0.5)
def tick(spec: kopf.Spec, memo: kopf.Memo, logger: kopf.ObjectLogger, **_: Any) -> None:
    memo.ticks = memo.get('ticks', 0) + 1
    logger.info(f"Tick {memo.ticks}: the field is {spec.get('field')!r}.")


@kopf.timer('kopfexamples', interval=2, idle=1, initial_delay=0.5)
def settled(spec: kopf.Spec, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Unchanged for a second: the field is {spec.get('field')!r}.")
